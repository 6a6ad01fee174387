//! The writer and checkpointer threads behind `Direct`.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::sql::execute;
use crate::StoreError;
use crate::error::unpanicked;

/// What the writer thread is asked to do.
pub(super) enum Job {
    Write(Write),
    /// Runs on the writer's connection outside any transaction, once the writes queued before
    /// it have committed: while it runs, no write can (closing, a statement a transaction
    /// refuses).
    Between(Between),
    /// Runs like `Between`, but lets an open bulk transaction end by itself first (the
    /// checkpointer's last pass: ending a batch file's transaction early would commit its
    /// chunks one by one, the cost bulk writes avoid).
    AfterBulk(Between),
}

/// Work for the writer's connection between its transactions.
pub(super) type Between = Box<dyn FnOnce(&Connection) + Send>;

/// A queued write.
pub(super) struct Write {
    /// Runs the write (in its own savepoint unless told it needs none, the `bool`) and returns
    /// what to tell its caller once the transaction's fate is known, and whether it failed.
    pub(super) run: Run,
    /// A bulk write (a chunk of a batch file) runs without a savepoint, and its transaction is
    /// left open for the next bulk write (see `write_queued`).
    pub(super) bulk: bool,
}
/// Runs a write: given whether it needs no savepoint, returns its `Finish` and whether it failed.
pub(super) type Run = Box<dyn FnOnce(&Connection, bool) -> (Finish, bool) + Send>;
/// Tells a write's caller how it ended, given whether its transaction committed.
pub(super) type Finish = Box<dyn FnOnce(Result<(), &rusqlite::Error>) + Send>;

/// How long a transaction holding only bulk writes waits for the next one before it commits.
const BULK_IDLE: Duration = Duration::from_millis(200);
/// How long a transaction holding only bulk writes stays open at most: its rows are seen by
/// readers only once it commits.
const BULK_OPEN_AT_MOST: Duration = Duration::from_secs(5);

/// A write transaction the writer thread has begun and not yet ended.
struct Open {
    since: Instant,
    finishes: Vec<Finish>,
    /// A write failed outside a savepoint: the whole transaction is to be rolled back.
    undo: bool,
}

/// The writer thread: takes whatever writes have queued, runs them in one transaction and
/// answers each, until the store is dropped.
///
/// A transaction ends (commits) once its writes have run, except when they were all bulk
/// writes: then it stays open for the next bulk write, and commits when a write of another kind
/// joins it, when none has come for `BULK_IDLE`, or after `BULK_OPEN_AT_MOST`. Each commit
/// rewrites every index page the transaction touched, and a batch file's rows land all over
/// the ledger's indexes: committing every few seconds instead of after every chunk more than
/// halves the time a large file takes. A bulk write's caller has its answer at once and is told
/// of the commit separately; if a bulk write fails, its whole transaction is undone.
pub(super) fn write_queued(connection: Connection, queued: mpsc::Receiver<Job>) {
    let mut cache = WriterCache::new(&connection);
    let mut open: Option<Open> = None;
    // `AfterBulk` work waiting for the open bulk transaction to end.
    let mut after_bulk: Vec<Between> = Vec::new();
    loop {
        if open.is_none() {
            run_between(&connection, after_bulk.drain(..));
        }
        let first = match &open {
            None => match queued.recv() {
                Ok(job) => job,
                Err(mpsc::RecvError) => return,
            },
            Some(bulk) => {
                let left = BULK_OPEN_AT_MOST.saturating_sub(bulk.since.elapsed());
                match queued.recv_timeout(BULK_IDLE.min(left)) {
                    Ok(job) => job,
                    Err(stopped) => {
                        if let Some(bulk) = open.take() {
                            end(&connection, bulk);
                        }
                        if stopped == mpsc::RecvTimeoutError::Disconnected {
                            return;
                        }
                        continue;
                    }
                }
            }
        };
        let mut jobs = Vec::new();
        let mut between = Vec::new();
        for job in std::iter::once(first).chain(queued.try_iter()) {
            match job {
                Job::Write(write) => jobs.push(write),
                Job::Between(run) => between.push(run),
                Job::AfterBulk(run) => after_bulk.push(run),
            }
        }
        if !jobs.is_empty() {
            if open.is_none() {
                cache.fit(&connection, jobs.iter().any(|job| job.bulk), Instant::now());
            }
            open = run_writes(&connection, open, jobs);
        }
        if !between.is_empty() {
            if let Some(transaction) = open.take() {
                end(&connection, transaction);
            }
            run_between(&connection, between.into_iter());
        }
    }
}

/// The writer's page cache, sized for what it writes. A batch file's chunks touch index pages
/// all over the file: a large cache keeps them in memory rather than re-read, and 24 MiB keeps
/// a five-million-row load within 128 MiB of memory (64 MiB is faster on a ledger that already
/// holds millions of rows, by up to a sixth; `docs/performance.md`). A request's write
/// touches few, and a large cache costs it at commit: a b-tree split that reorders its new
/// pages gives one of them, for a moment, the number of the page at the file's first GiB, and
/// the commit after it looks through every cached page for pages past the file's end (SQLite's
/// `pcache1TruncateUnsafe`: a sixth of the writer's time under request load with 64 MiB). So the
/// cache is large while batch files are written and small otherwise.
pub(super) struct WriterCache {
    large: bool,
    /// When the last transaction holding bulk writes began.
    last_bulk: Option<Instant>,
}

/// The writer's cache while batch files are written, and otherwise, in KiB.
pub(super) const BULK_CACHE_KIB: i64 = 24_576;
pub(super) const SMALL_CACHE_KIB: i64 = 8_192;
/// How long the cache stays large after the last bulk write: a file's next chunk, or the next
/// file of a drop, does not find it cold.
pub(super) const KEEP_LARGE: Duration = Duration::from_secs(10);

impl WriterCache {
    pub(super) fn new(connection: &Connection) -> WriterCache {
        let mut cache = WriterCache {
            large: true,
            last_bulk: None,
        };
        cache.set(connection, false);
        cache
    }

    /// Sizes the cache for a transaction that begins `now`, holding bulk writes or not.
    pub(super) fn fit(&mut self, connection: &Connection, bulk: bool, now: Instant) {
        if bulk {
            self.last_bulk = Some(now);
        }
        let large = self
            .last_bulk
            .is_some_and(|at| now.saturating_duration_since(at) < KEEP_LARGE);
        if large != self.large {
            self.set(connection, large);
        }
    }

    fn set(&mut self, connection: &Connection, large: bool) {
        let kib = if large {
            BULK_CACHE_KIB
        } else {
            SMALL_CACHE_KIB
        };
        match connection.pragma_update(None, "cache_size", -kib) {
            Ok(()) => self.large = large,
            Err(err) => tracing::warn!(%err, "the writer's page cache could not be resized"),
        }
    }
}

fn run_between(connection: &Connection, runs: impl Iterator<Item = Between>) {
    for run in runs {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(connection)));
    }
}

/// Runs `jobs` in the open transaction, or in a new one; gives back the transaction if it
/// stays open for more bulk writes.
fn run_writes(connection: &Connection, open: Option<Open>, jobs: Vec<Write>) -> Option<Open> {
    // When no transaction begins, dropping the jobs unrun answers their callers with an error.
    let mut transaction = match open {
        Some(transaction) => transaction,
        None => begin(connection)?,
    };
    // A write alone in its transaction needs no savepoint: if it fails, the transaction is
    // rolled back instead (a savepoint copies every page the write changes).
    let alone = jobs.len() == 1 && transaction.finishes.is_empty();
    let only_bulk = jobs.iter().all(|job| job.bulk);
    for job in jobs {
        let unguarded = alone || job.bulk;
        let run = std::panic::AssertUnwindSafe(|| (job.run)(connection, unguarded));
        match std::panic::catch_unwind(run) {
            Ok((finish, failed)) => {
                transaction.undo |= unguarded && failed;
                transaction.finishes.push(finish);
            }
            // A write that panicked is undone and answered as abandoned; the others go on.
            Err(_) => {
                transaction.undo |= unguarded;
                if !unguarded {
                    let _ = connection.execute_batch("ROLLBACK TO job; RELEASE job");
                }
            }
        }
    }
    if only_bulk && !transaction.undo && transaction.since.elapsed() < BULK_OPEN_AT_MOST {
        Some(transaction)
    } else {
        end(connection, transaction);
        None
    }
}

/// Begins a write transaction.
fn begin(connection: &Connection) -> Option<Open> {
    // A write that panicked may have left its transaction open.
    if !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    if let Err(err) = connection.execute_batch("BEGIN IMMEDIATE") {
        tracing::error!(%err, "an SQLite write transaction could not begin");
        return None;
    }
    Some(Open {
        since: Instant::now(),
        finishes: Vec::new(),
        undo: false,
    })
}

/// Commits the transaction (or rolls it back, if a write in it failed outside a savepoint),
/// and tells each write's caller.
fn end(connection: &Connection, transaction: Open) {
    let ended = if transaction.undo {
        let _ = connection.execute_batch("ROLLBACK");
        Err(rolled_back())
    } else {
        connection.execute_batch("COMMIT")
    };
    if ended.is_err() && !connection.is_autocommit() {
        let _ = connection.execute_batch("ROLLBACK");
    }
    for finish in transaction.finishes {
        finish(ended.as_ref().map(|_| ()));
    }
}

/// What the other writes of a transaction are told when one write in it failed unguarded.
fn rolled_back() -> rusqlite::Error {
    rusqlite::Error::SqliteFailure(
        rusqlite::ffi::Error::new(rusqlite::ffi::SQLITE_ABORT),
        Some("undone: another write in the same transaction failed".into()),
    )
}

/// How often the checkpointer copies committed pages from the WAL into the database file.
/// Under sustained load the WAL grows by up to 100,000 pages (400 MB) a second: checked every
/// second, it had passed `journal_size_limit` by the time it started over, and the first commit
/// after the restart cut it back, a stall of 30 to 110 ms for every request (`docs/
/// performance.md`, "Ledger under an outside load generator"). Checked this often, it starts
/// over at a tenth of that, below the limit, and each pass is short.
const CHECKPOINT_EVERY: Duration = Duration::from_millis(25);
/// WAL pages (4 KiB each) past which the checkpointer starts the WAL over: it catches up beside
/// the writer, then holds writes back for one last short pass, after which the next write
/// starts from the WAL's beginning instead of growing it. Kept well below `journal_size_limit`
/// (64 MiB): a WAL that grew past it is cut back by the first commit after the restart, on the
/// writer's time.
const WAL_RESTART_PAGES: i64 = 2_048;
/// WAL pages a catching-up pass may leave for the last pass, the one that holds writes back.
/// That pass copies them and `fsync`s the database file while no write can commit: a few
/// hundred pages take a millisecond or two, where the thousands written during one catching-up
/// pass took tens to hundreds of milliseconds, every request waiting.
const LAST_PASS_PAGES: i64 = 256;
/// Catching-up passes before the last one, at most: while writes come faster than a pass
/// copies, what is left would never fall within `LAST_PASS_PAGES`.
const CATCH_UP_PASSES: usize = 8;

/// The checkpointer thread. SQLite's own checkpoints run inside a commit, when the WAL passes
/// 1,000 pages: under load that is dozens a second, each with two `fsync`s, on the writer's
/// time. Here they run beside the writer (a passive checkpoint never blocks it); only when the
/// WAL has grown large are writes held back, for the short pass that lets it restart.
pub(super) fn checkpoint(
    connection: Connection,
    stopped: mpsc::Receiver<()>,
    writer: mpsc::Sender<Job>,
) {
    // A reader in the way makes a pass stop short rather than wait; the next one goes on.
    let _ = connection.busy_timeout(Duration::ZERO);
    // The WAL's pages, and how many of them are not yet copied into the database file.
    let pass = || -> rusqlite::Result<(i64, i64)> {
        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            let (pages, copied): (i64, i64) = (row.get(1)?, row.get(2)?);
            Ok((pages, pages - copied))
        })
    };
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
        match pass() {
            Ok((pages, mut left)) if pages > WAL_RESTART_PAGES => {
                for _ in 0..CATCH_UP_PASSES {
                    if left <= LAST_PASS_PAGES {
                        break;
                    }
                    left = match pass() {
                        Ok((_, left)) => left,
                        Err(_) => break,
                    };
                }
                // The last pass runs on the writer thread, between its transactions.
                let (done, finished) = mpsc::channel();
                let last = Job::AfterBulk(Box::new(move |writer| {
                    let _ = writer.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
                    let _ = done.send(());
                }));
                if writer.send(last).is_err() {
                    return;
                }
                let _ = finished.recv();
            }
            Ok(_) => {}
            Err(err) => tracing::warn!(%err, "WAL checkpoint failed"),
        }
    }
}

/// Runs `write` so that, on `Err`, its changes are undone and the transaction goes on.
pub(super) fn in_savepoint<T>(
    connection: &Connection,
    write: impl FnOnce(&Connection) -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    execute(connection, "SAVEPOINT job", &[])?;
    match unpanicked("a write", || write(connection)) {
        Ok(value) => {
            execute(connection, "RELEASE job", &[])?;
            Ok(value)
        }
        Err(err) => {
            execute(connection, "ROLLBACK TO job", &[])?;
            execute(connection, "RELEASE job", &[])?;
            Err(err)
        }
    }
}

/// The same SQLite error again, for each write that shared a failed commit.
pub(super) fn copy(err: &rusqlite::Error) -> StoreError {
    match err {
        rusqlite::Error::SqliteFailure(code, message) => {
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(*code, message.clone()))
        }
        other => StoreError::NotCommitted(other.to_string()),
    }
}

pub(super) fn abandoned() -> StoreError {
    StoreError::NotCommitted("the write was not committed (see the log)".into())
}
