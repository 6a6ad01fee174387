//! A wallet in time: its balance, held and pending tokens as they were at an instant (for
//! support staff), and what its lots will lose to expiry over the days ahead (for members'
//! reminders).
//!
//! The balance at an instant is the sum of the transactions dated (`date`, as the wallet's
//! history lists them) by then, less what was pending then. Summing 100,000 transactions
//! takes tens of milliseconds, so the sums of whole days are kept (`balance_days`, filled when
//! a wallet is first asked about a day beyond them): an answer reads the wallet's summed days
//! before the instant's day and the transactions from there to the instant, both through
//! indexes. A write dated before what is summed marks the days from its date stale (`unsum!`)
//! in the wallet UPDATE it makes anyway; the next question sums them again.

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};

use crate::backend::{Steps, Tx};
use crate::common::calendar::{day_of, first_second};
use crate::fifo::lot_left;
use crate::transactions::{lot_kinds, signed_amount};
use crate::{Backend, Campaign, Ledger, StoreError, Tokens};

/// A wallet's figures at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceAt {
    pub wallet_id: String,
    pub at: DateTime<Utc>,
    /// The tokens it held (pending ones not included), as its transactions dated by then say.
    pub balance: Tokens,
    /// Of the balance, what the holds open then reserved.
    pub held: Tokens,
    /// Tokens earned by then that had not vested.
    pub pending: Tokens,
}

/// Wallet `$1` at `$3` in one statement (so one snapshot): how far its days are summed; what
/// its summed days before `$2` (the first instant of a day) added; what its transactions dated
/// from `$2` to `$3` added; what its open holds reserved at `$3` (placed by then, settled after
/// or not yet); and what was pending at `$3`: each earn dated by then and not vested by then
/// (or not vested yet), less what reversals dated by then took off it.
const AT: &str = concat!(
    "SELECT (SELECT summed_to FROM wallets WHERE id = $1), \
     (SELECT CAST(COALESCE(SUM(net), 0) AS BIGINT) FROM balance_days \
       WHERE wallet_id = $1 AND day < $2), \
     (SELECT CAST(COALESCE(SUM(",
    signed_amount!(),
    "), 0) AS BIGINT) FROM transactions WHERE wallet_id = $1 AND date >= $2 AND date <= $3), \
     (SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM holds \
       WHERE wallet_id = $1 AND created_at <= $3 AND (status = 'held' OR updated_at > $3)), \
     (SELECT CAST(COALESCE(SUM(t.amount - COALESCE((SELECT SUM(r.amount) FROM transactions r \
         WHERE r.corrects = p.transaction_id AND r.date <= $3), 0)), 0) AS BIGINT) \
       FROM pending_earns p JOIN transactions t ON t.id = p.transaction_id \
       WHERE p.wallet_id = $1 AND t.date <= $3 AND (p.status = 'pending' OR p.vests_at > $3))"
);
type AtRow = (Option<DateTime<Utc>>, i64, i64, i64, i64);

/// How far wallet `$1`'s days are summed, under its lock.
const SUMMED_TO: &str = "SELECT summed_to FROM wallets WHERE id = $1";
/// The date of wallet `$1`'s first transaction.
const FIRST: &str = "SELECT MIN(date) FROM transactions WHERE wallet_id = $1";
/// Wallet `$1`'s stale days, from `$2` on.
const STALE: &str = "DELETE FROM balance_days WHERE wallet_id = $1 AND day >= $2";
/// The sums of wallet `$1`'s days from `$2` to `$3` (first instants of days), a row for each
/// day with transactions (`{day}`: the first instant of `date`'s day).
const SUM_DAYS: &str = concat!(
    "INSERT INTO balance_days (wallet_id, day, net) SELECT wallet_id, {day}, SUM(",
    signed_amount!(),
    ") FROM transactions WHERE wallet_id = $1 AND date >= $2 AND date < $3 \
     GROUP BY wallet_id, {day}"
);
const SUMMED: &str = "UPDATE wallets SET summed_to = $2 WHERE id = $1";

/// How many times a balance in time reads: once, again after summing the days it needs, again
/// from the mark a write dated before them left meanwhile, and at last without the summed days
/// (always answered).
const READINGS: usize = 4;

/// Sums wallet `wallet`'s days before `to` (a day's first instant) that are not summed, under
/// its lock; `day` is `{day}` in `SUM_DAYS` for the store's backend.
struct Summing {
    wallet: String,
    to: DateTime<Utc>,
    day: String,
}

impl Steps for Summing {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let wallet = self.wallet.as_str();
        let (summed_to,): (Option<DateTime<Utc>>,) = tx
            .row_locked(SUMMED_TO, params![wallet])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        let from = match summed_to {
            Some(summed_to) => Some(day_of(summed_to)),
            None => {
                let (first,): (Option<DateTime<Utc>>,) =
                    tx.row(FIRST, params![wallet]).await?.unwrap_or((None,));
                first.map(day_of)
            }
        };
        if from.is_some_and(|from| from >= self.to) {
            return Ok(());
        }
        if let Some(from) = from {
            tx.execute(STALE, params![wallet, from]).await?;
            let sql = SUM_DAYS.replace("{day}", &self.day);
            tx.execute(&sql, params![wallet, from, self.to]).await?;
        }
        tx.execute(SUMMED, params![wallet, self.to]).await?;
        Ok(())
    }
}

/// The tokens of a wallet's lots that expire on one day (UTC).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExpiringDay {
    pub date: NaiveDate,
    pub tokens: Tokens,
}

/// What the open lots of wallet `$1` hold that expires by `$2`, lot by lot: (expiry, what is
/// left). The earns from the spending position on, each counted by `lot_left!` (its aside row,
/// if it has one), walked through `(wallet_id, date, id)` from the position; and the aside rows
/// before the position (earns spent out of turn), which the first part does not reach.
const EXPIRING: &str = concat!(
    "SELECT t.expires_at, ",
    lot_left!(),
    " FROM wallets w JOIN transactions t ON t.wallet_id = w.id \
     LEFT JOIN lots_aside a ON a.transaction_id = t.id \
     WHERE w.id = $1 AND t.wallet_id = $1 AND t.kind IN ",
    lot_kinds!(),
    " AND t.expires_at <= $2 \
       AND (w.fifo_id IS NULL OR (t.date, t.id) >= (w.fifo_date, w.fifo_id)) \
     UNION ALL SELECT a.expires_at, a.remaining FROM lots_aside a JOIN wallets w ON w.id = a.wallet_id \
     WHERE a.wallet_id = $1 AND a.remaining > 0 AND a.expires_at <= $2 \
       AND (a.earned_at, a.transaction_id) < (w.fifo_date, w.fifo_id)"
);

impl Ledger {
    /// SQL for the first instant (UTC) of the day of the time in `column`, on this backend
    /// (SQLite keeps times as RFC 3339 text).
    pub(crate) fn day_of_sql(&self, column: &str) -> String {
        match self.backend() {
            Backend::Sqlite => format!("substr({column}, 1, 10) || 'T00:00:00+00:00'"),
            Backend::Postgres => format!("date_trunc('day', {column}, 'UTC')"),
        }
    }
}

/// A wallet in time (scope: `&Campaign`).
impl Ledger {
    /// The campaign's wallet `reference` (id or external reference) as it was at `at`: its
    /// balance and pending tokens as its transactions dated by then say, and what its holds
    /// open then reserved.
    #[tracing::instrument(skip_all)]
    pub async fn balance_at(
        &self,
        campaign: &Campaign,
        reference: &str,
        at: DateTime<Utc>,
    ) -> Result<BalanceAt, StoreError> {
        let wallet = self.get_wallet(campaign, reference).await?;
        let id = wallet.id.as_str();
        let day = day_of(at);
        let mut from = day;
        let mut summed_here = false;
        for reading in 1..=READINGS {
            let (summed_to, days, dated, held, pending): AtRow = self
                .read_row(AT, params![id, from, at])
                .await?
                .ok_or(StoreError::NotFound { what: "wallet" })?;
            // The days before `from` were summed as this snapshot sees them, or none were read.
            let summed = summed_to.is_some_and(|summed_to| day_of(summed_to) >= from);
            if summed || from == first_second() {
                return Ok(BalanceAt {
                    wallet_id: wallet.id,
                    at,
                    balance: Tokens::from_micros(days + dated - pending),
                    held: Tokens::from_micros(held),
                    pending: Tokens::from_micros(pending),
                });
            }
            from = if !summed_here {
                // Its days up to the instant's are not all summed: sum them, and read again.
                let summing = Summing {
                    wallet: wallet.id.clone(),
                    to: day,
                    day: self.day_of_sql("date"),
                };
                self.write(summing).await?;
                summed_here = true;
                day
            } else {
                // A write dated before `from` came between: from its day, or at last without
                // the summed days.
                match summed_to {
                    Some(summed_to) if reading + 1 < READINGS => day_of(summed_to),
                    _ => first_second(),
                }
            };
        }
        Err(StoreError::NotCommitted(format!(
            "the balance of wallet {id} at {at} was not read"
        )))
    }

    /// The tokens of the campaign's wallet `reference` (id or external reference) that expire
    /// by `until`, per day in UTC, soonest first: what its lots hold now (tokens held by an open
    /// hold are not in them). A lot already due that the sweep has not expired yet is counted on
    /// its day.
    #[tracing::instrument(skip_all)]
    pub async fn expiring(
        &self,
        campaign: &Campaign,
        reference: &str,
        until: DateTime<Utc>,
    ) -> Result<Vec<ExpiringDay>, StoreError> {
        let wallet = self.get_wallet(campaign, reference).await?;
        self.expiring_days(&wallet.id, None, until).await
    }

    /// What wallet `wallet_id`'s lots hold that expires after `after` (if given) and by
    /// `until`, per day in UTC, soonest first.
    pub(crate) async fn expiring_days(
        &self,
        wallet_id: &str,
        after: Option<DateTime<Utc>>,
        until: DateTime<Utc>,
    ) -> Result<Vec<ExpiringDay>, StoreError> {
        let lots: Vec<(DateTime<Utc>, i64)> =
            self.read_rows(EXPIRING, params![wallet_id, until]).await?;
        let mut days: BTreeMap<NaiveDate, i64> = BTreeMap::new();
        let later = |at: &DateTime<Utc>| after.is_none_or(|after| *at > after);
        for (at, left) in lots.into_iter().filter(|(at, left)| *left > 0 && later(at)) {
            *days.entry(at.date_naive()).or_default() += left;
        }
        Ok(days
            .into_iter()
            .map(|(date, micros)| ExpiringDay {
                date,
                tokens: Tokens::from_micros(micros),
            })
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Plan;

    /// A balance in time reads through its wallet's indexes, never a scan of the journal, the
    /// holds or the pending earns.
    async fn a_balance_in_time_is_read_through_indexes(store: Ledger) {
        let at = store.now();
        let plan = store
            .query_plan(AT, params![Some("w"), at, at], None, Plan::SortsPricedOut)
            .await;
        for index in [
            "transactions_wallet_date",
            "balance_days",
            "holds_wallet",
            "pending_earns_wallet",
        ] {
            assert!(plan.contains(index), "{index}:\n{plan}");
        }
        let sum_days = SUM_DAYS.replace("{day}", &store.day_of_sql("date"));
        for sql in [FIRST, sum_days.as_str()] {
            let plan = store
                .query_plan(sql, params![Some("w"), at, at], None, Plan::SortsPricedOut)
                .await;
            assert!(plan.contains("transactions_wallet_date"), "{sql}:\n{plan}");
        }
    }

    crate::testing::ledger_tests!(a_balance_in_time_is_read_through_indexes);
}
