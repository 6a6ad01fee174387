//! The release binary under an outside load generator: `wrk -t1 -c32` posting earns (each a
//! new id, over 100 wallets) for `BENCH_SECONDS` (default 60), then burns, against
//! `rewards serve` in a process of its own on SQLite (or PostgreSQL when
//! `REWARDS_TEST_POSTGRES_URL` is set). Beside them, the same binary's `GET /healthz` under the
//! same load: what serving HTTP alone costs on this machine. The in-process `ledger` bench shares
//! the machine's two cores between its clients and the server; here wrk takes little, and the
//! tail latency is the server's own.
//!
//! Then the floors: the same burns through the store alone in this process (no HTTP), and the
//! disk's own `fdatasync`.
//!
//! `cargo bench --bench service` (needs `wrk`); `BENCH_BINARY=path` runs another build of the
//! binary (an earlier commit's) under the same load. Goal (#64 part 2): earn and burn each
//! >= 6,000 req/s with p99 <= 10 ms.

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CONNECTIONS: usize = 32;
const WALLETS: usize = 100;

/// `rewards serve`, stopped when dropped.
struct Service(Child);

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn main() {
    if Command::new("wrk").arg("--version").output().is_err() {
        println!("wrk is not installed: nothing measured (apt-get install wrk)");
        return;
    }
    run();
}

#[tokio::main]
async fn run() {
    let seconds = common::seconds();
    let seed = common::seed(WALLETS, true).await;
    let data = std::env::temp_dir().join(format!("rewards-service-bench-{}", std::process::id()));
    std::fs::create_dir_all(&data).unwrap();
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}");
    // `BENCH_BINARY`: another build of `rewards` (an earlier commit's, to compare with).
    let binary = std::env::var("BENCH_BINARY").unwrap_or(env!("CARGO_BIN_EXE_rewards").into());
    let child = Command::new(&binary)
        .arg("serve")
        .env("DATABASE_URL", &seed._db.url)
        .env("REWARDS_DATA_DIR", &data)
        .env("REWARDS_HTTP_ADDR", format!("127.0.0.1:{port}"))
        .env("REWARDS_SFTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_ADMIN_ADDR", "127.0.0.1:0")
        .env("REWARDS_LOG", "warn")
        .stdout(Stdio::null())
        .spawn()
        .expect("rewards serve starts");
    let service = Service(child);
    let client = reqwest::Client::new();
    let started = Instant::now();
    while client
        .get(format!("{base}/readyz"))
        .send()
        .await
        .map_or(true, |r| !r.status().is_success())
    {
        assert!(started.elapsed() < Duration::from_secs(60), "not ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    println!(
        "backend: {:?}; wrk -t1 -c{CONNECTIONS}, {seconds} s per scenario, the release binary",
        seed.store.backend()
    );
    println!("{}", common::HEADER);
    let script = |request: &str| {
        let (key, secret) = (&seed.key.key.api_key, &seed.key.secret);
        format!(
            "wrk.method = \"POST\"\n\
             wrk.headers[\"Content-Type\"] = \"application/json\"\n\
             wrk.headers[\"x-api-key\"] = {key:?}\n\
             wrk.headers[\"x-api-secret\"] = {secret:?}\n\
             local i = 0\n\
             request = function()\n  i = i + 1\n  {request}\nend\n"
        )
    };
    let load = |script: String| common::wrk_script(&base, &script, 1, CONNECTIONS, seconds);

    let health = "return wrk.format(\"GET\", \"/healthz\")";
    let baseline = load(script(health)).expect("wrk runs");
    println!("{}", baseline.row("baseline: GET /healthz"));

    let earn = format!(
        "local body = string.format('{{\"id\":\"e-%d\",\"amount\":12.5,\
         \"date\":\"2026-11-18T10:00:00Z\",\"walletId\":\"w-%d\",\
         \"meta\":{{\"store\":\"A1\"}}}}', i, i % {WALLETS})\n  \
         return wrk.format(nil, \"/v1/transactions/earn\", nil, body)"
    );
    let earns = load(script(&earn)).expect("wrk runs");
    println!("{}", earns.row("POST /v1/transactions/earn (202)"));

    // The burns spend what the earns credited: wait for the workers to finish them.
    let all = store::TransactionFilter::default();
    let count_only = store::Page { page: 1, limit: 0 };
    let drained = Instant::now();
    while seed
        .store
        .ledger()
        .list_transactions(&seed.campaign, &all, count_only)
        .await
        .unwrap()
        .total
        < earns.count as u64
    {
        assert!(
            drained.elapsed() < Duration::from_secs(600),
            "earns not processed"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let burn = format!(
        "local body = string.format('{{\"externalId\":\"b-%d\",\"amount\":0.01,\
         \"walletId\":\"w-%d\",\"description\":\"Voucher\"}}', i, i % {WALLETS})\n  \
         return wrk.format(nil, \"/v1/transactions/burn\", nil, body)"
    );
    let burns = load(script(&burn)).expect("wrk runs");
    println!("{}", burns.row("POST /v1/transactions/burn (200)"));

    drop(service);
    // The floors: the same burns through the store alone in this process (the ledger and
    // SQLite, no HTTP), and the disk's flush, two of which hold every write back each time the
    // WAL starts over.
    let alone = common::burns_alone(
        &seed.store,
        &seed.campaign,
        CONNECTIONS,
        WALLETS,
        seconds,
        "sb",
    )
    .await;
    println!("{}", alone.row("floor: Ledger::burn alone, in process"));
    let (p50, p99) = flushes(&data);
    println!("the disk alone: fdatasync after a 64 KiB write, p50 {p50:.2} ms, p99 {p99:.2} ms");
    let _ = std::fs::remove_dir_all(&data);
    assert!(
        seed.store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees with itself after the run"
    );
}

/// `fdatasync` after each of 500 writes of 64 KiB to a file in `dir` (as the WAL's appends and
/// the checkpoint's copies are flushed): its p50 and p99 in ms.
fn flushes(dir: &std::path::Path) -> (f64, f64) {
    use std::io::Write;
    let mut file = std::fs::File::create(dir.join("flushes")).unwrap();
    let block = vec![7u8; 64 << 10];
    let durations = (0..500)
        .map(|_| {
            file.write_all(&block).unwrap();
            let started = Instant::now();
            file.sync_data().unwrap();
            started.elapsed()
        })
        .collect();
    common::percentiles(durations)
}
