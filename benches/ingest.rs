//! One earn file end to end: file received -> every row committed and the reports written, beside
//! the database's own bulk load of the same file into a table with the same columns and a unique
//! index on the id, in the same run: `sqlite3 .import` on SQLite, `psql \copy` on PostgreSQL
//! (with `REWARDS_TEST_POSTGRES_URL` set). On SQLite it also times SQLite alone moving the
//! imported rows into the ledger's real tables: the floor for the ledger's shape.
//!
//! `cargo bench --bench ingest` (rows: `BENCH_ROWS`, default 1,000,000; needs the `sqlite3` or
//! `psql` command). Goal: at most 2x the bulk load's time.

use std::path::Path;
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

    let postgres = std::env::var(store::testing::POSTGRES_URL_VAR).ok();
    let baselines = match &postgres {
        None => sqlite_baselines(dir.path(), &file),
        Some(url) => postgres_baselines(url, &file),
    };

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
    // A spreadsheet of 10,000 rows (the most one may hold), end to end, on the fresh ledger and
    // again right after the big file.
    let workbook = |seed: u64| {
        let spec = ingest::generate::Spec {
            rows: 10_000,
            seed,
            ..spec.clone()
        };
        let path = dir.path().join(format!("earns-{seed}.xlsx"));
        ingest::generate::earn_xlsx(&spec, std::fs::File::create(&path).unwrap()).unwrap();
        path
    };
    let xlsx_fresh = load(&store, &book, &data, &org, &workbook(2), 10_000).await;
    let ours = load(&store, &book, &data, &org, &file, rows).await;
    let xlsx_after = load(&store, &book, &data, &org, &workbook(3), 10_000).await;

    println!(
        "{rows} rows ({:.0} MB) of canonical CSV on {:?}, {WALLETS} wallets",
        size as f64 / 1e6,
        store.backend()
    );
    println!("{:<46} {:>10} {:>12}", "", "seconds", "rows/s");
    let row = |name: &str, seconds: f64| {
        println!("{name:<46} {seconds:>10.2} {:>12.0}", rows as f64 / seconds);
    };
    for (name, seconds) in &baselines {
        row(name, *seconds);
    }
    row("rewards: received -> credited, reports written", ours);
    for (name, seconds) in &baselines {
        let name = name.split(':').next_back().unwrap_or(name).trim();
        println!("ratio: {:.1}x the time of {name}", ours / seconds);
    }
    println!("(goal: <= 2x the bulk load's time)");
    println!(
        "peak RSS of this process: {} MiB (goal for 5,000,000 rows: <= 256 MiB); now {} MiB \
         anonymous, {} MiB mapped from files",
        status_kib("VmHWM") / 1024,
        status_kib("RssAnon") / 1024,
        status_kib("RssFile") / 1024,
    );
    println!(
        "XLSX of 10,000 rows, received -> credited: {xlsx_fresh:.2} s on the fresh ledger, \
         {xlsx_after:.2} s right after the big file (goal < 1 s)"
    );
}

/// Seconds from receiving `file` to its batch completed with all `rows` loaded.
async fn load(
    store: &store::Store,
    book: &RuleBook,
    data: &Path,
    org: &str,
    file: &Path,
    rows: u64,
) -> f64 {
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    let started = Instant::now();
    ingest::intake::receive(store, data, org, file, &name, "sftp", None)
        .await
        .unwrap();
    let batch = store.claim_batches(1, None).await.unwrap().remove(0);
    ingest::pipeline::process(store, book, data, &batch, &|_| {})
        .await
        .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    let done = store.get_batch(org, &batch.id).await.unwrap();
    assert_eq!(done.rows_loaded, Some(rows as i64), "every row loaded");
    seconds
}

/// A memory figure of this process from `/proc/self/status` (`VmHWM`: the peak RSS), in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// The sqlite3 shell's own CSV import into an equivalent table with a unique index on the id;
/// then, as a floor for the ledger's shape, the same rows moved by SQLite alone into the real
/// `transactions` and `lots` tables (the migrations' schema, every index) in one transaction,
/// with keys as long as the ledger's (36-character organisation, campaign and wallet ids).
fn sqlite_baselines(dir: &Path, file: &Path) -> Vec<(&'static str, f64)> {
    let db = dir.join("baseline.db");
    let mut schema = String::from(
        "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; \
         CREATE TABLE earns (id TEXT NOT NULL, walletId TEXT, amount TEXT, date TEXT, \
         description TEXT, store TEXT); CREATE UNIQUE INDEX earns_id ON earns (id);",
    );
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/migrations/sqlite");
    let mut files: Vec<_> = std::fs::read_dir(migrations).unwrap().flatten().collect();
    files.sort_by_key(|f| f.file_name());
    for migration in files {
        schema.push_str(&std::fs::read_to_string(migration.path()).unwrap());
    }
    sqlite3(&db, &schema);
    let started = Instant::now();
    sqlite3(
        &db,
        &format!(".import --csv --skip 1 {} earns", file.display()),
    );
    let import = started.elapsed().as_secs_f64();
    let started = Instant::now();
    sqlite3(
        &db,
        "PRAGMA cache_size = -131072; BEGIN; \
         INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, external_id, \
           source_amount, currency, description, meta, date, trace, created_at, batch_id) \
         SELECT printf('%08x-0000-7000-8000-%012d', rowid / 1000, rowid), \
           '0190a1b2-0000-7000-8000-00000000000a', '0190a1b2-0000-7000-8000-00000000000c', \
           printf('0190a1b2-0000-7000-8000-%012d', CAST(substr(walletId, 3) AS INTEGER)), 'EARN', \
           CAST(amount AS INTEGER) * 1000000, id, amount, 'PTS', description, \
           json_object('store', store), date, 'base:+1', '2026-11-22T10:00:00+00:00', 'batch' \
         FROM earns; \
         INSERT INTO lots (id, wallet_id, transaction_id, amount, remaining, earned_at) \
         SELECT 'l' || id, wallet_id, id, amount, amount, date FROM transactions; COMMIT;",
    );
    let ledger = started.elapsed().as_secs_f64();
    vec![
        ("baseline: sqlite3 .import (unique id index)", import),
        ("floor: SQLite moving them into the ledger", ledger),
    ]
}

fn sqlite3(db: &Path, sql: &str) {
    let ran = Command::new("sqlite3").arg(db).arg(sql).output();
    let ran = ran.expect("the baseline needs the sqlite3 command (apt-get install sqlite3)");
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
}

/// `psql`'s `\copy` of the file into an equivalent table with a unique index on the id, in a
/// schema of its own on the benchmark's server; then, as on SQLite, the floor: PostgreSQL alone
/// moving those rows into the ledger's real tables (foreign keys not checked).
fn postgres_baselines(url: &str, file: &Path) -> Vec<(&'static str, f64)> {
    let schema = format!("bench_{}", std::process::id());
    let psql = |sql: &str| {
        let ran = Command::new("psql")
            .args([url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
            .env("PGOPTIONS", format!("-c search_path={schema}"))
            .output()
            .expect("the baseline needs the psql command");
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
    };
    psql(&format!("CREATE SCHEMA {schema}"));
    let migrations = Path::new(env!("CARGO_MANIFEST_DIR")).join("store/migrations/postgres");
    let mut files: Vec<_> = std::fs::read_dir(migrations).unwrap().flatten().collect();
    files.sort_by_key(|f| f.file_name());
    for migration in files {
        psql(&std::fs::read_to_string(migration.path()).unwrap());
    }
    psql(
        "CREATE TABLE earns (id TEXT NOT NULL, \"walletId\" TEXT, amount TEXT, date TEXT, \
         description TEXT, store TEXT); CREATE UNIQUE INDEX ON earns (id);",
    );
    let started = Instant::now();
    psql(&format!(
        "\\copy earns FROM '{}' WITH (FORMAT csv, HEADER true)",
        file.display()
    ));
    let copy = started.elapsed().as_secs_f64();
    let started = Instant::now();
    psql(
        "BEGIN; SET LOCAL session_replication_role = replica; \
         INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, external_id, \
           source_amount, currency, description, meta, date, trace, created_at, batch_id) \
         SELECT lpad(to_hex(n), 8, '0') || '-0000-7000-8000-' || lpad(n::text, 12, '0'), \
           '0190a1b2-0000-7000-8000-00000000000a', '0190a1b2-0000-7000-8000-00000000000c', \
           '0190a1b2-0000-7000-8000-' || lpad(substr(\"walletId\", 3), 12, '0'), 'EARN', \
           (amount::numeric * 1000000)::bigint, id, amount, \
           'PTS', description, jsonb_build_object('store', store), date::timestamptz, 'base:+1', \
           now(), 'batch' FROM (SELECT row_number() OVER () AS n, * FROM earns) e; \
         INSERT INTO lots (id, wallet_id, transaction_id, amount, remaining, earned_at) \
         SELECT 'l' || id, wallet_id, id, amount, amount, date FROM transactions; COMMIT;",
    );
    let ledger = started.elapsed().as_secs_f64();
    psql(&format!("DROP SCHEMA {schema} CASCADE"));
    vec![
        ("baseline: psql \\copy (unique id index)", copy),
        ("floor: PostgreSQL moving them into the ledger", ledger),
    ]
}
