//! An adjustment's record: its reason and status, the adjustment as stored and read back.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::error::known;
use crate::{StoreError, Tokens};

string_enum! {
    /// Why tokens were adjusted by hand.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Reason ("adjustment reason") {
        /// A gesture to the member (a complaint, a delay).
        Goodwill = "goodwill",
        /// Tokens the programme got wrong (a missed earn, a double credit).
        Correction = "correction",
        /// Tokens taken back from abuse.
        Fraud = "fraud",
        /// Balances brought over from another programme.
        Migration = "migration",
    }
}

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum AdjustmentStatus ("adjustment status") {
        /// Waiting for a second operator's approval.
        Pending = "pending",
        /// Its transaction is written.
        Applied = "applied",
        /// Refused by an operator: nothing was written to the wallet.
        Rejected = "rejected",
    }
}

// An adjustment as stored, and as the admin API answers it (`AdjustmentView`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = AdjustmentView))]
#[serde(rename_all = "camelCase")]
pub struct Adjustment {
    pub id: String,
    pub campaign_id: String,
    pub wallet_id: String,
    /// Tokens credited (more than 0) or debited (less than 0).
    #[cfg_attr(feature = "schema", schema(value_type = f64))]
    pub amount: Tokens,
    #[cfg_attr(feature = "schema", schema(value_type = String,
        example = "goodwill", pattern = "^(goodwill|correction|fraud|migration)$"))]
    pub reason: Reason,
    pub comment: String,
    /// The requester's key for it.
    pub external_id: Option<String>,
    /// The bulk file it came from.
    pub batch_id: Option<String>,
    #[cfg_attr(feature = "schema", schema(value_type = String,
        pattern = "^(pending|applied|rejected)$"))]
    pub status: AdjustmentStatus,
    /// Who asked: an operator's e-mail, or the OS user of the command line.
    pub requested_by: String,
    /// The operator's id (`local:` and the OS user for the command line).
    pub requested_by_id: String,
    /// Who approved or rejected it.
    pub decided_by: Option<String>,
    pub decided_by_id: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    /// Why it was rejected.
    pub note: Option<String>,
    /// applied: its EARN (a credit) or BURN (a debit).
    pub transaction_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

/// An adjustment made, and whether an earlier identical request made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Adjusted {
    pub adjustment: Adjustment,
    pub replayed: bool,
}

macro_rules! adjustment_columns {
    () => {
        "id, campaign_id, wallet_id, amount, reason, comment, external_id, batch_id, status, \
         requested_name, requested_by, decided_name, decided_by, decided_at, note, \
         transaction_id, created_at, fingerprint"
    };
}
pub(crate) use adjustment_columns;

row_struct! {
    /// The columns of `adjustment_columns!`, in order.
    pub(crate) struct AdjustmentRow {
        id: String,
        campaign_id: String,
        wallet_id: String,
        amount: i64,
        reason: String,
        comment: String,
        external_id: Option<String>,
        batch_id: Option<String>,
        status: String,
        requested_name: String,
        requested_by: String,
        decided_name: Option<String>,
        decided_by: Option<String>,
        decided_at: Option<DateTime<Utc>>,
        note: Option<String>,
        transaction_id: Option<String>,
        created_at: DateTime<Utc>,
        fingerprint: String,
    }
}

pub(crate) fn adjustment_from_row(r: AdjustmentRow) -> Result<Adjustment, StoreError> {
    Ok(Adjustment {
        reason: known(Reason::parse(&r.reason), "adjustments", "reason", &r.reason)?,
        status: known(
            AdjustmentStatus::parse(&r.status),
            "adjustments",
            "status",
            &r.status,
        )?,
        id: r.id,
        campaign_id: r.campaign_id,
        wallet_id: r.wallet_id,
        amount: Tokens::from_micros(r.amount),
        comment: r.comment,
        external_id: r.external_id,
        batch_id: r.batch_id,
        requested_by: r.requested_name,
        requested_by_id: r.requested_by,
        decided_by: r.decided_name,
        decided_by_id: r.decided_by,
        decided_at: r.decided_at,
        note: r.note,
        transaction_id: r.transaction_id,
        created_at: r.created_at,
    })
}
