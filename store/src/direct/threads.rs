//! The writer and checkpointer threads behind `Direct`.

use std::sync::mpsc;
use std::time::Duration;

use rusqlite::Connection;
use sqlx::SqlitePool;

use super::sql::execute;
use crate::StoreError;

/// A queued write: runs (in its own savepoint unless it has the transaction to itself, the
/// `bool`) and returns what to tell its caller once the transaction's fate is known, and whether
/// it failed.
pub(super) type Job = Box<dyn FnOnce(&Connection, bool) -> (Finish, bool) + Send>;
/// Tells a write's caller how it ended, given whether its transaction committed.
pub(super) type Finish = Box<dyn FnOnce(Result<(), &rusqlite::Error>) + Send>;

/// The writer thread: takes whatever writes have queued, runs them in one transaction and
/// answers each, until the store is dropped.
pub(super) fn write_queued(
    connection: Connection,
    queued: mpsc::Receiver<Job>,
    gate: SqlitePool,
    runtime: tokio::runtime::Handle,
) {
    let _runtime = runtime.enter();
    while let Ok(first) = queued.recv() {
        let mut jobs = vec![first];
        jobs.extend(queued.try_iter());
        let _turn = match runtime.block_on(gate.acquire()) {
            Ok(turn) => turn,
            Err(err) => {
                // Dropping the jobs unrun answers their callers with an error.
                tracing::error!(%err, "the SQLite writer could not take its turn");
                continue;
            }
        };
        // A write that panicked may have left its transaction open.
        if !connection.is_autocommit() {
            let _ = connection.execute_batch("ROLLBACK");
        }
        if let Err(err) = connection.execute_batch("BEGIN IMMEDIATE") {
            tracing::error!(%err, "an SQLite write transaction could not begin");
            continue;
        }
        // A write alone in its transaction needs no savepoint: if it fails, the transaction is
        // rolled back instead (a savepoint copies every page the write changes).
        let alone = jobs.len() == 1;
        let mut undo = false;
        let finishes: Vec<Finish> = jobs
            .into_iter()
            .filter_map(|job| {
                let run = std::panic::AssertUnwindSafe(|| job(&connection, alone));
                match std::panic::catch_unwind(run) {
                    Ok((finish, failed)) => {
                        undo |= alone && failed;
                        Some(finish)
                    }
                    // A write that panicked is undone and answered as abandoned; the others go on.
                    Err(_) => {
                        undo |= alone;
                        if !alone {
                            let _ = connection.execute_batch("ROLLBACK TO job; RELEASE job");
                        }
                        None
                    }
                }
            })
            .collect();
        let committed = if undo {
            connection.execute_batch("ROLLBACK")
        } else {
            connection.execute_batch("COMMIT")
        };
        if committed.is_err() {
            let _ = connection.execute_batch("ROLLBACK");
        }
        for finish in finishes {
            finish(committed.as_ref().map(|_| ()));
        }
    }
}

/// How often the checkpointer copies committed pages from the WAL into the database file.
const CHECKPOINT_EVERY: Duration = Duration::from_secs(1);
/// WAL pages (4 KiB each) past which the checkpointer holds writes back for its last pass, so
/// that the WAL can start over from its beginning instead of growing.
const WAL_RESTART_PAGES: i64 = 65_536;

/// The checkpointer thread. SQLite's own checkpoints run inside a commit, when the WAL passes
/// 1,000 pages: under load that is dozens a second, each with two `fsync`s, on the writer's
/// time. Here they run beside the writer (a passive checkpoint never blocks it); only when the
/// WAL has grown large are writes held back, for the short pass that lets it restart.
pub(super) fn checkpoint(
    connection: Connection,
    stopped: mpsc::Receiver<()>,
    gate: SqlitePool,
    runtime: tokio::runtime::Handle,
) {
    let _runtime = runtime.enter();
    // A reader in the way makes a pass stop short rather than wait; the next one goes on.
    let _ = connection.busy_timeout(Duration::ZERO);
    let pass = || -> rusqlite::Result<i64> {
        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))
    };
    while let Err(mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(CHECKPOINT_EVERY) {
        match pass() {
            Ok(pages) if pages > WAL_RESTART_PAGES => {
                // Catch up on what was written during that pass, then hold writes back for the
                // few pages written since: the next write starts the WAL over.
                let _ = pass();
                if let Ok(_turn) = runtime.block_on(gate.acquire()) {
                    let _ = pass();
                }
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
    match write(connection) {
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
