//! Connection pools for both backends and the one place that picks between them.
//!
//! Most SQL is the same text on both backends (`$1` placeholders, `RETURNING`, `ON CONFLICT`),
//! and sqlx maps the same Rust types onto each (`DateTime<Utc>` is `timestamptz` on PostgreSQL
//! and RFC 3339 text on SQLite). So an operation is written once inside `with_pool!`, which
//! expands its body for each pool type. Where the backends truly differ, the choice is made here,
//! once for each kind of work:
//!
//! - `read_row!` (one row by id or key) and `read_each!` (rows for many keys): on SQLite by a
//!   rusqlite reader on the calling thread, on PostgreSQL by sqlx (`= ANY(...)` for many keys).
//! - `Work` and `Store::write` (`tx.rs`): work done in one transaction, written once against
//!   `Tx` (the ledger's debit, an order's placing); on SQLite it runs on the rusqlite writer
//!   thread, on PostgreSQL through sqlx.
//! - `lock` and `claim`: row locking (`FOR UPDATE`, `SKIP LOCKED`), which SQLite's single
//!   writer does not need.
//!
//! The bulk writes of the ledger (crediting: rusqlite statements prepared once, multi-row
//! statements or `COPY` on PostgreSQL; storing accepted earn requests; claiming them on the
//! writer thread) pick their backend in `ledger/credit.rs` and `ledger/earn.rs`, because their
//! shapes differ beyond one statement. Each backend keeps its own migrations; a test compares
//! the schemas they build.

use std::path::Path;
use std::str::FromStr;
use std::time::Duration;

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{AssertSqlSafe, PgPool, SqlitePool};

#[macro_use]
pub(crate) mod direct;
mod migrations;
#[macro_use]
mod rows;
#[macro_use]
mod tx;

use crate::StoreError;
use direct::Direct;
pub(crate) use tx::{Arg, Forked, OnPostgres, OnSqlite, PgTx, SqliteTx, ToArg, Tx, Work, ready};

/// Expands `$body` once per backend with `$pool` bound to that backend's pool for reading.
macro_rules! with_pool {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            $crate::backend::Pool::Sqlite { read: $pool, .. } => $body,
            $crate::backend::Pool::Postgres($pool) => $body,
        }
    };
}

/// Like `with_pool!`, with the pool for writing: every statement that changes data goes here.
macro_rules! with_writer {
    ($store:expr, |$pool:ident| $body:expr) => {
        match &$store.pool {
            $crate::backend::Pool::Sqlite { write: $pool, .. } => $body,
            $crate::backend::Pool::Postgres($pool) => $body,
        }
    };
}

/// The one row (if any) that `$sql` finds: the read every lookup by id or key uses. On SQLite
/// by a rusqlite reader on the calling thread (no hand-off to sqlx's connection thread, see
/// `direct`), on PostgreSQL through sqlx. The same SQL and the same row type (`row_struct!`,
/// or a tuple) on both; `$arg`s bind to `$1`, `$2`...
macro_rules! read_row {
    ($store:expr, $sql:expr, [$($arg:expr),* $(,)?]) => {
        match &$store.pool {
            $crate::backend::Pool::Sqlite { direct, .. } => {
                direct.read(|c| $crate::backend::direct::row(c, $sql, args![$($arg),*]))
            }
            $crate::backend::Pool::Postgres(pool) => sqlx::query_as($sql)
                $(.bind(&$arg))*
                .fetch_optional(pool)
                .await
                .map_err($crate::StoreError::from),
        }
    };
}

/// Every row `$sql` finds, read like `read_row!`: the short lists a hot path reads (a page of
/// the leaderboard).
macro_rules! read_all {
    ($store:expr, $sql:expr, [$($arg:expr),* $(,)?]) => {
        match &$store.pool {
            $crate::backend::Pool::Sqlite { direct, .. } => {
                direct.read(|c| $crate::backend::direct::rows(c, $sql, args![$($arg),*]))
            }
            $crate::backend::Pool::Postgres(pool) => sqlx::query_as($sql)
                $(.bind(&$arg))*
                .fetch_all(pool)
                .await
                .map_err($crate::StoreError::from),
        }
    };
}

/// `read_each!`'s `sql` with its keys as parameter `$n` on `backend`.
pub(crate) fn keyed(sql: &str, n: usize, backend: crate::Backend) -> String {
    match backend {
        crate::Backend::Sqlite => sql
            .replace("{key}", &format!("= ${n}"))
            .replace("{keys}", &format!("SELECT ${n}")),
        crate::Backend::Postgres => sql
            .replace("{key}", &format!("= ANY(${n})"))
            .replace("{keys}", &format!("SELECT unnest(${n})")),
    }
}

/// Every row `$sql` finds for any of `$keys` (a slice of texts or byte strings): the lookup of many rows by
/// key that a batch of work needs. `$sql` compares the key with `{key}` (as in `l.order_id
/// {key}`), or reads the keys as a one-column table `{keys}` (as in `w.id IN ({keys})`), after
/// the `$arg`s (`$1`, `$2`...). On SQLite one prepared lookup per key on a rusqlite reader,
/// which beats a statement whose text changes with each batch; on PostgreSQL one statement
/// with `= ANY(...)` or `unnest(...)` of all keys. `{key}` is for the first column of an index:
/// PostgreSQL (before 17) compares each entry it scans with every key of an `= ANY` it cannot
/// seek with, so a lookup by two columns, or one the planner might serve from another index,
/// joins `{keys}` instead (each key one index probe).
macro_rules! read_each {
    ($store:expr, $sql:expr, [$($arg:expr),* $(,)?], $keys:expr) => {{
        let keys = $keys;
        let n = <[&str]>::len(&[$(stringify!($arg)),*]) + 1;
        match &$store.pool {
            $crate::backend::Pool::Sqlite { direct, .. } => {
                let sql = $crate::backend::keyed($sql, n, $crate::Backend::Sqlite);
                direct.read(|c| {
                    let mut rows = Vec::new();
                    for key in keys {
                        rows.extend($crate::backend::direct::rows(c, &sql, args![$($arg,)* key])?);
                    }
                    Ok(rows)
                })
            }
            $crate::backend::Pool::Postgres(pool) => {
                let sql = $crate::backend::keyed($sql, n, $crate::Backend::Postgres);
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    $(.bind(&$arg))*
                    .bind(keys)
                    .fetch_all(pool)
                    .await
                    .map_err($crate::StoreError::from)
            }
        }
    }};
}

/// SQLite admits one writer at a time; a writer that finds the lock taken sleeps and retries in
/// SQLite's busy handler, which under load costs tens of milliseconds. So SQLite writes go
/// through a pool of one connection, where they queue in order without sleeping, and reads use
/// their own pool (WAL lets them run beside the writer).
#[derive(Clone)]
pub(crate) enum Pool {
    Sqlite {
        read: SqlitePool,
        write: SqlitePool,
        direct: std::sync::Arc<crate::backend::direct::Direct>,
    },
    Postgres(PgPool),
}

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The system of record. Cheap to clone: clones share one connection pool.
#[derive(Clone)]
pub struct Store {
    pub(crate) pool: Pool,
    pub(crate) caches: std::sync::Arc<crate::common::cache::Caches>,
}

impl std::fmt::Debug for Store {
    // Connection options hold credentials; show only the backend.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("backend", &self.backend())
            .finish()
    }
}

impl Store {
    /// Opens (creating if missing) the SQLite database file at `path`, in WAL mode.
    pub async fn open_sqlite(path: &Path) -> Result<Store, StoreError> {
        let options = SqliteConnectOptions::new().filename(path);
        Self::sqlite_with(options).await
    }

    /// Connects to `url`: `postgres://` or `postgresql://` for PostgreSQL, `sqlite:` for SQLite.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        if url.starts_with("postgres://") || url.starts_with("postgresql://") {
            let options = PgConnectOptions::from_str(url)?;
            Self::postgres_with(options, max_connections).await
        } else if url.starts_with("sqlite:") {
            Self::sqlite_with(SqliteConnectOptions::from_str(url)?).await
        } else {
            Err(StoreError::invalid(
                "DATABASE_URL",
                "must start with postgres://, postgresql:// or sqlite:",
            ))
        }
    }

    pub(crate) async fn sqlite_with(options: SqliteConnectOptions) -> Result<Store, StoreError> {
        let options = options
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Normal)
            .foreign_keys(true)
            .busy_timeout(Duration::from_secs(10))
            // Checkpoints are left to the checkpointer thread (see `direct`).
            .pragma("wal_autocheckpoint", "0");
        // The writer connects first, so the database file and its WAL mode exist for the readers.
        let write = SqlitePoolOptions::new()
            .max_connections(1)
            .test_before_acquire(false)
            .connect_with(options.clone())
            .await?;
        if options
            .get_filename()
            .to_string_lossy()
            .starts_with("file:sqlx-in-memory")
        {
            return Err(StoreError::invalid(
                "DATABASE_URL",
                "SQLite needs a database file; in-memory databases are not supported",
            ));
        }
        let direct = std::sync::Arc::new(Direct::open(options.get_filename(), write.clone())?);
        let read = SqlitePoolOptions::new()
            .max_connections(8)
            .test_before_acquire(false)
            .connect_with(options)
            .await?;
        Ok(Store {
            pool: Pool::Sqlite {
                read,
                write,
                direct,
            },
            caches: std::sync::Arc::new(crate::common::cache::Caches::new()),
        })
    }

    pub(crate) async fn postgres_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<Store, StoreError> {
        // No ping before each use (sqlx's default): it was a round trip of its own on every
        // acquire, two of a burn's nine. A connection the server dropped fails its next
        // statement and is closed; the request that met it gets an error.
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        Ok(Store {
            pool: Pool::Postgres(pool),
            caches: std::sync::Arc::new(crate::common::cache::Caches::new()),
        })
    }

    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite { .. } => Backend::Sqlite,
            Pool::Postgres(_) => Backend::Postgres,
        }
    }

    /// Applies this backend's pending migrations. Safe to run from several nodes at once: on
    /// PostgreSQL the migrator holds an advisory lock while it works.
    pub async fn migrate(&self) -> Result<(), StoreError> {
        self.migrate_to(i64::MAX).await
    }

    /// Applies the migrations up to `version` only: tests build a ledger in an earlier schema
    /// and migrate it from there.
    pub async fn migrate_to(&self, version: i64) -> Result<(), StoreError> {
        use migrations::IDEM_KEYS_INDEXED;
        match &self.pool {
            Pool::Sqlite { write, .. } => {
                if version >= IDEM_KEYS_INDEXED
                    && !migrations::applied(write, IDEM_KEYS_INDEXED).await?
                {
                    migrations::sqlite(IDEM_KEYS_INDEXED - 1).run(write).await?;
                    migrations::fill_idem_keys(write).await?;
                }
                migrations::sqlite(version).run(write).await?;
            }
            Pool::Postgres(pool) => migrations::postgres(version).run(pool).await?,
        }
        Ok(())
    }

    /// Succeeds when the database answers a trivial query (the readiness probe).
    pub async fn ping(&self) -> Result<(), StoreError> {
        with_pool!(self, |pool| sqlx::query("SELECT 1")
            .execute(pool)
            .await
            .map(|_| ()))?;
        Ok(())
    }

    /// Closes every connection; pending operations finish first.
    pub async fn close(&self) {
        if let Pool::Sqlite { write, .. } = &self.pool {
            write.close().await;
        }
        with_pool!(self, |pool| pool.close().await)
    }
}

impl Store {
    /// Runs `work` in one transaction: committed when it succeeds, undone when it fails. On
    /// SQLite on the writer thread (in a savepoint of the transaction it shares with the writes
    /// queued beside it), on PostgreSQL in a transaction of its own.
    pub(crate) async fn write<W: Work>(&self, work: W) -> Result<W::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite { direct, .. } => {
                direct
                    .write(move |c| ready(work.sqlite(&mut SqliteTx(c))))
                    .await
            }
            Pool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                let output = work.postgres(&mut PgTx(&mut tx)).await?;
                tx.commit().await?;
                Ok(output)
            }
        }
    }

    /// Runs the half of `work` written for this store's backend.
    pub(crate) async fn fork<F: OnSqlite + OnPostgres>(
        &self,
        work: F,
    ) -> Result<F::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite { direct, .. } => work.sqlite(self, direct).await,
            Pool::Postgres(pool) => work.postgres(self, pool).await,
        }
    }
}

/// Opens a transaction that will write. SQLite takes the write lock at `BEGIN IMMEDIATE`, so a
/// read-then-write cannot fail halfway with `SQLITE_BUSY`; PostgreSQL locks rows as it reads
/// them with `FOR UPDATE` (see `lock`).
pub(crate) trait WritePool {
    type Db: sqlx::Database;
    /// Appended to a `SELECT` that reads rows the transaction will change.
    const FOR_UPDATE: &'static str;
    /// Appended to a `SELECT` that claims work rows: rows another node holds are passed over.
    const SKIP_LOCKED: &'static str;
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, Self::Db>, sqlx::Error>;
}

impl WritePool for SqlitePool {
    type Db = sqlx::Sqlite;
    const FOR_UPDATE: &'static str = "";
    // SQLite has one writer at a time: a claim never meets a row another claim holds.
    const SKIP_LOCKED: &'static str = "";
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Sqlite>, sqlx::Error> {
        self.begin_with("BEGIN IMMEDIATE").await
    }
}

impl WritePool for PgPool {
    type Db = sqlx::Postgres;
    const FOR_UPDATE: &'static str = " FOR UPDATE";
    const SKIP_LOCKED: &'static str = " FOR UPDATE SKIP LOCKED";
    async fn begin_write(&self) -> Result<sqlx::Transaction<'static, sqlx::Postgres>, sqlx::Error> {
        self.begin().await
    }
}

/// `select` with the row-locking clause of `pool`'s backend appended.
pub(crate) fn lock<P: WritePool>(_pool: &P, select: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(format!("{select}{}", P::FOR_UPDATE))
}

/// `sql` with `{skip_locked}` replaced by the claiming clause of `pool`'s backend.
pub(crate) fn claim<P: WritePool>(_pool: &P, sql: &str) -> AssertSqlSafe<String> {
    AssertSqlSafe(sql.replace("{skip_locked}", P::SKIP_LOCKED))
}
