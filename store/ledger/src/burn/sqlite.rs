//! SQLite's half of a burn: the wallet found by the cached lookup every request uses, then the
//! debit's steps a statement each, on the writer thread (no round trips to save).

use chrono::{DateTime, Utc};

use super::{Burned, Burning, Claimed, Debit, Debiting, Lots, in_spending_order, lot, position};
use crate::StoreError;
use crate::backend::direct::Direct;
use crate::backend::{OnSqlite, SqliteTx, Tx};
use crate::fifo::{Aside, Earn, LotRow, Position};
use crate::transactions::{entry_columns, unsum};

/// The BURN transaction (`INSERT_TRANSACTION`'s parameters), unless its key (`$20`) holds a
/// burn or a refusal: the writes come one at a time, so this one statement tells both.
const CLAIM: &str = concat!(
    "INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20 WHERE NOT EXISTS (SELECT 1 FROM refusals WHERE idem_key = $20) \
     ON CONFLICT (idem_key) DO NOTHING"
);
/// The debit of `$2` from wallet `$1` at `$3` by a burn dated `$5`, if it keeps `$4` beside
/// what holds reserve; its position before, and what it owes.
const DEBIT: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, updated_at = $3, ",
    unsum!("$5"),
    " WHERE id = $1 AND balance - held - $2 >= $4 RETURNING fifo_date, fifo_id, fifo_taken, owed"
);
// The reads of `from_position!`, their limits written in their text: a statement whose
// `LIMIT` is a bound value is prepared again by SQLite each time the value changes.
/// The wallet's first transaction.
const FIRST: &str = super::from_position!("", "1");
/// Its first transaction from the position `($2, $3)` on.
const FROM: &str = super::from_position!(" AND (date, id) >= ($2, $3)", "1");
/// Its next 16 after `($2, $3)`.
const AFTER: &str = super::from_position!(" AND (date, id) > ($2, $3)", "16");

impl OnSqlite for Burning<'_> {
    async fn sqlite(self, _: &Direct) -> Result<Burned, StoreError> {
        let store = self.store;
        let wallet = match store.get_wallet(self.campaign, &self.burn.wallet).await {
            Ok(wallet) => wallet,
            Err(StoreError::NotFound { .. }) => return self.answer(store, None).await,
            Err(err) => return Err(err),
        };
        let (transaction, debit) = self.debit(wallet.id, wallet.currency);
        let result = store.write(debit).await.and_then(|r| r);
        self.answer(store, Some((transaction, result))).await
    }
}

impl Debiting for SqliteTx<'_> {
    const FIRST_READ: usize = 1;
    const NEXT_READ: usize = 16;
    const CLAIM_SEES_REFUSALS: bool = true;

    async fn claim_and_debit(&mut self, debit: &Debit) -> Result<Claimed, StoreError> {
        let (entry, t) = (debit.entry(), &debit.transaction);
        let key = entry.idem_key();
        if self.execute(CLAIM, &entry.args(&key, None)).await? == 0 {
            return Ok(Claimed::Earlier);
        }
        let (amount, at) = (t.amount.micros(), t.created_at);
        let args = params![t.wallet_id, amount, at, debit.min_balance, t.date];
        type Debited = (Option<DateTime<Utc>>, Option<String>, i64, i64);
        let debited: Option<Debited> = self.row(DEBIT, args).await?;
        Ok(match debited {
            Some((date, id, taken, owed)) => Claimed::Debited(position((date, id, taken)), owed),
            None => Claimed::Short,
        })
    }

    async fn first_lots(
        &mut self,
        wallet: &str,
        from: Option<&Position<DateTime<Utc>>>,
    ) -> Result<Lots, StoreError> {
        let aside: Vec<LotRow<DateTime<Utc>>> =
            self.rows(super::ASIDE_FIRST, params![wallet]).await?;
        let rows = match from {
            Some(p) => self.rows(FROM, params![wallet, p.date, p.id]).await?,
            None => self.rows(FIRST, params![wallet]).await?,
        };
        let (_, read) = in_spending_order(rows.into_iter().map(lot));
        Ok((aside.into_iter().map(Aside::from).collect(), read))
    }

    async fn lots_after(
        &mut self,
        wallet: &str,
        date: DateTime<Utc>,
        id: &str,
    ) -> Result<Vec<(Earn<DateTime<Utc>>, bool)>, StoreError> {
        let rows = self.rows(AFTER, params![wallet, date, id]).await?;
        Ok(in_spending_order(rows.into_iter().map(lot)).1)
    }
}

#[cfg(test)]
pub(super) const READS: &[&str] = &[FIRST, FROM, AFTER];
