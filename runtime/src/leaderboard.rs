//! The leaderboard job: every serving node looks for due snapshots a few times per interval and
//! builds those it claims; the claim (see `store`'s leaderboard) makes one build per interval
//! for all the nodes of a database.

use std::time::Duration;

use tokio::sync::watch;

use api::AppState;

/// The longest wait between looks: a new campaign gets its first snapshot within this.
const MAX_LOOK: Duration = Duration::from_secs(5);

/// Builds due snapshots until `stop`.
pub async fn refresh_leaderboards(state: AppState, mut stop: watch::Receiver<bool>) {
    let interval = state.settings.leaderboard_refresh;
    let mut tick = tokio::time::interval(interval.clamp(Duration::from_millis(100), MAX_LOOK));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if !crate::next_tick(&mut tick, &mut stop).await {
            return;
        }
        let due = match state.store.community().due_leaderboards().await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(%err, "looking for due leaderboards failed");
                continue;
            }
        };
        for campaign in due {
            match state
                .store
                .community()
                .refresh_leaderboard(&campaign, interval)
                .await
            {
                Ok(Some(built)) => {
                    metrics::counter!("leaderboard_builds_total").increment(1);
                    metrics::histogram!("leaderboard_build_seconds")
                        .record(built.took.as_secs_f64());
                    tracing::debug!(
                        campaign = %built.campaign_id,
                        generation = built.generation,
                        entries = built.entries,
                        took_ms = built.took.as_millis() as u64,
                        "leaderboard snapshot built"
                    );
                }
                Ok(None) => {}
                Err(err) => {
                    tracing::warn!(%err, campaign = %campaign.id, "building the leaderboard snapshot failed");
                }
            }
        }
    }
}
