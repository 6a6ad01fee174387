//! Events out, on SQLite (or PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set), in one run:
//!
//! 1. Burns over HTTP with no endpoint (each burn records its `transaction.created` all the
//!    same: the outbox is part of the burn), then with an endpoint subscribed to them and a
//!    receiver on this host taking the deliveries as they come, `BENCH_SECONDS` (default 60)
//!    each, two ways: at a fixed rate (`BENCH_RATE` a second, default half the rate the
//!    closed loop reached without the endpoint; an open loop, requests sent as they fall due),
//!    whose latencies are the burn's at that load; and as fast as 8 clients go (a closed loop
//!    that saturates the machine, whose latency is the share of 2 cores a burn gets beside the
//!    deliveries: the deliveries' cost in throughput).
//! 2. Deliveries per second: every burn's event redelivered to the endpoint at once (one
//!    statement makes the deliveries), timed from then until the receiver has taken them all,
//!    with the service's defaults (`webhook_concurrency` 16 per endpoint and node).
//! 3. A file of `BENCH_FILE_ROWS` earns (default 1,000,000; 5,000 wallets, two tiers that
//!    every wallet passes, so the file records a `wallet.tier_changed` per wallet and tier and
//!    its `batch.completed`) loaded through the pipeline into a fresh ledger with the service
//!    running beside it, without and then with an endpoint subscribed to every event type.
//!
//! `cargo bench --bench webhooks`. Goals: at least 1,000 deliveries/s on SQLite; a burn's
//! latency with the endpoint at most 10% above without; the file's load at most 5% longer.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use store::{
    ApiVersion, Campaign, CodeKey, EventFilter, EventType, NewEndpoint, NewTier, OrgScope, Page,
    Redelivery, RuleBook, Store, Tokens, WebhookEndpoint,
};

const CLIENTS: usize = 8;
const WALLETS: usize = 100;
const LOTS: usize = 200;
const CODES: [u8; 32] = [7; 32];
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
/// The file's wallets, as `benches/ingest.rs` has them.
const FILE_WALLETS: usize = 5_000;

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
    let base = serve(&store).await;

    let burns = common::HttpBurns::new(&base, &key, WALLETS);

    println!(
        "backend: {:?}; {WALLETS} wallets of {LOTS} open lots; {seconds} s a scenario",
        store.backend()
    );
    println!("{}", common::HEADER);
    let without = common::drive(CLIENTS, seconds, burns.round("plain")).await;
    let rate = common::number("BENCH_RATE", (without.rate / 2.0).round());
    let paced_without = common::drive_at(rate, seconds, burns.round("paced")).await;

    let (url, taken) = receiver().await;
    let org = campaign.org();
    let endpoint = subscribe(&store, &campaign, url, vec![EventType::TransactionCreated]).await;
    let paced_with = common::drive_at(rate, seconds, burns.round("paced-hooked")).await;
    let with = common::drive(CLIENTS, seconds, burns.round("hooked")).await;
    let behind = taken_by(
        &taken,
        paced_with.count + with.count,
        Duration::from_secs(600),
    )
    .await;
    // The floor: no endpoint, but beside the burns a bare HTTP client posting an event's worth
    // of JSON to a receiver as often as the deliveries were made: what the HTTP alone takes of
    // the machine's 2 cores, without the outbox, the claims or the signatures.
    let (floor_url, _) = receiver().await;
    let paced_floor = beside_posts(
        common::drive_at(rate, seconds, burns.round("paced-floor")),
        &floor_url,
        rate,
        seconds,
    )
    .await;
    let floor = beside_posts(
        common::drive(CLIENTS, seconds, burns.round("floor")),
        &floor_url,
        with.rate,
        seconds,
    )
    .await;
    let rows = [
        (&paced_without, format!("{rate:.0}/s: burn, no endpoint")),
        (&paced_with, format!("{rate:.0}/s: burn, endpoint")),
        (&paced_floor, format!("{rate:.0}/s: burn, bare posts")),
        (&without, format!("{CLIENTS} clients: burn, no endpoint")),
        (&with, format!("{CLIENTS} clients: burn, endpoint")),
        (&floor, format!("{CLIENTS} clients: burn, bare posts")),
    ];
    for (load, name) in rows {
        println!("{}", load.row(&name));
    }
    let change = |with: f64, without: f64| (with / without - 1.0) * 100.0;
    println!(
        "burn latency with the endpoint at {rate:.0}/s: p50 {:+.1}%, p99 {:+.1}% (goal: at most \
         +10%); with {CLIENTS} clients as fast as they go: {:+.1}% burns a second, p50 {:+.1}%, \
         p99 {:+.1}%; the last delivery {:.1} s after the last burn",
        change(paced_with.p50_ms, paced_without.p50_ms),
        change(paced_with.p99_ms, paced_without.p99_ms),
        change(with.rate, without.rate),
        change(with.p50_ms, without.p50_ms),
        change(with.p99_ms, without.p99_ms),
        behind.as_secs_f64()
    );
    println!(
        "the floor, bare posts beside the burns instead of the endpoint: at {rate:.0}/s p50 \
         {:+.1}%, p99 {:+.1}%; with {CLIENTS} clients {:+.1}% burns a second, p50 {:+.1}%, p99 \
         {:+.1}%",
        change(paced_floor.p50_ms, paced_without.p50_ms),
        change(paced_floor.p99_ms, paced_without.p99_ms),
        change(floor.rate, without.rate),
        change(floor.p50_ms, without.p50_ms),
        change(floor.p99_ms, without.p99_ms),
    );

    let before = taken.load(Ordering::Relaxed);
    let range = Redelivery::Range {
        from: chrono::Utc::now() - chrono::Duration::days(1),
        to: chrono::Utc::now() + chrono::Duration::minutes(1),
    };
    let started = Instant::now();
    // The bench redelivers its whole run at once: beyond the bounds a client is held to.
    let unbounded = store::ManualBounds {
        per_request: 100_000_000,
        per_hour: i64::MAX,
    };
    let queued = store
        .events()
        .redeliver(&org, &endpoint.id, range, unbounded)
        .await
        .unwrap();
    taken_by(&taken, before + queued as usize, Duration::from_secs(1800)).await;
    let took = started.elapsed().as_secs_f64();
    println!(
        "deliveries: {queued} redelivered in {took:.1} s = {:.0}/s (goal: at least 1,000/s)",
        queued as f64 / took
    );

    drop(store);
    file_loads().await;
}

/// `burns` run beside a bare client posting `rate` times a second to `url` for `seconds`; the
/// burns' load.
async fn beside_posts(
    burns: impl std::future::Future<Output = common::Load>,
    url: &str,
    rate: f64,
    seconds: u64,
) -> common::Load {
    let client = reqwest::Client::new();
    let url = url.to_string();
    // A `transaction.created` as a delivery carries it, near enough in size.
    let body = json!({"id": "0196f7a0-0000-7000-8000-000000000000", "type": "transaction.created",
        "timestamp": "2026-11-29T08:00:00.000Z", "organisationId": "org", "campaignId": "campaign",
        "data": {"id": "0196f7a0-0000-7000-8000-000000000001", "walletId": "w-1",
            "type": "burn", "tokens": "-0.01", "balance": "2499.99", "externalId": "floor-0-1",
            "description": "Voucher", "date": "2026-11-29T08:00:00.000Z", "meta": {}}})
    .to_string();
    let posts = common::drive_at(rate, seconds, move |_, _| {
        let request = client.post(&url).body(body.clone());
        async move {
            assert_eq!(
                request.send().await.unwrap().status(),
                StatusCode::NO_CONTENT
            );
        }
    });
    tokio::join!(burns, posts).0
}

/// Serves the application with its workers on `store`, deliveries to this host allowed; its
/// base URL.
async fn serve(store: &Store) -> String {
    let mut settings = api::Settings::default();
    settings.webhooks.rules.allow_http = true;
    settings.webhooks.rules.allowed = vec!["127.0.0.1".parse().unwrap()];
    let state = api::AppState::new(store.clone(), CodeKey::new(&CODES)).with_settings(settings);
    common::serve_state(state).await
}

/// An endpoint at `url` for the campaign's events of `types` (empty: every type).
async fn subscribe(
    store: &Store,
    campaign: &Campaign,
    url: String,
    event_types: Vec<EventType>,
) -> WebhookEndpoint {
    let endpoint = NewEndpoint {
        campaign_id: Some(campaign.id.clone()),
        url,
        description: None,
        event_types,
        api_version: ApiVersion::V1_9_5,
        secret: SECRET.into(),
    };
    let org = campaign.org();
    store
        .events()
        .create_endpoint(&org, endpoint, &CodeKey::new(&CODES), 10)
        .await
        .unwrap()
}

/// The file loaded into a fresh ledger without an endpoint, then into another with one.
async fn file_loads() {
    let rows: u64 = common::number("BENCH_FILE_ROWS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let spec = generators::earns::Spec {
        rows,
        wallets: FILE_WALLETS as u64,
        wallet_prefix: "w-".into(),
        bad_share: 0.0,
        seed: 1,
        month: 10,
    };
    let file = dir.path().join("earns.csv");
    generators::earns::earn_csv(&spec, std::fs::File::create(&file).unwrap()).unwrap();
    let mut seconds = Vec::new();
    for hooked in [false, true] {
        let common::Seed {
            _db,
            store,
            campaign,
            ..
        } = common::seed(FILE_WALLETS, true).await;
        // About 100 tokens a row, 200 rows a wallet: every wallet passes both.
        for (name, precedence, threshold) in [("Silver", 1, "5000"), ("Gold", 2, "12000")] {
            let tier = NewTier {
                name: name.into(),
                precedence,
                threshold: Tokens::from_text(threshold).unwrap(),
                benefits: Vec::new(),
                image_url: None,
            };
            store
                .programme()
                .create_tier(&campaign, tier)
                .await
                .unwrap();
        }
        serve(&store).await;
        let taken = match hooked {
            false => None,
            true => {
                let (url, taken) = receiver().await;
                let endpoint = subscribe(&store, &campaign, url, Vec::new()).await;
                Some((taken, endpoint.created_at))
            }
        };
        // Receiving a file moves it into the spool: each load gets a copy.
        let copy = dir.path().join(format!("earns-{hooked}.csv"));
        std::fs::copy(&file, &copy).unwrap();
        let (org, book) = (campaign.org(), RuleBook::new(store.programme().clone()));
        let data = dir.path().join(format!("data-{hooked}"));
        let took = common::load(&store, &book, &data, &org, &copy, rows).await;
        seconds.push(took);
        if let Some((taken, since)) = taken {
            let started = Instant::now();
            let events = delivered_all(&store, &org, since, &taken).await;
            println!(
                "file with the endpoint: {events} events, the last delivered {:.1} s after the \
                 load",
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
        "file of {rows} rows: {:.1} s without an endpoint, {:.1} s with one subscribed to \
         every type: {:+.1}% (goal: at most +5%)",
        seconds[0],
        seconds[1],
        (seconds[1] / seconds[0] - 1.0) * 100.0
    );
}

/// Waits until the receiver has taken as many deliveries as the organisation's feed holds
/// events since `since`, the feed having stopped growing (its events are committed; the
/// dispatcher numbers them within a tick or two); how many.
async fn delivered_all(
    store: &Store,
    org: &OrgScope,
    since: chrono::DateTime<chrono::Utc>,
    taken: &AtomicUsize,
) -> u64 {
    let page = Page { page: 1, limit: 1 };
    let filter = EventFilter {
        from: Some(since),
        ..Default::default()
    };
    let mut seen = (0, Instant::now());
    loop {
        let total = store
            .events()
            .feed(org, None, &filter, page)
            .await
            .unwrap()
            .total;
        if total != seen.0 {
            seen = (total, Instant::now());
        }
        let settled = seen.1.elapsed() > Duration::from_millis(500);
        if settled && taken.load(Ordering::Relaxed) as u64 >= total {
            return total;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
