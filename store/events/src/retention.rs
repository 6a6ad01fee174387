//! Retention: events are kept `EVENT_RETENTION` (30 days) after they happened, with their
//! deliveries and their attempts' log; then the sweep deletes them, except an event a delivery
//! still waits to send (its retries last 3 days, so none does by then unless its endpoint was
//! disabled for weeks: it waits for the endpoint). A feed reader's `after` naming a deleted
//! event is answered `400` like any id not in the feed.

use chrono::{DateTime, Duration, Utc};

use crate::Events;
use crate::backend::{Steps, Tx};
use crate::error::StoreError;

/// How long events, their deliveries and their attempts are kept.
pub const EVENT_RETENTION: Duration = Duration::days(30);

/// Events deleted in one transaction.
const BATCH: i64 = 1_000;

/// Events pruned (operator-wide: the background sweep).
impl Events {
    /// Deletes the events that happened before `before` and that no delivery waits to send,
    /// with their deliveries and attempts, a batch a transaction; how many events it deleted.
    #[tracing::instrument(skip_all)]
    pub async fn prune_events(&self, before: DateTime<Utc>) -> Result<usize, StoreError> {
        // An event not yet fanned out to every endpoint is kept too (see `Dispatch`).
        const OLD: &str = "SELECT id FROM events WHERE occurred_at < $1 \
             AND seq <= (SELECT fanned_seq FROM event_dispatch WHERE id = 1) AND NOT EXISTS \
             (SELECT 1 FROM deliveries d WHERE d.event_id = events.id AND d.status = 'pending') \
             ORDER BY occurred_at LIMIT $2";
        let mut pruned = 0;
        loop {
            let old: Vec<(String,)> = self.read_rows(OLD, params![before, BATCH]).await?;
            let ids: Vec<String> = old.into_iter().map(|(id,)| id).collect();
            if ids.is_empty() {
                return Ok(pruned);
            }
            let count = ids.len();
            pruned += self.write(Pruning { ids }).await?;
            if count < BATCH as usize {
                return Ok(pruned);
            }
        }
    }
}

/// Old events, deleted with what hangs on them.
struct Pruning {
    ids: Vec<String>,
}

impl Steps for Pruning {
    type Output = usize;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<usize, StoreError> {
        const ATTEMPTS: &str = "DELETE FROM delivery_attempts WHERE event_id {key}";
        const DELIVERIES: &str = "DELETE FROM deliveries WHERE event_id {key} \
             AND status <> 'pending'";
        // A delivery made for one of them since it was read keeps it.
        const EVENTS: &str = "DELETE FROM events WHERE id {key} AND NOT EXISTS \
             (SELECT 1 FROM deliveries d WHERE d.event_id = events.id)";
        tx.execute_each(ATTEMPTS, params![], &self.ids).await?;
        tx.execute_each(DELIVERIES, params![], &self.ids).await?;
        let deleted = tx.execute_each(EVENTS, params![], &self.ids).await?;
        Ok(deleted as usize)
    }
}
