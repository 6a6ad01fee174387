//! One earn file end to end on SQLite (PostgreSQL with `REWARDS_TEST_POSTGRES_URL`): file received -> every row committed and the reports
//! written, beside `sqlite3 .import` of the same file into a table with the same columns and a
//! unique index on the id, in the same run.
//!
//! `cargo bench --bench ingest` (rows: `BENCH_ROWS`, default 1,000,000; needs the `sqlite3`
//! command). Goal: at most 2x the baseline's time.

use std::process::Command;
use std::time::Instant;

mod common;

use store::RuleBook;

const WALLETS: u64 = 1_000;

#[tokio::main]
async fn main() {
    let rows: u64 = std::env::var("BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("earns.csv");
    let spec = ingest::generate::Spec {
        rows,
        wallets: WALLETS,
        wallet_prefix: "w-".into(),
        bad_share: 0.0,
        seed: 1,
    };
    ingest::generate::earn_csv(&spec, std::fs::File::create(&file).unwrap()).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();

    // Baseline: the sqlite3 shell's own CSV import into an equivalent table.
    let baseline_db = dir.path().join("baseline.db");
    let schema = "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
        CREATE TABLE earns (id TEXT NOT NULL, walletId TEXT, amount TEXT, date TEXT, \
        description TEXT, store TEXT); CREATE UNIQUE INDEX earns_id ON earns (id);";
    let made = Command::new("sqlite3")
        .arg(&baseline_db)
        .arg(schema)
        .output();
    let made = made.expect("the baseline needs the sqlite3 command (apt-get install sqlite3)");
    assert!(made.status.success());
    let started = Instant::now();
    let imported = Command::new("sqlite3")
        .arg(&baseline_db)
        .arg(format!(".import --csv --skip 1 {} earns", file.display()))
        .output()
        .unwrap();
    let baseline = started.elapsed().as_secs_f64();
    assert!(
        imported.status.success(),
        "{}",
        String::from_utf8_lossy(&imported.stderr)
    );

    // Ours: wallets to credit (`w-0`...), then the file received and processed.
    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(WALLETS as usize, true).await;
    let org = campaign.org_id.clone();
    let data = dir.path().join("data");
    let book = RuleBook::new(store.clone());
    let started = Instant::now();
    ingest::intake::receive(&store, &data, &org, &file, "earns.csv", "sftp", None)
        .await
        .unwrap();
    let batch = store.claim_batches(1, None).await.unwrap().remove(0);
    ingest::pipeline::process(&store, &book, &data, &batch, &|_| {})
        .await
        .unwrap();
    let ours = started.elapsed().as_secs_f64();
    let done = store.get_batch(&org, &batch.id).await.unwrap();
    assert_eq!(done.rows_loaded, Some(rows as i64), "every row loaded");

    println!(
        "{rows} rows ({:.0} MB) of canonical CSV on {:?}, {WALLETS} wallets",
        size as f64 / 1e6,
        store.backend()
    );
    println!("{:<46} {:>10} {:>12}", "", "seconds", "rows/s");
    let row = |name: &str, seconds: f64| {
        println!("{name:<46} {seconds:>10.2} {:>12.0}", rows as f64 / seconds);
    };
    row("baseline: sqlite3 .import (unique id index)", baseline);
    row("rewards: received -> credited, reports written", ours);
    println!(
        "ratio: {:.1}x the baseline's time (goal <= 2x)",
        ours / baseline
    );
}
