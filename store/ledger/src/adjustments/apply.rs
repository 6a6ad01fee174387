//! An adjustment's writes, in one database transaction: its record, and when it is applied its
//! transaction (`Posting`): a credit is a lot of its own, as an earn's (the wallet's balance,
//! lifetime earnings, tier and next expiry move under its lock); a debit is a burn's debit
//! (`Debit`), oldest lots first, never below the campaign's minimum balance.

use chrono::{DateTime, Utc};
use serde_json::json;

use super::record::{
    Adjusted, Adjustment, AdjustmentRow, AdjustmentStatus, adjustment_columns, adjustment_from_row,
};
use crate::backend::{Steps, Tx};
use crate::burn::{Debit, Debited};
use crate::common::ids::Fingerprint;
use crate::credit::{SET_ASIDE, sooner};
use crate::transactions::{INSERT_TRANSACTION, transaction_created, unsum};
use crate::{Campaign, Policy, StoreError, Tokens, Transaction, TransactionKind};

/// A new adjustment (`$1`..`$19`, in `adjustment_columns!` order but for the org, `$19`),
/// unless its `external_id` is taken in the organisation.
const INSERT: &str = "INSERT INTO adjustments (id, campaign_id, wallet_id, amount, reason, \
     comment, external_id, batch_id, status, requested_name, requested_by, decided_name, \
     decided_by, decided_at, note, transaction_id, created_at, fingerprint, org_id) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19) ON CONFLICT DO NOTHING";
/// The organisation's (`$1`) adjustment under the requester's key `$2`.
const BY_KEY: &str = concat!(
    "SELECT ",
    adjustment_columns!(),
    " FROM adjustments WHERE org_id = $1 AND external_id = $2"
);
/// Pending adjustment `$1` decided: its status, who decided and when, why, its transaction.
const DECIDE: &str = "UPDATE adjustments SET status = $2, decided_name = $3, decided_by = $4, \
     decided_at = $5, note = $6, transaction_id = $7 WHERE id = $1 AND status = 'pending'";
/// A credit of `$2` micro-tokens to wallet `$1` at `$3` by a lot dated then that expires at
/// `$4` (NULL: never), unless its balance and pending or its lifetime total would pass `$5`
/// (`Tokens::MAX`): its spending position.
const CREDIT: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, earned = earned + $2, updated_at = $3, \
     earned_at = $3, expires_next = ",
    sooner!("$4"),
    ", tier_id = ",
    tier_for!("wallets.earned + $2"),
    ", ",
    unsum!("$3"),
    " WHERE id = $1 AND balance + pending <= $5 - $2 AND earned <= $5 - $2 \
     RETURNING fifo_date, fifo_id"
);

/// The transaction that applies an adjustment, and what writing it needs.
pub(super) struct Posting {
    pub transaction: Transaction,
    campaign: Campaign,
    min_balance: Tokens,
    /// A credit's expiry, as the campaign's policy sets it for an earn dated now.
    expires_at: Option<DateTime<Utc>>,
}

impl Posting {
    /// The EARN (a credit) or BURN (a debit) of `adjustment` on its wallet, in `currency`, at
    /// `at`, under `policy`.
    pub fn new(
        campaign: &Campaign,
        adjustment: &Adjustment,
        currency: String,
        policy: &Policy,
        at: DateTime<Utc>,
    ) -> Posting {
        let amount = adjustment.amount.micros();
        let kind = if amount > 0 {
            TransactionKind::Earn
        } else {
            TransactionKind::Burn
        };
        let key = format!("adjustment:{}", adjustment.id);
        let meta = json!({"adjustment": {
            "id": adjustment.id,
            "reason": adjustment.reason,
            "requestedBy": adjustment.requested_by,
            "approvedBy": adjustment.decided_by,
        }});
        let transaction = Transaction::new(
            kind,
            adjustment.wallet_id.clone(),
            Tokens::from_micros(amount.abs()),
            key,
            currency,
            at,
        )
        .saying(
            Some(format!("Manual adjustment ({})", adjustment.reason)),
            Some(adjustment.comment.clone()),
            Some(meta),
        );
        Posting {
            transaction,
            campaign: campaign.clone(),
            min_balance: policy.min_balance,
            expires_at: policy.expires_at(at, Some(0)),
        }
    }

    /// Writes the transaction and moves its wallet.
    async fn write<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let t = &self.transaction;
        let fingerprint = Fingerprint::of(&["adjustment"], vec![json!(t.external_id)]);
        if t.kind == TransactionKind::Burn {
            let debit = Debit::new(&self.campaign, t.clone(), fingerprint, self.min_balance);
            return match debit.write_in(tx, false).await? {
                Debited::Made => Ok(()),
                Debited::Earlier(_) | Debited::Refused(_) => Err(StoreError::NotCommitted(
                    format!("the key of adjustment {} was taken", t.id),
                )),
            };
        }
        let (wallet, amount) = (&t.wallet_id, t.amount.micros());
        let ceiling = Tokens::MAX.micros();
        let args = params![wallet, amount, t.created_at, self.expires_at, ceiling];
        type Position = (Option<DateTime<Utc>>, Option<String>);
        let Some((fifo_date, fifo_id)): Option<Position> = tx.row(CREDIT, args).await? else {
            return Err(StoreError::refused(
                "balance_ceiling",
                Some("amount".into()),
                format!("the wallet would hold more than {} tokens", Tokens::MAX),
            ));
        };
        let (org, campaign) = (&self.campaign.org_id, &self.campaign.id);
        let mut entry = t.entry(org, campaign, &fingerprint.text);
        entry.expires_at = self.expires_at;
        let key = entry.idem_key();
        if tx
            .execute(INSERT_TRANSACTION, &entry.args(&key, None))
            .await?
            == 0
        {
            return Err(StoreError::NotCommitted(format!(
                "the key of adjustment {} was taken",
                t.id
            )));
        }
        // Behind the wallet's spending position (it spent tokens dated later): a lot of its own.
        if let Some(at) = fifo_date.zip(fifo_id)
            && (&t.date, t.id.as_str()) < (&at.0, at.1.as_str())
        {
            let args = params![t.id, wallet, t.date, amount, self.expires_at];
            tx.execute(SET_ASIDE, args).await?;
        }
        transaction_created(tx, org, campaign, t).await
    }
}

/// A new adjustment's record, and its transaction when it is applied at once.
pub(super) struct Recording {
    pub org_id: String,
    pub adjustment: Adjustment,
    pub fingerprint: Fingerprint,
    pub posting: Option<Posting>,
}

impl Steps for Recording {
    type Output = Result<Adjusted, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        let a = &self.adjustment;
        let amount = a.amount.micros();
        let args = params![
            a.id,
            a.campaign_id,
            a.wallet_id,
            amount,
            a.reason,
            a.comment,
            a.external_id,
            a.batch_id,
            a.status,
            a.requested_by,
            a.requested_by_id,
            a.decided_by,
            a.decided_by_id,
            a.decided_at,
            a.note,
            a.transaction_id,
            a.created_at,
            self.fingerprint.text,
            self.org_id
        ];
        if tx.execute(INSERT, args).await? == 0 {
            // Its key holds an adjustment: this request's (its answer) or another's.
            let row: Option<AdjustmentRow> =
                tx.row(BY_KEY, params![self.org_id, a.external_id]).await?;
            let row = row.ok_or(StoreError::Conflict {
                field: "externalId",
            })?;
            if let Err(_differs) = self.fingerprint.matches(&row.fingerprint) {
                return Ok(Err(self
                    .fingerprint
                    .conflict("externalId", &row.fingerprint)));
            }
            return Ok(Ok(Adjusted {
                adjustment: adjustment_from_row(row)?,
                replayed: true,
            }));
        }
        if let Some(posting) = self.posting {
            posting.write(tx).await?;
        }
        Ok(Ok(Adjusted {
            adjustment: self.adjustment,
            replayed: false,
        }))
    }
}

/// A pending adjustment approved (with its transaction) or rejected.
pub(super) struct Deciding {
    /// As it is to be: who decided filled in.
    pub adjustment: Adjustment,
    pub at: DateTime<Utc>,
    /// Approved: its transaction.
    pub posting: Option<Posting>,
}

impl Steps for Deciding {
    type Output = Result<Adjustment, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        let mut a = self.adjustment;
        a.status = match self.posting {
            Some(_) => AdjustmentStatus::Applied,
            None => AdjustmentStatus::Rejected,
        };
        a.decided_at = Some(self.at);
        a.transaction_id = self.posting.as_ref().map(|p| p.transaction.id.clone());
        let args = params![
            a.id,
            a.status,
            a.decided_by,
            a.decided_by_id,
            a.decided_at,
            a.note,
            a.transaction_id
        ];
        if tx.execute(DECIDE, args).await? == 0 {
            // Another operator decided it meanwhile.
            return Ok(Err(StoreError::refused(
                "not_pending",
                None,
                "the adjustment was decided meanwhile".into(),
            )));
        }
        if let Some(posting) = self.posting {
            posting.write(tx).await?;
        }
        Ok(Ok(a))
    }
}
