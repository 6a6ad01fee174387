//! An earn's records: the earn as submitted, its request as stored and claimed, what crediting
//! it takes and what became of it; what the earn's path, its evaluation and the check of an
//! earlier earn under the same id share.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::sync::Arc;

use rules::RuleSet;

use crate::Tokens;

/// An earn as submitted: what the rules need and what the transaction keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarnInput {
    /// The client's id for this earn: unique in the organisation.
    pub earn_id: String,
    /// The wallet's id or external reference.
    pub wallet: String,
    /// The value of the transaction, as exact decimal text.
    pub amount: String,
    pub date: DateTime<Utc>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
    /// The type of the member's activity this earn awards (its `meta` then holds the
    /// activity's attributes): rules with `on = "activity"` evaluate it, the others not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub activity: Option<String>,
}

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EarnStatus ("earn status") {
        Accepted = "accepted",
        Processing = "processing",
        Completed = "completed",
        Rejected = "rejected",
        Duplicate = "duplicate",
    }
}

/// An earn whose wallet was found, ready to be stored.
#[derive(Debug, Clone)]
pub struct PendingEarn {
    pub org_id: String,
    pub campaign_id: String,
    pub wallet_id: String,
    pub earn: EarnInput,
}

/// An earn request and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarnRequest {
    pub id: String,
    pub earn_id: String,
    pub wallet_id: String,
    pub status: EarnStatus,
    /// Why it was rejected.
    pub reason: Option<String>,
    /// The EARN transaction (completed), or the earlier one with the same id (duplicate).
    pub transaction_id: Option<String>,
    pub tokens: Option<Tokens>,
    /// completed: what each rule contributed (the compact trace kept with the transaction).
    pub trace: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What the rules know of a wallet when an earn is evaluated.
#[derive(Debug, Clone)]
pub struct WalletContext {
    /// Micro-tokens, before this earn.
    pub balance: i64,
    /// Lifetime earnings, micro-tokens, before this earn.
    pub earned: i64,
    pub tier: Option<String>,
    /// The owning member's status.
    pub status: String,
    pub currency: String,
    /// The owning member's id (whose uses a `member` limit counts).
    pub member_id: String,
}

/// What a credit of a limited rule set is evaluated again with, in the write's transaction
/// (see `counters`).
#[derive(Debug, Clone)]
pub struct Limited {
    pub rules: Arc<RuleSet>,
    /// Its wallet as the first evaluation saw it.
    pub wallet: WalletContext,
}

/// What the ledger records for one evaluated earn.
#[derive(Debug, Clone)]
pub struct Credit {
    pub org_id: String,
    pub campaign_id: String,
    pub earn: EarnInput,
    pub wallet_id: String,
    /// The wallet's currency, kept on the transaction.
    pub currency: String,
    pub tokens: Tokens,
    pub trace: String,
    pub rule_version: Option<i64>,
    /// `earn.meta` as JSON text, written once where the credit is evaluated (in parallel for a
    /// file's rows) rather than on the writer's time.
    pub meta_text: Option<String>,
    /// The API request to mark completed or duplicate with the credit, if the earn came so.
    pub request_id: Option<String>,
    /// The batch file the earn came from, if it came so.
    pub batch_id: Option<String>,
    /// The days its tokens stay pending, as its rules said (None: as the campaign's policy
    /// says).
    pub pending_days: Option<u32>,
    /// Under a limited rule set: what the write evaluates it again with, under its counters
    /// (see the crate's `counters`); `tokens` is then what it would earn with nothing used.
    pub limited: Option<Box<Limited>>,
    /// Credited as new, it converts its wallet owner's pending referral: an earn (not an
    /// activity's award) in a campaign whose rules name no activity for that.
    pub converts_referral: bool,
}

/// The outcome of crediting: the new transaction, or the earlier one holding the earn id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credited {
    New {
        transaction_id: String,
    },
    Duplicate {
        transaction_id: Option<String>,
        /// The batch the earlier transaction came from.
        batch_id: Option<String>,
        /// The first field in which the earlier earn is another one (`already_exists`).
        differs: Option<&'static str>,
    },
}

impl events::Payload for EarnRequest {
    const RECORD: &'static str = "earn";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}
