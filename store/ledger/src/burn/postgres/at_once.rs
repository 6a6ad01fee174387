//! PostgreSQL: a burn in two statements and no explicit transaction, tried before the locked
//! one (`Debit::postgres`, five round trips with `BEGIN` and `COMMIT`). On a loaded server a
//! round trip costs more than the work done in most of a burn's statements, and the wallet's
//! lock is held across none of them here.
//!
//! The first statement finds the wallet by its id or reference and reads, in one snapshot, its
//! row (its balance, its position and its version, `xmin`), its aside rows and the first few
//! earns from its position; the amount is taken from them in memory (`fifo`). The second writes
//! the burn only if the wallet's row is still that version: the debit, the new position and the
//! BURN transaction in one statement, so all or nothing. Every writer that changes what a burn
//! reads (credits, burns, expiry) updates the wallet's row in the same transaction, so an
//! unchanged version means the reads still hold; a changed one (another writer came between
//! the two statements) writes nothing, and the caller takes the locked path. So does anything
//! this path leaves to it: a balance too low (the locked path tells a replay from a refusal), a
//! wallet that owes tokens (see `spend::repay`), a burn that needs more earns than the first
//! read brought, or one that changes aside rows.
//!
//! A repeated `externalId` makes the insert fail on the unique key, which undoes the debit in
//! the same statement; the caller answers it as a repeat, as for the locked path's race.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::super::Debit;
use crate::fifo::{Aside, Earn, Position, Taker};
use crate::spend::{ASIDE_READ, in_spending_order, position};
use crate::transactions::{entry_columns, unsum};
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

/// The debit of `$6` from wallet `$4` keeping `$21`, at `$22`, moving its position to
/// (`$23`, `$24`, `$25`) when given, if its row is still version `$26` and no burn under its
/// key (`$20`) was refused (the locked path answers that one); then the BURN
/// transaction (`INSERT_TRANSACTION`'s parameters), what it took from each earn (`$27`,
/// `$28`: earn ids and amounts) and its event (`$29`...`$35`) if the debit happened. Whether it
/// did.
const WRITE: &str = concat!(
    "WITH debit AS (UPDATE wallets SET balance = balance - $6, updated_at = $22, \
       fifo_date = COALESCE($23, fifo_date), fifo_id = COALESCE($24, fifo_id), \
       fifo_taken = COALESCE($25, fifo_taken), ",
    unsum!("$13"),
    " WHERE id = $4 AND xmin::text::bigint = $26 AND balance - held - $6 >= $21 \
         AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = $20) RETURNING 1), \
     claim AS (INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
       $19, $20 WHERE EXISTS (SELECT FROM debit) RETURNING 1), \
     spent AS (INSERT INTO spends (transaction_id, earn_id, amount) \
       SELECT $1, t.earn, t.amount FROM unnest($27::text[], $28::bigint[]) AS t(earn, amount) \
       WHERE EXISTS (SELECT FROM claim)), \
     event AS (INSERT INTO events (",
    events::event_columns!(),
    ") SELECT $29, $30, $31, $32, $33, $34, $35 WHERE EXISTS (SELECT FROM claim)) \
     SELECT EXISTS (SELECT FROM claim)"
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

/// What the read found of a wallet's state: what an unlocked burn from it is written with.
pub(super) struct Snapshot {
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
/// burn from it reads; `None` when the campaign has no such wallet.
pub(super) async fn read(
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

impl Debit {
    /// Writes the burn from what `snapshot` read if it can without a lock (see the module);
    /// false when the caller must take the locked path, nothing written.
    pub(super) async fn at_once(
        &self,
        conn: &mut PgConnection,
        snapshot: Snapshot,
    ) -> Result<bool, StoreError> {
        let amount = self.transaction.amount.micros();
        // A wallet with more aside rows than the read brings takes the locked path, which
        // reads them as far as it needs.
        if snapshot.balance - amount < self.min_balance
            || snapshot.owed > 0
            || snapshot.aside.len() == ASIDE_READ
        {
            return Ok(false);
        }
        let mut taker = Taker::new(amount, snapshot.position, snapshot.aside);
        let read = &snapshot.read;
        let wants_more = read
            .iter()
            .filter(|(_, earn)| *earn)
            .all(|(e, _)| taker.earn(e));
        if wants_more && read.len() == EARNS_READ {
            return Ok(false);
        }
        let spent = taker.finish();
        if !(spent.aside_updates.is_empty()
            && spent.aside_deletes.is_empty()
            && spent.aside_inserts.is_empty())
        {
            return Ok(false);
        }
        let (earns, amounts): (Vec<String>, Vec<i64>) = spent.takes.into_iter().unzip();
        let to = spent.position;
        let entry = self.entry();
        let key = entry.idem_key();
        let mut write = sqlx::query_as(WRITE);
        for arg in entry.args(&key, None) {
            write = write.bind(arg);
        }
        write = write
            .bind(self.min_balance)
            .bind(self.transaction.created_at)
            .bind(to.as_ref().map(|p| p.date))
            .bind(to.as_ref().map(|p| p.id.as_str()))
            .bind(to.as_ref().map(|p| p.taken))
            .bind(snapshot.version)
            .bind(earns)
            .bind(amounts);
        let event = self.event()?;
        for arg in event.args() {
            write = write.bind(arg);
        }
        let (written,): (bool,) = write.fetch_one(conn).await?;
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_read_brings_as_many_transactions_as_the_burn_counts_on() {
        assert_eq!(READ.matches(&format!("LIMIT {EARNS_READ})")).count(), 2);
    }
}
