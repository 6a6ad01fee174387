//! A returns file beside the earn file whose earns it returns, end to end through the pipeline
//! (file received -> every row committed and the reports written), in the same run: the earns
//! first (`BENCH_ROWS` of them, default 1,000,000, over 5,000 wallets, as the ingest benchmark's
//! file), then a file of as many rows each returning one of those earns whole, in the order
//! they were earned (a nightly returns file names recent sales).
//!
//! `cargo bench --bench returns`. Goal: the returns file within 1.1x the earn file's time.

mod common;

use std::io::{BufRead, Write};
use std::time::Instant;

use store::RuleBook;

const WALLETS: usize = 5_000;

fn main() {
    // As the service does (`src/main.rs`), before any thread starts.
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    let rows: u64 = std::env::var("BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let earns = dir.path().join("earns.csv");
    let spec = generators::earns::Spec {
        rows,
        wallets: WALLETS as u64,
        wallet_prefix: "w-".into(),
        bad_share: 0.0,
        seed: 1,
        month: 10,
    };
    generators::earns::earn_csv(&spec, std::fs::File::create(&earns).unwrap()).unwrap();
    // Each earn's id is its row's first field.
    let returns = dir.path().join("returns.csv");
    {
        let read = std::io::BufReader::new(std::fs::File::open(&earns).unwrap());
        let mut out = std::io::BufWriter::new(std::fs::File::create(&returns).unwrap());
        writeln!(out, "id,amount,reverses,description").unwrap();
        for (n, line) in read.lines().skip(1).enumerate() {
            let line = line.unwrap();
            let id = line.split(',').next().unwrap();
            writeln!(out, "ret-{n},,{id},Returned").unwrap();
        }
    }

    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(WALLETS, true).await;
    let org = campaign.org();
    let data = dir.path().join("data");
    let book = RuleBook::new(store.clone());
    println!("backend: {:?}; {rows} rows a file", store.backend());
    let earn_seconds = common::load(&store, &book, &data, &org, &earns, rows).await;
    let return_seconds = common::load(&store, &book, &data, &org, &returns, rows).await;
    println!("{:<28} {:>10} {:>12}", "file", "seconds", "rows/s");
    for (name, seconds) in [
        ("earns", earn_seconds),
        ("returns of those earns", return_seconds),
    ] {
        println!("{name:<28} {seconds:>10.1} {:>12.0}", rows as f64 / seconds);
    }
    println!(
        "returns / earns: {:.2}x (goal <= 1.10x)",
        return_seconds / earn_seconds
    );
    let audit = Instant::now();
    assert!(
        store.audit().await.unwrap().is_empty(),
        "the ledger agrees with itself"
    );
    let wallet = store.get_wallet(&campaign, "w-0").await.unwrap();
    assert_eq!(wallet.balance, store::Tokens::ZERO, "every earn returned");
    println!("audit: {:.1} s", audit.elapsed().as_secs_f64());
}
