//! The spend kernel: how tokens leave a wallet's lots and come back to them, for every spend
//! (burns, holds and their capture, transfers, reversals, refunds, expiry, order payments). Its
//! contract:
//!
//! - A wallet's lots are its earns (and transfers in) in date order. Its spending position
//!   (`fifo_date`, `fifo_id`, `fifo_taken`) marks how far they are spent; aside rows
//!   (`lots_aside`) hold the earns behind the position that still have tokens (a late earn, a
//!   partial return). `fifo` decides in memory; this module reads and writes.
//! - `take` takes an amount from the oldest lots first, reading only as far as it reaches, and
//!   writes the new position and aside rows; `take_moving_later` leaves the position for the
//!   caller's own `UPDATE` of the wallet. `record_spends` records what a spending transaction (or
//!   an open hold) took from each lot: what `give_back_to_lots` gives back (a refund, a hold
//!   released, a reversal undone).
//! - `repay` pays what the wallet owes (tokens reversals took back that no lot held) from its
//!   oldest lots before anything else may take from them.
//! - The caller holds the wallet: it debited or locked the wallet's row in the same
//!   transaction. The kernel takes no lock and changes no balance.
//! - Every step is the same on both backends, over `Tx`, but for how the lots are read
//!   (`reads.rs`); PostgreSQL tries a spend without a lock first where it can (`at_once.rs`).
//! - A spend a client asks for names the same fields whatever its kind (`request.rs`).

use chrono::{DateTime, Utc};

use crate::StoreError;
use crate::backend::{Arg, ToArg, Tx};
use crate::fifo::{Aside, Earn, LotRow, Position, Spent, Taker};

pub(crate) mod at_once;
mod reads;
mod request;

use reads::{ASIDE_AFTER, ASIDE_FIRST, first_lots, first_read, lots_after, next_read};
pub use reads::{ASIDE_READ, LotRead, Lots, in_spending_order, lot, position};
pub use request::Spend;

/// The wallet's aside rows.
pub(crate) const ASIDE: &str = "SELECT transaction_id, earned_at, remaining, expires_at \
     FROM lots_aside WHERE wallet_id = $1 ORDER BY earned_at, transaction_id";
/// One earn's aside row, if it has one.
pub(crate) const ASIDE_OF: &str = "SELECT transaction_id, earned_at, remaining, expires_at \
     FROM lots_aside WHERE transaction_id = $1";
/// The wallet's lots (earns and transfers in) in spending order: all, or from `($2, $3)` on.
macro_rules! earns {
    ($from:literal) => {
        concat!(
            "SELECT id, date, amount, expires_at FROM transactions WHERE wallet_id = $1 \
             AND kind IN ",
            crate::transactions::lot_kinds!(),
            $from,
            " ORDER BY date, id"
        )
    };
}
pub(crate) const EARNS: &str = earns!("");
pub(crate) const EARNS_FROM: &str = earns!(" AND (date, id) >= ($2, $3)");
pub(crate) const MOVE: &str =
    "UPDATE wallets SET fifo_date = $2, fifo_id = $3, fifo_taken = $4 WHERE id = $1";
pub(crate) const ASIDE_LEFT: &str =
    "UPDATE lots_aside SET remaining = $2 WHERE transaction_id = $1";
pub(crate) const ASIDE_DONE: &str = "DELETE FROM lots_aside WHERE transaction_id = $1";

/// Writes what `fifo` decided for `wallet`: its new position and aside rows.
pub(crate) async fn apply(
    tx: &mut impl Tx,
    wallet: &str,
    spent: &Spent<DateTime<Utc>>,
) -> Result<(), StoreError> {
    if let Some(p) = &spent.position {
        tx.execute(MOVE, params![wallet, p.date, p.id, p.taken])
            .await?;
    }
    apply_aside(tx, wallet, spent).await
}

/// Writes the aside rows `fifo` decided for `wallet` (its position is the caller's to write).
async fn apply_aside(
    tx: &mut impl Tx,
    wallet: &str,
    spent: &Spent<DateTime<Utc>>,
) -> Result<(), StoreError> {
    for (id, remaining) in &spent.aside_updates {
        tx.execute(ASIDE_LEFT, params![id, remaining]).await?;
    }
    for id in &spent.aside_deletes {
        tx.execute(ASIDE_DONE, params![id]).await?;
    }
    for a in &spent.aside_inserts {
        let args = params![a.id, wallet, a.date, a.remaining, a.expires_at];
        tx.execute(crate::credit::SET_ASIDE, args).await?;
    }
    Ok(())
}

/// What a spending transaction (or a hold) took from each earn's lot, with the earn.
pub(crate) const TAKEN: &str = "SELECT t.id, t.date, t.amount, t.expires_at, s.amount \
     FROM spends s JOIN transactions t ON t.id = s.earn_id WHERE s.transaction_id = $1";
/// A row of `TAKEN`: the earn (id, date, amount, expiry) and what was taken from it.
pub(crate) type Taken = (String, DateTime<Utc>, i64, Option<DateTime<Utc>>, i64);

/// Gives `gifts` (each earn with micro-tokens) back into the lots of `wallet` at `position`
/// (see `fifo::give_back`) and writes where that leaves them; the soonest expiry among them,
/// which the wallet's next expiry is to move to if sooner (a lot past its date expires at the
/// next sweep).
pub(crate) async fn give_back_to_lots(
    tx: &mut impl Tx,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    gifts: &[(Earn<DateTime<Utc>>, i64)],
) -> Result<Option<DateTime<Utc>>, StoreError> {
    // The aside rows of the lots given to, not every one the wallet holds.
    let mut aside: Vec<Aside<_>> = Vec::new();
    for (earn, _) in gifts {
        let row: Option<LotRow<DateTime<Utc>>> = tx.row(ASIDE_OF, params![earn.id]).await?;
        aside.extend(row.map(Aside::from));
    }
    let spent = crate::fifo::give_back(position, &aside, gifts)
        .map_err(|e| StoreError::NotCommitted(format!("the wallet's lots disagree: {e}")))?;
    apply(tx, wallet, &spent).await?;
    Ok(gifts.iter().filter_map(|(e, _)| e.expires_at).min())
}

/// Records what `spending` (a transaction, or an open hold) took from each lot (`takes`): one
/// statement on PostgreSQL.
pub(crate) async fn record_spends(
    tx: &mut impl Tx,
    spending: &str,
    takes: &[(String, i64)],
) -> Result<(), StoreError> {
    if takes.is_empty() {
        return Ok(());
    }
    let values: Vec<Arg<'_>> = takes
        .iter()
        .flat_map(|(earn, took)| [spending.to_arg(), earn.to_arg(), took.to_arg()])
        .collect();
    let head = "INSERT INTO spends (transaction_id, earn_id, amount)";
    tx.insert_rows(head, "", 3, &values).await?;
    Ok(())
}

/// Takes `amount` from the wallet at `position`, oldest lots first (after the lot of `first`,
/// when given: see `Taker::take_first`), and writes where that leaves its lots: what it took
/// from each earn, and what no lot covered. The lots are read in spending order as far as the
/// amount reaches: the aside rows and the first transactions, then more at a time after the
/// last one read.
pub(crate) async fn take<T: Tx>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    amount: i64,
    first: Option<&Earn<DateTime<Utc>>>,
) -> Result<(Spent<DateTime<Utc>>, i64), StoreError> {
    let (spent, left) = take_moving_later(tx, wallet, position, amount, first).await?;
    if let Some(p) = &spent.position {
        tx.execute(MOVE, params![wallet, p.date, p.id, p.taken])
            .await?;
    }
    Ok((spent, left))
}

/// `take`, but the wallet's new position (`Spent::position`, when it moved) is left for the
/// caller to write with its own UPDATE of the wallet (one statement fewer).
pub(crate) async fn take_moving_later<T: Tx>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    amount: i64,
    first: Option<&Earn<DateTime<Utc>>>,
) -> Result<(Spent<DateTime<Utc>>, i64), StoreError> {
    if let Some(earn) = first {
        // A return its earn's own lot covers reads nothing else of the wallet: a wallet can
        // hold many aside rows (every return of an earn it has not spent yet makes one), and
        // the other rows are neither taken from nor passed.
        let own: Vec<LotRow<DateTime<Utc>>> = tx.rows(ASIDE_OF, params![earn.id]).await?;
        let own = own.into_iter().map(Aside::from).collect();
        let mut taker = Taker::new(amount, position.clone(), own);
        taker.take_first(earn);
        if taker.left() == 0 {
            let spent = taker.finish();
            apply_aside(tx, wallet, &spent).await?;
            return Ok((spent, 0));
        }
    }
    let (aside, mut read) = first_lots(tx, wallet, position.as_ref()).await?;
    let mut aside_unread = aside.len() == ASIDE_READ;
    let mut limit = first_read::<T>();
    let mut taker = Taker::new(amount, position, aside);
    if let Some(earn) = first {
        // Its own aside row may lie anywhere among the wallet's.
        while aside_unread {
            aside_unread = more_aside(tx, wallet, &mut taker).await?;
        }
        taker.take_first(earn);
    }
    'reading: loop {
        let count = read.len();
        let last = read.last().map(|(e, _)| (e.date, e.id.clone()));
        for (e, _) in read.iter().filter(|(_, earn)| *earn) {
            if taker.left() == 0 {
                break 'reading;
            }
            while aside_unread && taker.needs_aside_before(&e.date, &e.id) {
                aside_unread = more_aside(tx, wallet, &mut taker).await?;
            }
            if !taker.earn(e) {
                break 'reading;
            }
        }
        let Some((date, id)) = last.filter(|_| taker.left() > 0 && count == limit) else {
            break;
        };
        limit = next_read::<T>();
        read = lots_after(tx, wallet, date, &id).await?;
    }
    while aside_unread && taker.needs_aside() {
        aside_unread = more_aside(tx, wallet, &mut taker).await?;
    }
    let spent = taker.finish();
    apply_aside(tx, wallet, &spent).await?;
    // `finish` takes from the aside rows after the last earn read: count what was taken.
    let left = amount - spent.takes.iter().map(|(_, took)| took).sum::<i64>();
    Ok((spent, left))
}

/// Hands `taker` the wallet's next `ASIDE_READ` aside rows; whether more may follow.
async fn more_aside<T: Tx>(
    tx: &mut T,
    wallet: &str,
    taker: &mut Taker<DateTime<Utc>>,
) -> Result<bool, StoreError> {
    let (date, id) = taker.last_aside().unzip();
    let rows: Vec<LotRow<DateTime<Utc>>> = match (date, id) {
        (Some(date), Some(id)) => tx.rows(ASIDE_AFTER, params![wallet, date, id]).await?,
        _ => tx.rows(ASIDE_FIRST, params![wallet]).await?,
    };
    let unread = rows.len() == ASIDE_READ;
    taker.more_aside(rows.into_iter().map(Aside::from).collect());
    Ok(unread)
}

/// Reversals with tokens no lot has paid yet, oldest first: each one's id and what it is owed.
const UNPAID: &str = "SELECT r.id, CAST(r.amount - COALESCE((SELECT SUM(s.amount) \
     FROM spends s WHERE s.transaction_id = r.id), 0) AS BIGINT) FROM transactions r \
     WHERE r.wallet_id = $1 AND r.kind = 'REVERSAL' ORDER BY r.date, r.id";
/// What paid a reversal's debt from one earn's lot (the same lot may pay it twice: a refund
/// can give tokens back into a lot the reversal emptied before).
const PAID: &str = "INSERT INTO spends (transaction_id, earn_id, amount) VALUES ($1, $2, $3) \
     ON CONFLICT (transaction_id, earn_id) DO UPDATE SET amount = spends.amount + excluded.amount";
const OWED_LESS: &str = "UPDATE wallets SET owed = owed - $2 WHERE id = $1";

/// Pays what the wallet at `position` owes (`owed`: tokens reversals took back that no lot
/// held then) from its oldest lots, as far as they reach, before anything else may take from
/// them; each payment is recorded as what its reversal took from that lot. The position after.
pub(crate) async fn repay<T: Tx>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    owed: i64,
) -> Result<Option<Position<DateTime<Utc>>>, StoreError> {
    let (spent, left) = take(tx, wallet, position.clone(), owed, None).await?;
    if left == owed {
        return Ok(position);
    }
    let unpaid: Vec<(String, i64)> = tx.rows(UNPAID, params![wallet]).await?;
    let mut unpaid = unpaid.into_iter().filter(|(_, due)| *due > 0);
    let mut current = unpaid.next();
    for (earn, mut amount) in spent.takes {
        while amount > 0 {
            let Some((reversal, due)) = current.as_mut() else {
                return Err(StoreError::NotCommitted(format!(
                    "wallet {wallet} owes more than its reversals took"
                )));
            };
            let paid = amount.min(*due);
            tx.execute(PAID, params![*reversal, earn, paid]).await?;
            (amount, *due) = (amount - paid, *due - paid);
            if *due == 0 {
                current = unpaid.next();
            }
        }
    }
    tx.execute(OWED_LESS, params![wallet, owed - left]).await?;
    Ok(spent.position.or(position))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Ledger;

    /// A burn reads a wallet's earns in spending order straight from the index: a sort would
    /// read every earn of the wallet (or all those of one date) before handing over the first.
    async fn earns_are_read_in_spending_order_without_a_sort(store: Ledger) {
        let reads = store.dialect(reads::SQLITE_READS, reads::POSTGRES_READS);
        let mut statements = vec![EARNS, EARNS_FROM, ASIDE_FIRST, ASIDE_AFTER]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        statements.extend(reads.iter().map(|sql| sql.replace("$4", "4")));
        for sql in &statements {
            // A wallet, a position and an earn id, as a burn binds them.
            let at = store.now();
            let args = params![Some("w"), at, Some("x")];
            let plan = store
                .query_plan(sql, args, None, crate::backend::Plan::SortsPricedOut)
                .await;
            assert!(
                !plan.contains("TEMP B-TREE") && !plan.contains("Sort"),
                "{sql}:\n{plan}"
            );
        }
    }

    /// A wallet's unpaid reversals are found through their own index, not its whole history.
    async fn unpaid_reversals_are_read_through_their_index(store: Ledger) {
        let plan = store
            .query_plan(
                UNPAID,
                params![Some("w")],
                None,
                crate::backend::Plan::SortsPricedOut,
            )
            .await;
        assert!(plan.contains("transactions_reversals"), "{plan}");
        assert!(
            !plan.contains("TEMP B-TREE") && !plan.contains("Sort"),
            "{plan}"
        );
    }

    #[test]
    fn aside_rows_are_read_as_many_at_a_time_as_a_spend_counts_on() {
        let limit = format!("LIMIT {ASIDE_READ}");
        for sql in [ASIDE_FIRST, ASIDE_AFTER] {
            assert!(sql.ends_with(&limit), "{sql}");
        }
        assert!(reads::POSTGRES_READS[0].contains(&format!("{limit})")));
    }

    crate::testing::ledger_tests!(
        earns_are_read_in_spending_order_without_a_sort,
        unpaid_reversals_are_read_through_their_index
    );
}
