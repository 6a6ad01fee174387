//! Events out, on every serving node: the dispatcher numbers committed events and makes their
//! deliveries (one node at a time, the store sees to it), and the delivery worker sends them.
//!
//! The worker looks for endpoints with deliveries due every `TICK`; each endpoint it finds and
//! is not already sending to gets a task of its own, which claims a round of the endpoint's
//! due deliveries, sends them (`concurrency` at once, each ending by the timeout), records what
//! came of them and claims the next round, until none is due or the endpoint is paused. So a
//! slow or dead receiver holds only its own task, never another endpoint's deliveries. A stop
//! lets rounds in flight finish (each within the timeout); a node killed mid-round leaves its
//! claims to run out, and the deliveries are sent again.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::{AttemptOutcome, ClaimedDelivery, EndpointAfter, WebhookEndpoint};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::AppState;
use crate::webhooks::{Delivery, Sender};

/// How often the dispatcher and the worker look for work.
const TICK: Duration = Duration::from_millis(100);
/// Events the dispatcher numbers in one transaction.
const DISPATCH_BATCH: i64 = 1_000;
/// A round's deliveries, per deliveries sent at once.
const ROUND_PER_SLOT: usize = 4;

/// Numbers committed events and fans them out until `stop`.
pub async fn dispatch(state: AppState, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if !super::next_tick(&mut tick, &mut stop).await {
            return;
        }
        loop {
            match state.store.dispatch_events(DISPATCH_BATCH).await {
                Ok(done) => {
                    if done.deliveries > 0 {
                        metrics::counter!("webhook_deliveries_made_total")
                            .increment(done.deliveries as u64);
                    }
                    if done.events < DISPATCH_BATCH as usize {
                        break;
                    }
                }
                Err(err) => {
                    tracing::warn!(%err, "event dispatch failed");
                    break;
                }
            }
        }
    }
}

/// Sends due deliveries until `stop`, then waits for the rounds in flight.
pub async fn deliver(state: AppState, mut stop: watch::Receiver<bool>) {
    let settings = state.settings.webhooks.clone();
    let sender = Sender::new(settings.rules.clone(), settings.timeout);
    let busy: Arc<Mutex<HashSet<String>>> = Arc::default();
    let mut rounds = JoinSet::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    while super::next_tick(&mut tick, &mut stop).await {
        while rounds.try_join_next().is_some() {}
        let due = match state.store.endpoints_due().await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(%err, "looking for due deliveries failed");
                continue;
            }
        };
        for endpoint in due {
            let fresh = busy
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(endpoint.id.clone());
            if !fresh {
                continue;
            }
            let (state, sender, busy) = (state.clone(), sender.clone(), busy.clone());
            rounds.spawn(async move {
                let id = endpoint.id.clone();
                if let Err(err) = send_rounds(&state, &sender, endpoint).await {
                    tracing::warn!(endpoint = %id, %err, "webhook deliveries failed");
                }
                busy.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
            });
        }
    }
    while rounds.join_next().await.is_some() {}
}

/// Rounds of the endpoint's due deliveries until none is due or it is paused or disabled.
async fn send_rounds(
    state: &AppState,
    sender: &Sender,
    endpoint: WebhookEndpoint,
) -> Result<(), store::StoreError> {
    let settings = &state.settings.webhooks;
    let slots = settings.concurrency.max(1);
    // Long enough for a round's attempts (`ROUND_PER_SLOT` waves, each within the timeout)
    // and its record.
    let waves = u32::try_from(ROUND_PER_SLOT).unwrap_or(u32::MAX);
    let lease = chrono::Duration::from_std(settings.timeout * waves + Duration::from_secs(30))
        .unwrap_or(chrono::Duration::minutes(5));
    loop {
        let claimed = state
            .store
            .claim_deliveries(&endpoint.id, (slots * ROUND_PER_SLOT) as i64, lease)
            .await?;
        if claimed.is_empty() {
            return Ok(());
        }
        let secrets = state
            .store
            .endpoint_secrets(&endpoint.id, &state.codes)
            .await?;
        let secrets: Vec<String> = std::iter::once(secrets.current)
            .chain(secrets.previous)
            .collect();
        let attempts = send_round(sender, &endpoint, secrets, claimed, slots).await;
        for (_, outcome) in &attempts {
            let outcome_label = match outcome.status_code {
                Some(s) if (200..300).contains(&s) => "delivered",
                Some(_) => "refused",
                None => "unanswered",
            };
            metrics::counter!("webhook_attempts_total", "outcome" => outcome_label).increment(1);
        }
        let first_retry =
            chrono::Duration::from_std(settings.first_retry).unwrap_or(store::FIRST_RETRY);
        match state
            .store
            .record_attempts(&endpoint.id, attempts, first_retry)
            .await?
        {
            EndpointAfter::Healthy => {}
            EndpointAfter::Paused(until) => {
                tracing::info!(endpoint = %endpoint.id, url = %endpoint.url, %until,
                    "webhook endpoint failing: paused");
                return Ok(());
            }
            EndpointAfter::Disabled(reason) => {
                tracing::warn!(endpoint = %endpoint.id, org = %endpoint.org_id,
                    url = %endpoint.url, %reason, "webhook endpoint disabled");
                return Ok(());
            }
        }
    }
}

/// Sends a round, `slots` at once; each delivery with what came of it.
async fn send_round(
    sender: &Sender,
    endpoint: &WebhookEndpoint,
    secrets: Vec<String>,
    claimed: Vec<ClaimedDelivery>,
    slots: usize,
) -> Vec<(ClaimedDelivery, AttemptOutcome)> {
    let permits = Arc::new(Semaphore::new(slots));
    let secrets: Arc<[String]> = secrets.into();
    let mut sends = JoinSet::new();
    for delivery in claimed {
        let (sender, url, version) = (sender.clone(), endpoint.url.clone(), endpoint.api_version);
        let (permits, secrets) = (permits.clone(), secrets.clone());
        sends.spawn(async move {
            let _permit = permits.acquire_owned().await;
            // Signed when sent: the timestamp a receiver checks against its clock.
            let made = Delivery::new(
                delivery.event.clone(),
                version,
                secrets.iter().map(String::as_str),
                chrono::Utc::now().timestamp(),
            );
            let outcome = match made {
                Ok(made) => sender.post(&url, &made.headers, made.body).await,
                // Recorded as a failed attempt (and so in the log), never sent half made.
                Err(err) => AttemptOutcome {
                    attempted_at: chrono::Utc::now(),
                    status_code: None,
                    latency_ms: 0,
                    response: Some(format!("the event could not be written as JSON: {err}")),
                },
            };
            (delivery, outcome)
        });
    }
    let mut done = Vec::new();
    while let Some(sent) = sends.join_next().await {
        match sent {
            Ok(pair) => done.push(pair),
            // A send that panicked records nothing: its claim runs out and it is sent again.
            Err(err) => tracing::error!(%err, "a webhook send panicked"),
        }
    }
    done
}
