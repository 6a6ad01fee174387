//! PostgreSQL: a burn in two statements and no explicit transaction, tried before the locked
//! one (`Debit::postgres`, five round trips with `BEGIN` and `COMMIT`): the snapshot read and
//! the take in memory are the spend kernel's (`spend::at_once`), the write is `WRITE`, which
//! debits the wallet only if its row is still the version read.
//!
//! A repeated `externalId` makes the insert fail on the unique key, which undoes the debit in
//! the same statement; the caller answers it as a repeat, as for the locked path's race.

use sqlx::PgConnection;

use super::super::Debit;
use crate::StoreError;
use crate::spend::at_once::{Snapshot, takes};
use crate::transactions::{entry_columns, unsum};

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

impl Debit {
    /// Writes the burn from what `snapshot` read if it can without a lock (see the module);
    /// false when the caller must take the locked path, nothing written.
    pub(super) async fn at_once(
        &self,
        conn: &mut PgConnection,
        snapshot: Snapshot,
    ) -> Result<bool, StoreError> {
        let amount = self.transaction.amount.micros();
        let Some((version, spent)) = snapshot.take(amount, self.min_balance) else {
            return Ok(false);
        };
        let (earns, amounts) = takes(&spent);
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
            .bind(version)
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
