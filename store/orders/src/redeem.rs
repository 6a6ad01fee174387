//! A partner redeeming a code: found by its keyed hash (never by decrypting rows), marked
//! redeemed by one conditional update, so of two redeems at once exactly one succeeds.

use crate::OrgScope;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sqlx::types::Json;

use super::ProductSummary;
use crate::backend::{Steps, Tx};
use crate::common::codes::{CodeKey, masked_tail};
use crate::{Orders, StoreError};
use events::{EventType, NewEvent};

/// A redeemed code and what it was for.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Redeemed {
    /// Masked.
    pub code: String,
    pub redeemed_at: DateTime<Utc>,
    pub campaign_id: String,
    pub order_id: String,
    pub line_id: String,
    pub product_id: String,
    pub variant_id: String,
    pub product: ProductSummary,
}

row_struct! {
    struct RedeemedRow {
        tail: String,
        redeemed_at: Option<DateTime<Utc>>,
        campaign_id: String,
        order_id: String,
        line_id: String,
        product_id: String,
        variant_id: String,
        product: Json<ProductSummary>,
    }
}

/// Redemption codes: a partner redeems a code once (scope: `OrgScope`).
impl Orders {
    /// Redeems `code` (as typed: case, spaces and dashes do not matter) among organisation
    /// `org_id`'s codes, for API key `key_id`. `NotFound` when no code of the organisation
    /// matches; `Refused` (`already_redeemed`) when it was redeemed before, (`code_voided`) when
    /// its order line was cancelled.
    #[tracing::instrument(skip_all)]
    pub async fn redeem_code(
        &self,
        org: &OrgScope,
        code: &str,
        codes: &CodeKey,
        key_id: &str,
    ) -> Result<Redeemed, StoreError> {
        let org_id = org.id();
        const FIND: &str = "SELECT redeemed_at, voided_at FROM redemption_codes \
             WHERE org_id = $1 AND lookup = $2";
        let lookup = codes.lookup(org_id, code);
        let redeeming = Redeeming {
            org_id: org_id.to_string(),
            lookup: lookup.clone(),
            key_id: key_id.to_string(),
            at: self.now(),
        };
        if let Some(redeemed) = self.write(redeeming).await? {
            return Ok(redeemed);
        }
        type Found = (Option<DateTime<Utc>>, Option<DateTime<Utc>>);
        let found: Option<Found> = self.read_row(FIND, params![org_id, lookup]).await?;
        Err(match found {
            Some((Some(at), _)) => StoreError::refused(
                "already_redeemed",
                Some("code".into()),
                format!("the code was redeemed at {}", at.to_rfc3339()),
            ),
            Some((_, Some(at))) => StoreError::refused(
                "code_voided",
                Some("code".into()),
                format!("the code's order line was cancelled at {}", at.to_rfc3339()),
            ),
            _ => StoreError::NotFound { what: "code" },
        })
    }
}

/// A code redeemed with its `code.redeemed` event, in one transaction: `None` when no code of
/// the organisation with that lookup could be redeemed.
struct Redeeming {
    org_id: String,
    lookup: Vec<u8>,
    key_id: String,
    /// When it is redeemed, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Redeeming {
    type Output = Option<Redeemed>;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Option<Redeemed>, StoreError> {
        const REDEEM: &str = "UPDATE redemption_codes SET redeemed_at = $3, redeemed_by = $4 \
             WHERE org_id = $1 AND lookup = $2 AND redeemed_at IS NULL AND voided_at IS NULL \
             RETURNING id";
        const DETAIL: &str = "SELECT c.tail, c.redeemed_at, l.campaign_id, l.order_id, l.id, \
             l.product_id, l.variant_id, l.product FROM redemption_codes c \
             JOIN order_lines l ON l.id = c.line_id WHERE c.id = $1";
        let at = self.at;
        let args = params![self.org_id, self.lookup, at, self.key_id];
        let Some((id,)) = tx.row::<(String,)>(REDEEM, args).await? else {
            return Ok(None);
        };
        let row: Option<RedeemedRow> = tx.row(DETAIL, params![id]).await?;
        let r = row.ok_or(StoreError::NotFound { what: "code" })?;
        let redeemed = Redeemed {
            code: masked_tail(&r.tail),
            redeemed_at: r.redeemed_at.unwrap_or(at),
            campaign_id: r.campaign_id,
            order_id: r.order_id,
            line_id: r.line_id,
            product_id: r.product_id,
            variant_id: r.variant_id,
            product: r.product.0,
        };
        let campaign = Some(redeemed.campaign_id.as_str());
        let event = NewEvent::new(
            &self.org_id,
            campaign,
            EventType::CodeRedeemed,
            &redeemed,
            at,
        )?;
        events::record(tx, &event).await?;
        Ok(Some(redeemed))
    }
}

impl events::Payload for Redeemed {
    const RECORD: &'static str = "redeemed";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.line_id)
    }
}
