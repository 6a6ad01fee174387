//! Corrections: a REVERSAL takes back what an earn credited (a return, whole or in part), a
//! REFUND gives back what a burn spent. Each is a transaction of its own that names what it
//! corrects (`corrects`); the original is never changed. One operation makes either, as the
//! kind of the transaction it names says (`reversal.rs`, `refund.rs`), under the wallet's lock,
//! idempotent by its `externalId`: corrections share one set of ids in an organisation.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};
use serde::Serialize;
use serde_json::Value;

use crate::backend::{Steps, Tx};
use crate::common::ids::Fingerprint;
use crate::pending::STILL_PENDING;
use crate::spend::{position, record_spends, repay};
use crate::transactions::{
    INSERT_TRANSACTION, SELECT_BY_KEY, TransactionRow, idem_key_of, replay_or_conflict, unsum,
};
use crate::{
    Campaign, Ledger, RuleBook, Shortfall, StoreError, Tokens, Transaction, TransactionKind,
};
use crate::{counters, refusals};

mod refund;
mod reversal;

/// Its serialization is what a repeat must match (`Fingerprint::of_request`): each field under
/// the name a client sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct NewCorrection {
    /// The EARN to reverse or the BURN to refund (its transaction id).
    #[serde(rename = "id")]
    pub transaction_id: String,
    /// The client's id for this correction: unique among the organisation's corrections.
    #[serde(skip)]
    pub external_id: String,
    /// EARN: the value of the purchase returned (`None`: all of it not reversed yet); BURN: the
    /// tokens given back (`None`: all the burn spent not refunded yet).
    #[serde(serialize_with = "normalized")]
    pub amount: Option<Decimal>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

/// An amount as its fingerprint keeps it: the decimal without trailing zeros, as text (`1.50`
/// and `1.5` are the same request).
fn normalized<S: serde::Serializer>(amount: &Option<Decimal>, s: S) -> Result<S::Ok, S::Error> {
    match amount {
        Some(amount) => s.serialize_some(&amount.normalize().to_string()),
        None => s.serialize_none(),
    }
}

/// The order a BURN pays, if it does: an order's payment (`order:<id>`) or the capture of the
/// hold paying one of its lines (`hold:order:<id>:<line>`).
fn order_paid_by(burn: &Transaction) -> Option<String> {
    crate::order_keys::paid_order(burn.external_id.as_deref()?).map(str::to_string)
}

/// A correction's result: its transaction, and whether an earlier identical request made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Corrected {
    pub transaction: Transaction,
    pub replayed: bool,
}

/// Corrections (scope: `&Campaign`).
impl Ledger {
    /// Reverses the EARN or refunds the BURN `correction.transaction_id`. `NotFound` for a
    /// transaction the campaign does not hold; `Invalid` for an amount that is not more than 0
    /// (or, for a burn, has more than 6 decimals); `Refused` with `not_correctable`,
    /// `reversal_exceeds_earn`, `reversal_shortfall` (the campaign's shortfall policy is
    /// `refuse`), `refund_exceeds_burn`, `lots_unknown`, or `already_exists` (naming the first field that differs) for an `externalId` used for
    /// another request; the earlier correction (`replayed`) for the same one.
    #[tracing::instrument(skip_all)]
    pub async fn correct(
        &self,
        campaign: &Campaign,
        correction: NewCorrection,
    ) -> Result<Corrected, StoreError> {
        let original = self
            .get_transaction(campaign, &correction.transaction_id)
            .await?;
        if original.kind == TransactionKind::Burn {
            // A refund's key is in the space of the service's own (an order's `cancel:`).
            crate::limits::check_client_key(&correction.external_id)?;
            if let Some(order) = order_paid_by(&original) {
                return Err(StoreError::refused(
                    "pays_order",
                    Some("id".into()),
                    format!(
                        "transaction {} pays order {order}: its tokens are given back by \
                         cancelling the order (its lines' codes are then voided)",
                        original.id
                    ),
                ));
            }
        }
        let origin = Origin::at(self.now());
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
        let what = self
            .what_corrects(campaign, &original, correction.amount)
            .await?;
        self.write(Correcting::new(
            campaign, original, correction, what, origin,
        ))
        .await?
    }

    /// What correcting `original` (of `campaign`) by `amount` does, read before its
    /// transaction: a reversal's rounding and shortfall policy, a refund's tokens. `Invalid`
    /// for an amount that is not more than 0 (or, for a burn, has more than 6 decimals);
    /// `Refused` (`not_correctable`) for a transaction neither an EARN nor a BURN.
    pub(crate) async fn what_corrects(
        &self,
        campaign: &Campaign,
        original: &Transaction,
        amount: Option<Decimal>,
    ) -> Result<What, StoreError> {
        if amount.is_some_and(|a| a <= Decimal::ZERO) {
            return Err(StoreError::invalid("amount", "must be more than 0"));
        }
        Ok(match original.kind {
            TransactionKind::Earn => {
                self.reversal(campaign, original.rule_version, amount)
                    .await?
            }
            TransactionKind::Burn => What::Refund {
                tokens: amount
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
        })
    }

    /// `what_corrects` of an earn its rule set's `version` decided.
    #[tracing::instrument(skip_all)]
    pub async fn reversal(
        &self,
        campaign: &Campaign,
        version: Option<i64>,
        amount: Option<Decimal>,
    ) -> Result<What, StoreError> {
        Ok(What::Reversal {
            // Only a part of what is left needs the campaign's rounding.
            rules: match amount {
                Some(_) => Some(self.rules_of(campaign, version).await?),
                None => None,
            },
            shortfall: self.programme().policy(campaign).await?.shortfall,
        })
    }

    /// The rule set that decided an earn (`version`; `None`: the default), for its rounding:
    /// compiled once per process (a version never changes).
    async fn rules_of(
        &self,
        campaign: &Campaign,
        version: Option<i64>,
    ) -> Result<Arc<RuleSet>, StoreError> {
        RuleBook::new(self.programme().clone())
            .version(&campaign.org_id, &campaign.id, version)
            .await
    }
}

/// A refund of `tokens` of `burn` made by the store's own work inside its transaction `tx` (an
/// order's cancelled lines): `correction` says its key and words, `campaign` holds the burn.
pub async fn refund_within(
    tx: &mut impl Tx,
    campaign: &Campaign,
    burn: Transaction,
    correction: NewCorrection,
    tokens: Tokens,
    at: DateTime<Utc>,
) -> Result<Corrected, StoreError> {
    let what = What::Refund {
        tokens: Some(tokens),
    };
    let correcting = Correcting::new(campaign, burn, correction, what, Origin::at(at));
    correcting.correct(tx).await
}

/// What a correction does, by the kind of the transaction it corrects.
pub enum What {
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
/// the return), or a request (`at`: dated when written).
pub struct Origin<'a> {
    pub batch_id: Option<&'a str>,
    pub date: Option<DateTime<Utc>>,
    /// When it is written, as the store's clock says.
    pub at: DateTime<Utc>,
}

impl Origin<'_> {
    /// A request's correction, written `at`.
    pub fn at(at: DateTime<Utc>) -> Origin<'static> {
        Origin {
            batch_id: None,
            date: None,
            at,
        }
    }
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

/// One correction, written inside a transaction its caller holds (`correct`), or as `Steps` of its
/// own.
pub struct Correcting {
    campaign: Campaign,
    correction: NewCorrection,
    original: Transaction,
    what: What,
    fingerprint: Fingerprint,
    /// The batch file whose row asked for it.
    batch_id: Option<String>,
    /// When absent, `at`.
    date: Option<DateTime<Utc>>,
    /// When it is written, as the store's clock says.
    at: DateTime<Utc>,
}

/// The wallet's position and what it owes, read under its lock.
const WALLET: &str = "SELECT fifo_date, fifo_id, fifo_taken, owed FROM wallets WHERE id = $1";
type WalletRow = (Option<DateTime<Utc>>, Option<String>, i64, i64);
const LINK: &str = "UPDATE transactions SET corrects = $2, forgiven = $3 WHERE id = $1";
/// Wallet `$1` has a transaction dated `$2` (see `unsum!`).
const UNSUM: &str = concat!("UPDATE wallets SET ", unsum!("$2"), " WHERE id = $1");

impl Correcting {
    pub fn new(
        campaign: &Campaign,
        original: Transaction,
        correction: NewCorrection,
        what: What,
        origin: Origin<'_>,
    ) -> Correcting {
        Correcting {
            campaign: campaign.clone(),
            fingerprint: Fingerprint::of_request(&correction),
            correction,
            original,
            what,
            batch_id: origin.batch_id.map(String::from),
            date: origin.date,
            at: origin.at,
        }
    }

    /// Whether it may be refused after it has written (a reversal the campaign refuses a
    /// shortfall for: the lots are taken before the shortfall is known): `run_keeping` then
    /// undoes its writes to a savepoint when it is.
    fn may_refuse_late(&self) -> bool {
        matches!(
            self.what,
            What::Reversal {
                shortfall: Shortfall::Refuse,
                ..
            }
        )
    }

    /// The correction's idempotency key: corrections share one set of ids.
    fn key(&self) -> Vec<u8> {
        let (org_id, external_id) = (&self.campaign.org_id, &self.correction.external_id);
        idem_key_of(org_id, "CORRECTION", external_id)
    }

    /// `correct`, keeping a refusal that `refusals` keeps: `Ok(Err(_))` for a refusal, with nothing
    /// of the correction written but the refusal kept (a late refusal's writes are undone to a
    /// savepoint); `Err` for a failure, whose transaction is to be undone.
    pub async fn run_keeping(
        &self,
        tx: &mut impl Tx,
    ) -> Result<Result<Corrected, StoreError>, StoreError> {
        let late = self.may_refuse_late();
        if late {
            tx.execute("SAVEPOINT correction", &[]).await?;
        }
        let result = self.correct(tx).await;
        if late {
            if result.is_err() {
                tx.execute("ROLLBACK TO SAVEPOINT correction", &[]).await?;
            }
            tx.execute("RELEASE SAVEPOINT correction", &[]).await?;
        }
        match result {
            Ok(corrected) => Ok(Ok(corrected)),
            Err(err) if refusals::is_kept(&err) => {
                refusals::keep(tx, &self.key(), &self.fingerprint, &err, self.at).await?;
                Ok(Err(err))
            }
            // Every other refusal comes before anything is written.
            Err(err @ StoreError::Refused { .. }) => Ok(Err(err)),
            Err(err) => Err(err),
        }
    }

    pub async fn correct(&self, tx: &mut impl Tx) -> Result<Corrected, StoreError> {
        let (c, r, o) = (&self.campaign, &self.correction, &self.original);
        let (date, id, taken, owed): WalletRow = tx
            .row_locked(WALLET, params![o.wallet_id])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        // Under the wallet's lock, twins of one request come one after the other.
        let key = self.key();
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
        refusals::answer_earlier(tx, &key, &self.fingerprint, "externalId").await?;
        let at = position((date, id, taken));
        let (kind, made) = match &self.what {
            What::Reversal { rules, shortfall } => {
                let returned = reversal::Returned {
                    earn: o,
                    value: r.amount,
                    rules: rules.as_deref(),
                    shortfall: *shortfall,
                    at: self.at,
                };
                // Decided before anything is written: only a refused shortfall comes after.
                let share = returned.share(tx).await?;
                let pending: Option<(i64, bool)> = tx.row(STILL_PENDING, params![o.id]).await?;
                let made = match pending {
                    Some((_, counted)) => returned.take_back_pending(tx, share, counted).await?,
                    None => {
                        // A debt is paid before the reversal takes anything (see
                        // `spend::repay`).
                        let at = match owed {
                            0 => at,
                            owed => repay(tx, &o.wallet_id, at, owed).await?,
                        };
                        returned.take_back(tx, at, share).await?
                    }
                };
                (TransactionKind::Reversal, made)
            }
            What::Refund { tokens } => {
                let made = refund::give_back(tx, o, at, *tokens, self.at).await?;
                (TransactionKind::Refund, made)
            }
        };
        let amount = Tokens::from_micros(made.amount);
        let (wallet, external) = (o.wallet_id.clone(), r.external_id.clone());
        let mut transaction =
            Transaction::new(kind, wallet, amount, external, o.currency.clone(), self.at).saying(
                r.description.clone(),
                r.comment.clone(),
                r.meta.clone(),
            );
        transaction.source_amount = made.source_amount;
        transaction.date = self.date.unwrap_or(self.at);
        transaction.corrects = Some(o.id.clone());
        let mut entry = transaction.entry(&c.org_id, &c.id, &self.fingerprint.text);
        entry.batch_id = self.batch_id.as_deref();
        let written = tx
            .execute(INSERT_TRANSACTION, &entry.args(&key, None))
            .await?;
        if written == 0 {
            // A twin on another wallet (so not behind this one's lock) took the id meanwhile:
            // undone, and answered as a conflict (a retry replays it or names the difference).
            return Err(StoreError::Conflict {
                field: "externalId",
            });
        }
        // The link is written beside the entry every path shares.
        tx.execute(LINK, params![transaction.id, o.id, made.forgiven])
            .await?;
        if kind == TransactionKind::Reversal {
            let reversed: Vec<(Option<String>, i64)> =
                tx.rows(reversal::REVERSED, params![o.id]).await?;
            counters::give_back(tx, o, &reversed).await?;
        }
        tx.execute(UNSUM, params![o.wallet_id, transaction.date])
            .await?;
        record_spends(tx, &transaction.id, &made.lots).await?;
        if self.batch_id.is_none() {
            crate::transactions::transaction_created(tx, &c.org_id, &c.id, &transaction).await?;
        }
        Ok(Corrected {
            transaction,
            replayed: false,
        })
    }
}

impl Steps for Correcting {
    type Output = Result<Corrected, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.run_keeping(tx).await
    }
}

#[cfg(test)]
mod tests {
    use std::str::FromStr;

    use serde_json::json;

    use super::*;

    /// A correction's fingerprint keeps the amount as a decimal without trailing zeros: `1.50`
    /// repeats `1.5`, and `2` is another request, named by its amount.
    #[test]
    fn a_correction_amount_is_fingerprinted_as_its_value() {
        let correction = |amount: &str| NewCorrection {
            transaction_id: "t-1".into(),
            external_id: "r-1".into(),
            amount: Some(Decimal::from_str(amount).unwrap()),
            description: None,
            comment: None,
            meta: None,
        };
        let stored = Fingerprint::of_request(&correction("1.5")).text;
        assert_eq!(
            Fingerprint::of_request(&correction("1.50")).matches(&stored),
            Ok(())
        );
        assert_eq!(
            Fingerprint::of_request(&correction("2")).matches(&stored),
            Err(Some("amount"))
        );
        let expected = Fingerprint::of(
            &["id", "amount", "description", "comment", "meta"],
            vec![
                json!("t-1"),
                json!("1.5"),
                json!(null),
                json!(null),
                json!(null),
            ],
        );
        assert_eq!(stored, expected.text);
    }
    use crate::backend::Plan;
    use crate::transactions::SELECT_BY_ID;

    /// A transaction read with what its corrections took or gave back, and the reversals of an
    /// earn, find the corrections through the index of `corrects`, never by a scan.
    async fn corrections_are_found_through_their_index(store: Ledger) {
        for sql in [SELECT_BY_ID, reversal::REVERSED, refund::GIVEN] {
            let plan = store
                .query_plan(sql, params![Some("t")], None, Plan::SortsPricedOut)
                .await;
            assert!(plan.contains("transactions_corrects"), "{sql}:\n{plan}");
        }
    }

    crate::testing::ledger_tests!(corrections_are_found_through_their_index);
}
