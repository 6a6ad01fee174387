//! What the benchmarks share: a load driver with latency percentiles, a seeded ledger, and a
//! batch file loaded end to end.

#![allow(dead_code)] // each benchmark uses its own part

pub mod pgbench;

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Requests per second and latency percentiles of one scenario.
pub struct Load {
    pub rate: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    /// The slowest request: the stall a p99 hides.
    pub max_ms: f64,
    pub count: usize,
}

impl Load {
    pub fn row(&self, name: &str) -> String {
        format!(
            "{name:<34} {:>10.0} {:>9.2} {:>9.2} {:>9.2}",
            self.rate, self.p50_ms, self.p99_ms, self.max_ms
        )
    }
}

pub const HEADER: &str =
    "scenario                                req/s    p50 ms    p99 ms    max ms";

/// Runs `request(client_index, sequence)` from `clients` concurrent loops for `seconds`.
/// Each call must send one request and panic on an unexpected answer.
pub async fn drive<F, Fut>(clients: usize, seconds: u64, request: F) -> Load
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let request = Arc::new(request);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            let mut sequence = 0;
            while Instant::now() < deadline {
                let sent = Instant::now();
                request(client, sequence).await;
                latencies.push(sent.elapsed());
                sequence += 1;
            }
            latencies
        }));
    }
    gather(tasks, started).await
}

/// Runs `request(item)` once for each of `items`, from `clients` concurrent loops, as fast as
/// they go. Each call must send one request and panic on an unexpected answer.
pub async fn drive_each<T, F, Fut>(clients: usize, items: Vec<T>, request: F) -> Load
where
    T: Send + 'static,
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let request = Arc::new(request);
    let items = Arc::new(std::sync::Mutex::new(items.into_iter()));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let (request, items) = (request.clone(), items.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            loop {
                let Some(item) = items.lock().unwrap().next() else {
                    return latencies;
                };
                let sent = Instant::now();
                request(item).await;
                latencies.push(sent.elapsed());
            }
        }));
    }
    gather(tasks, started).await
}

/// Sends `request(0, sequence)` `rate` times a second for `seconds`, each when it falls due
/// whether or not the ones before it have been answered (an open loop: clients that arrive on
/// their own, as a shop's tills do), so a request's latency is the service's at that load, not
/// the share of a saturated machine a closed loop of clients gets. Each call must send one
/// request and panic on an unexpected answer.
pub async fn drive_at<F, Fut>(rate: f64, seconds: u64, request: F) -> Load
where
    F: Fn(usize, usize) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send,
{
    let request = Arc::new(request);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for sequence in 0..(rate * seconds as f64) as usize {
        let due = started + Duration::from_secs_f64(sequence as f64 / rate);
        tokio::time::sleep_until(due.into()).await;
        let request = request.clone();
        tasks.push(tokio::spawn(async move {
            let sent = Instant::now();
            request(0, sequence).await;
            vec![sent.elapsed()]
        }));
    }
    gather(tasks, started).await
}

/// The load the client tasks measured since `started`.
async fn gather(tasks: Vec<tokio::task::JoinHandle<Vec<Duration>>>, started: Instant) -> Load {
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await.expect("client task"));
    }
    let elapsed = started.elapsed().as_secs_f64();
    latencies.sort();
    let at = |q: f64| latencies[((latencies.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    Load {
        rate: latencies.len() as f64 / elapsed,
        p50_ms: at(0.5),
        p99_ms: at(0.99),
        max_ms: at(1.0),
        count: latencies.len(),
    }
}

/// How long each timed scenario runs: `BENCH_SECONDS`, default 60.
pub fn seconds() -> u64 {
    number("BENCH_SECONDS", 60)
}

/// The number the environment variable `var` holds, or `default` when it is unset or not one.
pub fn number<T: std::str::FromStr>(var: &str, default: T) -> T {
    std::env::var(var)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Credits `lots` earns of 12.5 tokens (each an open lot) to each of wallets `w-0..w-<wallets>`
/// of `campaign`, through the store, a thousand at a time.
pub async fn open_lots(
    store: &store::Store,
    campaign: &store::Campaign,
    wallets: usize,
    lots: usize,
) {
    let mut ids = Vec::with_capacity(wallets);
    for w in 0..wallets {
        ids.push(
            store
                .ledger()
                .get_wallet(campaign, &format!("w-{w}"))
                .await
                .unwrap()
                .id,
        );
    }
    let date = chrono::Utc::now() - chrono::Duration::days(1);
    let credits: Vec<store::Credit> = (0..wallets * lots)
        .map(|i| store::Credit {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            earn: store::EarnInput {
                activity: None,
                earn_id: format!("seed-{i}"),
                wallet: format!("w-{}", i % wallets),
                amount: "12.5".into(),
                date: date + chrono::Duration::milliseconds(i as i64),
                description: None,
                comment: None,
                meta: None,
            },
            wallet_id: ids[i % wallets].clone(),
            currency: campaign.currency.clone(),
            tokens: store::Tokens::from_text("12.5").unwrap(),
            trace: "seed".into(),
            rule_version: None,
            meta_text: None,
            request_id: None,
            batch_id: None,
            pending_days: None,
            limited: None,
            converts_referral: true,
        })
        .collect();
    for chunk in credits.chunks(1_000) {
        store.ledger().credit_all(chunk).await.unwrap();
    }
}

/// Runs `wrk` (a separate process, as a client fleet would be: the driver takes little of
/// the machine from the server) with `connections` connections for `seconds`, cycling through
/// `paths` under `base` with `headers` on every request. `None` when `wrk` is not installed.
/// Panics if any answer is not a success.
pub fn wrk(
    base: &str,
    paths: &[String],
    headers: &[(&str, &str)],
    connections: usize,
    seconds: u64,
) -> Option<Load> {
    let lua = |text: &str| format!("{text:?}");
    let mut script = String::from("local paths = {\n");
    for path in paths {
        // wrk sends the path as it is: a space would end the request line.
        script.push_str(&format!("  {},\n", lua(&path.replace(' ', "%20"))));
    }
    script.push_str("}\nlocal i = 0\n");
    for (name, value) in headers {
        script.push_str(&format!("wrk.headers[{}] = {}\n", lua(name), lua(value)));
    }
    script.push_str(
        "request = function()\n  i = i + 1\n  return wrk.format(\"GET\", paths[(i % #paths) + 1])\nend\n",
    );
    wrk_script(base, &script, 2, connections, seconds)
}

/// Runs `wrk` with the Lua `script` (which sets its requests) on `threads` threads and
/// `connections` connections for `seconds` against `base`. `None` when `wrk` is not
/// installed. Panics if any answer is not a success.
pub fn wrk_script(
    base: &str,
    script: &str,
    threads: usize,
    connections: usize,
    seconds: u64,
) -> Option<Load> {
    let file = std::env::temp_dir().join(format!("rewards-bench-{}.lua", std::process::id()));
    std::fs::write(&file, script).unwrap();
    let output = std::process::Command::new("wrk")
        .args([
            "-t",
            &threads.to_string(),
            "-c",
            &connections.to_string(),
            "-d",
        ])
        .arg(format!("{seconds}s"))
        .args(["--latency", "-s"])
        .arg(&file)
        .arg(base)
        .output();
    let _ = std::fs::remove_file(&file);
    let output = output.ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "wrk failed: {text}{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        !text.contains("Non-2xx"),
        "answers that are not successes:\n{text}"
    );
    let field = |label: &str| -> f64 {
        let line = text
            .lines()
            .find(|l| l.trim_start().starts_with(label))
            .unwrap_or_else(|| panic!("no `{label}` in wrk's output:\n{text}"));
        let value = line.trim_start()[label.len()..]
            .split_whitespace()
            .next()
            .unwrap();
        millis(value)
    };
    let rate: f64 = text
        .lines()
        .find_map(|l| l.strip_prefix("Requests/sec:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("wrk's Requests/sec");
    let count = text
        .lines()
        .find(|l| l.contains("requests in"))
        .and_then(|l| l.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_default();
    // "Latency   1.02ms  350.00us  12.34ms   90.00%": average, deviation, maximum.
    let latency = text
        .lines()
        .find(|l| l.trim_start().starts_with("Latency "))
        .expect("wrk's latency line");
    let max_ms = millis(latency.split_whitespace().nth(3).unwrap());
    Some(Load {
        rate,
        p50_ms: field("50%"),
        p99_ms: field("99%"),
        max_ms,
        count,
    })
}

/// One of wrk's durations (`635.91us`, `1.23ms`, `2.01s`) in milliseconds.
fn millis(value: &str) -> f64 {
    let (number, scale) = if let Some(n) = value.strip_suffix("us") {
        (n, 0.001)
    } else if let Some(n) = value.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = value.strip_suffix('s') {
        (n, 1000.0)
    } else {
        (value, 1.0)
    };
    number.parse::<f64>().expect("a wrk duration") * scale
}

/// Latency percentiles (ms) of a list of durations.
pub fn percentiles(mut durations: Vec<Duration>) -> (f64, f64) {
    durations.sort();
    let at = |q: f64| durations[((durations.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.99))
}

/// A fresh store (PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set, else SQLite) with one
/// campaign (`PTS`), a key for it, and `members` members `m-<i>`, each with a wallet `w-<i>`
/// when `wallets` is set.
/// One request of a load, boxed so that a builder can hand out a closure that makes it.
pub type Request = std::pin::Pin<Box<dyn Future<Output = ()> + Send>>;

/// Burns of 0.01 over HTTP with one key, spread over the seeded wallets.
#[derive(Clone)]
pub struct HttpBurns {
    client: reqwest::Client,
    base: String,
    key: String,
    secret: String,
    wallets: usize,
}

impl HttpBurns {
    pub fn new(base: &str, key: &store::IssuedKey, wallets: usize) -> HttpBurns {
        HttpBurns {
            client: reqwest::Client::new(),
            base: base.to_string(),
            key: key.key.api_key.clone(),
            secret: key.secret.clone(),
            wallets,
        }
    }

    /// One round's burns for `drive` or `drive_at`: client `c`'s `n`th has the external id
    /// `{round}-{c}-{n}` (unique in the run) and spends from wallet `w-{(c * 13 + n) % wallets}`.
    pub fn round(
        &self,
        round: &'static str,
    ) -> impl Fn(usize, usize) -> Request + Send + Sync + use<> {
        let burns = self.clone();
        move |c, n| {
            let body = serde_json::json!({"externalId": format!("{round}-{c}-{n}"),
                "amount": 0.01, "walletId": format!("w-{}", (c * 13 + n) % burns.wallets),
                "description": "Voucher"});
            let request = burns
                .client
                .post(format!("{}/v1/transactions/burn", burns.base))
                .header("x-api-key", &burns.key)
                .header("x-api-secret", &burns.secret)
                .json(&body);
            Box::pin(async move {
                let answer = request.send().await.unwrap();
                assert_eq!(answer.status(), reqwest::StatusCode::OK);
            })
        }
    }
}

pub struct Seed {
    pub _db: store::testing::TestStore,
    pub store: store::Store,
    pub campaign: store::Campaign,
    pub key: store::IssuedKey,
}

pub async fn seed(members: usize, wallets: bool) -> Seed {
    use store::{NewCampaign, NewKey, NewMember, NewWallet};
    let db = match std::env::var(store::testing::POSTGRES_URL_VAR) {
        Ok(_) => store::testing::TestStore::postgres().await,
        Err(_) => store::testing::TestStore::sqlite().await,
    };
    let store = db.store.clone();
    let org = store.tenancy().create_org("Bench").await.unwrap().scope();
    let new = NewCampaign {
        name: "B".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let campaign = store.tenancy().create_campaign(&org, new).await.unwrap();
    let new = NewKey {
        campaign_id: campaign.id.clone(),
        ..Default::default()
    };
    let key = store.tenancy().issue_key(&org, new).await.unwrap();
    for i in 0..members {
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: format!("u{i}"),
            external_id: format!("m-{i}"),
            ..Default::default()
        };
        store.members().create_member(&org, member).await.unwrap();
        if i % 10_000 == 9_999 {
            analyzed(&store).await;
        }
        if wallets {
            let wallet = NewWallet {
                owner: Some(format!("m-{i}")),
                external_id: Some(format!("w-{i}")),
                name: None,
            };
            store
                .ledger()
                .create_wallet(&campaign, wallet)
                .await
                .unwrap();
        }
    }
    analyzed(&store).await;
    Seed {
        _db: db,
        store,
        campaign,
        key,
    }
}

/// On PostgreSQL, what autovacuum (on by default) does to the tables a bench grows once they
/// grew by a tenth: their statistics gathered and their visibility map set. A server that runs
/// without it (the test server here does) plans a table of 100,000 members as if it were
/// nearly empty. (Named: a bare `VACUUM` would also walk every other test schema.) SQLite's
/// store never gathers statistics, so nothing is done there.
pub async fn analyzed(store: &store::Store) {
    if store.backend() == store::Backend::Postgres {
        let grown = "VACUUM ANALYZE members, wallets, transactions, events, products, variants, \
             branches, product_tags";
        store.execute_raw(grown).await.unwrap();
    }
}

/// Serves the real application (with its workers unless `BENCH_NO_WORKERS` is set) on a
/// loopback port; returns its base URL.
pub async fn serve(store: &store::Store) -> String {
    serve_state(api::AppState::new(store.clone(), store::CodeKey::random())).await
}

/// Serves the real application on `state` (its settings, its code key), as `serve` does.
pub async fn serve_state(state: api::AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let workers = std::env::var("BENCH_NO_WORKERS").is_err();
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let runtime = runtime::start(&state, workers, &stop);
    tokio::spawn(async move {
        // Held while the server runs (the bench's whole life): the runtime's stop is never sent.
        let _running = (stopping, runtime);
        api::serve(listener, state, std::future::pending()).await
    });
    base
}

/// A bare axum server answering `POST path` with `status` and `reply` of the JSON body it
/// parsed: the HTTP stack and JSON alone (no key check, no store), the floor under an
/// operation's figures. Its base URL.
pub async fn serve_bare(
    path: &'static str,
    status: axum::http::StatusCode,
    reply: fn(serde_json::Value) -> serde_json::Value,
) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let router = axum::Router::new().route(
        path,
        axum::routing::post(
            move |axum::Json(body): axum::Json<serde_json::Value>| async move {
                (status, axum::Json(reply(body)))
            },
        ),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    base
}

/// A bare axum server answering every GET with `body` as JSON: what the HTTP stack alone does
/// with an answer of that size (no key check, no routing table, no search): the floor under a
/// scenario whose answers are that large.
pub async fn serve_bytes(body: axum::body::Bytes) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().fallback(move || {
        let body = body.clone();
        async move {
            (
                [(axum::http::header::CONTENT_TYPE, "application/json")],
                body,
            )
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await });
    base
}

/// Seconds from receiving `file` to its batch completed with all `rows` loaded.
pub async fn load(
    store: &store::Store,
    book: &store::RuleBook,
    data: &std::path::Path,
    org: &store::OrgScope,
    file: &std::path::Path,
    rows: u64,
) -> f64 {
    load_staged(store, book, data, org, file, rows).await.0
}

/// `load`, and where the pipeline's time went.
pub async fn load_staged(
    store: &store::Store,
    book: &store::RuleBook,
    data: &std::path::Path,
    org: &store::OrgScope,
    file: &std::path::Path,
    rows: u64,
) -> (f64, ingest::batch::stages::Stages) {
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    settle(store).await;
    let started = Instant::now();
    ingest::intake::receive(store, data, org, file, &name, "sftp", None)
        .await
        .unwrap();
    let batch = store
        .batches()
        .claim_batches(1, None)
        .await
        .unwrap()
        .remove(0);
    let outcome = ingest::batch::pipeline::process(store, book, data, &batch, &|_| {})
        .await
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let done = store.batches().get_batch(org, &batch.id).await.unwrap();
    assert_eq!(done.rows_loaded, Some(rows as i64), "every row loaded");
    (seconds, outcome.stages)
}

/// Before a timed step of the ledger, as `BulkTable::settle`: a checkpoint (on SQLite, the pages
/// the WAL holds copied into the database file), then the kernel's dirty pages written back.
pub async fn settle(store: &store::Store) {
    let checkpoint = match store.backend() {
        store::Backend::Postgres => "CHECKPOINT",
        store::Backend::Sqlite => "PRAGMA wal_checkpoint(TRUNCATE)",
    };
    store.execute_raw(checkpoint).await.unwrap();
    written_out();
}

/// Before a timed step: what the kernel holds to write back of earlier steps' files is written
/// now, so that no step pays for the one before it.
pub fn written_out() {
    let _ = std::process::Command::new("sync").status();
}

/// An owner, signed in over HTTP with its one-time password changed: its session's token.
pub async fn owner_session(store: &store::Store, admin_base: &str) -> String {
    let new = store::NewOperator {
        email: "owner@example.com".into(),
        role: store::Role::Owner,
        orgs: Vec::new(),
        allowed_addresses: Vec::new(),
    };
    let (_, password) = store.operators().add(new).await.unwrap();
    let http = reqwest::Client::new();
    let signed_in: serde_json::Value = http
        .post(format!("{admin_base}/admin/v1/sessions"))
        .json(&serde_json::json!({"email": "owner@example.com", "password": password.reveal()}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let token = signed_in["token"].as_str().unwrap().to_owned();
    let changed = http
        .put(format!("{admin_base}/admin/v1/me/password"))
        .bearer_auth(&token)
        .json(&serde_json::json!({"currentPassword": password.reveal(), "newPassword": "a bench's password"}))
        .send()
        .await
        .unwrap();
    assert!(changed.status().is_success());
    token
}

/// A memory figure of this process from `/proc/self/status` (`VmHWM`: the peak RSS, `VmRSS`:
/// the RSS now), in KiB.
pub fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Burns of 0.01 through the store alone (no HTTP, authentication or JSON: the floor under
/// `POST /v1/transactions/burn`) from `clients` for `seconds`, under keys starting `prefix`
/// (see `store_burn`).
pub async fn burns_alone(
    store: &store::Store,
    campaign: &store::Campaign,
    clients: usize,
    wallets: usize,
    seconds: u64,
    prefix: &'static str,
) -> Load {
    drive(
        clients,
        seconds,
        store_burn(store, campaign, wallets, prefix),
    )
    .await
}

/// A request for `drive` or `drive_at`: client `c`'s `n`-th burn of 0.01 through the store,
/// spread over wallets `w-0` to `w-{wallets - 1}`, under the key `{prefix}-{c}-{n}`.
pub fn store_burn(
    store: &store::Store,
    campaign: &store::Campaign,
    wallets: usize,
    prefix: &'static str,
) -> impl Fn(usize, usize) -> std::pin::Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync + 'static
{
    let (store, campaign) = (store.clone(), campaign.clone());
    move |c, n| {
        let burn = store::NewBurn {
            spend: store::Spend {
                wallet: format!("w-{}", (c * 13 + n) % wallets),
                external_id: format!("{prefix}-{c}-{n}"),
                amount: store::Tokens::from_text("0.01").unwrap(),
                description: "Voucher".into(),
                comment: None,
                meta: None,
            },
            date: None,
        };
        let (store, campaign) = (store.clone(), campaign.clone());
        Box::pin(async move {
            store.ledger().burn(&campaign, burn).await.unwrap();
        })
    }
}
