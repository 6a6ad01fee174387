//! The earn worker: takes accepted earns from the store in batches and credits them. It wakes
//! when this process accepts an earn and polls now and then for earns other processes accepted
//! (or left behind when they stopped).

use std::time::Duration;

use tokio::sync::watch;

use crate::AppState;

/// Earns credited per database transaction: small enough that submissions waiting for the
/// writer are not held up long.
const BATCH: i64 = 128;
const POLL: Duration = Duration::from_millis(250);

/// Runs until `stop` turns true (or its sender is gone), finishing the batch in hand first.
pub async fn run(state: AppState, mut stop: watch::Receiver<bool>) {
    loop {
        if *stop.borrow() {
            return;
        }
        let claimed = match state.store.process_earns(&state.rule_book, BATCH).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(%err, "earn worker could not claim work");
                0
            }
        };
        if claimed > 0 {
            metrics::counter!("earn_requests_processed_total").increment(claimed as u64);
            continue;
        }
        tokio::select! {
            () = state.earn_waiting.notified() => {}
            () = tokio::time::sleep(POLL) => {}
            changed = stop.changed() => {
                if changed.is_err() {
                    return;
                }
            }
        }
    }
}
