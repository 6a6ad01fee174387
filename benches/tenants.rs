//! One tenant's webhooks against everyone else, on SQLite (or PostgreSQL when
//! `REWARDS_TEST_POSTGRES_URL` is set), in one run, with the node's delivery budget as `rewards
//! serve` derives it from this process's open-file limit:
//!
//! 1. Another organisation's burns over HTTP at a fixed rate (`BENCH_RATE`, default 200 a
//!    second) for `BENCH_SECONDS` (default 60), with `GET /healthz` asked every 50 ms beside
//!    them: the baseline.
//! 2. The same, after a noisy organisation made `BENCH_ENDPOINTS` endpoints (default 1,300)
//!    at a receiver that accepts connections and never answers, and 50 burns whose events each
//!    of them is due: every round of theirs hangs until the attempt's timeout.
//!
//! 3. The floor, in a second database with no service: the other organisation's burns straight
//!    to the store, alone and while the same fan-out is dispatched (nothing sent).
//!
//! It prints the scenarios' burn and health latencies, the most sockets the silent receiver
//! held at once and the descriptors the process had open. `cargo bench --bench tenants`.
//! Goals: the other organisation's burn p99 within 2x the baseline, `/healthz` p99 under 50 ms.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use axum::http::StatusCode;
use store::{ApiVersion, CodeKey, NewCampaign, NewEndpoint, NewMember, NewWallet, Store};

const WALLETS: usize = 100;
const CODES: [u8; 32] = [7; 32];
const NOISY_BURNS: usize = 50;

fn main() {
    rewards::arenas::limit();
    run();
}

/// A receiver that accepts every connection and never answers: how many it holds now and the
/// most it held at once.
async fn silent() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    let (open, most) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (held, peak) = (open.clone(), most.clone());
    tokio::spawn(async move {
        loop {
            let Ok((mut socket, _)) = listener.accept().await else {
                continue;
            };
            let now = held.fetch_add(1, Ordering::Relaxed) + 1;
            peak.fetch_max(now, Ordering::Relaxed);
            let held = held.clone();
            tokio::spawn(async move {
                // Reads what is sent and never answers; the sender's timeout closes it.
                let mut sink = [0u8; 4096];
                while let Ok(n) = tokio::io::AsyncReadExt::read(&mut socket, &mut sink).await {
                    if n == 0 {
                        break;
                    }
                }
                held.fetch_sub(1, Ordering::Relaxed);
            });
        }
    });
    (url, open, most)
}

/// This process's open-file limit (soft), as `/proc/self/limits` says.
fn descriptor_limit() -> u64 {
    let limits = std::fs::read_to_string("/proc/self/limits").unwrap_or_default();
    limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .and_then(|l| l.split_whitespace().nth(3))
        .and_then(|n| n.parse().ok())
        .unwrap_or(1_024)
}

fn open_descriptors() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, std::iter::Iterator::count)
}

/// `GET /healthz` every 50 ms until `stop`; each answer's latency.
async fn health(base: String, stop: Arc<std::sync::atomic::AtomicBool>) -> Vec<Duration> {
    let client = reqwest::Client::new();
    let mut latencies = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let sent = Instant::now();
        let answer = client.get(format!("{base}/healthz")).send().await;
        assert!(answer.is_ok_and(|a| a.status() == StatusCode::OK));
        latencies.push(sent.elapsed());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    latencies
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
    let rate: f64 = common::number("BENCH_RATE", 200.0);
    let endpoints: usize = common::number("BENCH_ENDPOINTS", 1_300);
    common::open_lots(&store, &campaign, WALLETS, 10).await;
    let mut settings = api::Settings::default();
    let webhooks = &mut settings.webhooks;
    webhooks.rules.allow_http = true;
    webhooks.rules.allowed = vec!["127.0.0.1".parse().unwrap()];
    webhooks.endpoints_per_org = endpoints;
    webhooks.sockets = outbound::sockets_within(descriptor_limit(), settings.http.max_connections);
    webhooks.org_sockets = (webhooks.sockets / 4).max(1);
    let (sockets, org_sockets) = (webhooks.sockets, webhooks.org_sockets);
    let state = api::AppState::new(store.clone(), CodeKey::new(&CODES)).with_settings(settings);
    let base = common::serve_state(state).await;

    let burns = common::HttpBurns::new(&base, &key, WALLETS);
    let beside_health = |load| {
        let base = base.clone();
        async move {
            let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
            let checks = tokio::spawn(health(base, stop.clone()));
            let load: common::Load = load.await;
            stop.store(true, Ordering::Relaxed);
            let (p50, p99) = common::percentiles(checks.await.unwrap());
            (load, p50, p99)
        }
    };

    println!(
        "backend: {:?}; descriptors {}, delivery sockets {sockets} ({org_sockets} an \
         organisation); {rate:.0} burns/s of another organisation, {seconds} s a scenario",
        store.backend(),
        descriptor_limit()
    );
    let (alone, health_p50, health_p99) =
        beside_health(common::drive_at(rate, seconds, burns.round("alone"))).await;

    let (url, open, most) = silent().await;
    let noisy = noisy_tenant(&store, &url, endpoints).await;
    let started = Instant::now();
    noisy_burns(&store, &noisy).await;
    let (beside, noisy_p50, noisy_p99) =
        beside_health(common::drive_at(rate, seconds, burns.round("beside"))).await;
    let descriptors = open_descriptors();

    println!("{}", common::HEADER);
    println!("{}", alone.row("burns alone"));
    println!(
        "{}",
        beside.row(&format!("burns beside {endpoints} silent"))
    );
    println!(
        "healthz p50 / p99: {health_p50:.2} / {health_p99:.2} ms alone, {noisy_p50:.2} / \
         {noisy_p99:.2} ms beside (goal: p99 under 50 ms)"
    );
    println!(
        "burn p99 beside them: {:.2}x alone (goal: at most 2x); the silent receiver held at most \
         {} sockets ({} now, {:.0} s after the noisy burns); {descriptors} descriptors open",
        beside.p99_ms / alone.p99_ms,
        most.load(Ordering::Relaxed),
        open.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64()
    );
    let (floor_alone, floor_beside) = floor(rate, seconds, endpoints).await;
    println!("{}", floor_alone.row("floor: store burns alone"));
    println!("{}", floor_beside.row("floor: beside the fan-out"));
    println!(
        "floor: the database alone, {:.2}x (the same fan-out's writes, no HTTP, no sends)",
        floor_beside.p99_ms / floor_alone.p99_ms
    );
}

/// The noisy organisation's burns: each one's event is due at every endpoint of theirs.
async fn noisy_burns(store: &Store, noisy: &store::Campaign) {
    for n in 0..NOISY_BURNS {
        let burn = store::NewBurn {
            spend: store::Spend {
                wallet: "n-w".into(),
                external_id: format!("noisy-{n}"),
                amount: store::Tokens::from_text("0.01").unwrap(),
                description: "Noise".into(),
                comment: None,
                meta: None,
            },
            date: None,
        };
        store.ledger().burn(noisy, burn).await.unwrap();
    }
}

/// The floor, in a database of its own with no service: the other organisation's burns straight
/// to the store at `rate`, alone, then while the noisy organisation's burns are fanned out to
/// its `endpoints` by the dispatcher's own store call, looking every 100 ms and pausing three
/// times each transaction's length while a backlog lasts, as the service's dispatcher does
/// (`runtime`'s deliveries). Nothing is sent: what the database alone does with that work.
async fn floor(rate: f64, seconds: u64, endpoints: usize) -> (common::Load, common::Load) {
    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(WALLETS, true).await;
    common::open_lots(&store, &campaign, WALLETS, 10).await;
    let burns = |round: &'static str| common::store_burn(&store, &campaign, WALLETS, round);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let dispatcher = {
        let (store, stop) = (store.clone(), stop.clone());
        tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                loop {
                    let started = Instant::now();
                    if !store.events().dispatch_events(1_000).await.unwrap().full {
                        break;
                    }
                    tokio::time::sleep(started.elapsed() * 3).await;
                }
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        })
    };
    let alone = common::drive_at(rate, seconds, burns("alone")).await;
    let noisy = noisy_tenant(&store, "http://127.0.0.1:9/hook", endpoints).await;
    noisy_burns(&store, &noisy).await;
    let beside = common::drive_at(rate, seconds, burns("beside")).await;
    stop.store(true, Ordering::Relaxed);
    dispatcher.await.unwrap();
    (alone, beside)
}

/// An organisation with a wallet of tokens and `count` endpoints at `url`, each wanting every
/// `transaction.created`; its campaign.
async fn noisy_tenant(store: &Store, url: &str, count: usize) -> store::Campaign {
    let org = store.tenancy().create_org("Noisy").await.unwrap().scope();
    let new = NewCampaign {
        name: "N".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let campaign = store.tenancy().create_campaign(&org, new).await.unwrap();
    let member = NewMember {
        first_name: "Eve".into(),
        idp: "reference".into(),
        user_id: "n-u".into(),
        external_id: "n-m".into(),
        ..Default::default()
    };
    store.members().create_member(&org, member).await.unwrap();
    let wallet = NewWallet {
        owner: Some("n-m".into()),
        external_id: Some("n-w".into()),
        name: None,
    };
    store
        .ledger()
        .create_wallet(&campaign, wallet)
        .await
        .unwrap();
    let book = store::RuleBook::new(store.programme().clone());
    let earn = store::EarnInput {
        activity: None,
        earn_id: "n-e".into(),
        wallet: "n-w".into(),
        amount: "100".into(),
        date: chrono::Utc::now(),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().submit_earn(&campaign, earn).await.unwrap();
    // This bench's process_earns or the service's worker credits it.
    store.ledger().process_earns(&book, 100).await.unwrap();
    while !store
        .ledger()
        .get_wallet(&campaign, "n-w")
        .await
        .unwrap()
        .balance
        .is_positive()
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for n in 0..count {
        let endpoint = NewEndpoint {
            campaign_id: Some(campaign.id.clone()),
            url: url.into(),
            description: Some(format!("silent {n}")),
            event_types: vec![store::EventType::TransactionCreated],
            api_version: ApiVersion::V1_9_5,
            secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
        };
        store
            .events()
            .create_endpoint(&org, endpoint, &CodeKey::new(&CODES), count)
            .await
            .unwrap();
    }
    campaign
}
