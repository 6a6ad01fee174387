//! Events out, on every serving node: the dispatcher numbers committed events and makes their
//! deliveries (one node at a time, the store sees to it), and the delivery worker sends them.
//!
//! The dispatcher fans a backlog out in short transactions with pauses between them, so one
//! tenant's wide fan-out leaves the writer to everyone else most of the time. The worker looks
//! for endpoints with deliveries due when woken (deliveries made here, a sender ended) and every
//! `LOOK` otherwise; each endpoint it finds and is not already sending to gets a task of its
//! own, unless its organisation already has as many sending as its share of sockets (`budget`). The task takes sockets from the budget (up
//! to the endpoint's pace), claims a round of the endpoint's due deliveries for them, sends them,
//! records what came of them and claims the next round, until none is due or the endpoint is
//! paused. So a slow or dead receiver holds only its organisation's share, never another
//! tenant's deliveries nor the node's descriptors. A stop ends each task after its round; at
//! the grace's end rounds still waiting for answers are given up and their claims released (due
//! again at once, for the next node or the restart). A node killed mid-round leaves its claims
//! to run out, and the deliveries are sent again.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use store::{AttemptOutcome, ClaimedDelivery, Clock, EndpointAfter, WebhookEndpoint};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use crate::budget::{Budget, Pace};
use crate::delivery::Delivery;
use api::AppState;
use outbound::Sender;

/// How often the dispatcher looks for events.
const TICK: Duration = Duration::from_millis(100);
/// How often the delivery worker looks for due endpoints unless woken (deliveries made here,
/// a sender ended): for retries coming due and other nodes' deliveries.
const LOOK: Duration = Duration::from_secs(1);
/// Events the dispatcher numbers in one transaction.
const DISPATCH_BATCH: i64 = 1_000;
/// While a backlog is dispatched, the pause after each transaction, in multiples of its time.
const BACKLOG_PAUSE: u32 = 3;
/// A round's deliveries, per deliveries sent at once.
const ROUND_PER_SLOT: usize = 4;
/// Of a stop's grace, what is kept for giving claims back after the rest.
const RELEASE_TIME: Duration = Duration::from_secs(1);

/// Numbers committed events and fans them out until `stop`.
pub async fn dispatch(state: AppState, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        if !crate::next_tick(&mut tick, &mut stop).await {
            return;
        }
        while !*stop.borrow() {
            let started = tokio::time::Instant::now();
            match state.store.events().dispatch_events(DISPATCH_BATCH).await {
                Ok(done) => {
                    if done.deliveries > 0 {
                        metrics::counter!("webhook_deliveries_made_total")
                            .increment(done.deliveries as u64);
                        state.deliveries_waiting.notify_one();
                    }
                    if !done.full {
                        break;
                    }
                    // A backlog (one tenant's wide fan-out) takes at most a share of the
                    // writer's time: the others' writes go between its transactions.
                    tokio::time::sleep(started.elapsed() * BACKLOG_PAUSE).await;
                }
                Err(err) => {
                    tracing::warn!(%err, "event dispatch failed");
                    break;
                }
            }
        }
    }
}

/// The endpoints a node is sending to, and how many per organisation.
#[derive(Default)]
struct Sending {
    endpoints: HashSet<String>,
    orgs: HashMap<String, usize>,
}

impl Sending {
    /// Whether `endpoint` may start sending: not already, and its organisation under `most`.
    fn start(&mut self, endpoint: &WebhookEndpoint, most: usize) -> bool {
        let org = self.orgs.entry(endpoint.org_id.clone()).or_default();
        if *org >= most || self.endpoints.contains(&endpoint.id) {
            return false;
        }
        *org += 1;
        self.endpoints.insert(endpoint.id.clone())
    }

    fn end(&mut self, endpoint: &WebhookEndpoint) {
        self.endpoints.remove(&endpoint.id);
        if let Some(org) = self.orgs.get_mut(&endpoint.org_id) {
            *org = org.saturating_sub(1);
            if *org == 0 {
                self.orgs.remove(&endpoint.org_id);
            }
        }
    }
}

/// What every endpoint's task shares.
struct Worker {
    state: AppState,
    sender: Sender,
    budget: Budget,
    pace: Pace,
    /// Turns true at the stop's grace's end: rounds in flight are given up.
    give_up: watch::Receiver<bool>,
}

/// Sends due deliveries until `stop`; then lets the rounds in flight finish within the grace
/// (`http_shutdown_grace_secs`), and gives up what is left, releasing its claims.
pub async fn deliver(state: AppState, mut stop: watch::Receiver<bool>) {
    let settings = state.settings.webhooks.clone();
    let grace = state.settings.http.grace;
    let (give_up, given_up) = watch::channel(false);
    let worker = Arc::new(Worker {
        sender: Sender::new(settings.rules.clone(), settings.timeout),
        budget: Budget::new(settings.sockets, settings.org_sockets),
        pace: Pace::new(settings.concurrency),
        give_up: given_up,
        state,
    });
    let sending: Arc<Mutex<Sending>> = Arc::default();
    let mut rounds = JoinSet::new();
    let waiting = worker.state.deliveries_waiting.clone();
    let mut looked = tokio::time::Instant::now();
    loop {
        tokio::select! {
            _ = tokio::time::sleep(LOOK) => {}
            () = waiting.notified() => {}
            _ = stop.changed() => {}
        }
        // At most a look every `TICK`, however often it is woken.
        tokio::time::sleep_until(looked + TICK).await;
        if *stop.borrow() || stop.has_changed().is_err() {
            break;
        }
        looked = tokio::time::Instant::now();
        while rounds.try_join_next().is_some() {}
        let most = worker.budget.org_sockets();
        let due = match worker.state.store.events().endpoints_due(most).await {
            Ok(due) => due,
            Err(err) => {
                tracing::warn!(%err, "looking for due deliveries failed");
                continue;
            }
        };
        for endpoint in due {
            let fresh = sending
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .start(&endpoint, most);
            if !fresh {
                continue;
            }
            let (worker, sending, stop) = (worker.clone(), sending.clone(), stop.clone());
            rounds.spawn(async move {
                if let Err(err) = send_rounds(&worker, &endpoint, stop).await {
                    tracing::warn!(endpoint = %endpoint.id, %err, "webhook deliveries failed");
                }
                sending
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .end(&endpoint);
                // Its organisation may start another.
                worker.state.deliveries_waiting.notify_one();
            });
        }
    }
    let drained = tokio::time::timeout(grace.saturating_sub(RELEASE_TIME), async {
        while rounds.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        tracing::warn!(
            endpoints = rounds.len(),
            "webhook rounds still unanswered at the end of the stop's grace: given up"
        );
        let _ = give_up.send(true);
        let released = tokio::time::timeout(RELEASE_TIME, async {
            while rounds.join_next().await.is_some() {}
        })
        .await;
        if released.is_err() {
            rounds.shutdown().await;
        }
    }
}

/// Rounds of the endpoint's due deliveries until none is due, it is paused or disabled, or the
/// node stops.
async fn send_rounds(
    worker: &Worker,
    endpoint: &WebhookEndpoint,
    mut stop: watch::Receiver<bool>,
) -> Result<(), store::StoreError> {
    let state = &worker.state;
    let settings = &state.settings.webhooks;
    // Long enough for a round's attempts (`ROUND_PER_SLOT` waves, each within the timeout)
    // and its record.
    let waves = u32::try_from(ROUND_PER_SLOT).unwrap_or(u32::MAX);
    let lease = chrono::Duration::from_std(settings.timeout * waves + Duration::from_secs(30))
        .unwrap_or(chrono::Duration::minutes(5));
    while !*stop.borrow() {
        let want = worker
            .pace
            .of(&endpoint.id)
            .min(worker.budget.per_endpoint());
        let sockets = tokio::select! {
            sockets = worker.budget.sockets(&endpoint.org_id, want) => sockets,
            _ = stop.wait_for(|stop| *stop) => return Ok(()),
        };
        let slots = sockets.count;
        let claimed = state
            .store
            .events()
            .claim_deliveries(&endpoint.id, (slots * ROUND_PER_SLOT) as i64, lease)
            .await?;
        if claimed.is_empty() {
            return Ok(());
        }
        let secrets = state
            .store
            .events()
            .endpoint_secrets(&endpoint.id, &state.codes)
            .await?;
        let secrets: Vec<String> = std::iter::once(secrets.current)
            .chain(secrets.previous)
            .collect();
        let clock = state.store.clock().clone();
        let round = send_round(&worker.sender, &clock, endpoint, secrets, claimed, slots);
        let (attempts, unsent) = round.until(worker.give_up.clone()).await;
        if !unsent.is_empty() {
            state.store.events().release_claims(&unsent).await?;
        }
        drop(sockets);
        worker
            .pace
            .after(&endpoint.id, attempts.iter().map(|(_, o)| o));
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
            .events()
            .record_attempts(&endpoint.id, attempts, first_retry)
            .await?
        {
            EndpointAfter::Healthy if unsent.is_empty() => {}
            EndpointAfter::Healthy => return Ok(()),
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
    Ok(())
}

/// A round's sends under way, `slots` at once.
struct Round {
    sends: JoinSet<(ClaimedDelivery, AttemptOutcome)>,
    claimed: Vec<ClaimedDelivery>,
}

/// Starts sending a round, `slots` at once.
fn send_round(
    sender: &Sender,
    clock: &Clock,
    endpoint: &WebhookEndpoint,
    secrets: Vec<String>,
    claimed: Vec<ClaimedDelivery>,
    slots: usize,
) -> Round {
    let permits = Arc::new(Semaphore::new(slots));
    let secrets: Arc<[String]> = secrets.into();
    let mut sends = JoinSet::new();
    for delivery in claimed.iter().cloned() {
        let (sender, url, version) = (sender.clone(), endpoint.url.clone(), endpoint.api_version);
        let (permits, secrets, clock) = (permits.clone(), secrets.clone(), clock.clone());
        sends.spawn(async move {
            let _permit = permits.acquire_owned().await;
            // Signed when sent: the timestamp a receiver checks against its clock.
            let made = Delivery::new(
                delivery.event.clone(),
                version,
                secrets.iter().map(String::as_str),
                clock.now().timestamp(),
            );
            let outcome = match made {
                Ok(made) => {
                    sender
                        .post(&url, &made.headers, made.body, clock.now())
                        .await
                }
                // Recorded as a failed attempt (and so in the log), never sent half made.
                Err(err) => AttemptOutcome {
                    attempted_at: clock.now(),
                    status_code: None,
                    latency_ms: 0,
                    response: Some(err),
                },
            };
            (delivery, outcome)
        });
    }
    Round { sends, claimed }
}

impl Round {
    /// Each delivery with what came of it, until all are done or `give_up` turns true; then
    /// also the deliveries not done (their sends are dropped).
    async fn until(
        mut self,
        mut give_up: watch::Receiver<bool>,
    ) -> (Vec<(ClaimedDelivery, AttemptOutcome)>, Vec<ClaimedDelivery>) {
        let mut done: Vec<(ClaimedDelivery, AttemptOutcome)> = Vec::new();
        loop {
            let sent = tokio::select! {
                sent = self.sends.join_next() => sent,
                _ = give_up.wait_for(|given_up| *given_up) => break,
            };
            match sent {
                None => break,
                Some(Ok(pair)) => done.push(pair),
                // A send that panicked records nothing: its claim runs out and it is sent again.
                Some(Err(err)) => tracing::error!(%err, "a webhook send panicked"),
            }
        }
        if self.sends.is_empty() {
            return (done, Vec::new());
        }
        self.sends.abort_all();
        let finished: HashSet<&str> = done.iter().map(|(d, _)| d.id.as_str()).collect();
        let unsent = self
            .claimed
            .iter()
            .filter(|c| !finished.contains(c.id.as_str()))
            .cloned()
            .collect();
        (done, unsent)
    }
}
