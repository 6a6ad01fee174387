//! SQLite through rusqlite, the one client the store uses for it (sqlx only runs the
//! migrations). sqlx hands every SQLite statement, and every row it returns, to a thread of the
//! connection's own; on a small machine those hand-offs (a futex wake-up and a context switch
//! each way) cost more than the statements themselves: measured, half the CPU of an earn under
//! load. Here statements are prepared once per connection and run where they are called.
//!
//! Reads take a connection of their own: a lookup by key on the calling thread, anything
//! longer on tokio's blocking pool (see `statements.rs`). Writes go to one writer thread, which
//! commits whatever has queued in one transaction (see `threads`); a batch file's chunks are
//! bulk writes, whose transaction stays open for the next chunk for a few seconds. A
//! checkpointer thread keeps the WAL from growing without stopping the writer. The SQL is the
//! text the PostgreSQL path runs wherever it can be.

#[macro_use]
mod sql;
mod threads;

use std::path::{Path, PathBuf};
use std::sync::{Mutex, mpsc};
use std::time::Duration;

use rusqlite::{Connection, OpenFlags};
use tokio::sync::oneshot;

use crate::StoreError;
use crate::error::unpanicked;
pub use sql::{
    Column, FromRow, each_row, execute, json, parse_time, row, rows, rows_while, run, time,
};
#[cfg(test)]
use threads::{BULK_CACHE_KIB, KEEP_LARGE, SMALL_CACHE_KIB, WriterCache};
use threads::{Finish, Job, Write, abandoned, checkpoint, copy, in_savepoint, write_queued};

/// How much of the database file a reader maps (see `connect`).
pub const READER_MMAP: i64 = 1 << 30;

/// Read connections kept for reuse; more may be open for a moment under load.
const IDLE_READERS: usize = 8;

pub struct Direct {
    path: PathBuf,
    readers: Mutex<Vec<Connection>>,
    /// To the writer thread.
    jobs: mpsc::Sender<Job>,
    /// Dropped with the store, which stops the checkpointer.
    _stop_checkpoints: mpsc::Sender<()>,
    /// Set by `close`: reads and writes are refused from then on.
    closed: std::sync::atomic::AtomicBool,
}

impl Direct {
    /// Opens the database file at `path` (creating it if missing, in WAL mode) and starts the
    /// writer and checkpointer threads.
    pub fn open(path: &Path) -> Result<Direct, StoreError> {
        let created = Connection::open(path)?;
        created.busy_timeout(Duration::from_secs(10))?;
        created.pragma_update(None, "journal_mode", "WAL")?;
        drop(created);
        let (writer, checkpointer) = (connect(path, false)?, connect(path, false)?);
        // The writer reads through its page cache (sized by `threads::WriterCache`), not a
        // map of the file: a map would keep every page a large batch file touched in the
        // process's memory.
        writer.pragma_update(None, "mmap_size", 0)?;
        let (jobs, queued) = mpsc::channel();
        let (stop_checkpoints, stopped) = mpsc::channel();
        let spawn = |name: &str, run: Box<dyn FnOnce() + Send>| {
            std::thread::Builder::new()
                .name(name.into())
                .spawn(run)
                .map(|_| ())
                .map_err(|e| StoreError::NotCommitted(format!("no {name} thread: {e}")))
        };
        let to_writer = jobs.clone();
        spawn(
            "sqlite-writer",
            Box::new(move || write_queued(writer, queued)),
        )?;
        spawn(
            "sqlite-checkpoint",
            Box::new(move || checkpoint(checkpointer, stopped, to_writer)),
        )?;
        Ok(Direct {
            path: path.to_owned(),
            readers: Mutex::new(Vec::new()),
            jobs,
            _stop_checkpoints: stop_checkpoints,
            closed: Default::default(),
        })
    }

    /// Runs `read` on the calling thread, on a connection of its own; it sees the last
    /// committed state. For a lookup by key: anything longer is `read_blocking`.
    pub fn read<T>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError>,
    ) -> Result<T, StoreError> {
        let connection = self.reader()?;
        let result = read(&connection);
        self.give_back(connection);
        result
    }

    /// Runs `read` like `read`, on tokio's blocking pool: the async worker that awaits it goes
    /// on with other tasks meanwhile.
    pub async fn read_blocking<T: Send + 'static>(
        &self,
        read: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let connection = self.reader()?;
        let (result, connection) = tokio::task::spawn_blocking(move || {
            let result = unpanicked("a read", || read(&connection));
            (result, connection)
        })
        .await
        .map_err(|e| StoreError::NotCommitted(format!("a read was stopped: {e}")))?;
        self.give_back(connection);
        result
    }

    /// The connection this file's readers left idle, or a new one.
    fn reader(&self) -> Result<Connection, StoreError> {
        self.still_open()?;
        let idle = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        match idle {
            Some(connection) => Ok(connection),
            None => Ok(connect(&self.path, true)?),
        }
    }

    fn give_back(&self, connection: Connection) {
        let mut readers = self
            .readers
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if readers.len() < IDLE_READERS {
            readers.push(connection);
        }
    }

    /// Refuses reads and writes from now on; returns once every write queued before the call
    /// has ended.
    pub async fn close(&self) {
        self.closed
            .store(true, std::sync::atomic::Ordering::Release);
        let (done, ended) = oneshot::channel();
        let last = Job::Between(Box::new(move |_| {
            let _ = done.send(());
        }));
        if self.jobs.send(last).is_ok() {
            let _ = ended.await;
        }
    }

    /// `Err` once the store is closed.
    fn still_open(&self) -> Result<(), StoreError> {
        if self.closed.load(std::sync::atomic::Ordering::Acquire) {
            return Err(StoreError::NotCommitted("the store is closed".into()));
        }
        Ok(())
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Runs `write` atomically (in a savepoint: on `Err` none of it happened) on the writer
    /// thread and returns once it is committed. Writes that arrive together share one
    /// transaction and one commit (group commit): each commit of a WAL database appends every
    /// page it touched, so a hundred small writes in one commit cost little more than one. The
    /// thread keeps the async workers free for requests while it writes.
    pub async fn write<T: Send + 'static>(
        &self,
        write: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        let (answer, answered) = oneshot::channel();
        self.queue(false, move |connection, unguarded| {
            let result = if unguarded {
                unpanicked("a write", || write(connection))
            } else {
                in_savepoint(connection, write)
            };
            let failed = result.is_err();
            let finish: Finish = Box::new(move |committed| {
                // A failed write's answer is its own error, whatever became of the transaction.
                let result = match committed {
                    Err(err) if !failed => Err(copy(err)),
                    _ => result,
                };
                let _ = answer.send(result);
            });
            (finish, failed)
        })?;
        answered.await.unwrap_or_else(|_| Err(abandoned()))
    }

    /// Runs `write` on the writer thread as a bulk write: it answers as soon as `write` has run,
    /// with the `Commit` that says later whether its transaction committed (see
    /// `threads::write_queued`). Until then its changes are seen by later writes, not by
    /// readers. If `write` fails, its transaction is undone, with the bulk writes before it.
    pub async fn write_bulk<T: Send + 'static>(
        &self,
        write: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<(T, Commit), StoreError> {
        let (answer, answered) = oneshot::channel();
        let (commit, commit_told) = oneshot::channel();
        self.queue(true, move |connection, _| {
            let result = unpanicked("a bulk write", || write(connection));
            let failed = result.is_err();
            let _ = answer.send(result);
            let finish: Finish = Box::new(move |committed| {
                let _ = commit.send(committed.map_err(copy));
            });
            (finish, failed)
        })?;
        let value = answered.await.unwrap_or_else(|_| Err(abandoned()))?;
        Ok((value, commit_told))
    }

    /// Runs `run` on the writer's connection outside any transaction, once the writes queued
    /// before it have committed: for statements a transaction refuses (a checkpoint).
    #[cfg(any(test, feature = "testing"))]
    pub async fn outside_transaction<T: Send + 'static>(
        &self,
        run: impl FnOnce(&Connection) -> Result<T, StoreError> + Send + 'static,
    ) -> Result<T, StoreError> {
        self.still_open()?;
        let (answer, answered) = oneshot::channel();
        let job = Job::Between(Box::new(move |connection| {
            let _ = answer.send(unpanicked("a statement", || run(connection)));
        }));
        self.jobs.send(job).map_err(|_| abandoned())?;
        answered.await.unwrap_or_else(|_| Err(abandoned()))
    }

    fn queue(
        &self,
        bulk: bool,
        run: impl FnOnce(&Connection, bool) -> (Finish, bool) + Send + 'static,
    ) -> Result<(), StoreError> {
        self.still_open()?;
        let job = Job::Write(Write {
            run: Box::new(run),
            bulk,
        });
        self.jobs.send(job).map_err(|_| abandoned())
    }
}

/// Whether a bulk write's transaction committed: told once it has ended.
pub type Commit = oneshot::Receiver<Result<(), StoreError>>;

/// Waits until the bulk write of `commit` is committed.
pub async fn committed(commit: Commit) -> Result<(), StoreError> {
    commit.await.unwrap_or_else(|_| Err(abandoned()))
}

fn connect(path: &Path, read_only: bool) -> rusqlite::Result<Connection> {
    let flags = OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX;
    let connection = Connection::open_with_flags(path, flags)?;
    connection.busy_timeout(Duration::from_secs(10))?;
    connection.pragma_update(None, "query_only", read_only)?;
    connection.pragma_update(None, "foreign_keys", true)?;
    connection.pragma_update(None, "synchronous", "NORMAL")?;
    // The checkpointer thread does this work, off the writer's time.
    connection.pragma_update(None, "wal_autocheckpoint", 0)?;
    // A WAL that starts over is cut back to 64 MiB rather than keeping its largest size.
    connection.pragma_update(None, "journal_size_limit", 64i64 << 20)?;
    // Reads map the file instead of copying pages: a reader's page cache starts empty after
    // every commit by another connection, and mapped pages cost nothing to find again.
    connection.pragma_update(None, "mmap_size", READER_MMAP)?;
    connection.set_prepared_statement_cache_capacity(64);
    Ok(connection)
}

#[cfg(test)]
mod tests;
