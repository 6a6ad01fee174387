//! A wallet in time: its balance, held and pending tokens as they were at a past instant (for
//! support staff), and what its lots will lose to expiry over the days ahead (for members'
//! reminders).
//!
//! The balance at an instant is the sum of the transactions recorded (`created_at`) by then,
//! less what was pending then. Summing 100,000 transactions takes tens of milliseconds, so
//! the sums of days that are over for good are kept (`balance_days`, filled the first time a
//! wallet is asked): an answer reads the wallet's summed days before the instant's day and the
//! transactions from there to the instant, both through indexes.

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, DurationRound, NaiveDate, Utc};

use crate::common::ids::now;
use crate::ledger::fifo::lot_left;
use crate::ledger::transactions::{lot_kinds, signed_amount};
use crate::{Campaign, Store, StoreError, Tokens};

/// A wallet's figures at an instant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BalanceAt {
    pub wallet_id: String,
    pub at: DateTime<Utc>,
    /// The tokens it held (pending ones not included).
    pub balance: Tokens,
    /// Of the balance, what open holds reserved.
    pub held: Tokens,
    /// Tokens earned but not vested yet.
    pub pending: Tokens,
}

/// How long after a day ends nothing more is recorded in it. A write takes its `created_at`
/// when it starts; none lasts an hour, however far the nodes' clocks disagree.
const SETTLED_AFTER: Duration = Duration::hours(1);

/// The last day of wallet `$1` whose sum is kept: every day before it is summed too.
const SUMMED_UNTIL: &str = "SELECT MAX(day) FROM balance_days WHERE wallet_id = $1";

/// When wallet `$1` first recorded a transaction.
const FIRST: &str = "SELECT MIN(created_at) FROM transactions WHERE wallet_id = $1";

/// The sums of the days of wallet `$1` from `$2` to `$3` (the first instants of days), one row
/// a day that has transactions (`{day}`: the day's first instant of `created_at`).
const SUM_DAYS: &str = concat!(
    "INSERT INTO balance_days (wallet_id, day, net) SELECT wallet_id, {day}, SUM(",
    signed_amount!(),
    ") FROM transactions WHERE wallet_id = $1 AND created_at >= $2 AND created_at < $3 \
     GROUP BY wallet_id, {day} ON CONFLICT DO NOTHING"
);

/// The last day summed, holding 0 if it had no transactions: where the next fill starts.
const SUMMED: &str =
    "INSERT INTO balance_days (wallet_id, day, net) VALUES ($1, $2, 0) ON CONFLICT DO NOTHING";

/// What wallet `$1`'s summed days before `$2` added to its balance.
const DAYS_BEFORE: &str = "SELECT CAST(COALESCE(SUM(net), 0) AS BIGINT) FROM balance_days \
     WHERE wallet_id = $1 AND day < $2";

/// What wallet `$1`'s transactions recorded from `$2` to `$3` added to its balance.
const RECORDED: &str = concat!(
    "SELECT CAST(COALESCE(SUM(",
    signed_amount!(),
    "), 0) AS BIGINT) FROM transactions WHERE wallet_id = $1 AND created_at >= $2 \
     AND created_at <= $3"
);

/// What wallet `$1`'s holds reserved at `$2`: placed by then, settled after (or not yet).
const HELD_AT: &str = "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM holds \
     WHERE wallet_id = $1 AND created_at <= $2 AND (status = 'held' OR updated_at > $2)";

/// What was pending in wallet `$1` at `$2`: each earn credited pending by then and neither
/// vested nor cancelled yet, less what reversals recorded by then took off it.
const PENDING_AT: &str = "SELECT CAST(COALESCE(SUM(t.amount - COALESCE((SELECT SUM(r.amount) \
     FROM transactions r WHERE r.corrects = p.transaction_id AND r.created_at <= $2), 0)), 0) \
     AS BIGINT) FROM pending_earns p JOIN transactions t ON t.id = p.transaction_id \
     WHERE p.wallet_id = $1 AND p.created_at <= $2 AND (p.settled_at IS NULL OR p.settled_at > $2)";

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

/// The first instant of `at`'s day (UTC).
fn day_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.duration_trunc(Duration::days(1)).unwrap_or(at)
}

/// A wallet in time (scope: `&Campaign`).
impl Store {
    /// The campaign's wallet `reference` (id or external reference) as it was at `at`: its
    /// balance, held and pending tokens as recorded by then (an instant still to come: now).
    pub async fn balance_at(
        &self,
        campaign: &Campaign,
        reference: &str,
        at: DateTime<Utc>,
    ) -> Result<BalanceAt, StoreError> {
        let wallet = self.get_wallet(campaign, reference).await?;
        let at = at.min(now());
        let id = wallet.id.as_str();
        // From the instant's day, or from the first day not summed if that comes sooner (with
        // none summed, from the wallet's first transaction).
        let from = match self.sum_days(id).await? {
            Some(last) => day_of(at).min(last + Duration::days(1)),
            None => self.first_recorded(id).await?.unwrap_or(at),
        };
        let (days,): (i64,) = self.read_one(DAYS_BEFORE, params![id, from]).await?;
        let (recorded,): (i64,) = self.read_one(RECORDED, params![id, from, at]).await?;
        let (held,): (i64,) = self.read_one(HELD_AT, params![id, at]).await?;
        let (pending,): (i64,) = self.read_one(PENDING_AT, params![id, at]).await?;
        Ok(BalanceAt {
            wallet_id: wallet.id,
            at,
            balance: Tokens::from_micros(days + recorded - pending),
            held: Tokens::from_micros(held),
            pending: Tokens::from_micros(pending),
        })
    }

    /// Sums wallet `id`'s days that are over for good and not summed yet; the last day summed,
    /// if any.
    async fn sum_days(&self, id: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let (last,): (Option<DateTime<Utc>>,) = self.read_one(SUMMED_UNTIL, params![id]).await?;
        let from = match last {
            Some(last) => last + Duration::days(1),
            None => match self.first_recorded(id).await? {
                Some(first) => first,
                None => return Ok(None),
            },
        };
        let until = day_of(now() - SETTLED_AFTER);
        if from >= until {
            return Ok(last);
        }
        let day = self.dialect(
            "substr(created_at, 1, 10) || 'T00:00:00+00:00'",
            "date_trunc('day', created_at, 'UTC')",
        );
        let sql = SUM_DAYS.replace("{day}", day);
        self.execute(&sql, params![id, from, until]).await?;
        let last_day = until - Duration::days(1);
        self.execute(SUMMED, params![id, last_day]).await?;
        Ok(Some(last_day))
    }

    /// The first day wallet `id` recorded a transaction, if it has.
    async fn first_recorded(&self, id: &str) -> Result<Option<DateTime<Utc>>, StoreError> {
        let (first,): (Option<DateTime<Utc>>,) = self.read_one(FIRST, params![id]).await?;
        Ok(first.map(day_of))
    }

    /// The one row `sql` gives (an aggregate).
    async fn read_one<R: crate::backend::tx::Row>(
        &self,
        sql: &str,
        args: &[crate::backend::Arg<'_>],
    ) -> Result<R, StoreError> {
        self.read_row(sql, args)
            .await?
            .ok_or_else(|| StoreError::NotCommitted(format!("no row from {sql}")))
    }

    /// The tokens of the campaign's wallet `reference` (id or external reference) that expire
    /// by `until`, per day in UTC, soonest first: what its lots hold now (tokens held by an open
    /// hold are not in them). A lot already due that the sweep has not expired yet is counted on
    /// its day.
    pub async fn expiring(
        &self,
        campaign: &Campaign,
        reference: &str,
        until: DateTime<Utc>,
    ) -> Result<Vec<ExpiringDay>, StoreError> {
        let wallet = self.get_wallet(campaign, reference).await?;
        let lots: Vec<(DateTime<Utc>, i64)> =
            self.read_rows(EXPIRING, params![wallet.id, until]).await?;
        let mut days: BTreeMap<NaiveDate, i64> = BTreeMap::new();
        for (at, left) in lots.into_iter().filter(|(_, left)| *left > 0) {
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

    /// Every read of a balance in time goes through its wallet's index, never a scan of the
    /// journal, the holds or the pending earns.
    async fn a_balance_in_time_is_read_through_indexes(store: Store) {
        let at = now();
        for (sql, index) in [
            (RECORDED, "transactions_wallet_created"),
            (FIRST, "transactions_wallet_created"),
            (DAYS_BEFORE, "balance_days"),
            (SUMMED_UNTIL, "balance_days"),
            (HELD_AT, "holds_wallet"),
            (PENDING_AT, "pending_earns_wallet"),
        ] {
            let args = params![Some("w"), at, at];
            let plan = store
                .query_plan(sql, args, None, Plan::SortsPricedOut)
                .await;
            assert!(plan.contains(index), "{sql}:\n{plan}");
        }
    }

    crate::backend_tests!(a_balance_in_time_is_read_through_indexes);
}
