//! Refunds: tokens a burn spent given back, into the lots the burn took them from (each keeps its
//! earn's expiry: a lot already past it expires again at the next sweep), in part or whole, never
//! more in total than the burn. A refund is a transaction of its own (`REFUND`) that names the
//! burn it corrects; the burn is never changed.
//!
//! A partial refund gives back to the burn's newest lots first (those that expire last). The lots
//! come from what the burn recorded in `spends`; a burn made before the ledger recorded them
//! (migration 17) cannot be refunded into its lots and is refused as `lots_unknown`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use crate::backend::{PgTx, SqliteTx, Tx, Work};
use crate::common::ids::{fingerprint, new_id, now};
use crate::ledger::burn::{ASIDE, apply, position};
use crate::ledger::credit::sooner;
use crate::ledger::fifo::{self, Aside, Earn, LotRow};
use crate::ledger::transactions::{
    INSERT_TRANSACTION, SELECT_BY_KEY, TransactionRow, idem_key, replay_or_conflict,
};
use crate::{Campaign, Store, StoreError, Tokens, Transaction, TransactionKind};

#[derive(Debug, Clone)]
pub struct NewRefund {
    /// The BURN to refund (its transaction id).
    pub burn_id: String,
    /// The client's id for this refund: unique in the organisation.
    pub external_id: String,
    /// Tokens to give back; `None`: all the burn spent that is not refunded yet.
    pub amount: Option<Tokens>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

impl NewRefund {
    /// The request as sent: the same again is a replay, another under the same `externalId` a
    /// conflict.
    fn fingerprint(&self) -> String {
        let canonical = json!([
            self.burn_id,
            self.amount.map(Tokens::micros),
            self.description,
            self.comment,
            self.meta
        ]);
        fingerprint(&canonical)
    }
}

/// A refund's result: its transaction, and whether an earlier identical request made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Refunded {
    pub transaction: Transaction,
    pub replayed: bool,
}

/// Refunds (scope: `&Campaign`).
impl Store {
    /// Gives back `refund.amount` (or all that is left) of the burn's tokens. `NotFound` for a
    /// transaction the campaign does not hold; `Refused` (`not_a_burn`, `refund_exceeds_burn`,
    /// `lots_unknown`); `Conflict` on `externalId` used for another request; the earlier refund
    /// (`replayed`) for the same one.
    pub async fn refund(
        &self,
        campaign: &Campaign,
        refund: NewRefund,
    ) -> Result<Refunded, StoreError> {
        if refund.amount.is_some_and(|a| !a.is_positive()) {
            return Err(StoreError::invalid("amount", "must be more than 0"));
        }
        let fingerprint = refund.fingerprint();
        self.write(Refunding {
            campaign: campaign.clone(),
            refund,
            fingerprint,
        })
        .await
    }
}

struct Refunding {
    campaign: Campaign,
    refund: NewRefund,
    fingerprint: String,
}

/// The burn to refund: its wallet, kind, amount and currency.
const BURN: &str = "SELECT wallet_id, kind, amount, currency FROM transactions \
     WHERE id = $1 AND org_id = $2 AND campaign_id = $3";
const WALLET: &str = "SELECT fifo_date, fifo_id, fifo_taken FROM wallets WHERE id = $1";
/// What the burn took from each earn's lot, with the earn.
const TAKEN: &str = "SELECT t.id, t.date, t.amount, t.expires_at, s.amount FROM spends s \
     JOIN transactions t ON t.id = s.earn_id WHERE s.transaction_id = $1";
/// A row of `TAKEN`: the earn (id, date, amount, expiry) and what the burn took from it.
type Taken = (String, DateTime<Utc>, i64, Option<DateTime<Utc>>, i64);
/// What earlier refunds of the burn gave back to each earn's lot.
const GIVEN: &str = "SELECT s.earn_id, CAST(SUM(s.amount) AS BIGINT) FROM spends s \
     JOIN transactions r ON r.id = s.transaction_id WHERE r.corrects = $1 GROUP BY s.earn_id";
const LINK: &str = "UPDATE transactions SET corrects = $2 WHERE id = $1";
const GIVE: &str = "INSERT INTO spends (transaction_id, earn_id, amount) VALUES ($1, $2, $3)";
/// The refund's credit; the wallet's next expiry moves to `$3` if that is sooner.
const CREDIT: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, updated_at = $4, expires_next = ",
    sooner!("$3"),
    " WHERE id = $1"
);

impl Refunding {
    async fn run(&self, tx: &mut impl Tx) -> Result<Refunded, StoreError> {
        let (c, r) = (&self.campaign, &self.refund);
        let (wallet, kind, burned, currency): (String, String, i64, String) = tx
            .row(BURN, params![r.burn_id, c.org_id, c.id])
            .await?
            .ok_or(StoreError::NotFound {
                what: "transaction",
            })?;
        if kind != TransactionKind::Burn.as_str() {
            return Err(StoreError::refused(
                "not_a_burn",
                Some("id".into()),
                format!(
                    "transaction {} is {kind}: only a BURN is refunded",
                    r.burn_id
                ),
            ));
        }
        let (date, id, taken): (Option<DateTime<Utc>>, Option<String>, i64) = tx
            .row_locked(WALLET, params![wallet])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        // Under the wallet's lock, twins of one request come one after the other.
        let key = idem_key(&c.org_id, TransactionKind::Refund, &r.external_id);
        if let Some(earlier) = tx
            .row::<TransactionRow>(SELECT_BY_KEY, params![key])
            .await?
        {
            let transaction = replay_or_conflict(earlier, &self.fingerprint)?;
            return Ok(Refunded {
                transaction,
                replayed: true,
            });
        }
        let taken_from: Vec<Taken> = tx.rows(TAKEN, params![r.burn_id]).await?;
        if taken_from.is_empty() && burned > 0 {
            return Err(StoreError::refused(
                "lots_unknown",
                Some("id".into()),
                "the burn was made before the ledger recorded which lots a burn takes from".into(),
            ));
        }
        let given: HashMap<String, i64> = tx
            .rows::<(String, i64)>(GIVEN, params![r.burn_id])
            .await?
            .into_iter()
            .collect();
        // Newest lots first: what is left to give back to each.
        let mut left: Vec<(Earn<DateTime<Utc>>, i64)> = taken_from
            .into_iter()
            .map(|(id, date, amount, expires_at, took)| {
                let left = took - given.get(&id).copied().unwrap_or(0);
                (Earn::from((id, date, amount, expires_at)), left)
            })
            .filter(|(_, left)| *left > 0)
            .collect();
        left.sort_by(|(a, _), (b, _)| (&b.date, &b.id).cmp(&(&a.date, &a.id)));
        let refundable: i64 = left.iter().map(|(_, l)| l).sum();
        let amount = r.amount.map_or(refundable, Tokens::micros);
        if amount > refundable || refundable == 0 {
            return Err(StoreError::refused(
                "refund_exceeds_burn",
                Some("amount".into()),
                format!(
                    "{} tokens of the burn are left to refund",
                    Tokens::from_micros(refundable)
                ),
            ));
        }
        let mut gifts = Vec::new();
        let mut rest = amount;
        for (earn, left) in left {
            if rest == 0 {
                break;
            }
            let give = left.min(rest);
            rest -= give;
            gifts.push((earn, give));
        }
        let aside: Vec<LotRow<DateTime<Utc>>> = tx.rows(ASIDE, params![wallet]).await?;
        let aside: Vec<Aside<_>> = aside.into_iter().map(Aside::from).collect();
        let spent = fifo::give_back(position((date, id, taken)), &aside, &gifts)
            .map_err(|e| StoreError::NotCommitted(format!("the wallet's lots disagree: {e}")))?;
        apply(tx, &wallet, &spent).await?;
        let transaction = Transaction {
            id: new_id(),
            wallet_id: wallet.clone(),
            kind: TransactionKind::Refund,
            amount: Tokens::from_micros(amount),
            external_id: Some(r.external_id.clone()),
            source_amount: None,
            currency,
            description: r.description.clone(),
            comment: r.comment.clone(),
            meta: r.meta.clone(),
            date: now(),
            trace: None,
            rule_version: None,
            created_at: now(),
        };
        let entry = transaction.entry(&c.org_id, &c.id, &self.fingerprint);
        tx.execute(INSERT_TRANSACTION, &entry.args(&key, None))
            .await?;
        // The link is written beside the entry every path shares.
        tx.execute(LINK, params![transaction.id, r.burn_id]).await?;
        for (earn, give) in &gifts {
            tx.execute(GIVE, params![transaction.id, earn.id, give])
                .await?;
        }
        let soonest = gifts.iter().filter_map(|(e, _)| e.expires_at).min();
        tx.execute(CREDIT, params![wallet, amount, soonest, now()])
            .await?;
        Ok(Refunded {
            transaction,
            replayed: false,
        })
    }
}

impl Work for Refunding {
    type Output = Refunded;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }
}
