//! PostgreSQL's half of a burn: first without a lock (`at_once`), then locked; the locked
//! debit's steps each in one round trip: on a loaded server a round trip costs more than the
//! work of most of a burn's statements.

use chrono::{DateTime, Utc};
use sqlx::PgPool;

use super::{Burned, Burning, Claimed, Debit, Debiting, Lots, in_spending_order, lot, position};
use crate::StoreError;
use crate::backend::{Arg, OnPostgres, PgTx, Tx};
use crate::fifo::{Earn, Position};
use crate::transactions::{insert_transaction, unsum};

mod at_once;

/// The claim and the debit together: the BURN transaction (`INSERT_TRANSACTION`'s parameters)
/// and, when it is new, the debit of its amount (`$6`) from its wallet (`$4`) keeping `$21`, at
/// `$22`. Whether the externalId was claimed, and the position and debt when the wallet was
/// debited.
/// (The reads of what to spend come after, in statements of their own: a statement's snapshot
/// is taken before it waits for the wallet's lock.)
const CLAIM_AND_DEBIT: &str = concat!(
    "WITH claim AS (",
    insert_transaction!(),
    " RETURNING 1), debit AS (UPDATE wallets SET balance = balance - $6, updated_at = $22, ",
    unsum!("$13"),
    " WHERE id = $4 AND balance - held - $6 >= $21 AND EXISTS (SELECT FROM claim) \
       RETURNING fifo_date, fifo_id, fifo_taken, owed) \
     SELECT EXISTS (SELECT FROM claim), debit.fifo_date, debit.fifo_id, debit.fifo_taken, \
       debit.owed \
     FROM (SELECT) AS one LEFT JOIN debit ON true"
);

/// The first `ASIDE_READ` aside rows and the first `$4` transactions (from the position
/// `($2, $3)` on, in the second form), as `LotRead`s.
macro_rules! aside_and_earns {
    ($from:literal) => {
        concat!(
            "(SELECT true, transaction_id, earned_at, remaining, expires_at, true \
             FROM lots_aside WHERE wallet_id = $1 ORDER BY earned_at, transaction_id LIMIT 16) \
             UNION ALL (",
            super::from_position!($from, "$4"),
            ")"
        )
    };
}
const ASIDE_AND_EARNS: &str = aside_and_earns!(" AND $2::TIMESTAMPTZ IS NULL AND $3::TEXT IS NULL");
const ASIDE_AND_EARNS_FROM: &str = aside_and_earns!(" AND (date, id) >= ($2, $3)");

impl OnPostgres for Burning<'_> {
    /// The wallet is found by the burn's own first read (`at_once`), which brings what an
    /// unlocked burn needs: one round trip for both. When the unlocked burn cannot be made, the
    /// locked one is (`Ledger::write`).
    async fn postgres(self, pool: &PgPool) -> Result<Burned, StoreError> {
        let store = self.store;
        let mut conn = pool.acquire().await?;
        let Some((wallet_id, currency, read)) =
            at_once::read(&mut conn, self.campaign, &self.burn.wallet).await?
        else {
            drop(conn);
            return self.answer(store, None).await;
        };
        let (transaction, debit) = self.debit(wallet_id, currency);
        let result = match debit.at_once(&mut conn, read).await {
            Ok(true) => Ok(None),
            Ok(false) => {
                // The locked path takes a connection of its own.
                drop(conn);
                store.write(debit).await.and_then(|r| r)
            }
            Err(err) => Err(err),
        };
        self.answer(store, Some((transaction, result))).await
    }
}

impl Debiting for PgTx<'_> {
    const FIRST_READ: usize = 4;
    const NEXT_READ: usize = 64;
    const CLAIM_SEES_REFUSALS: bool = false;

    async fn claim_and_debit(&mut self, debit: &Debit) -> Result<Claimed, StoreError> {
        let entry = debit.entry();
        let key = entry.idem_key();
        let mut args = entry.args(&key, None).to_vec();
        args.extend([
            Arg::Int(Some(debit.min_balance)),
            Arg::Time(Some(debit.transaction.created_at)),
        ]);
        type Row = (
            bool,
            Option<DateTime<Utc>>,
            Option<String>,
            Option<i64>,
            Option<i64>,
        );
        let (claimed, date, id, taken, owed): Row = self
            .row(CLAIM_AND_DEBIT, &args)
            .await?
            .ok_or_else(|| StoreError::NotCommitted("the burn's claim returned no row".into()))?;
        Ok(match (claimed, taken) {
            (false, _) => Claimed::Earlier,
            (true, None) => Claimed::Short,
            (true, Some(taken)) => Claimed::Debited(position((date, id, taken)), owed.unwrap_or(0)),
        })
    }

    async fn first_lots(
        &mut self,
        wallet: &str,
        from: Option<&Position<DateTime<Utc>>>,
    ) -> Result<Lots, StoreError> {
        let (date, id) = from.map(|p| (p.date, p.id.as_str())).unzip();
        let sql = if from.is_some() {
            ASIDE_AND_EARNS_FROM
        } else {
            ASIDE_AND_EARNS
        };
        let limit = Self::FIRST_READ as i64;
        let rows = self.rows(sql, params![wallet, date, id, limit]).await?;
        Ok(in_spending_order(rows.into_iter().map(lot)))
    }

    async fn lots_after(
        &mut self,
        wallet: &str,
        date: DateTime<Utc>,
        id: &str,
    ) -> Result<Vec<(Earn<DateTime<Utc>>, bool)>, StoreError> {
        let limit = Self::NEXT_READ as i64;
        let rows = self.rows(AFTER, params![wallet, date, id, limit]).await?;
        Ok(in_spending_order(rows.into_iter().map(lot)).1)
    }
}

/// The next `$4` transactions after `($2, $3)`.
const AFTER: &str = super::from_position!(" AND (date, id) > ($2, $3)", "$4");

#[cfg(test)]
pub(super) const READS: &[&str] = &[ASIDE_AND_EARNS_FROM, AFTER];
