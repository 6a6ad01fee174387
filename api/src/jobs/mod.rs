//! The background jobs a serving process runs beside its requests, all started here: the earn
//! inbox (group commit of submissions, started with the state), the earn worker, the expiry
//! sweep, the leaderboard's snapshots, and events out (dispatch and webhook deliveries).

pub(crate) mod budget;
pub(crate) mod deliveries;
pub(crate) mod earns;
pub(crate) mod expiry;
pub(crate) mod inbox;
pub(crate) mod leaderboard;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Interval;

use crate::AppState;

/// Starts the workers; each finishes the work in hand and returns once `stop` turns true.
pub fn start(state: &AppState, stop: &watch::Receiver<bool>) -> Vec<JoinHandle<()>> {
    vec![
        tokio::spawn(earns::run(state.clone(), stop.clone())),
        tokio::spawn(expiry::sweep_expiry(state.clone(), stop.clone())),
        tokio::spawn(deliveries::dispatch(state.clone(), stop.clone())),
        tokio::spawn(deliveries::deliver(state.clone(), stop.clone())),
        tokio::spawn(leaderboard::refresh_leaderboards(
            state.clone(),
            stop.clone(),
        )),
    ]
}

/// Waits for `tick`'s next beat; `false` once `stop` turns true (or its sender is gone), when
/// the job should return.
pub(crate) async fn next_tick(tick: &mut Interval, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tick.tick() => true,
        changed = stop.changed() => changed.is_ok() && !*stop.borrow(),
    }
}
