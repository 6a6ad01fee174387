//! The node's runtime: every task a serving node runs beside its HTTP server, started in one
//! list (`start`) by the composition root together with the SFTP door, the watcher, the
//! pipeline and the exports. Where things live:
//!
//! - `earns.rs`: the earn worker, crediting accepted earns;
//! - `expiry.rs`: the sweep that vests, expires, lapses, announces expiring tokens and prunes
//!   old events;
//! - `leaderboard.rs`: the leaderboards' snapshots;
//! - `deliveries.rs`: events out (dispatch, and the delivery worker), with `budget.rs` (what
//!   deliveries may use of a node's sockets) and `delivery.rs` (one delivery, rendered and
//!   signed); the HTTPS client itself is the `outbound` crate.

mod budget;
mod deliveries;
mod delivery;
mod earns;
mod expiry;
mod leaderboard;

use std::time::Duration;

use api::AppState;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::{Instant, Interval};

/// How often the metrics' histograms are drained into their buckets.
const METRICS_UPKEEP: Duration = Duration::from_secs(5);

/// The tasks started by `start`.
pub struct Tasks {
    /// Those that finish their work in hand once the stop comes.
    workers: Vec<(&'static str, JoinHandle<()>)>,
}

/// Starts what a node runs beside its HTTP server on `state`: always the earn inbox's writer
/// (which requests need; it ends once the last handle on the inbox is gone) and the metrics'
/// upkeep; with `workers`, also the earn worker, the expiry sweep, event dispatch, webhook
/// deliveries and the leaderboards' snapshots, each of which returns once `stop` turns true.
pub fn start(state: &AppState, workers: bool, stop: &watch::Receiver<bool>) -> Tasks {
    if let Some(writer) = state
        .earn_inbox
        .writer(state.store.clone(), state.earn_waiting.clone())
    {
        tokio::spawn(writer);
    }
    tokio::spawn(metrics_upkeep(state.metrics.clone(), stop.clone()));
    if !workers {
        return Tasks {
            workers: Vec::new(),
        };
    }
    let (s, stop) = (state, stop);
    Tasks {
        workers: vec![
            (
                "the earn worker",
                tokio::spawn(earns::run(s.clone(), stop.clone())),
            ),
            (
                "the expiry sweep",
                tokio::spawn(expiry::sweep_expiry(s.clone(), stop.clone())),
            ),
            (
                "event dispatch",
                tokio::spawn(deliveries::dispatch(s.clone(), stop.clone())),
            ),
            (
                "webhook deliveries",
                tokio::spawn(deliveries::deliver(s.clone(), stop.clone())),
            ),
            (
                "the leaderboards",
                tokio::spawn(leaderboard::refresh_leaderboards(s.clone(), stop.clone())),
            ),
        ],
    }
}

impl Tasks {
    /// Waits for each worker to finish its work in hand, until `deadline`; what is still
    /// running then is given up.
    pub async fn finish(self, deadline: Instant) {
        for (name, mut worker) in self.workers {
            if tokio::time::timeout_at(deadline, &mut worker)
                .await
                .is_err()
            {
                tracing::warn!("{name} was still running at the end of the stop's grace");
                worker.abort();
            }
        }
    }
}

/// Drains histogram samples into their buckets now and then, as the exporter asks its owner
/// to, until `stop`.
async fn metrics_upkeep(
    handle: metrics_exporter_prometheus::PrometheusHandle,
    mut stop: watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(METRICS_UPKEEP);
    while next_tick(&mut tick, &mut stop).await {
        handle.run_upkeep();
    }
}

/// Waits for `tick`'s next beat; `false` once `stop` turns true (or its sender is gone), when
/// the job should return.
async fn next_tick(tick: &mut Interval, stop: &mut watch::Receiver<bool>) -> bool {
    tokio::select! {
        _ = tick.tick() => true,
        changed = stop.changed() => changed.is_ok() && !*stop.borrow(),
    }
}
