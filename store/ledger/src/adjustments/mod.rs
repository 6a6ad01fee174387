//! Manual adjustments: tokens an operator credits or debits by hand, each with a reason code and
//! a comment, recorded as a transaction of its own that names the adjustment (an EARN for a
//! credit, a BURN for a debit, under the key `adjustment:<id>`: its description says the reason,
//! its comment is the operator's, its meta holds the adjustment's id, reason and who asked and
//! approved), so the member's history says why the points moved.
//!
//! How much the one who asks may adjust is the caller's to say (`AdjustmentRules`: the limit of
//! the requester's role per adjustment, and the threshold above which a second operator must
//! approve); the checks are here, the same for the command line and the admin API. An
//! adjustment over the threshold waits (`pending`) until another operator approves it (it is
//! applied then) or someone rejects it; the one who asked cannot approve it. Bulk adjustments
//! (`bulk.rs`) are rows of the same requests, checked first and then made one by one.

mod apply;
pub mod bulk;
mod record;

use chrono::{DateTime, Utc};
use serde_json::json;

use crate::common::ids::{Fingerprint, new_id};
use crate::{Campaign, Ledger, Page, Paged, StoreError, Tokens};
use apply::{Deciding, Posting, Recording};
pub use record::{Adjusted, Adjustment, AdjustmentStatus, Reason};
use record::{AdjustmentRow, adjustment_columns, adjustment_from_row};

/// The longest comment (or rejection note) an adjustment takes.
pub const MAX_COMMENT: usize = crate::limits::MAX_TEXT;

/// Who asks for, approves or rejects an adjustment: an operator (its id), or the command line
/// on the server (`local:` and the OS user).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requester {
    pub id: String,
    /// What the adjustment shows of it: the operator's e-mail, or the OS user.
    pub name: String,
}

impl Requester {
    /// The command line on the server, run by the OS user `user`.
    pub fn local(user: &str) -> Requester {
        Requester {
            id: format!("local:{user}"),
            name: user.to_owned(),
        }
    }
}

/// How much one who asks (or approves) may adjust: at most `limit` tokens either way per
/// adjustment (None: no limit), and an adjustment of more than `approval_over` waits for a
/// second operator (None: none waits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AdjustmentRules {
    pub limit: Option<Tokens>,
    pub approval_over: Option<Tokens>,
}

impl AdjustmentRules {
    /// `over_limit` (naming `amount`) when `amount` is more than the limit either way.
    fn check_limit(&self, amount: Tokens) -> Result<(), StoreError> {
        match self.limit {
            Some(limit) if amount.micros().unsigned_abs() > limit.micros().unsigned_abs() => {
                Err(StoreError::refused(
                    "over_limit",
                    Some("amount".into()),
                    format!("your role may adjust at most {limit} tokens at a time"),
                ))
            }
            _ => Ok(()),
        }
    }

    fn needs_approval(&self, amount: Tokens) -> bool {
        self.approval_over
            .is_some_and(|over| amount.micros().unsigned_abs() > over.micros().unsigned_abs())
    }
}

/// An adjustment asked for.
#[derive(Debug, Clone)]
pub struct NewAdjustment {
    /// The wallet's id or external reference.
    pub wallet: String,
    /// More than 0 credits, less than 0 debits.
    pub amount: Tokens,
    pub reason: Reason,
    pub comment: String,
    /// The requester's key for it, unique among the organisation's adjustments: the same
    /// request again answers the first; another under the key is refused.
    pub external_id: Option<String>,
}

/// Filters of the adjustment list.
#[derive(Debug, Clone, Default)]
pub struct AdjustmentFilter {
    pub status: Option<AdjustmentStatus>,
    /// A wallet id (a reference is resolved by the caller).
    pub wallet_id: Option<String>,
    pub batch_id: Option<String>,
}

const SELECT_IN_CAMPAIGN: &str = concat!(
    "SELECT ",
    adjustment_columns!(),
    " FROM adjustments WHERE id = $1 AND campaign_id = $2"
);

/// The fingerprint of an adjustment's request: what a repeat under its key must match.
fn fingerprint_of(wallet_id: &str, new: &NewAdjustment) -> Fingerprint {
    Fingerprint::of(
        &["walletId", "amount", "reason", "comment"],
        vec![
            json!(wallet_id),
            json!(new.amount.micros()),
            json!(new.reason.as_str()),
            json!(new.comment),
        ],
    )
}

/// The checks of a request that need nothing stored: its comment, amount and key, and the
/// requester's limit.
pub(crate) fn check_request(
    new: &NewAdjustment,
    rules: &AdjustmentRules,
) -> Result<(), StoreError> {
    crate::limits::text(&new.comment, MAX_COMMENT)
        .map_err(|refused| StoreError::invalid("comment", refused.message()))?;
    if new.amount.micros() == 0 {
        return Err(StoreError::invalid("amount", "must not be 0"));
    }
    if let Some(key) = &new.external_id {
        crate::limits::id(key)
            .map_err(|refused| StoreError::invalid("externalId", refused.message()))?;
    }
    rules.check_limit(new.amount)
}

/// Manual adjustments of a campaign's wallets (scope: `&Campaign`).
impl Ledger {
    /// Adjusts a wallet by `new.amount` for `requester` within `rules`: applied at once, or
    /// pending when over the approval threshold. `Invalid` naming `comment`, `amount` or
    /// `externalId`; `Refused`: `over_limit` (naming `amount`), `already_exists` (naming the
    /// first field that differs) for an `externalId` used for another adjustment;
    /// `InsufficientBalance` for a debit the wallet cannot cover; `NotFound` for the wallet.
    #[tracing::instrument(skip_all)]
    pub async fn adjust(
        &self,
        campaign: &Campaign,
        new: NewAdjustment,
        requester: &Requester,
        rules: &AdjustmentRules,
    ) -> Result<Adjusted, StoreError> {
        self.adjust_in_batch(campaign, new, requester, rules, None)
            .await
    }

    pub(crate) async fn adjust_in_batch(
        &self,
        campaign: &Campaign,
        new: NewAdjustment,
        requester: &Requester,
        rules: &AdjustmentRules,
        batch_id: Option<&str>,
    ) -> Result<Adjusted, StoreError> {
        check_request(&new, rules)?;
        let wallet = self.get_wallet(campaign, &new.wallet).await?;
        let fingerprint = fingerprint_of(&wallet.id, &new);
        let at = self.now();
        let pending = rules.needs_approval(new.amount);
        let mut adjustment = Adjustment {
            id: new_id(),
            campaign_id: campaign.id.clone(),
            wallet_id: wallet.id.clone(),
            amount: new.amount,
            reason: new.reason,
            comment: new.comment,
            external_id: new.external_id,
            batch_id: batch_id.map(str::to_owned),
            status: AdjustmentStatus::Pending,
            requested_by: requester.name.clone(),
            requested_by_id: requester.id.clone(),
            decided_by: None,
            decided_by_id: None,
            decided_at: None,
            note: None,
            transaction_id: None,
            created_at: at,
        };
        let posting = if pending {
            None
        } else {
            let posting = self
                .posting(campaign, &adjustment, wallet.currency, at)
                .await?;
            adjustment.status = AdjustmentStatus::Applied;
            adjustment.transaction_id = Some(posting.transaction.id.clone());
            Some(posting)
        };
        let recording = Recording {
            org_id: campaign.org_id.clone(),
            adjustment,
            fingerprint,
            posting,
        };
        self.write(recording).await?
    }

    /// The transaction that applies `adjustment` to its wallet (in `currency`) at `at`.
    async fn posting(
        &self,
        campaign: &Campaign,
        adjustment: &Adjustment,
        currency: String,
        at: DateTime<Utc>,
    ) -> Result<Posting, StoreError> {
        let policy = self.programme().policy(campaign).await?;
        Ok(Posting::new(campaign, adjustment, currency, &policy, at))
    }

    /// Approves the campaign's pending adjustment `id` for `approver` within its `rules`, and
    /// applies it. `Refused`: `own_request` when the approver asked for it, `over_limit`
    /// (naming `amount`) when it is over the approver's limit, `not_pending` when it was
    /// approved or rejected before; `InsufficientBalance` for a debit the wallet cannot cover
    /// now (it stays pending).
    #[tracing::instrument(skip_all)]
    pub async fn approve_adjustment(
        &self,
        campaign: &Campaign,
        id: &str,
        approver: &Requester,
        rules: &AdjustmentRules,
    ) -> Result<Adjustment, StoreError> {
        let mut adjustment = self.get_adjustment(campaign, id).await?;
        not_decided(&adjustment)?;
        if adjustment.requested_by_id == approver.id {
            return Err(StoreError::refused(
                "own_request",
                None,
                "an adjustment is approved by another operator than the one who asked for it"
                    .into(),
            ));
        }
        rules.check_limit(adjustment.amount)?;
        let wallet = self.get_wallet(campaign, &adjustment.wallet_id).await?;
        let at = self.now();
        adjustment.decided_by = Some(approver.name.clone());
        adjustment.decided_by_id = Some(approver.id.clone());
        let posting = self
            .posting(campaign, &adjustment, wallet.currency, at)
            .await?;
        let deciding = Deciding {
            adjustment,
            at,
            posting: Some(posting),
        };
        self.write(deciding).await?
    }

    /// Rejects the campaign's pending adjustment `id` (`note`: why), for `decider` (who may be
    /// the one who asked: a request withdrawn). `Refused` `not_pending` when it was approved or
    /// rejected before.
    #[tracing::instrument(skip_all)]
    pub async fn reject_adjustment(
        &self,
        campaign: &Campaign,
        id: &str,
        decider: &Requester,
        note: Option<String>,
    ) -> Result<Adjustment, StoreError> {
        if let Some(note) = &note {
            crate::limits::text(note, MAX_COMMENT)
                .map_err(|refused| StoreError::invalid("note", refused.message()))?;
        }
        let mut adjustment = self.get_adjustment(campaign, id).await?;
        not_decided(&adjustment)?;
        adjustment.decided_by = Some(decider.name.clone());
        adjustment.decided_by_id = Some(decider.id.clone());
        adjustment.note = note;
        let deciding = Deciding {
            adjustment,
            at: self.now(),
            posting: None,
        };
        self.write(deciding).await?
    }

    /// The campaign's adjustment `id`.
    #[tracing::instrument(skip_all)]
    pub async fn get_adjustment(
        &self,
        campaign: &Campaign,
        id: &str,
    ) -> Result<Adjustment, StoreError> {
        let row: Option<AdjustmentRow> = self
            .read_row(SELECT_IN_CAMPAIGN, params![id, campaign.id])
            .await?;
        row.ok_or(StoreError::NotFound { what: "adjustment" })
            .and_then(adjustment_from_row)
    }

    /// The fingerprint of the request the organisation's adjustment under key `key` was made
    /// by, if there is one.
    async fn adjustment_fingerprint(
        &self,
        campaign: &Campaign,
        key: &str,
    ) -> Result<Option<String>, StoreError> {
        const SQL: &str =
            "SELECT fingerprint FROM adjustments WHERE org_id = $1 AND external_id = $2";
        let row: Option<(String,)> = self.read_row(SQL, params![campaign.org_id, key]).await?;
        Ok(row.map(|(f,)| f))
    }

    /// The campaign's adjustments, newest first, filtered.
    #[tracing::instrument(skip_all)]
    pub async fn list_adjustments(
        &self,
        campaign: &Campaign,
        filter: &AdjustmentFilter,
        page: Page,
    ) -> Result<Paged<Adjustment>, StoreError> {
        let status = filter.status.map(AdjustmentStatus::as_str);
        let rows = self
            .read_page(
                page,
                adjustment_columns!(),
                "FROM adjustments WHERE campaign_id = $1 AND ($2 IS NULL OR status = $2) \
                 AND ($3 IS NULL OR wallet_id = $3) AND ($4 IS NULL OR batch_id = $4)",
                "created_at DESC, id DESC",
                params![campaign.id, status, filter.wallet_id, filter.batch_id],
            )
            .await?;
        Paged::of(rows, page, adjustment_from_row)
    }
}

/// `not_pending` for an adjustment approved or rejected before.
fn not_decided(adjustment: &Adjustment) -> Result<(), StoreError> {
    match adjustment.status {
        AdjustmentStatus::Pending => Ok(()),
        status => Err(StoreError::refused(
            "not_pending",
            None,
            format!("the adjustment is {status} already"),
        )),
    }
}
