//! A wallet in time: what its lots will lose to expiry over the days ahead (for members'
//! reminders).

use std::collections::BTreeMap;

use chrono::{DateTime, NaiveDate, Utc};

use crate::ledger::fifo::lot_left;
use crate::ledger::transactions::lot_kinds;
use crate::{Campaign, Store, StoreError, Tokens};

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

/// A wallet in time (scope: `&Campaign`).
impl Store {
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
