//! A hold's record: the request that places it, the hold as stored and read back, and how it is
//! settled; what placing, settling and reading a hold share.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;

use crate::error::known;
use crate::spend::Spend;
use crate::transactions::idem_key_of;
use crate::{StoreError, Tokens, Transaction};

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum HoldStatus ("hold status") {
        /// Open: its tokens reserved.
        Held = "held",
        /// Spent (whole or in part) by a BURN; the rest released.
        Captured = "captured",
        /// Released by a void.
        Voided = "voided",
        /// Released at its expiry.
        Lapsed = "lapsed",
    }
}

/// Its serialization is what a repeat must match (`Fingerprint::of_request`): each field under
/// the name a client sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct NewHold {
    #[serde(flatten)]
    pub spend: Spend,
    /// When the hold lapses if neither captured nor voided (None: it does not).
    pub expires_at: Option<DateTime<Utc>>,
}

// A hold as stored, and as the API answers it (`HoldView`): its documentation is the API's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = HoldView))]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    pub id: String,
    pub wallet_id: String,
    /// The client's id for the hold, unique in the organisation.
    pub external_id: String,
    /// Tokens reserved.
    #[cfg_attr(feature = "schema", schema(value_type = f64))]
    pub amount: Tokens,
    pub currency: String,
    pub description: Option<String>,
    /// Internal use.
    pub comment: Option<String>,
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub meta: Option<Value>,
    pub status: HoldStatus,
    /// When it lapses if still held (absent: only a capture or a void ends it).
    pub expires_at: Option<DateTime<Utc>>,
    /// captured: the tokens spent (the rest was released).
    #[cfg_attr(feature = "schema", schema(value_type = Option<f64>))]
    pub captured: Option<Tokens>,
    /// captured: the BURN transaction that spent them (its `externalId` is `hold:` and the
    /// hold's).
    pub transaction_id: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// The API's name and description of a hold's status.
#[cfg(feature = "schema")]
impl utoipa::PartialSchema for HoldStatus {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::schema::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(HoldStatus::ALL.map(HoldStatus::as_str)))
            .description(Some(
                "Where a hold stands: held (its tokens reserved), captured (spent, whole or in \
                 part, by a BURN), voided (released by hand) or lapsed (released at its expiry).",
            ))
            .into()
    }
}

#[cfg(feature = "schema")]
impl utoipa::ToSchema for HoldStatus {
    fn name() -> std::borrow::Cow<'static, str> {
        "HoldStatus".into()
    }
}

/// A hold placed, and whether an earlier identical request placed it.
#[derive(Debug, Clone, PartialEq)]
pub struct HoldPlaced {
    pub hold: Hold,
    pub replayed: bool,
}

/// A hold after a capture, a void or a lapse: the BURN of a capture, and whether this request
/// settled it (false: it was settled before, so the answer is what that made of it).
#[derive(Debug, Clone, PartialEq)]
pub struct HoldSettled {
    pub hold: Hold,
    pub transaction: Option<Transaction>,
    pub settled_now: bool,
}

/// Filters of the hold list.
#[derive(Debug, Clone, Default)]
pub struct HoldFilter {
    /// A wallet id (a reference is resolved by the caller).
    pub wallet_id: Option<String>,
    pub status: Option<HoldStatus>,
}

/// How a hold is to be settled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Settle {
    /// Spend this much of it (None: all of it), releasing the rest.
    Capture(Option<Tokens>),
    Void,
    /// Release it if its expiry has come.
    Lapse,
}

macro_rules! hold_columns {
    () => {
        "id, wallet_id, external_id, amount, currency, description, comment, meta, status, \
         expires_at, captured, transaction_id, created_at, updated_at, fingerprint"
    };
}
pub(crate) use hold_columns;

row_struct! {
    /// The columns of `hold_columns!`, in order.
    pub(crate) struct HoldRow {
        id: String,
        wallet_id: String,
        external_id: String,
        amount: i64,
        currency: String,
        description: Option<String>,
        comment: Option<String>,
        meta: Option<Json<Value>>,
        status: String,
        expires_at: Option<DateTime<Utc>>,
        captured: Option<i64>,
        transaction_id: Option<String>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        fingerprint: String,
    }
}

pub(crate) fn hold_from_row(r: HoldRow) -> Result<Hold, StoreError> {
    Ok(Hold {
        status: known(HoldStatus::parse(&r.status), "holds", "status", &r.status)?,
        id: r.id,
        wallet_id: r.wallet_id,
        external_id: r.external_id,
        amount: Tokens::from_micros(r.amount),
        currency: r.currency,
        description: r.description,
        comment: r.comment,
        meta: r.meta.map(|m| m.0),
        expires_at: r.expires_at,
        captured: r.captured.map(Tokens::from_micros),
        transaction_id: r.transaction_id,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

/// A hold's idempotency key: the organisation's holds share one set of ids.
pub(crate) fn hold_key(org_id: &str, external_id: &str) -> Vec<u8> {
    idem_key_of(org_id, "HOLD", external_id)
}

/// The hold of organisation `$1` and campaign `$2` whose id is `$3`, else the one whose key
/// (`hold_key`) is `$4`: two probes of unique keys.
pub(crate) const SELECT_IN_CAMPAIGN: &str = concat!(
    "SELECT ",
    hold_columns!(),
    " FROM holds WHERE org_id = $1 AND campaign_id = $2 AND id = \
     COALESCE((SELECT id FROM holds WHERE id = $3), (SELECT id FROM holds WHERE idem_key = $4))"
);
