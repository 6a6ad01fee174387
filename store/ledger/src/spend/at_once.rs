//! PostgreSQL: a spend without an explicit transaction or a lock, tried before the locked one.
//! On a loaded server a round trip costs more than the work done in most of a spend's
//! statements, and the wallet's lock is held across none of them here.
//!
//! `read` finds the wallet by its id or reference and reads, in one snapshot, its row (its
//! balance less what holds reserve, its position and its version, `xmin`), its aside rows and
//! the first few transactions from its position; `Snapshot::take` takes the amount from them in
//! memory (`fifo`). The caller's one statement then writes the spend only if the wallet's row is
//! still that version (see `burn/postgres/at_once.rs`, `holds/at_once.rs`). Every writer that
//! changes what a spend reads (credits, burns, holds, expiry) updates the wallet's row in the
//! same transaction, so an unchanged version means the reads still hold; a changed one (another
//! writer came between the two statements) writes nothing, and the caller takes the locked
//! path. So does anything `take` leaves to it: a balance too low (the locked path tells a
//! replay from a refusal and keeps the refusal), a wallet that owes tokens (see
//! `spend::repay`), a spend that needs more earns than the read brought, or one that changes
//! aside rows.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use crate::fifo::{Aside, Earn, Position, Spent, Taker};
use crate::spend::{ASIDE_READ, in_spending_order, position};
use crate::{Campaign, StoreError};

/// How many of the wallet's transactions from its position the read brings (`READ`'s `LIMIT`):
/// a burn usually takes one or two earns.
const EARNS_READ: usize = 4;

/// The campaign's wallet (`$1` the organisation, `$2` the campaign) with id or reference `$3`:
/// its id, currency, version, balance and position, each row joined to one of its aside rows or
/// one of its first `EARNS_READ` transactions from the position (any kind: burns among the
/// earns are passed over, as in `from_position!`). The two branches of the transactions read
/// each walk `(wallet_id, date, id)` from where they start; only one runs. The limit is written
/// in the text, not bound: PostgreSQL costs a generic plan's `LIMIT $n` as a tenth of the rows,
/// which on a long history makes the generic plan look dear beside a custom one, and a prepared
/// statement whose generic plan looks dear is planned again on every call.
const READ: &str = concat!(
    "SELECT w.id, w.currency, w.version, w.balance, w.fifo_date, w.fifo_id, w.fifo_taken, \
       w.owed, l.aside, l.id, l.date, l.amount, l.expires_at, l.earn \
     FROM (SELECT id, currency, xmin::text::bigint AS version, balance - held AS balance, \
             fifo_date, fifo_id, \
             fifo_taken, owed FROM wallets WHERE id = ",
    crate::wallets::wallet_id_of_reference!(),
    ") w \
     LEFT JOIN LATERAL ( \
       (SELECT true AS aside, transaction_id AS id, earned_at AS date, remaining AS amount, \
          expires_at, true AS earn FROM lots_aside WHERE wallet_id = w.id \
          ORDER BY earned_at, transaction_id LIMIT 16) \
       UNION ALL (SELECT false, id, date, amount, expires_at, kind IN ",
    crate::transactions::lot_kinds!(),
    " FROM transactions \
          WHERE wallet_id = w.id AND (date, id) >= (w.fifo_date, w.fifo_id) \
          ORDER BY date, id LIMIT 4) \
       UNION ALL (SELECT false, id, date, amount, expires_at, kind IN ",
    crate::transactions::lot_kinds!(),
    " FROM transactions \
          WHERE wallet_id = w.id AND w.fifo_date IS NULL ORDER BY date, id LIMIT 4) \
     ) l ON true"
);

type ReadRow = (
    String,
    String,
    i64,
    i64,
    Option<DateTime<Utc>>,
    Option<String>,
    i64,
    i64,
    Option<bool>,
    Option<String>,
    Option<DateTime<Utc>>,
    Option<i64>,
    Option<DateTime<Utc>>,
    Option<bool>,
);

/// What the read found of a wallet's state: what an unlocked spend from it is written with.
pub(crate) struct Snapshot {
    version: i64,
    /// The balance less what holds reserve: what a spend may take from.
    balance: i64,
    /// What the wallet owes (see `spend::repay`): a wallet in debt takes the locked path.
    owed: i64,
    position: Option<Position<DateTime<Utc>>>,
    aside: Vec<Aside<DateTime<Utc>>>,
    /// The transactions from the position, each marked whether it is an earn.
    read: Vec<(Earn<DateTime<Utc>>, bool)>,
}

/// The id and currency of the campaign's wallet with id or reference `reference`, and what a
/// spend from it reads; `None` when the campaign has no such wallet.
pub(crate) async fn read(
    conn: &mut PgConnection,
    campaign: &Campaign,
    reference: &str,
) -> Result<Option<(String, String, Snapshot)>, StoreError> {
    let rows: Vec<ReadRow> = sqlx::query_as(READ)
        .bind(&campaign.org_id)
        .bind(&campaign.id)
        .bind(reference)
        .fetch_all(conn)
        .await?;
    let Some((wallet_id, currency, version, balance, date, id, taken, owed, ..)) = rows.first()
    else {
        return Ok(None);
    };
    // The wallet's columns repeat on every row; a row without a lot is a wallet holding none
    // (the left join's empty side).
    let lots = rows.iter().filter_map(|r| {
        let (Some(is_aside), Some(id), Some(date), Some(amount), Some(earn)) =
            (r.8, r.9.clone(), r.10, r.11, r.13)
        else {
            return None;
        };
        Some((is_aside, (id, date, amount, r.12), earn))
    });
    let (aside, read) = in_spending_order(lots);
    let snapshot = Snapshot {
        version: *version,
        balance: *balance,
        owed: *owed,
        position: position((*date, id.clone(), *taken)),
        aside,
        read,
    };
    Ok(Some((wallet_id.clone(), currency.clone(), snapshot)))
}

impl Snapshot {
    /// What a spend of `amount` that must leave `min_balance` takes from the lots read, with
    /// the version they were read at; `None` when the locked path must make it (see the
    /// module).
    pub(crate) fn take(self, amount: i64, min_balance: i64) -> Option<(i64, Spent<DateTime<Utc>>)> {
        // A wallet with more aside rows than the read brings takes the locked path, which
        // reads them as far as it needs.
        if self.balance - amount < min_balance || self.owed > 0 || self.aside.len() == ASIDE_READ {
            return None;
        }
        let mut taker = Taker::new(amount, self.position, self.aside);
        let read = &self.read;
        let wants_more = read
            .iter()
            .filter(|(_, earn)| *earn)
            .all(|(e, _)| taker.earn(e));
        if wants_more && read.len() == EARNS_READ {
            return None;
        }
        let spent = taker.finish();
        let aside_unchanged = spent.aside_updates.is_empty()
            && spent.aside_deletes.is_empty()
            && spent.aside_inserts.is_empty();
        aside_unchanged.then_some((self.version, spent))
    }
}

/// What a write tried without a lock made, or `None` when the locked step must make it: the
/// write left it (`Ok(None)`), or a unique key refused it (a repeat, which the locked step
/// answers).
pub(crate) fn or_locked<T>(tried: Result<Option<T>, StoreError>) -> Result<Option<T>, StoreError> {
    match tried {
        Err(err) if err.is_unique_violation() => Ok(None),
        tried => tried,
    }
}

/// What a spend took from each earn, as the arrays its statement binds (earn ids, amounts).
pub(crate) fn takes(spent: &Spent<DateTime<Utc>>) -> (Vec<String>, Vec<i64>) {
    spent.takes.iter().cloned().unzip()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_brings_as_many_transactions_as_the_burn_counts_on() {
        assert_eq!(READ.matches(&format!("LIMIT {EARNS_READ})")).count(), 2);
    }
}
