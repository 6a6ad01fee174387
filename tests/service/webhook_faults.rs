//! Webhook deliveries through the real binary when a node fails: a service killed (-9) with
//! deliveries in flight sends each of them again after its restart, none lost; two services on
//! one PostgreSQL database deliver every event, and never one to the receiver twice at once.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, StatusCode};
use serde_json::{Value, json};

use crate::common::{json_of, programme, serve};

/// The data key of every process of a test: the endpoints' secrets open on each node.
const CODES_KEY: &str = "6b1d0d0b7c1f4a7e9b2c3d4e5f60718293a4b5c6d7e8f9011223344556677889";

/// What the receiver saw, per `webhook-id`.
#[derive(Default)]
struct Seen {
    /// Requests that arrived.
    arrived: HashMap<String, usize>,
    /// Requests being answered now.
    in_flight: HashMap<String, usize>,
    /// Ids answered 204 to a request that arrived in the current epoch.
    delivered: HashSet<String>,
    /// Ids that arrived while a request with the same id was in flight.
    overlaps: Vec<String>,
}

/// A receiver on this host: holds every request while `hold` is set; answers 204 after `delay`.
#[derive(Clone)]
struct Receiver {
    url: String,
    seen: Arc<Mutex<Seen>>,
    hold: Arc<AtomicBool>,
    /// Requests that arrived before the current epoch do not count as delivered.
    epoch: Arc<AtomicUsize>,
}

/// Takes a request off `in_flight` when its answer is given or abandoned.
struct Flight(Arc<Mutex<Seen>>, String);

impl Drop for Flight {
    fn drop(&mut self) {
        let mut seen = self.0.lock().unwrap();
        if let Some(n) = seen.in_flight.get_mut(&self.1) {
            *n -= 1;
        }
    }
}

impl Receiver {
    async fn start(hold: bool, delay: Duration) -> Receiver {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let receiver = Receiver {
            url: format!("http://{}/hook", listener.local_addr().unwrap()),
            seen: Arc::default(),
            hold: Arc::new(AtomicBool::new(hold)),
            epoch: Arc::default(),
        };
        let shared = receiver.clone();
        let router = axum::Router::new().route(
            "/hook",
            axum::routing::post(move |headers: HeaderMap| {
                let r = shared.clone();
                async move {
                    let id = headers
                        .get("webhook-id")
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or_default()
                        .to_string();
                    let epoch = r.epoch.load(Ordering::SeqCst);
                    let _flight = {
                        let mut seen = r.seen.lock().unwrap();
                        *seen.arrived.entry(id.clone()).or_default() += 1;
                        let flying = seen.in_flight.entry(id.clone()).or_default();
                        *flying += 1;
                        if *flying > 1 {
                            seen.overlaps.push(id.clone());
                        }
                        Flight(r.seen.clone(), id.clone())
                    };
                    while r.hold.load(Ordering::SeqCst) {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    tokio::time::sleep(delay).await;
                    if r.epoch.load(Ordering::SeqCst) == epoch {
                        r.seen.lock().unwrap().delivered.insert(id);
                    }
                    StatusCode::NO_CONTENT
                }
            }),
        );
        tokio::spawn(async move { axum::serve(listener, router).await });
        receiver
    }

    fn arrived(&self) -> usize {
        self.seen.lock().unwrap().arrived.values().sum()
    }

    /// Waits until every one of `ids` is delivered (at most `within`).
    async fn wait_delivered(&self, ids: &HashSet<String>, within: Duration) {
        let started = Instant::now();
        loop {
            let missing = {
                let seen = self.seen.lock().unwrap();
                ids.difference(&seen.delivered).count()
            };
            if missing == 0 {
                return;
            }
            assert!(
                started.elapsed() < within,
                "{missing} of {} events not delivered within {within:?}",
                ids.len()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// The environment of a service that may deliver to this host, its attempts ending after 1 s.
fn webhook_env(mut env: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    env.extend([
        ("REWARDS_WEBHOOK_ALLOW_HTTP", "true".to_string()),
        ("REWARDS_WEBHOOK_ALLOW", "127.0.0.1".to_string()),
        ("REWARDS_WEBHOOK_TIMEOUT_SECS", "1".to_string()),
        ("REWARDS_CODES_KEY", CODES_KEY.to_string()),
    ]);
    env
}

/// An endpoint of `org` for members' creations, at `url`.
fn add_endpoint(env: &[(&str, String)], org: &str, url: &str) {
    let add = [
        "webhook",
        "add",
        "--org",
        org,
        "--url",
        url,
        "--event",
        "member.created",
    ];
    json_of(env, &add);
}

/// Creates `count` members over the API; their `member.created` event ids, read from the feed.
async fn members(http: &str, key: &Value, count: usize) -> HashSet<String> {
    let client = reqwest::Client::new();
    let auth = |request: reqwest::RequestBuilder| {
        request
            .header("x-api-key", key["apiKey"].as_str().unwrap())
            .header("x-api-secret", key["apiSecret"].as_str().unwrap())
    };
    for i in 0..count {
        let member = json!({"firstName": "Ada", "userId": format!("u-{i}"),
            "externalId": format!("card-{i}")});
        let made = auth(client.post(format!("{http}/v1/members")))
            .json(&member)
            .send()
            .await
            .unwrap();
        assert!(made.status().is_success(), "{}", made.text().await.unwrap());
    }
    let started = Instant::now();
    loop {
        let mut ids = HashSet::new();
        for page in 1.. {
            let url = format!("{http}/v1/events?type=member.created&limit=100&page={page}");
            let feed: Value = auth(client.get(url))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            let data = feed["data"].as_array().unwrap_or_else(|| panic!("{feed}"));
            ids.extend(data.iter().map(|e| e["id"].as_str().unwrap().to_string()));
            if data.len() < 100 {
                break;
            }
        }
        if ids.len() == count {
            return ids;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{} of {count}",
            ids.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn a_kill_mid_delivery_loses_none(env: Vec<(&'static str, String)>) {
    let env = webhook_env(env);
    let (org, _, key) = programme(&env);
    let receiver = Receiver::start(true, Duration::ZERO).await;
    add_endpoint(&env, &org, &receiver.url);
    let (mut server, http) = serve(&env);
    let events = members(&http, &key, 20).await;
    // Deliveries in flight: the receiver holds them, unanswered.
    let started = Instant::now();
    while receiver.arrived() == 0 {
        assert!(started.elapsed() < Duration::from_secs(30), "nothing sent");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    server.kill().unwrap();
    server.wait().unwrap();
    // What the killed process had in flight never counts as delivered.
    receiver.epoch.fetch_add(1, Ordering::SeqCst);
    receiver.hold.store(false, Ordering::SeqCst);

    // Restarted, it sends each again once the dead node's claims have run out (4 timeouts and
    // 30 s).
    let (_server, _) = serve(&env);
    receiver
        .wait_delivered(&events, Duration::from_secs(120))
        .await;
    let log = json_of(&env, &["webhook", "list", "--org", &org]);
    assert_eq!(log[0]["status"], "enabled", "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kill_mid_delivery_loses_none_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    a_kill_mid_delivery_loses_none(vec![("REWARDS_DATA_DIR", dir.path().display().to_string())])
        .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn a_kill_mid_delivery_loses_none_on_postgres() {
    let url = store::testing::postgres_url().await;
    a_kill_mid_delivery_loses_none(vec![("DATABASE_URL", url)]).await;
}

/// Two services on one PostgreSQL database: every event delivered, exactly once (every answer is
/// a 204), and never while another request for it is in flight.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn two_nodes_share_the_deliveries() {
    let url = store::testing::postgres_url().await;
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let node = |dir: &tempfile::TempDir| {
        webhook_env(vec![
            ("DATABASE_URL", url.clone()),
            ("REWARDS_DATA_DIR", dir.path().display().to_string()),
        ])
    };
    let (first, second) = (node(&one), node(&two));
    let (org, _, key) = programme(&first);
    // Each answer takes a moment: two senders of one delivery would overlap.
    let receiver = Receiver::start(false, Duration::from_millis(30)).await;
    add_endpoint(&first, &org, &receiver.url);
    let (_a, http) = serve(&first);
    let (_b, _) = serve(&second);
    let events = members(&http, &key, 200).await;
    receiver
        .wait_delivered(&events, Duration::from_secs(120))
        .await;
    let seen = receiver.seen.lock().unwrap();
    assert!(
        seen.overlaps.is_empty(),
        "sent twice at once: {:?}",
        seen.overlaps
    );
    let repeated: Vec<(&String, &usize)> = seen.arrived.iter().filter(|(_, n)| **n > 1).collect();
    assert!(
        repeated.is_empty(),
        "delivered more than once: {repeated:?}"
    );
}
