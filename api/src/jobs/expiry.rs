//! The expiry sweep: every serving node expires due lots each minute.

use std::time::Duration;

use tokio::sync::watch;

use crate::AppState;

/// How often the expiry sweeper runs in a serving process.
const SWEEP: Duration = Duration::from_secs(60);

/// Expires due lots every minute until `stop`. Several processes may sweep at once: each lot
/// still expires exactly once.
pub async fn sweep_expiry(state: AppState, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(SWEEP);
    loop {
        if !super::next_tick(&mut tick, &mut stop).await {
            return;
        }
        // A stop does not wait for the pass: each wallet's expiry is its own transaction, and a
        // dropped one is rolled back, to be done by the next sweep.
        let sweep = tokio::select! {
            swept = state.store.expire(chrono::Utc::now()) => swept,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match sweep {
            Ok(0) => {}
            Ok(expired) => {
                metrics::counter!("lots_expired_total").increment(expired as u64);
                tracing::info!(expired, "expired lots");
            }
            Err(err) => tracing::warn!(%err, "expiry sweep failed"),
        }
    }
}
