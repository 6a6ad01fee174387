//! One earn file end to end: file received -> every row committed and the reports written, beside
//! the database's own bulk load of the same file into a table with the same columns, a unique
//! index on the id and an index on (walletId, date), in the same run: `sqlite3 .import` on
//! SQLite, `psql \copy` on PostgreSQL (with `REWARDS_TEST_POSTGRES_URL` set). It also times the
//! database alone moving the imported rows into the ledger's real tables: the floor for the
//! ledger's shape. The file is as a client's system would send it: random UUID ids, 5,000
//! wallets, dated in one month.
//!
//! The same rows as typed Parquet go through the pipeline on a fresh ledger beside the CSV run,
//! and each file's peak memory is measured in a process of its own. Then a second ledger is
//! given a history of `BENCH_LEDGER_ROWS` earns (default 5,000,000), loaded through the pipeline
//! as million-row files dated in earlier months, and the same file and a 10,000-row workbook are
//! timed on it; the bulk load's table is given the same history and the file imported into it
//! again, for the database's own growth beside the ledger's. That ledger is exported to Parquet
//! and to CSV, beside the database's own CSV export of the same query (`sqlite3 -csv`,
//! `psql \copy ... TO`). Before each timed step the database's deferred writes are done (a
//! checkpoint) and the kernel's dirty pages written back, so that no step pays for the one
//! before it.
//!
//! The fresh ledger's load is also printed stage by stage (`ingest::batch::stages`): where the
//! file's time went, and how much of it the writer was busy.
//!
//! `cargo bench --bench ingest` (rows: `BENCH_ROWS`, default 1,000,000; needs the `sqlite3` or
//! `psql` command). Goals: a load at most 4x the bulk load's time, and at most 1.3x its fresh
//! time on the ledger with a history; a workbook under 1 s on it; Parquet no slower than CSV
//! and no more memory; exports at least 500,000 rows/s to Parquet on SQLite.

use std::path::Path;
use std::process::Command;
use std::time::Instant;

mod common;

use store::{ExportFilter, ExportFormat, RuleBook, Store};

const WALLETS: u64 = 5_000;

/// Set on a child process: load only this file into a fresh ledger and print the peak memory.
const PEAK_OF_LOAD: &str = "BENCH_PEAK_OF_LOAD";
/// Set on a child process: `<url> <org> <file>`: export the organisation's transactions from
/// the database at `url` to `file` and print the peak memory.
const PEAK_OF_EXPORT: &str = "BENCH_PEAK_OF_EXPORT";

fn main() {
    // As the service does (`src/main.rs`), before any thread starts.
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    if let Ok(file) = std::env::var(PEAK_OF_LOAD) {
        return peak_of_load(Path::new(&file)).await;
    }
    if let Ok(args) = std::env::var(PEAK_OF_EXPORT) {
        return peak_of_export(&args).await;
    }
    let rows: u64 = common::number("BENCH_ROWS", 1_000_000);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("earns.csv");
    let spec = spec(rows);
    generators::earns::earn_csv(&spec, std::fs::File::create(&file).unwrap()).unwrap();
    let size = std::fs::metadata(&file).unwrap().len();
    let parquet = dir.path().join("earns.parquet");
    generators::earns::earn_parquet(&spec, &parquet).unwrap();
    let parquet_size = std::fs::metadata(&parquet).unwrap().len();
    // Receiving a file moves it into the spool: the processes that measure memory get copies.
    let (csv_copy, parquet_copy) = (dir.path().join("peak.csv"), dir.path().join("peak.parquet"));
    let history_copy = dir.path().join("on-history.csv");
    let bulk_copy = dir.path().join("bulk-on-history.csv");
    std::fs::copy(&file, &csv_copy).unwrap();
    std::fs::copy(&file, &history_copy).unwrap();
    std::fs::copy(&file, &bulk_copy).unwrap();
    std::fs::copy(&parquet, &parquet_copy).unwrap();

    let postgres = std::env::var(store::testing::POSTGRES_URL_VAR).ok();
    let baselines = match &postgres {
        None => sqlite_baselines(dir.path(), &file),
        Some(url) => postgres_baselines(url, dir.path(), &file),
    };

    // Ours: wallets to credit (`w-0`...), then the file received and processed.
    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(WALLETS as usize, true).await;
    let org = campaign.org();
    let data = dir.path().join("data");
    let book = RuleBook::new(store.programme().clone());
    // A spreadsheet of 10,000 rows (the most one may hold), end to end, on the fresh ledger and
    // again right after the big file.
    let workbook = |seed: u64| {
        let spec = generators::earns::Spec {
            rows: 10_000,
            seed,
            ..spec.clone()
        };
        let path = dir.path().join(format!("earns-{seed}.xlsx"));
        generators::earns::earn_xlsx(&spec, std::fs::File::create(&path).unwrap()).unwrap();
        path
    };
    let xlsx_fresh = common::load(&store, &book, &data, &org, &workbook(2), 10_000).await;
    let (ours, stages) = common::load_staged(&store, &book, &data, &org, &file, rows).await;
    // The same rows as Parquet, on a fresh ledger of their own.
    let parquet_seconds = {
        let seed = common::seed(WALLETS as usize, true).await;
        let book = RuleBook::new(seed.store.programme().clone());
        let org = &seed.campaign.org();
        common::load(&seed.store, &book, &data, org, &parquet, rows).await
    };
    let (csv_peak, _) = peak_in_child(PEAK_OF_LOAD, &csv_copy.display().to_string());
    let (parquet_peak, _) = peak_in_child(PEAK_OF_LOAD, &parquet_copy.display().to_string());

    // A ledger with a history: `BENCH_LEDGER_ROWS` earns (default 5,000,000) loaded through the
    // pipeline as files of a million rows dated month by month before the measured file, as
    // nightly files would leave it; then the measured file and a workbook again on it.
    drop(store);
    let common::Seed {
        _db,
        store,
        campaign,
        ..
    } = common::seed(WALLETS as usize, true).await;
    let org = campaign.org();
    let book = RuleBook::new(store.programme().clone());
    let history = common::number("BENCH_LEDGER_ROWS", 5_000_000);
    // The database's own bulk load is given the same history (untimed), then the same file:
    // what growing by the same rows costs the database itself.
    let bulk = BulkTable::new(postgres.as_deref(), dir.path(), "growth");
    let mut history_files = Vec::new();
    for (k, start) in (0..history).step_by(1_000_000).enumerate() {
        let spec = generators::earns::Spec {
            rows: (history - start).min(1_000_000),
            seed: 100 + k as u64,
            month: 1 + (k as u32 % 9),
            ..spec.clone()
        };
        let path = dir.path().join(format!("history-{k}.csv"));
        generators::earns::earn_csv(&spec, std::fs::File::create(&path).unwrap()).unwrap();
        bulk.import(&path);
        let seconds = common::load(&store, &book, &data, &org, &path, spec.rows).await;
        history_files.push((start + spec.rows, spec.rows as f64 / seconds));
    }
    let bulk_on_history = bulk.import(&bulk_copy);
    drop(bulk);
    let on_history = common::load(&store, &book, &data, &org, &history_copy, rows).await;
    let xlsx_after = common::load(&store, &book, &data, &org, &workbook(3), 10_000).await;
    let started = Instant::now();
    assert!(
        store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees"
    );
    let audit_seconds = started.elapsed().as_secs_f64();

    println!(
        "{rows} rows ({:.0} MB) of canonical CSV on {:?}, random UUID ids, {WALLETS} wallets",
        size as f64 / 1e6,
        store.backend()
    );
    println!("{:<52} {:>10} {:>12}", "", "seconds", "rows/s");
    let row = |name: &str, seconds: f64| {
        println!("{name:<52} {seconds:>10.2} {:>12.0}", rows as f64 / seconds);
    };
    for (name, seconds) in &baselines {
        row(name, *seconds);
    }
    row("rewards: received -> credited, reports written", ours);
    row("the same rows as Parquet, fresh ledger", parquet_seconds);
    row(
        &format!("the same CSV on a ledger of {history} earns"),
        on_history,
    );
    row(
        &format!("baseline again, into its table of {history} rows"),
        bulk_on_history,
    );
    for (name, seconds) in &baselines {
        let name = name.split(':').next_back().unwrap_or(name).trim();
        println!("ratio: {:.1}x the time of {name}", ours / seconds);
    }
    println!(
        "ratio: {:.2}x the fresh ledger's time on the ledger of {history} earns (goal: <= 1.3x); \
         the bulk load's own: {:.2}x its time into the empty table",
        on_history / ours,
        bulk_on_history / baselines[0].1
    );
    println!("(goal: <= 4x the bulk load's time)");
    print_stages(ours, &stages);
    let growth: Vec<String> = history_files
        .iter()
        .map(|(held, rate)| format!("{rate:.0} to {}M", held / 1_000_000))
        .collect();
    println!(
        "history files, rows/s (ledger size after): {}",
        growth.join(", ")
    );
    println!(
        "Parquet ({:.0} MB): {:.2}x the CSV run's time (goal: <= 1x); peak RSS of a process \
         loading only it: CSV {csv_peak} MiB, Parquet {parquet_peak} MiB (goal: no higher; \
         5,000,000 rows <= 256 MiB)",
        parquet_size as f64 / 1e6,
        parquet_seconds / ours,
    );
    println!(
        "XLSX of 10,000 rows, received -> credited: {xlsx_fresh:.2} s on the fresh ledger, \
         {xlsx_after:.2} s on the ledger of {history} earns (goal < 1 s)"
    );

    let held = store
        .count_export(&org, &ExportFilter::all())
        .await
        .unwrap();
    println!(
        "rewards audit of those {held} transactions: {audit_seconds:.2} s (goal: 2,000,000 in \
         < 10 s)"
    );
    // The kernel writing gigabytes of the ledger back would compete with the export.
    common::settle(&store).await;
    let filter = ExportFilter::all();
    let out = |name: &str| dir.path().join(name);
    let timed = |format: ExportFormat, path: std::path::PathBuf| {
        let (store, org, filter) = (store.clone(), org.clone(), filter.clone());
        async move {
            let started = Instant::now();
            let rows = exports::export(&store, &org, &filter, &path, format, |_| {})
                .await
                .unwrap();
            assert_eq!(rows, held);
            (
                started.elapsed().as_secs_f64(),
                std::fs::metadata(&path).unwrap().len(),
            )
        }
    };
    let (to_parquet, parquet_bytes) = timed(ExportFormat::Parquet, out("ledger.parquet")).await;
    let (to_csv, csv_bytes) = timed(ExportFormat::Csv, out("ledger.csv")).await;
    let baseline = database_export(&_db.url, org.id(), &out("baseline.csv"));
    let (export_peak, fresh) = peak_in_child(
        PEAK_OF_EXPORT,
        &format!("{} {org} {}", _db.url, out("export-peak.parquet").display()),
    );
    println!("export of {held} transactions (all columns, wallet and member joined)");
    println!("{:<46} {:>10} {:>12} {:>8}", "", "seconds", "rows/s", "MB");
    let export_row = |name: &str, seconds: f64, bytes: u64| {
        println!(
            "{name:<46} {seconds:>10.2} {:>12.0} {:>8.0}",
            held as f64 / seconds,
            bytes as f64 / 1e6
        );
    };
    export_row(
        "baseline: the database's own CSV export",
        baseline.0,
        baseline.1,
    );
    export_row(
        "rewards export -> Parquet (zstd)",
        to_parquet,
        parquet_bytes,
    );
    export_row("rewards export -> CSV", to_csv, csv_bytes);
    export_row(
        "Parquet again, in a process of its own",
        fresh,
        parquet_bytes,
    );
    println!(
        "peak RSS of that process: {export_peak} MiB (goal: >= 500,000 rows/s to Parquet on \
         SQLite; `rewards export` runs in a process of its own)"
    );
}

/// Where the fresh ledger's load of the file went, stage by stage (`Stages`): the stages on the
/// pipeline's path, what is left of the file's time (received into the spool and claimed), and
/// the writer's own time, which overlaps them.
fn print_stages(seconds: f64, stages: &ingest::batch::stages::Stages) {
    println!("where the fresh ledger's load went (seconds, share of its {seconds:.2} s):");
    let mut on_path = 0.0;
    for (name, time) in stages.each() {
        let time = time.as_secs_f64();
        let note = if name == "writing" {
            " (the writer, overlapping the stages above)"
        } else {
            on_path += time;
            ""
        };
        println!(
            "  {name:<10} {time:>8.2} {:>6.1}%{note}",
            time / seconds * 100.0
        );
    }
    let rest = seconds - on_path;
    println!(
        "  {:<10} {rest:>8.2} {:>6.1}% (the rest: received into the spool, claimed, opened)",
        "receive",
        rest / seconds * 100.0
    );
}

fn spec(rows: u64) -> generators::earns::Spec {
    generators::earns::Spec {
        rows,
        wallets: WALLETS,
        wallet_prefix: "w-".into(),
        bad_share: 0.0,
        seed: 1,
        month: 10,
    }
}

/// Runs this benchmark again as a child with `var` set to `value`; the peak memory it prints
/// (MiB), and the seconds it prints after it, if any.
fn peak_in_child(var: &str, value: &str) -> (u64, f64) {
    let ran = Command::new(std::env::current_exe().unwrap())
        .env(var, value)
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let out = String::from_utf8_lossy(&ran.stdout);
    let mut figures = out.split_whitespace();
    let peak = figures.next().and_then(|f| f.parse().ok());
    let seconds = figures.next().and_then(|f| f.parse().ok()).unwrap_or(0.0);
    (peak.unwrap_or_else(|| panic!("{out}")), seconds)
}

/// In a child: `file` loaded into a fresh ledger; prints the peak RSS in MiB.
async fn peak_of_load(file: &Path) {
    let seed = common::seed(WALLETS as usize, true).await;
    let book = RuleBook::new(seed.store.programme().clone());
    let data = file.with_file_name(format!("data-{}", std::process::id()));
    let name = file.file_name().unwrap().to_string_lossy().to_string();
    ingest::intake::receive(
        &seed.store,
        &data,
        &seed.campaign.org(),
        file,
        &name,
        "sftp",
        None,
    )
    .await
    .unwrap();
    let batch = seed
        .store
        .batches()
        .claim_batches(1, None)
        .await
        .unwrap()
        .remove(0);
    ingest::batch::pipeline::process(&seed.store, &book, &data, &batch, &|_| {})
        .await
        .unwrap();
    let _ = std::fs::remove_dir_all(&data);
    println!("{}", common::status_kib("VmHWM") / 1024);
}

/// In a child: the export `args` (`<url> <org> <file>`) names; prints the peak RSS in MiB.
async fn peak_of_export(args: &str) {
    let mut parts = args.splitn(3, ' ');
    let (url, org, file) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let store = Store::connect(url, 4).await.unwrap();
    let org = store.tenancy().get_org(org).await.unwrap().scope();
    let started = Instant::now();
    exports::export(
        &store,
        &org,
        &ExportFilter::all(),
        Path::new(file),
        ExportFormat::Parquet,
        |_| {},
    )
    .await
    .unwrap();
    let seconds = started.elapsed().as_secs_f64();
    println!("{} {seconds}", common::status_kib("VmHWM") / 1024);
}

/// The database's own CSV export of the export's query to `file`: (seconds, bytes).
fn database_export(url: &str, org: &str, file: &Path) -> (f64, u64) {
    let select = format!(
        "SELECT t.id, t.campaign_id, t.wallet_id, w.external_id, w.owner_id, t.kind, t.amount, \
         t.currency, t.date, t.external_id, t.source_amount, t.description, t.comment, t.meta, \
         t.trace, t.rule_version, t.batch_id, t.created_at FROM transactions t \
         JOIN wallets w ON w.id = t.wallet_id WHERE t.org_id = '{org}' \
         ORDER BY t.campaign_id, t.date"
    );
    let started = Instant::now();
    let ran = match url.strip_prefix("sqlite:") {
        Some(db) => Command::new("sqlite3")
            .args(["-csv", "-header", db, &select])
            .stdout(std::fs::File::create(file).unwrap())
            .status(),
        None => Command::new("psql")
            .args([url, "-q", "-c"])
            .arg(format!(
                "\\copy ({select}) TO '{}' WITH (FORMAT csv, HEADER true)",
                file.display()
            ))
            .status(),
    };
    assert!(ran.unwrap().success());
    (
        started.elapsed().as_secs_f64(),
        std::fs::metadata(file).unwrap().len(),
    )
}

/// The database's own bulk load: a table with the file's columns, a unique index on the id and
/// an index on (walletId, date), on SQLite (a database file of its own) or PostgreSQL (a schema
/// of its own on the benchmark's server), into which files are imported as the database's
/// tools do it (`sqlite3 .import`, `psql \copy`), each in one transaction.
enum BulkTable {
    Sqlite(std::path::PathBuf),
    Postgres { url: String, schema: String },
}

impl BulkTable {
    fn new(postgres: Option<&str>, dir: &Path, name: &str) -> Self {
        let (table, setup) = match postgres {
            None => (
                BulkTable::Sqlite(dir.join(format!("{name}.db"))),
                "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;".to_string(),
            ),
            Some(url) => {
                let schema = format!("{name}_{}", std::process::id());
                let setup = format!("CREATE SCHEMA {schema}");
                let url = url.to_string();
                (BulkTable::Postgres { url, schema }, setup)
            }
        };
        table.sql(&setup);
        table.sql(
            "CREATE TABLE earns (id TEXT NOT NULL, \"walletId\" TEXT, amount TEXT, date TEXT, \
             description TEXT, store TEXT); CREATE UNIQUE INDEX earns_id ON earns (id); \
             CREATE INDEX earns_wallet_date ON earns (\"walletId\", date);",
        );
        table
    }

    /// Runs SQL (or a client's dot or backslash command) in the table's database or schema.
    fn sql(&self, sql: &str) {
        let ran = match self {
            // On its standard input: a script starting with `--` (a comment) would be an option.
            BulkTable::Sqlite(db) => Command::new("sqlite3")
                .arg(db)
                .stdin(std::process::Stdio::piped())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .and_then(|mut child| {
                    let mut stdin = child.stdin.take().expect("piped");
                    std::io::Write::write_all(&mut stdin, sql.as_bytes())?;
                    drop(stdin);
                    child.wait_with_output()
                }),
            BulkTable::Postgres { url, schema } => Command::new("psql")
                .args([url, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql])
                .env("PGOPTIONS", format!("-c search_path={schema}"))
                .output(),
        };
        let ran = ran.expect("the baseline needs the sqlite3 command or, for PostgreSQL, psql");
        assert!(
            ran.status.success(),
            "{}",
            String::from_utf8_lossy(&ran.stderr)
        );
    }

    /// Imports a CSV file with a header row; returns the seconds it took.
    fn import(&self, file: &Path) -> f64 {
        self.settle();
        let started = Instant::now();
        self.sql(&match self {
            BulkTable::Sqlite(_) => format!(".import --csv --skip 1 {} earns", file.display()),
            BulkTable::Postgres { .. } => format!(
                "\\copy earns FROM '{}' WITH (FORMAT csv, HEADER true)",
                file.display()
            ),
        });
        started.elapsed().as_secs_f64()
    }

    /// Before a timed step (see `written_out`); on PostgreSQL a checkpoint first: the server
    /// writes the buffers earlier steps dirtied at its next checkpoint, which would otherwise
    /// fall in whichever step comes next (the server is shared: the ledger's loads too).
    fn settle(&self) {
        if let BulkTable::Postgres { .. } = self {
            self.sql("CHECKPOINT");
        }
        common::written_out();
    }
}

impl Drop for BulkTable {
    fn drop(&mut self) {
        if let BulkTable::Postgres { schema, .. } = &*self {
            self.sql(&format!("DROP SCHEMA {schema} CASCADE"));
        }
    }
}

/// The texts of the service's migrations for a backend (`sqlite`, `postgres`), in order.
fn migrations(backend: &str) -> Vec<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("store/seam/migrations")
        .join(backend);
    let mut files: Vec<_> = std::fs::read_dir(dir).unwrap().flatten().collect();
    files.sort_by_key(std::fs::DirEntry::file_name);
    files
        .iter()
        .map(|f| std::fs::read_to_string(f.path()).unwrap())
        .collect()
}

/// The sqlite3 shell's own CSV import (`BulkTable`);
/// then, as a floor for the ledger's shape, the same rows moved by SQLite alone into the real
/// `transactions` table (the migrations' schema, every index) in one transaction,
/// with keys as long as the ledger's (36-character organisation, campaign and wallet ids; a
/// random 16-byte idempotency key, as random as the SHA-256 the service computes).
fn sqlite_baselines(dir: &Path, file: &Path) -> Vec<(&'static str, f64)> {
    let table = BulkTable::new(None, dir, "baseline");
    let import = table.import(file);
    table.sql(&migrations("sqlite").concat());
    table.settle();
    let started = Instant::now();
    table.sql(
        "PRAGMA cache_size = -131072; BEGIN; \
         INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, external_id, \
           source_amount, currency, description, meta, date, trace, created_at, batch_id, \
           idem_key) \
         SELECT printf('%08x-0000-7000-8000-%012d', rowid / 1000, rowid), \
           '0190a1b2-0000-7000-8000-00000000000a', '0190a1b2-0000-7000-8000-00000000000c', \
           printf('0190a1b2-0000-7000-8000-%012d', CAST(substr(walletId, 3) AS INTEGER)), 'EARN', \
           CAST(amount AS INTEGER) * 1000000, id, amount, 'PTS', description, \
           json_object('store', store), date, 'base:+1', '2026-11-22T10:00:00+00:00', 'batch', \
           randomblob(16) \
         FROM earns; COMMIT;",
    );
    let ledger = started.elapsed().as_secs_f64();
    vec![
        (
            "baseline: sqlite3 .import (id, (wallet, date) indexes)",
            import,
        ),
        ("floor: SQLite moving them into the ledger", ledger),
    ]
}

/// `psql`'s `\copy` of the file (`BulkTable`); then, as on SQLite, the floor: PostgreSQL alone
/// moving those rows into the ledger's real tables (foreign keys not checked).
fn postgres_baselines(url: &str, dir: &Path, file: &Path) -> Vec<(&'static str, f64)> {
    let table = BulkTable::new(Some(url), dir, "bench");
    for migration in migrations("postgres") {
        table.sql(&migration);
    }
    let copy = table.import(file);
    table.settle();
    let started = Instant::now();
    table.sql(
        "BEGIN; SET LOCAL session_replication_role = replica; \
         INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, external_id, \
           source_amount, currency, description, meta, date, trace, created_at, batch_id, \
           idem_key) \
         SELECT lpad(to_hex(n), 8, '0') || '-0000-7000-8000-' || lpad(n::text, 12, '0'), \
           '0190a1b2-0000-7000-8000-00000000000a', '0190a1b2-0000-7000-8000-00000000000c', \
           '0190a1b2-0000-7000-8000-' || lpad(substr(\"walletId\", 3), 12, '0'), 'EARN', \
           (amount::numeric * 1000000)::bigint, id, amount, \
           'PTS', description, jsonb_build_object('store', store), date::timestamptz, 'base:+1', \
           now(), 'batch', substring(sha256(convert_to('0190a1b2-0000-7000-8000-00000000000a:EARN:' \
           || id, 'UTF8')) FROM 1 FOR 16) FROM (SELECT row_number() OVER () AS n, * FROM earns) e; \
           COMMIT;",
    );
    let ledger = started.elapsed().as_secs_f64();
    vec![
        ("baseline: psql \\copy (id, (wallet, date) indexes)", copy),
        ("floor: PostgreSQL moving them into the ledger", ledger),
    ]
}
