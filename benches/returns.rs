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
    let rows: u64 = common::number("BENCH_ROWS", 1_000_000);
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
    let book = RuleBook::new(store.programme().clone());
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
        store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees with itself"
    );
    let wallet = store.ledger().get_wallet(&campaign, "w-0").await.unwrap();
    assert_eq!(wallet.balance, store::Tokens::ZERO, "every earn returned");
    println!("audit: {:.1} s", audit.elapsed().as_secs_f64());
    if let Some(file) = _db.url.strip_prefix("sqlite:") {
        let seconds = floor(std::path::Path::new(file), dir.path(), rows);
        println!(
            "floor: SQLite alone, the least a return writes (5 statements a row): {seconds:.1} s \
             = {:.2}x the earn file",
            seconds / earn_seconds
        );
    }
}

/// What SQLite alone takes for the least any return does, on a copy of the same ledger, row by
/// row in 5,000-row transactions as the pipeline commits: find the earn by its key, check the
/// return's key is unused, write the REVERSAL, take the tokens off the wallet, record what it
/// took from the earn's lot. (The store does more: the lot's own row, the wallet's position
/// and debt, the tier, the earn's earlier reversals.)
fn floor(database: &std::path::Path, dir: &std::path::Path, rows: u64) -> f64 {
    use rusqlite::params;
    let copy = dir.join("floor.db");
    let live = rusqlite::Connection::open(database).unwrap();
    live.execute("VACUUM INTO ?1", params![copy.to_str().unwrap()])
        .unwrap();
    let db = rusqlite::Connection::open(&copy).unwrap();
    db.pragma_update(None, "journal_mode", "WAL").unwrap();
    db.pragma_update(None, "synchronous", "NORMAL").unwrap();
    db.pragma_update(None, "cache_size", -65_536i64).unwrap();
    // The keys, as the store computes them from the file's ids (not timed).
    let mut read = db
        .prepare("SELECT idem_key FROM transactions WHERE kind = 'EARN' ORDER BY date, id")
        .unwrap();
    let keys: Vec<Vec<u8>> = read
        .query_map([], |row| row.get(0))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    drop(read);
    assert_eq!(keys.len() as u64, rows);
    let started = Instant::now();
    for (n, chunk) in keys.chunks(5_000).enumerate() {
        let tx = db.unchecked_transaction().unwrap();
        let mut earn = tx
            .prepare_cached(
                "SELECT id, org_id, campaign_id, wallet_id, amount, currency FROM transactions \
                 WHERE idem_key = ?1",
            )
            .unwrap();
        let mut used = tx
            .prepare_cached("SELECT 1 FROM transactions WHERE idem_key = ?1")
            .unwrap();
        let mut insert = tx
            .prepare_cached(
                "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
                 external_id, currency, date, created_at, idem_key, corrects) \
                 VALUES (?1, ?2, ?3, ?4, 'REVERSAL', ?5, ?6, ?7, ?8, ?8, ?9, ?10)",
            )
            .unwrap();
        let mut debit = tx
            .prepare_cached(
                "UPDATE wallets SET balance = balance - ?2, earned = earned - ?2 WHERE id = ?1",
            )
            .unwrap();
        let mut lot = tx
            .prepare_cached(
                "INSERT INTO spends (transaction_id, earn_id, amount) VALUES (?1, ?2, ?3)",
            )
            .unwrap();
        for (i, key) in chunk.iter().enumerate() {
            let row = (n * 5_000 + i).to_string();
            let (id, org, campaign, wallet, amount, currency): (
                String,
                String,
                String,
                String,
                i64,
                String,
            ) = earn
                .query_row(params![key], |r| {
                    Ok((
                        r.get(0)?,
                        r.get(1)?,
                        r.get(2)?,
                        r.get(3)?,
                        r.get(4)?,
                        r.get(5)?,
                    ))
                })
                .unwrap();
            let mut own = key.clone();
            own[0] ^= 0x5a;
            assert!(!used.exists(params![own]).unwrap());
            let reversal = format!("floor-{row}");
            let now = "2026-11-28T00:00:00Z";
            insert
                .execute(params![
                    reversal, org, campaign, wallet, amount, reversal, currency, now, own, id
                ])
                .unwrap();
            debit.execute(params![wallet, amount]).unwrap();
            if amount > 0 {
                lot.execute(params![reversal, id, amount]).unwrap();
            }
        }
        drop((earn, used, insert, debit, lot));
        tx.commit().unwrap();
    }
    started.elapsed().as_secs_f64()
}
