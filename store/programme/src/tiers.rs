//! Tiers of a campaign. A wallet holds the tier with the highest threshold its lifetime earned
//! tokens reach (ties: the lower precedence); burns and expiry never lower a tier. Wallets are
//! re-tiered whenever the campaign's tiers change and whenever they earn.

use crate::Campaign;
use sqlx::types::Json;

use crate::common::ids::new_id;
use crate::{Programme, StoreError, Tokens};

/// A tier as a wallet shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tier {
    pub id: String,
    pub name: String,
    /// Lower is higher priority.
    pub precedence: i64,
    /// Lifetime earned tokens from which a wallet holds the tier.
    pub threshold: Tokens,
    pub benefits: Vec<String>,
    pub image_url: Option<String>,
    /// The id the client gave the tier in a catalogue document (`platinum`), by which searches
    /// and imports may name it too.
    pub handle: Option<String>,
}

#[derive(Debug, Clone, Default)]
pub struct NewTier {
    pub name: String,
    pub precedence: i64,
    pub threshold: Tokens,
    pub benefits: Vec<String>,
    pub image_url: Option<String>,
}

/// The one tier choice: the id of the tier a row of `wallets` holds when it has earned
/// `$earned` tokens in its life (an SQL expression): the highest threshold reached, and of equal
/// thresholds the lower precedence. For `SET tier_id = ...` in a statement on `wallets`.
#[macro_export]
macro_rules! tier_for {
    ($earned:expr) => {
        concat!(
            "(SELECT t.id FROM tiers t WHERE t.campaign_id = wallets.campaign_id AND t.threshold <= ",
            $earned,
            " ORDER BY t.threshold DESC, t.precedence ASC LIMIT 1)"
        )
    };
}

/// The tier of each wallet of campaign `$1` whose tier the campaign's tiers now place it in
/// differs, at `$2` (a wallet whose tier stays is not written: its `updated_at` stays, and no
/// `wallet.tier_changed` is recorded for it).
pub const RETIER: &str = concat!(
    "UPDATE wallets SET updated_at = $2, tier_id = ",
    tier_for!("wallets.earned"),
    " WHERE campaign_id = $1 AND tier_id IS DISTINCT FROM ",
    tier_for!("wallets.earned")
);

/// The columns of a tier as `tier_from_row` reads them.
const TIER_COLUMNS: &str = "id, name, precedence, threshold, benefits, image_url, handle";

type TierRow = (
    String,
    String,
    i64,
    i64,
    Json<Vec<String>>,
    Option<String>,
    Option<String>,
);

fn tier_from_row((id, name, precedence, threshold, benefits, image_url, handle): TierRow) -> Tier {
    Tier {
        id,
        name,
        precedence,
        threshold: Tokens::from_micros(threshold),
        benefits: benefits.0,
        image_url,
        handle,
    }
}

/// The tier a `LEFT JOIN tiers` found, from its columns (all `None` when there was none).
pub fn joined_tier(
    id: Option<String>,
    name: Option<String>,
    precedence: Option<i64>,
    threshold: Option<i64>,
    benefits: Option<Json<Vec<String>>>,
    image_url: Option<String>,
    handle: Option<String>,
) -> Option<Tier> {
    Some(Tier {
        id: id?,
        name: name?,
        precedence: precedence.unwrap_or_default(),
        threshold: Tokens::from_micros(threshold.unwrap_or_default()),
        benefits: benefits.map(|b| b.0).unwrap_or_default(),
        image_url,
        handle,
    })
}

/// Tiers: a campaign's tiers and their thresholds (scope: `&Campaign`).
impl Programme {
    #[tracing::instrument(skip_all)]
    pub async fn create_tier(&self, campaign: &Campaign, new: NewTier) -> Result<Tier, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        if new.name.trim().is_empty() {
            return Err(StoreError::invalid("name", "must not be empty"));
        }
        if new.threshold < Tokens::ZERO {
            return Err(StoreError::invalid("threshold", "must not be negative"));
        }
        let tier = Tier {
            id: new_id(),
            name: new.name.trim().to_string(),
            precedence: new.precedence,
            threshold: new.threshold,
            benefits: new.benefits,
            image_url: new.image_url,
            handle: None,
        };
        const INSERT: &str = "INSERT INTO tiers (id, org_id, campaign_id, name, precedence, threshold, benefits, \
             image_url, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)";
        let (benefits, threshold, at) = (
            serde_json::json!(tier.benefits),
            tier.threshold.micros(),
            self.now(),
        );
        let insert = params![
            tier.id,
            org_id,
            campaign_id,
            tier.name,
            tier.precedence,
            threshold,
            benefits,
            tier.image_url,
            at
        ];
        self.execute_all(&[(INSERT, insert), (RETIER, params![campaign_id, at])])
            .await
            .map_err(|e| crate::error::conflict_on(e, &[("name", "name")]))?;
        Ok(tier)
    }

    /// The campaign's tiers by precedence.
    #[tracing::instrument(skip_all)]
    pub async fn list_tiers(&self, campaign: &Campaign) -> Result<Vec<Tier>, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        let sql = format!(
            "SELECT {TIER_COLUMNS} FROM tiers WHERE org_id = $1 AND campaign_id = $2 \
             ORDER BY precedence, threshold, name"
        );
        let rows: Vec<TierRow> = self.read_rows(&sql, params![org_id, campaign_id]).await?;
        Ok(rows.into_iter().map(tier_from_row).collect())
    }

    /// A page of the campaign's tiers by precedence, only those named `name` (in any letter
    /// case, as category names are matched) or of `precedence` when given. A campaign has a
    /// handful of tiers: they are read whole and filtered here, the same on both backends.
    #[tracing::instrument(skip_all)]
    pub async fn tiers_page(
        &self,
        campaign: &crate::Campaign,
        name: Option<&str>,
        precedence: Option<i64>,
        page: crate::Page,
    ) -> Result<crate::Paged<Tier>, StoreError> {
        let name = name.map(str::to_lowercase);
        let matching: Vec<Tier> = self
            .list_tiers(campaign)
            .await?
            .into_iter()
            .filter(|t| name.as_ref().is_none_or(|n| t.name.to_lowercase() == *n))
            .filter(|t| precedence.is_none_or(|p| t.precedence == p))
            .collect();
        Ok(crate::Paged::slice(matching, page, |t| t))
    }

    /// Removes a tier (by id or name); its wallets fall to the next tier they reach.
    #[tracing::instrument(skip_all)]
    pub async fn remove_tier(&self, campaign: &Campaign, tier: &str) -> Result<(), StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        // The wallets of the tier move straight to the next one they reach (one
        // `wallet.tier_changed` each), before the tier goes.
        const MOVE: &str = "UPDATE wallets SET updated_at = $4, tier_id = (SELECT t.id \
             FROM tiers t WHERE t.campaign_id = wallets.campaign_id \
             AND t.threshold <= wallets.earned AND t.id <> wallets.tier_id \
             ORDER BY t.threshold DESC, t.precedence ASC LIMIT 1) WHERE tier_id IN (SELECT id \
             FROM tiers WHERE org_id = $1 AND campaign_id = $2 AND (id = $3 OR name = $3))";
        const DELETE: &str =
            "DELETE FROM tiers WHERE org_id = $1 AND campaign_id = $2 AND (id = $3 OR name = $3)";
        const REQUIRED: &str = "SELECT COUNT(*) FROM variants v JOIN tiers t ON t.id = v.tier_id \
             WHERE t.org_id = $1 AND t.campaign_id = $2 AND (t.id = $3 OR t.name = $3)";
        let (required,): (i64,) = self
            .read_row(REQUIRED, params![org_id, campaign_id, tier])
            .await?
            .unwrap_or((0,));
        if required > 0 {
            // Dropping the requirement would open those rewards to every member.
            return Err(StoreError::invalid(
                "tier",
                format!(
                    "{required} catalogue variant(s) require this tier; import the catalogue \
                     without the requirement first"
                ),
            ));
        }
        let at = self.now();
        let which = params![org_id, campaign_id, tier];
        let changed = self
            .execute_all(&[
                (MOVE, params![org_id, campaign_id, tier, at]),
                (DELETE, which),
                (RETIER, params![campaign_id, at]),
            ])
            .await?;
        let removed = changed[1];
        if removed == 0 {
            return Err(StoreError::NotFound { what: "tier" });
        }
        Ok(())
    }
}

/// A tier as a `wallet.tier_changed` event names it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TierRef {
    pub id: String,
    pub name: String,
}

/// `wallet.tier_changed`: the wallet, its owner and its tiers before and after (`None`: no
/// tier). Written by the database itself (a trigger on `wallets`, see migration 25), so every
/// statement that moves a wallet's tier records it; this type reads it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TierChanged {
    pub wallet_id: String,
    pub member_id: String,
    pub from: Option<TierRef>,
    pub to: Option<TierRef>,
}

impl events::Payload for TierChanged {
    const RECORD: &'static str = "tier_changed";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.wallet_id)
    }
}
