//! The expiry sweep: every serving node vests due pending earns, expires due lots and lapses
//! due holds each minute, announces tokens about to expire and records members' birthdays once
//! a day per campaign, deletes events past their retention, and prunes the audit trail past its
//! own (when one is set).

use std::time::Duration;

use tokio::sync::watch;

use api::AppState;

/// How often the expiry sweeper runs in a serving process.
const SWEEP: Duration = Duration::from_secs(60);

/// Vests due pending earns, expires due lots and lapses due holds every minute until `stop`.
/// Several processes may sweep at once: each earn vests once, each lot still expires exactly
/// once, each hold lapses once.
pub async fn sweep_expiry(state: AppState, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(SWEEP);
    loop {
        if !crate::next_tick(&mut tick, &mut stop).await {
            return;
        }
        // A stop does not wait for the pass: each wallet's expiry (each earn's vesting) is its
        // own transaction, and a dropped one is rolled back, to be done by the next sweep.
        let now = state.store.now();
        // Before the expiry: tokens that vest past their date expire in the same sweep.
        let vest = tokio::select! {
            vested = state.store.ledger().vest_pending(now) => vested,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match vest {
            Ok(0) => {}
            Ok(vested) => {
                metrics::counter!("earns_vested_total").increment(vested as u64);
                tracing::info!(vested, "vested pending earns");
            }
            Err(err) => tracing::warn!(%err, "vesting sweep failed"),
        }
        let sweep = tokio::select! {
            swept = state.store.ledger().expire(now) => swept,
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
        // After the expiry: tokens a lapse releases past their date expire at the next sweep.
        let lapse = tokio::select! {
            lapsed = state.store.ledger().lapse_holds(now) => lapsed,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match lapse {
            Ok(0) => {}
            Ok(lapsed) => {
                metrics::counter!("holds_lapsed_total").increment(lapsed as u64);
                tracing::info!(lapsed, "lapsed holds");
            }
            Err(err) => tracing::warn!(%err, "hold lapse sweep failed"),
        }
        // Once a day per campaign (the store claims each campaign's day): what expires soon.
        let notice = tokio::select! {
            noticed = state.store.ledger().notice_expiring(now) => noticed,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match notice {
            Ok(0) => {}
            Ok(noticed) => {
                metrics::counter!("expiry_notices_total").increment(noticed as u64);
                tracing::info!(noticed, "announced tokens about to expire");
            }
            Err(err) => tracing::warn!(%err, "expiry notice sweep failed"),
        }
        // Once a day per campaign (claimed, in its programme's zone): the members' birthdays,
        // awarded by the earn worker.
        let birthdays = tokio::select! {
            recorded = state.store.ledger().record_birthdays(&state.rule_book, now) => recorded,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match birthdays {
            Ok(0) => {}
            Ok(recorded) => tracing::info!(recorded, "recorded members' birthdays"),
            Err(err) => tracing::warn!(%err, "birthday sweep failed"),
        }
        let prune = tokio::select! {
            pruned = state.store.events().prune_events(now - store::EVENT_RETENTION) => pruned,
            _ = stop.wait_for(|stop| *stop) => return,
        };
        match prune {
            Ok(0) => {}
            Ok(pruned) => tracing::info!(pruned, "deleted events past their retention"),
            Err(err) => tracing::warn!(%err, "pruning old events failed"),
        }
        if let Some(keep) = state.settings.audit_retention {
            let retention = store::audit::Actor::local("retention");
            let prune = tokio::select! {
                pruned = store::audit::chain::prune(state.store.db(), &retention, now - keep) => pruned,
                _ = stop.wait_for(|stop| *stop) => return,
            };
            match prune {
                Ok(0) => {}
                Ok(pruned) => tracing::info!(pruned, "removed audit entries past their retention"),
                Err(err) => tracing::warn!(%err, "pruning the audit trail failed"),
            }
        }
    }
}
