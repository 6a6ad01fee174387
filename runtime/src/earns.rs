//! The earn worker: takes accepted earns from the store in batches and credits them, and awards
//! the members' activities the platform recorded (or whose award a request left undone). It wakes
//! when this process accepts an earn and polls now and then for earns other processes accepted
//! (or left behind when they stopped).

use std::time::Duration;

use tokio::sync::watch;

use api::AppState;

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
        // In a task of its own: whatever fails in one pass (a panic included: its earns are
        // claimed again when their lease ends), the worker goes on.
        let (store, book) = (state.store.clone(), state.rule_book.clone());
        let pass = tokio::spawn(async move {
            let earns = store.ledger().process_earns(&book, BATCH).await?;
            let activities = store
                .ledger()
                .award_waiting_activities(&book, BATCH)
                .await?;
            Ok::<_, store::StoreError>(earns + activities)
        });
        let claimed = match pass.await {
            Ok(Ok(claimed)) => claimed,
            Ok(Err(err)) => {
                tracing::warn!(%err, "earn worker could not claim work");
                0
            }
            Err(err) => {
                tracing::error!(%err, "an earn worker's pass failed");
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
