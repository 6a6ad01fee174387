//! Limits and a budget in the ledger, beside the same rules without them, in the same run:
//!
//! - a file of `BENCH_ROWS` earns (default 1,000,000, over 5,000 members' wallets, as the
//!   ingest bench's file) through three rules, end to end through the pipeline (received ->
//!   every row committed and reported), once with each rule limited (a member's visits a
//!   month, a wallet's tokens a week, a store's bonus a day) and a monthly budget, once
//!   without (two ledgers, seeded alike);
//! - API earns on the limited and the unlimited rules: 32 clients for `BENCH_SECONDS` (default
//!   60) over 100 wallets, each earn counted once it is credited (its 202 and then the
//!   workers' crediting: the rate is earns credited per second).
//!
//! `cargo bench --bench limits` (PostgreSQL: set `REWARDS_TEST_POSTGRES_URL`). Goals: the
//! limited file within 1.3x the unlimited one; limited API earns at least 90% of the unlimited
//! rate.

mod common;

use std::time::{Duration, Instant};

use axum::http::StatusCode;
use serde_json::json;
use store::RuleBook;

const FILE_WALLETS: usize = 5_000;
const API_WALLETS: usize = 100;
const CLIENTS: usize = 32;

const UNLIMITED: &str = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'visit'\npriority = 2\nadd = 5\n\
     [[rule]]\nid = 'store-day'\npriority = 3\nadd = 'amount / 10'\n";

const LIMITED: &str = "[programme]\nbudget = { period = 'month', tokens = 1000000000 }\n\
     [[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
     limits = [{ scope = 'wallet', period = 'week', tokens = 5000 }]\n\
     [[rule]]\nid = 'visit'\npriority = 2\nadd = 5\n\
     limits = [{ scope = 'member', period = 'month', times = 3 }]\n\
     [[rule]]\nid = 'store-day'\npriority = 3\nadd = 'amount / 10'\n\
     limits = [{ scope = 'meta.store', period = 'day', tokens = 2000 }]\n";

fn main() {
    // As the service does (`src/main.rs`), before any thread starts.
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    let rows: u64 = common::number("BENCH_ROWS", 1_000_000);
    let seconds = common::seconds();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("earns.csv");
    let spec = generators::earns::Spec {
        rows,
        wallets: FILE_WALLETS as u64,
        wallet_prefix: "w-".into(),
        bad_share: 0.0,
        seed: 1,
        month: 10,
    };
    generators::earns::earn_csv(&spec, std::fs::File::create(&file).unwrap()).unwrap();

    let mut files = Vec::new();
    let mut floor = None;
    for (name, rules) in [("without limits", UNLIMITED), ("with limits", LIMITED)] {
        let seeded = common::seed(FILE_WALLETS, true).await;
        let (store, campaign) = (&seeded.store, &seeded.campaign);
        store
            .programme()
            .set_rule_set(campaign, rules)
            .await
            .unwrap();
        let book = RuleBook::new(store.programme().clone());
        let data = dir.path().join(name.replace(' ', "-"));
        // Receiving a file moves it into the spool: each ledger gets its own copy.
        let copy = dir.path().join(format!("{}.csv", name.replace(' ', "-")));
        std::fs::copy(&file, &copy).unwrap();
        let seconds = common::load(store, &book, &data, &campaign.org(), &copy, rows).await;
        assert!(store.ledger().audit().await.unwrap().is_empty());
        files.push((name, seconds));
        if rules == LIMITED && store.backend() == store::Backend::Sqlite {
            floor = Some(sqlite_floor(store).await);
        }
        if files.len() == 1 {
            println!("backend: {:?}; {rows} rows a file", store.backend());
        }
    }
    println!("{:<28} {:>10} {:>12}", "file", "seconds", "rows/s");
    for (name, seconds) in &files {
        println!("{name:<28} {seconds:>10.1} {:>12.0}", rows as f64 / seconds);
    }
    println!(
        "limited / unlimited: {:.2}x (goal <= 1.30x)",
        files[1].1 / files[0].1
    );
    if let Some(floor) = floor {
        println!(
            "floor: SQLite alone doing the limits' reads and writes {floor:.1} s: \
             (unlimited + floor) / unlimited = {:.2}x",
            (files[0].1 + floor) / files[0].1
        );
    }

    let mut rates = Vec::new();
    for (name, rules) in [("without limits", UNLIMITED), ("with limits", LIMITED)] {
        let seeded = common::seed(API_WALLETS, true).await;
        let (store, campaign) = (&seeded.store, &seeded.campaign);
        store
            .programme()
            .set_rule_set(campaign, rules)
            .await
            .unwrap();
        let base = common::serve(store).await;
        let started = Instant::now();
        let load = earns(&base, &seeded.key, seconds).await;
        let count_only = store::Page { page: 1, limit: 0 };
        let all = store::TransactionFilter::default();
        while store
            .ledger()
            .list_transactions(campaign, &all, count_only)
            .await
            .unwrap()
            .total
            < load.count as u64
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let credited = load.count as f64 / started.elapsed().as_secs_f64();
        println!("{}", load.row(&format!("POST earn, {name} (202)")));
        rates.push((name, credited));
    }
    println!("{:<28} {:>14}", "API earns", "credited/s");
    for (name, rate) in &rates {
        println!("{name:<28} {rate:>14.0}");
    }
    println!(
        "limited / unlimited: {:.2} (goal >= 0.90)",
        rates[1].1 / rates[0].1
    );
}

/// 32 clients posting earns for `seconds`, each a new id, over the wallets.
async fn earns(base: &str, key: &store::IssuedKey, seconds: u64) -> common::Load {
    let client = reqwest::Client::new();
    let url = format!("{base}/v1/transactions/earn");
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    common::drive(CLIENTS, seconds, move |c, n| {
        let body = json!({
            "id": format!("e-{c}-{n}"),
            "amount": 12.5,
            "date": "2026-11-18T10:00:00Z",
            "walletId": format!("w-{}", (c * 7 + n) % API_WALLETS),
            "meta": {"store": format!("S{}", n % 20)}
        });
        let request = client
            .post(&url)
            .header("x-api-key", &api_key)
            .header("x-api-secret", &secret)
            .json(&body);
        async move {
            assert_eq!(request.send().await.unwrap().status(), StatusCode::ACCEPTED);
        }
    })
    .await
}

/// The uses of the limited load, one row a (chunk, counter, scope, bucket) as a chunk of the
/// pipeline sums them (`CHUNK_ROWS` earns in file order; the transactions' rowids follow it),
/// prepared before the floor's clock starts.
const FLOOR_PREPARE: &str = "\
    CREATE TABLE floor_sums AS \
      SELECT (t.rowid - 1) / 5000 AS chunk, l.campaign_id, \
        json_extract(u.value, '$.counter') AS counter, json_extract(u.value, '$.scope') AS scope, \
        json_extract(u.value, '$.bucket') AS bucket, count(*) AS times, \
        sum(json_extract(u.value, '$.tokens')) AS tokens \
      FROM limit_uses l JOIN transactions t ON t.id = l.transaction_id, json_each(l.uses) u \
      GROUP BY 1, 2, 3, 4, 5 ORDER BY 1, 2, 3, 4, 5; \
    CREATE TABLE floor_uses (transaction_id TEXT PRIMARY KEY REFERENCES transactions (id), \
      campaign_id TEXT NOT NULL, uses TEXT NOT NULL) WITHOUT ROWID; \
    CREATE TABLE floor_counters (campaign_id TEXT NOT NULL, counter TEXT NOT NULL, \
      scope TEXT NOT NULL, bucket TEXT NOT NULL, times BIGINT NOT NULL, tokens BIGINT NOT NULL, \
      PRIMARY KEY (campaign_id, counter, scope, bucket)) WITHOUT ROWID; \
    CREATE TABLE floor_read (n BIGINT);";

/// SQLite alone doing what limits add to the load, on the same rows, in one transaction: each
/// chunk's counters read (a look-up of each counter a chunk names in the loaded counters, its
/// bucket range taken as the bucket), the earns' `limit_uses` rows written, each chunk's sums
/// added to the counters.
const FLOOR: &str = "\
    PRAGMA cache_size = -131072; BEGIN; \
    INSERT INTO floor_read SELECT count(c.times) FROM floor_sums s LEFT JOIN limit_counters c \
      ON c.campaign_id = s.campaign_id AND c.counter = s.counter AND c.scope = s.scope \
      AND c.bucket = s.bucket; \
    INSERT INTO floor_uses SELECT transaction_id, campaign_id, uses FROM limit_uses; \
    INSERT INTO floor_counters SELECT campaign_id, counter, scope, bucket, times, tokens \
      FROM floor_sums WHERE true ORDER BY chunk \
      ON CONFLICT (campaign_id, counter, scope, bucket) DO UPDATE SET \
      times = floor_counters.times + excluded.times, tokens = floor_counters.tokens + excluded.tokens; \
    COMMIT;";

/// Seconds SQLite alone takes for `FLOOR` on the limited ledger's uses.
async fn sqlite_floor(store: &store::Store) -> f64 {
    store.execute_raw(FLOOR_PREPARE).await.unwrap();
    common::settle(store).await;
    let started = Instant::now();
    store.execute_raw(FLOOR).await.unwrap();
    started.elapsed().as_secs_f64()
}
