//! Burns: spending tokens, synchronously. A burn never takes a wallet below the programme's
//! minimum balance, even when many arrive at once (the wallet is locked for the burn), and a
//! repeated `externalId` never debits twice.

use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use sqlx::PgConnection;

use crate::backend::Transactional;
use crate::backend::direct;
use crate::common::ids::{fingerprint, new_id, now};
use crate::ledger::transactions::{
    Entry, EntryText, INSERT_TRANSACTION, TransactionRow, bind_entry, transaction_columns,
    transaction_from_row,
};
use crate::{Campaign, Store, StoreError, Tokens, Transaction, TransactionKind};

#[derive(Debug, Clone)]
pub struct NewBurn {
    /// The wallet's id or external reference.
    pub wallet: String,
    /// The client's id for this burn: unique in the organisation.
    pub external_id: String,
    pub amount: Tokens,
    pub description: String,
    pub comment: Option<String>,
    pub meta: Option<Value>,
    /// When absent, now.
    pub date: Option<DateTime<Utc>>,
}

impl NewBurn {
    /// A digest of the request as sent: the same body sent again is a replay, another body with
    /// the same `externalId` a conflict.
    fn fingerprint(&self) -> String {
        let canonical = json!([
            self.wallet,
            self.amount.micros(),
            self.description,
            self.comment,
            self.meta,
            self.date
        ]);
        fingerprint(&canonical)
    }
}

/// A burn's result: the transaction, and whether it is the one an earlier identical request made.
#[derive(Debug, Clone, PartialEq)]
pub struct Burned {
    pub transaction: Transaction,
    pub replayed: bool,
}

const SELECT_BURN: &str = concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE org_id = $1 AND kind = 'BURN' AND external_id = $2"
);

fn split(mut row: TransactionRow) -> Result<(Transaction, Option<String>), StoreError> {
    let fingerprint = row.fingerprint.take();
    Ok((transaction_from_row(row)?, fingerprint))
}

impl Store {
    /// Spends `burn.amount` from the wallet. `InsufficientBalance` when the balance less the
    /// campaign's minimum cannot cover it; `Conflict` on `externalId` when that id was used for
    /// a different burn; the earlier transaction (`replayed`) when it was used for this one.
    pub async fn burn(&self, campaign: &Campaign, burn: NewBurn) -> Result<Burned, StoreError> {
        let fingerprint = burn.fingerprint();
        if let Some(done) = self.earlier_burn(campaign, &burn, &fingerprint).await? {
            return Ok(done);
        }
        let wallet = self.get_wallet(campaign, &burn.wallet).await?;
        let policy = self.policy(&campaign.id).await?;
        let date = burn.date.unwrap_or_else(now);
        let transaction = Transaction {
            id: new_id(),
            wallet_id: wallet.id.clone(),
            kind: crate::TransactionKind::Burn,
            amount: burn.amount,
            external_id: Some(burn.external_id.clone()),
            source_amount: None,
            currency: wallet.currency.clone(),
            description: Some(burn.description.clone()),
            comment: burn.comment.clone(),
            meta: burn.meta.clone(),
            date,
            trace: None,
            rule_version: None,
            created_at: now(),
        };
        let debit = Debit::new(
            campaign,
            transaction.clone(),
            fingerprint.clone(),
            policy.min_balance,
        );
        let result = self.transact(debit).await;
        match result {
            Ok(Some(earlier)) => Ok(earlier),
            Ok(None) => Ok(Burned {
                transaction,
                replayed: false,
            }),
            // Another request with this externalId won the race: answer as if it came first.
            Err(err) if err.is_unique_violation() => self
                .earlier_burn(campaign, &burn, &fingerprint)
                .await?
                .ok_or(StoreError::Conflict {
                    field: "externalId",
                }),
            Err(err) => Err(err),
        }
    }

    async fn earlier_burn(
        &self,
        campaign: &Campaign,
        burn: &NewBurn,
        fingerprint: &str,
    ) -> Result<Option<Burned>, StoreError> {
        let row: Option<TransactionRow> =
            read_row!(self, SELECT_BURN, [campaign.org_id, burn.external_id])?;
        row.map(|row| replay_or_conflict(row, fingerprint))
            .transpose()
    }
}

// Three steps: claim the externalId (the unique index decides between concurrent twins), debit
// only if the balance allows it (the row update is the lock that keeps concurrent burns from
// overdrawing, and expiry takes the same lock first), and take the tokens from the oldest lots
// first, so the ones spent are those that would expire soonest. The lots are read in order
// through the index of open lots (wallet_id, earned_at, id), only as far as the amount reaches:
// a wallet may hold thousands.
const DEBIT: &str = "UPDATE wallets SET balance = balance - $2, updated_at = $3 \
         WHERE id = $1 AND balance - $2 >= $4";
const BALANCE: &str = "SELECT balance FROM wallets WHERE id = $1";
/// The wallet's open lots, oldest first (a literal, so that `concat!` can extend it).
macro_rules! open_lots {
    () => {
        "SELECT id, remaining FROM lots WHERE wallet_id = $1 AND remaining > 0 \
         ORDER BY earned_at, id"
    };
}
const OPEN_LOTS: &str = open_lots!();
/// `OPEN_LOTS`, the first `$2` of them.
const OLDEST_LOTS: &str = concat!(open_lots!(), " LIMIT $2");
/// One burn's writes, for either backend, inside a transaction its caller holds: the seam
/// through which anything that spends points (a burn, an order paid with points) debits a
/// wallet the same way on both backends.
pub(crate) struct Debit {
    org_id: String,
    campaign_id: String,
    external_id: String,
    transaction: Transaction,
    fingerprint: String,
    min_balance: i64,
}

impl Debit {
    /// The debit that writes `transaction` (a BURN with its `external_id`) for a wallet of
    /// `campaign` that must keep `min_balance` micro-tokens; `fingerprint` tells a repeat of
    /// the request that made it from another.
    pub(crate) fn new(
        campaign: &Campaign,
        transaction: Transaction,
        fingerprint: String,
        min_balance: Tokens,
    ) -> Debit {
        Debit {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            external_id: transaction.external_id.clone().unwrap_or_default(),
            transaction,
            fingerprint,
            min_balance: min_balance.micros(),
        }
    }

    pub(crate) fn transaction_id(&self) -> &str {
        &self.transaction.id
    }

    /// The BURN transaction to write.
    fn entry(&self) -> Entry<'_> {
        let t = &self.transaction;
        Entry {
            id: &t.id,
            org_id: &self.org_id,
            campaign_id: &self.campaign_id,
            wallet_id: &t.wallet_id,
            kind: TransactionKind::Burn,
            amount: t.amount.micros(),
            external_id: &self.external_id,
            source_amount: None,
            currency: &t.currency,
            description: t.description.as_deref(),
            comment: t.comment.as_deref(),
            meta: t.meta.as_ref(),
            date: t.date,
            trace: None,
            rule_version: None,
            created_at: t.created_at,
            batch_id: None,
            fingerprint: Some(&self.fingerprint),
        }
    }

    fn insufficient(&self, balance: i64) -> StoreError {
        StoreError::InsufficientBalance {
            available: Tokens::from_micros((balance - self.min_balance).max(0)),
        }
    }
}

impl Transactional for Debit {
    /// `Some` answers with an earlier burn; nothing was written then.
    type Output = Option<Burned>;

    fn sqlite(&self, tx: &rusqlite::Connection) -> Result<Self::Output, StoreError> {
        let t = &self.transaction;
        let (amount, at) = (t.amount.micros(), direct::time(now()));
        let meta = t.meta.as_ref().map(direct::json);
        let (date, created_at) = (direct::time(t.date), direct::time(t.created_at));
        let text = EntryText {
            meta: meta.as_deref(),
            date: &date,
            created_at: &created_at,
        };
        let mut insert = tx.prepare_cached(INSERT_TRANSACTION)?;
        if !self.entry().write_direct(&mut insert, &text)? {
            let earlier: TransactionRow =
                direct::row(tx, SELECT_BURN, &[&self.org_id, &self.external_id])?
                    .ok_or(StoreError::NotFound { what: "burn" })?;
            return replay_or_conflict(earlier, &self.fingerprint).map(Some);
        }
        if direct::execute(tx, DEBIT, args![t.wallet_id, amount, at, self.min_balance])? == 0 {
            let (balance,): (i64,) = direct::row(tx, BALANCE, args![t.wallet_id])?
                .ok_or(StoreError::NotFound { what: "wallet" })?;
            return Err(self.insufficient(balance));
        }
        const TAKE: &str = "UPDATE lots SET remaining = remaining - $2 WHERE id = $1";
        let (mut left, mut takes) = (amount, Vec::new());
        direct::rows_while(
            tx,
            OPEN_LOTS,
            args![t.wallet_id],
            |(id, remaining): (String, i64)| {
                let take = remaining.min(left);
                takes.push((id, take));
                left -= take;
                left > 0
            },
        )?;
        for (lot, take) in takes {
            direct::execute(tx, TAKE, args![lot, take])?;
        }
        Ok(None)
    }

    async fn postgres(&self, tx: &mut PgConnection) -> Result<Self::Output, StoreError> {
        let t = &self.transaction;
        let amount = t.amount.micros();
        let claimed = bind_entry!(sqlx::query(INSERT_TRANSACTION), self.entry())
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if claimed == 0 {
            // An identical request finished meanwhile: its replay is answered, never refused
            // for the balance it spent.
            let earlier: TransactionRow = sqlx::query_as(SELECT_BURN)
                .bind(&self.org_id)
                .bind(&self.external_id)
                .fetch_one(&mut *tx)
                .await?;
            return replay_or_conflict(earlier, &self.fingerprint).map(Some);
        }
        let debited = sqlx::query(DEBIT)
            .bind(&t.wallet_id)
            .bind(amount)
            .bind(now())
            .bind(self.min_balance)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        if debited == 0 {
            let (balance,): (i64,) = sqlx::query_as(BALANCE)
                .bind(&t.wallet_id)
                .fetch_one(&mut *tx)
                .await?;
            // Dropping the transaction rolls the claimed externalId back.
            return Err(self.insufficient(balance));
        }
        // A few lots at a time (a burn usually takes one or two). Each round's lots but the
        // last are spent whole and leave the index of open lots, so the next round starts
        // where this one ended.
        let (mut left, mut limit) = (amount, 4_i64);
        while left > 0 {
            let open: Vec<(String, i64)> = sqlx::query_as(OLDEST_LOTS)
                .bind(&t.wallet_id)
                .bind(limit)
                .fetch_all(&mut *tx)
                .await?;
            let read = open.len() as i64;
            let (mut ids, mut takes) = (Vec::new(), Vec::new());
            for (id, remaining) in open {
                let take = remaining.min(left);
                left -= take;
                ids.push(id);
                takes.push(take);
                if left == 0 {
                    break;
                }
            }
            sqlx::query(
                "UPDATE lots SET remaining = lots.remaining - v.take \
                 FROM UNNEST($1::TEXT[], $2::BIGINT[]) AS v (id, take) WHERE lots.id = v.id",
            )
            .bind(&ids)
            .bind(&takes)
            .execute(&mut *tx)
            .await?;
            if read < limit {
                // No open lot is left: only a ledger whose lots disagree with its balance gets
                // here, and the audit reports it.
                break;
            }
            limit = 64;
        }
        Ok(None)
    }
}

/// An earlier burn with the same `externalId`: the same request again, or a conflicting one.
fn replay_or_conflict(row: TransactionRow, fingerprint: &str) -> Result<Burned, StoreError> {
    match split(row)? {
        (transaction, Some(earlier)) if earlier == fingerprint => Ok(Burned {
            transaction,
            replayed: true,
        }),
        _ => Err(StoreError::Conflict {
            field: "externalId",
        }),
    }
}
