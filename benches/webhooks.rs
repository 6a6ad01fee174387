//! Events out, on SQLite (or PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set), in one run:
//!
//! 1. Burns over HTTP for `BENCH_SECONDS` (default 60) with no endpoint (each burn records its
//!    `transaction.created` all the same: the outbox is part of the burn), then as long again
//!    with an endpoint subscribed to them and a receiver on this host taking the deliveries as
//!    they come: the burn's latency with and without the dispatcher and the senders at work
//!    beside it.
//! 2. Deliveries per second: every burn's event redelivered to the endpoint at once (one
//!    statement makes the deliveries), timed from then until the receiver has taken them all,
//!    with the service's defaults (`webhook_concurrency` 16 per endpoint and node).
//!
//! `cargo bench --bench webhooks`. Goals: at least 1,000 deliveries/s on SQLite; a burn's
//! latency with the endpoint at most 10% above without.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use store::{ApiVersion, CodeKey, EventType, NewEndpoint, Redelivery};

const CLIENTS: usize = 8;
const WALLETS: usize = 100;
const LOTS: usize = 200;

fn main() {
    rewards::arenas::limit();
    run();
}

/// A receiver on this host: counts the deliveries it answers 204.
async fn receiver() -> (String, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let taken = Arc::new(AtomicUsize::new(0));
    let counter = taken.clone();
    let router = axum::Router::new().route(
        "/hook",
        axum::routing::post(move |_body: axum::body::Bytes| {
            let counter = counter.clone();
            async move {
                counter.fetch_add(1, Ordering::Relaxed);
                StatusCode::NO_CONTENT
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, taken)
}

/// Waits until `taken` reaches `count` (at most `within`); how long that took.
async fn taken_by(taken: &AtomicUsize, count: usize, within: Duration) -> Duration {
    let started = Instant::now();
    while taken.load(Ordering::Relaxed) < count {
        assert!(
            started.elapsed() < within,
            "{} of {count} delivered after {within:?}",
            taken.load(Ordering::Relaxed)
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    started.elapsed()
}

#[tokio::main]
async fn run() {
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(WALLETS, true).await;
    let seconds = common::seconds();
    common::open_lots(&store, &campaign, WALLETS, LOTS).await;
    let codes = [7u8; 32];
    let mut settings = api::Settings::default();
    settings.webhooks.rules.allow_http = true;
    settings.webhooks.rules.allowed = vec!["127.0.0.1".parse().unwrap()];
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = api::AppState::new(store.clone(), CodeKey::new(&codes)).with_settings(settings);
    tokio::spawn(api::serve(listener, state, true, std::future::pending()));

    let client = reqwest::Client::new();
    let (k, s) = (key.key.api_key.clone(), key.secret.clone());
    let burns = move |round: &'static str| {
        let (client, base, k, s) = (client.clone(), base.clone(), k.clone(), s.clone());
        move |c: usize, n: usize| {
            let body = json!({"externalId": format!("{round}-{c}-{n}"), "amount": 0.01,
                "walletId": format!("w-{}", (c * 13 + n) % WALLETS), "description": "Voucher"});
            let request = client
                .post(format!("{base}/v1/transactions/burn"))
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&body);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        }
    };

    println!(
        "backend: {:?}; {CLIENTS} concurrent clients; {WALLETS} wallets of {LOTS} open lots; {seconds} s a scenario",
        store.backend()
    );
    println!("{}", common::HEADER);
    let without = common::drive(CLIENTS, seconds, burns("plain")).await;
    println!("{}", without.row("baseline: burn, no endpoint"));

    let (url, taken) = receiver().await;
    let org = campaign.org();
    let endpoint = NewEndpoint {
        campaign_id: Some(campaign.id.clone()),
        url,
        description: None,
        event_types: vec![EventType::TransactionCreated],
        api_version: ApiVersion::V1_9_5,
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
    };
    let endpoint = store
        .create_endpoint(&org, endpoint, &CodeKey::new(&codes))
        .await
        .unwrap();
    let with = common::drive(CLIENTS, seconds, burns("hooked")).await;
    println!("{}", with.row("burn, endpoint subscribed"));
    let behind = taken_by(&taken, with.count, Duration::from_secs(600)).await;
    println!(
        "burn latency with the endpoint: p50 {:+.1}%, p99 {:+.1}% (goal: at most +10%); \
         the last delivery {:.1} s after the last burn",
        (with.p50_ms / without.p50_ms - 1.0) * 100.0,
        (with.p99_ms / without.p99_ms - 1.0) * 100.0,
        behind.as_secs_f64()
    );

    let before = taken.load(Ordering::Relaxed);
    let range = Redelivery::Range {
        from: chrono::Utc::now() - chrono::Duration::days(1),
        to: chrono::Utc::now() + chrono::Duration::minutes(1),
    };
    let started = Instant::now();
    let queued = store.redeliver(&org, &endpoint.id, range).await.unwrap();
    taken_by(&taken, before + queued as usize, Duration::from_secs(1800)).await;
    let took = started.elapsed().as_secs_f64();
    println!(
        "deliveries: {queued} redelivered in {took:.1} s = {:.0}/s (goal: at least 1,000/s)",
        queued as f64 / took
    );
}
