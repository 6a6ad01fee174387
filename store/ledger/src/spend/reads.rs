//! Reading a wallet's lots in spending order, the one part of spending whose statements differ
//! between the backends: SQLite reads cost no round trip, and each row a read brings but the
//! spend does not take is a table lookup wasted, so it reads little at a time; PostgreSQL reads
//! the aside rows and the first transactions in one round trip, and more at a time after.

use chrono::{DateTime, Utc};

use crate::StoreError;
use crate::backend::Tx;
use crate::fifo::{Aside, Earn, LotRow, Position};
use seam::Backend;

/// How many aside rows a spend reads at a time: a wallet can hold many (every partial return
/// of an earn it has not spent yet makes one), and a spend passes few.
pub const ASIDE_READ: usize = 16;
/// The wallet's first `ASIDE_READ` aside rows, or the next after `($2, $3)`.
macro_rules! aside_from {
    ($from:literal) => {
        concat!(
            "SELECT transaction_id, earned_at, remaining, expires_at FROM lots_aside \
             WHERE wallet_id = $1",
            $from,
            " ORDER BY earned_at, transaction_id LIMIT 16"
        )
    };
}
pub(crate) const ASIDE_FIRST: &str = aside_from!("");
pub(crate) const ASIDE_AFTER: &str = aside_from!(" AND (earned_at, transaction_id) > ($2, $3)");

/// A spend's reads of the wallet's transactions from its position, at most `$limit`, every kind
/// (the burns and expiries among the earns are passed over as they come), as `LotRead`s: a
/// spend reads only as far as its amount reaches. With the lot kinds as a filter in the query,
/// PostgreSQL's planner, guessing how few rows match, read every later earn and sorted them on
/// a ledger whose statistics lagged; without it, it walks the index and stops.
macro_rules! from_position {
    ($from:literal, $limit:literal) => {
        concat!(
            "SELECT false, e.* FROM (SELECT id, date, amount, expires_at, kind IN ",
            crate::transactions::lot_kinds!(),
            " FROM transactions WHERE wallet_id = $1",
            $from,
            " ORDER BY date, id LIMIT ",
            $limit,
            ") e"
        )
    };
}

// SQLite's reads, their limits written in their text: a statement whose `LIMIT` is a bound value
// is prepared again by SQLite each time the value changes.
/// The wallet's first transaction.
const SQLITE_FIRST: &str = from_position!("", "1");
/// Its first transaction from the position `($2, $3)` on.
const SQLITE_FROM: &str = from_position!(" AND (date, id) >= ($2, $3)", "1");
/// Its next 16 after `($2, $3)`.
const SQLITE_AFTER: &str = from_position!(" AND (date, id) > ($2, $3)", "16");

/// PostgreSQL's first read: the first `ASIDE_READ` aside rows and the first `$4` transactions
/// (from the position `($2, $3)` on, in the second form), as `LotRead`s.
macro_rules! aside_and_earns {
    ($from:literal) => {
        concat!(
            "(SELECT true, transaction_id, earned_at, remaining, expires_at, true \
             FROM lots_aside WHERE wallet_id = $1 ORDER BY earned_at, transaction_id LIMIT 16) \
             UNION ALL (",
            from_position!($from, "$4"),
            ")"
        )
    };
}
const PG_FIRST: &str = aside_and_earns!(" AND $2::TIMESTAMPTZ IS NULL AND $3::TEXT IS NULL");
const PG_FROM: &str = aside_and_earns!(" AND (date, id) >= ($2, $3)");
/// The next `$4` transactions after `($2, $3)`.
const PG_AFTER: &str = from_position!(" AND (date, id) > ($2, $3)", "$4");

#[cfg(test)]
pub(crate) const SQLITE_READS: &[&str] = &[SQLITE_FIRST, SQLITE_FROM, SQLITE_AFTER];
#[cfg(test)]
pub(crate) const POSTGRES_READS: &[&str] = &[PG_FROM, PG_AFTER];

/// How many transactions from the position the first read brings, and each read after it: a
/// spend usually takes one or two earns.
pub(crate) fn first_read<T: Tx>() -> usize {
    match T::BACKEND {
        Backend::Sqlite => 1,
        Backend::Postgres => 4,
    }
}

pub(crate) fn next_read<T: Tx>() -> usize {
    match T::BACKEND {
        Backend::Sqlite => 16,
        Backend::Postgres => 64,
    }
}

/// A wallet's aside rows and transactions from its position, each marked whether it is an
/// earn, both in spending order.
pub type Lots = (Vec<Aside<DateTime<Utc>>>, Vec<(Earn<DateTime<Utc>>, bool)>);

/// The wallet's first `ASIDE_READ` aside rows and its first `first_read` transactions from
/// `from` (its first ones when it has no position).
pub(crate) async fn first_lots<T: Tx>(
    tx: &mut T,
    wallet: &str,
    from: Option<&Position<DateTime<Utc>>>,
) -> Result<Lots, StoreError> {
    match T::BACKEND {
        Backend::Sqlite => {
            let aside: Vec<LotRow<DateTime<Utc>>> = tx.rows(ASIDE_FIRST, params![wallet]).await?;
            let rows: Vec<LotRead> = match from {
                Some(p) => tx.rows(SQLITE_FROM, params![wallet, p.date, p.id]).await?,
                None => tx.rows(SQLITE_FIRST, params![wallet]).await?,
            };
            let (_, read) = in_spending_order(rows.into_iter().map(lot));
            Ok((aside.into_iter().map(Aside::from).collect(), read))
        }
        Backend::Postgres => {
            let (date, id) = from.map(|p| (p.date, p.id.as_str())).unzip();
            let sql = if from.is_some() { PG_FROM } else { PG_FIRST };
            let limit = first_read::<T>() as i64;
            let rows: Vec<LotRead> = tx.rows(sql, params![wallet, date, id, limit]).await?;
            Ok(in_spending_order(rows.into_iter().map(lot)))
        }
    }
}

/// The wallet's next `next_read` transactions after `(date, id)`, each marked whether it is an
/// earn.
pub(crate) async fn lots_after<T: Tx>(
    tx: &mut T,
    wallet: &str,
    date: DateTime<Utc>,
    id: &str,
) -> Result<Vec<(Earn<DateTime<Utc>>, bool)>, StoreError> {
    let rows: Vec<LotRead> = match T::BACKEND {
        Backend::Sqlite => tx.rows(SQLITE_AFTER, params![wallet, date, id]).await?,
        Backend::Postgres => {
            let limit = next_read::<T>() as i64;
            tx.rows(PG_AFTER, params![wallet, date, id, limit]).await?
        }
    };
    Ok(in_spending_order(rows.into_iter().map(lot)).1)
}

/// A row of a spend's reads: whether an aside row, the lot, whether an earn.
pub type LotRead = (
    bool,
    String,
    DateTime<Utc>,
    i64,
    Option<DateTime<Utc>>,
    bool,
);

/// A `LotRead` as `in_spending_order` takes it.
pub fn lot(
    (is_aside, id, date, amount, expires_at, earn): LotRead,
) -> (bool, LotRow<DateTime<Utc>>, bool) {
    (is_aside, (id, date, amount, expires_at), earn)
}

/// A read's rows (whether an aside row, the lot, whether an earn) as the aside rows and the
/// transactions, each marked whether it is an earn, both in spending order.
pub fn in_spending_order(rows: impl Iterator<Item = (bool, LotRow<DateTime<Utc>>, bool)>) -> Lots {
    let (mut aside, mut read) = (Vec::new(), Vec::new());
    for (is_aside, row, earn) in rows {
        if is_aside {
            aside.push(Aside::from(row));
        } else {
            read.push((Earn::from(row), earn));
        }
    }
    aside.sort_by(|a, b| (&a.date, &a.id).cmp(&(&b.date, &b.id)));
    read.sort_by(|(a, _), (b, _)| (&a.date, &a.id).cmp(&(&b.date, &b.id)));
    (aside, read)
}

/// A position as the database holds it: (date, id, taken), the first two NULL before any spend.
pub fn position<D>(row: (Option<D>, Option<String>, i64)) -> Option<Position<D>> {
    let (date, id, taken) = row;
    Some(Position {
        date: date?,
        id: id?,
        taken,
    })
}
