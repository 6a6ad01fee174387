//! Corrections: a REVERSAL takes back what an earn credited (a return, whole or in part), a
//! REFUND gives back what a burn spent. Each is a transaction of its own that names what it
//! corrects (`corrects`); the original is never changed. One operation makes either, as the
//! kind of the transaction it names says (`reversal.rs`, `refund.rs`), under the wallet's lock,
//! idempotent by its `externalId`: corrections share one set of ids in an organisation.

use std::sync::{Arc, OnceLock};

use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};
use serde_json::{Value, json};

use crate::backend::{PgTx, SqliteTx, Work};
use crate::common::ids::{Fingerprint, new_id, now};
use crate::ledger::burn::{Debiting, position, repay};
use crate::ledger::transactions::{
    INSERT_TRANSACTION, SELECT_BY_KEY, TransactionRow, idem_key_of, replay_or_conflict,
};
use crate::{Campaign, Shortfall, Store, StoreError, Tokens, Transaction, TransactionKind};

mod refund;
mod reversal;

#[derive(Debug, Clone)]
pub struct NewCorrection {
    /// The EARN to reverse or the BURN to refund (its transaction id).
    pub transaction_id: String,
    /// The client's id for this correction: unique among the organisation's corrections.
    pub external_id: String,
    /// EARN: the value of the purchase returned (`None`: all of it not reversed yet); BURN: the
    /// tokens given back (`None`: all the burn spent not refunded yet).
    pub amount: Option<Decimal>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

impl NewCorrection {
    /// The request as sent: the same again is a replay, another under the same `externalId` a
    /// conflict naming the first field that differs.
    fn fingerprint(&self) -> Fingerprint {
        const FIELDS: &[&str] = &["id", "amount", "description", "comment", "meta"];
        let values = vec![
            json!(self.transaction_id),
            json!(self.amount.map(|a| a.normalize().to_string())),
            json!(self.description),
            json!(self.comment),
            json!(self.meta),
        ];
        Fingerprint::of(FIELDS, values)
    }
}

/// A correction's result: its transaction, and whether an earlier identical request made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Corrected {
    pub transaction: Transaction,
    pub replayed: bool,
}

/// Corrections (scope: `&Campaign`).
impl Store {
    /// Reverses the EARN or refunds the BURN `correction.transaction_id`. `NotFound` for a
    /// transaction the campaign does not hold; `Invalid` for an amount that is not more than 0
    /// (or, for a burn, has more than 6 decimals); `Refused` with `not_correctable`,
    /// `reversal_exceeds_earn`, `reversal_shortfall` (the campaign's shortfall policy is
    /// `refuse`), `refund_exceeds_burn`, `lots_unknown`, or `already_exists` (naming the first field that differs) for an `externalId` used for
    /// another request; the earlier correction (`replayed`) for the same one.
    pub async fn correct(
        &self,
        campaign: &Campaign,
        correction: NewCorrection,
    ) -> Result<Corrected, StoreError> {
        let original = self
            .get_transaction(campaign, &correction.transaction_id)
            .await?;
        let origin = Origin::default();
        self.correct_original(campaign, original, correction, origin)
            .await
    }

    /// `correct` of the transaction `original` (named by `correction.transaction_id`), made as
    /// `origin` says.
    pub(crate) async fn correct_original(
        &self,
        campaign: &Campaign,
        original: Transaction,
        correction: NewCorrection,
        origin: Origin<'_>,
    ) -> Result<Corrected, StoreError> {
        if correction.amount.is_some_and(|a| a <= Decimal::ZERO) {
            return Err(StoreError::invalid("amount", "must be more than 0"));
        }
        let what = match original.kind {
            TransactionKind::Earn => What::Reversal {
                // Only a part of what is left needs the campaign's rounding.
                rules: match correction.amount {
                    Some(_) => Some(self.rules_of(campaign, original.rule_version).await?),
                    None => None,
                },
                shortfall: self.policy(campaign).await?.shortfall,
            },
            TransactionKind::Burn => What::Refund {
                tokens: correction
                    .amount
                    .map(Tokens::from_decimal)
                    .transpose()
                    .map_err(|why| StoreError::invalid("amount", why))?,
            },
            other => {
                return Err(StoreError::refused(
                    "not_correctable",
                    Some("id".into()),
                    format!(
                        "transaction {} is {other}: only an EARN (reversed) or a BURN \
                         (refunded) is corrected",
                        original.id
                    ),
                ));
            }
        };
        let fingerprint = correction.fingerprint();
        let Origin { batch_id, date } = origin;
        self.write(Correcting {
            campaign: campaign.clone(),
            correction,
            original,
            what,
            fingerprint,
            batch_id: batch_id.map(String::from),
            date,
        })
        .await
    }

    /// The rule set that decided an earn (`version`; `None`: the default), for its rounding:
    /// compiled once a second at most (a version never changes).
    async fn rules_of(
        &self,
        campaign: &Campaign,
        version: Option<i64>,
    ) -> Result<Arc<RuleSet>, StoreError> {
        static DEFAULT: OnceLock<Arc<RuleSet>> = OnceLock::new();
        let Some(version) = version else {
            return Ok(DEFAULT
                .get_or_init(|| Arc::new(RuleSet::one_per_unit()))
                .clone());
        };
        let key = format!("{}:{version}", campaign.id);
        if let Some(rules) = self.caches.rule_sets.get(&key) {
            return Ok(rules);
        }
        let stored = self
            .rule_set_of(&campaign.org_id, &campaign.id, Some(version))
            .await?;
        let rules = Arc::new(RuleSet::parse(&stored.source).map_err(StoreError::InvalidRules)?);
        self.caches.rule_sets.put(&key, rules.clone());
        Ok(rules)
    }
}

/// A refund of `tokens` of `burn` made by the store's own work inside its transaction `tx` (an
/// order's cancelled lines): `correction` says its key and words, `campaign` holds the burn.
pub(crate) async fn refund_within(
    tx: &mut impl Debiting,
    campaign: &Campaign,
    burn: Transaction,
    correction: NewCorrection,
    tokens: Tokens,
) -> Result<Corrected, StoreError> {
    let fingerprint = correction.fingerprint();
    let correcting = Correcting {
        campaign: campaign.clone(),
        correction,
        original: burn,
        what: What::Refund {
            tokens: Some(tokens),
        },
        fingerprint,
        batch_id: None,
        date: None,
    };
    correcting.run(tx).await
}

/// What a correction does, by the kind of the transaction it corrects.
enum What {
    Reversal {
        /// The earn's rule set, when a part of it is returned.
        rules: Option<Arc<RuleSet>>,
        shortfall: Shortfall,
    },
    Refund {
        tokens: Option<Tokens>,
    },
}

/// Where a correction comes from: a batch file's row (its batch, and the date the file gives
/// the return), or a request (`default`: dated when written).
#[derive(Default)]
pub(crate) struct Origin<'a> {
    pub batch_id: Option<&'a str>,
    pub date: Option<DateTime<Utc>>,
}

/// What a correction moved: written as its transaction by `Correcting`.
struct Moved {
    /// Micro-tokens the balance moved by.
    amount: i64,
    /// REVERSAL: the value returned (exact decimal text).
    source_amount: Option<String>,
    /// REVERSAL: micro-tokens taken off the earn the wallet did not pay (`Shortfall::Clip`).
    forgiven: Option<i64>,
    /// What it took from (reversal) or gave back to (refund) each earn's lot.
    lots: Vec<(String, i64)>,
}

struct Correcting {
    campaign: Campaign,
    correction: NewCorrection,
    original: Transaction,
    what: What,
    fingerprint: Fingerprint,
    /// The batch file whose row asked for it.
    batch_id: Option<String>,
    /// When absent, now.
    date: Option<DateTime<Utc>>,
}

/// The wallet's position and what it owes, read under its lock.
const WALLET: &str = "SELECT fifo_date, fifo_id, fifo_taken, owed FROM wallets WHERE id = $1";
type WalletRow = (Option<DateTime<Utc>>, Option<String>, i64, i64);
const LINK: &str = "UPDATE transactions SET corrects = $2, forgiven = $3 WHERE id = $1";
const LOT: &str = "INSERT INTO spends (transaction_id, earn_id, amount) VALUES ($1, $2, $3)";

impl Correcting {
    async fn run(&self, tx: &mut impl Debiting) -> Result<Corrected, StoreError> {
        let (c, r, o) = (&self.campaign, &self.correction, &self.original);
        let (date, id, taken, owed): WalletRow = tx
            .row_locked(WALLET, params![o.wallet_id])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        // Under the wallet's lock, twins of one request come one after the other.
        let key = idem_key_of(&c.org_id, "CORRECTION", &r.external_id);
        if let Some(earlier) = tx
            .row::<TransactionRow>(SELECT_BY_KEY, params![key])
            .await?
        {
            let transaction = replay_or_conflict(earlier, &self.fingerprint)?;
            return Ok(Corrected {
                transaction,
                replayed: true,
            });
        }
        let at = position((date, id, taken));
        let (kind, made) = match &self.what {
            What::Reversal { rules, shortfall } => {
                // A debt is paid before the reversal takes anything (see `burn::repay`).
                let at = match owed {
                    0 => at,
                    owed => repay(tx, &o.wallet_id, at, owed).await?,
                };
                let returned = reversal::Returned {
                    earn: o,
                    value: r.amount,
                    rules: rules.as_deref(),
                    shortfall: *shortfall,
                };
                let made = returned.take_back(tx, at).await?;
                (TransactionKind::Reversal, made)
            }
            What::Refund { tokens } => {
                let made = refund::give_back(tx, o, at, *tokens).await?;
                (TransactionKind::Refund, made)
            }
        };
        let transaction = Transaction {
            id: new_id(),
            wallet_id: o.wallet_id.clone(),
            kind,
            amount: Tokens::from_micros(made.amount),
            external_id: Some(r.external_id.clone()),
            source_amount: made.source_amount,
            currency: o.currency.clone(),
            description: r.description.clone(),
            comment: r.comment.clone(),
            meta: r.meta.clone(),
            date: self.date.unwrap_or_else(now),
            trace: None,
            rule_version: None,
            created_at: now(),
            corrects: Some(o.id.clone()),
            corrected: Tokens::ZERO,
        };
        let mut entry = transaction.entry(&c.org_id, &c.id, &self.fingerprint.text);
        entry.batch_id = self.batch_id.as_deref();
        tx.execute(INSERT_TRANSACTION, &entry.args(&key, None))
            .await?;
        // The link is written beside the entry every path shares.
        tx.execute(LINK, params![transaction.id, o.id, made.forgiven])
            .await?;
        for (earn, amount) in &made.lots {
            tx.execute(LOT, params![transaction.id, earn, amount])
                .await?;
        }
        Ok(Corrected {
            transaction,
            replayed: false,
        })
    }
}

impl Work for Correcting {
    type Output = Corrected;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Plan;
    use crate::ledger::transactions::SELECT_BY_ID;

    /// A transaction read with what its corrections took or gave back, and the reversals of an
    /// earn, find the corrections through the index of `corrects`, never by a scan.
    async fn corrections_are_found_through_their_index(store: Store) {
        for sql in [SELECT_BY_ID, reversal::REVERSED, refund::GIVEN] {
            let plan = store
                .query_plan(sql, params![Some("t")], None, Plan::SortsPricedOut)
                .await;
            assert!(plan.contains("transactions_corrects"), "{sql}:\n{plan}");
        }
    }

    crate::backend_tests!(corrections_are_found_through_their_index);
}
