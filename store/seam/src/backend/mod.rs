//! The database behind the store, and the one place that picks between SQLite and PostgreSQL.
//!
//! Most SQL is the same text on both backends (`$1` placeholders, `RETURNING`, `ON CONFLICT`);
//! statements take their arguments as `Arg`s (`params![...]`) and decode rows as tuples or
//! `row_struct!` types, the same on both. Domain code reaches the database only through:
//!
//! - `statements.rs`: one statement (`read_row`, `read_rows`, `read_each`, `read_page`,
//!   `execute`, `write_row`);
//! - `tx.rs`: `Work` run in one transaction by `Db::write` (or read by `Db::read`),
//!   written once against `Tx`; and `Db::fork` for work whose shape differs between the
//!   backends beyond one statement (`COPY`, arrays, the writer thread's bulk writes), its halves
//!   in a `sqlite.rs` and a `postgres.rs` beside the shared code;
//! - `Db::claiming` for the `SKIP LOCKED` that claims work rows.
//!
//! SQLite runs through rusqlite (`direct/`: readers, one writer thread, a checkpointer);
//! PostgreSQL through sqlx's pool. Each backend keeps its own migrations, run by sqlx's
//! migrator; a test compares the schemas they build.

use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;
use std::time::Duration;

use sqlx::Connection as _;
use sqlx::PgPool;
use sqlx::postgres::{PgConnectOptions, PgConnection, PgPoolOptions};

/// How long a new store waits for PostgreSQL's first answer.
const CONNECT_WITHIN: Duration = Duration::from_secs(5);
use sqlx::sqlite::{SqliteConnectOptions, SqlitePoolOptions};

#[macro_use]
pub mod direct;
mod hook;
mod migrations;
#[macro_use]
mod rows;
pub mod statements;
#[macro_use]
pub mod tx;
#[cfg(feature = "testing")]
mod inspect;
#[cfg(feature = "testing")]
pub mod schema;

use crate::StoreError;
use crate::common::clock::Clock;
use direct::Direct;
use hook::Hooked;
pub use hook::WriteHook;
#[cfg(feature = "testing")]
pub use inspect::Plan;
pub use tx::{
    Arg, Backend, Forked, OnPostgres, OnSqlite, OwnedArg, PgTx, SqliteTx, Steps, ToArg, Tx, Work,
    borrowed, owned, ready,
};

/// The database a store runs on: SQLite through rusqlite (`direct`), or a PostgreSQL pool.
#[derive(Clone)]
pub enum Pool {
    Sqlite(Arc<Direct>),
    Postgres(PgPool),
}

/// The database: a connection pool on either backend, and the one place that runs work on it.
/// Cheap to clone: clones share one pool. `Store` holds one (and, later, each domain's handle).
#[derive(Clone)]
pub struct Db {
    pub pool: Pool,
    /// The time its domains go by (`Db::now`).
    clock: Clock,
    /// The operator's action its writes are part of, if any: each write appends its entry to
    /// the audit trail in the same transaction (`Db::acting`).
    trail: Option<Arc<dyn WriteHook>>,
}

impl std::fmt::Debug for Db {
    // Connection options hold credentials; show only the backend.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db")
            .field("backend", &self.backend())
            .finish()
    }
}

impl Db {
    /// Opens (creating if missing) the SQLite database file at `path`, in WAL mode.
    pub async fn open_sqlite(path: &Path) -> Result<Db, StoreError> {
        let options = SqliteConnectOptions::new().filename(path);
        Self::sqlite_with(options).await
    }

    /// Connects to `url`: `postgres://` or `postgresql://` for PostgreSQL, `sqlite:` for SQLite.
    pub async fn connect(url: &str, max_connections: u32) -> Result<Db, StoreError> {
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

    /// The SQLite database file `options` name (sqlx parses `sqlite:` URLs; rusqlite opens it).
    pub async fn sqlite_with(options: SqliteConnectOptions) -> Result<Db, StoreError> {
        let path = options.get_filename();
        if path.to_string_lossy().starts_with("file:sqlx-in-memory")
            || path.as_os_str() == ":memory:"
        {
            return Err(StoreError::invalid(
                "DATABASE_URL",
                "SQLite needs a database file; in-memory databases are not supported",
            ));
        }
        Ok(Db {
            pool: Pool::Sqlite(Arc::new(Direct::open(path)?)),
            clock: Clock::default(),
            trail: None,
        })
    }

    pub async fn postgres_with(
        options: PgConnectOptions,
        max_connections: u32,
    ) -> Result<Db, StoreError> {
        // No ping before each use (sqlx's default): it was a round trip of its own on every
        // acquire, two of a burn's nine. A connection the server dropped fails its next
        // statement and is closed; the request that met it gets an error.
        // One connection first, on its own: the pool retries a refused connection until its
        // acquire timeout and then says only "pool timed out", hiding why.
        let probe = tokio::time::timeout(CONNECT_WITHIN, PgConnection::connect_with(&options));
        match probe.await {
            Ok(Ok(connection)) => connection.close().await?,
            Ok(Err(err)) => return Err(err.into()),
            Err(_) => {
                return Err(StoreError::NotCommitted(format!(
                    "no answer from PostgreSQL at {}:{} within {} s",
                    options.get_host(),
                    options.get_port(),
                    CONNECT_WITHIN.as_secs()
                )));
            }
        }
        let pool = PgPoolOptions::new()
            .max_connections(max_connections.max(1))
            .test_before_acquire(false)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await?;
        Ok(Db {
            pool: Pool::Postgres(pool),
            clock: Clock::default(),
            trail: None,
        })
    }

    /// The time now, as this database's clock says: what every write and check of the domains
    /// above goes by.
    pub fn now(&self) -> chrono::DateTime<chrono::Utc> {
        self.clock.now()
    }

    /// This database, its writes made for the operator's action `trail`: each appends the
    /// trail's entry to the audit trail in its own transaction.
    pub fn acting(&self, trail: Arc<dyn WriteHook>) -> Db {
        Db {
            trail: Some(trail),
            ..self.clone()
        }
    }

    /// This database without the action it was acting for.
    pub fn unaudited(&self) -> Db {
        Db {
            trail: None,
            ..self.clone()
        }
    }

    /// Whether writes here are made for an operator's action.
    pub fn is_acting(&self) -> bool {
        self.trail.is_some()
    }

    /// The clock this database's domains go by (tests advance it).
    pub fn clock(&self) -> &Clock {
        &self.clock
    }

    pub fn backend(&self) -> Backend {
        match self.pool {
            Pool::Sqlite(_) => Backend::Sqlite,
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
            Pool::Sqlite(direct) => {
                // sqlx's migrator runs the SQLite migrations too, on a connection of its own
                // that lives only while they run.
                let options = SqliteConnectOptions::new()
                    .filename(direct.path())
                    .busy_timeout(Duration::from_secs(10))
                    .foreign_keys(true);
                let write = SqlitePoolOptions::new()
                    .max_connections(1)
                    .connect_with(options)
                    .await?;
                let migrated = async {
                    if version >= IDEM_KEYS_INDEXED
                        && !migrations::applied(&write, IDEM_KEYS_INDEXED).await?
                    {
                        migrations::sqlite(IDEM_KEYS_INDEXED - 1)
                            .run(&write)
                            .await?;
                        migrations::fill_idem_keys(&write).await?;
                    }
                    migrations::sqlite(version).run(&write).await?;
                    Ok::<_, StoreError>(())
                }
                .await;
                write.close().await;
                migrated?;
            }
            Pool::Postgres(pool) => migrations::postgres(version).run(pool).await?,
        }
        Ok(())
    }

    /// Succeeds when the database answers a trivial query (the readiness probe).
    pub async fn ping(&self) -> Result<(), StoreError> {
        let _: Option<(i64,)> = self.read_row("SELECT CAST(1 AS BIGINT)", &[]).await?;
        Ok(())
    }

    /// Closes every connection; pending operations finish first.
    pub async fn close(&self) {
        match &self.pool {
            Pool::Sqlite(direct) => direct.close().await,
            Pool::Postgres(pool) => pool.close().await,
        }
    }
}

impl Db {
    /// Runs `work` in one transaction: committed when it succeeds, undone when it fails. On
    /// SQLite on the writer thread (in a savepoint of the transaction it shares with the writes
    /// queued beside it), on PostgreSQL in a transaction of its own.
    /// On a database that is `acting` for an operator, the trail's entry is appended in the
    /// same transaction.
    pub async fn write<W: Work>(&self, work: W) -> Result<W::Output, StoreError> {
        self.write_changing(work, |_| true).await
    }

    /// `write`, the trail's entry appended only when `changed` says the work's output changed
    /// something: a statement that touched no row is not a change to record (the action's
    /// outcome says what became of it).
    async fn write_changing<W: Work>(
        &self,
        work: W,
        changed: fn(&W::Output) -> bool,
    ) -> Result<W::Output, StoreError> {
        match &self.trail {
            Some(trail) => {
                let audited = Hooked {
                    work,
                    hook: trail.clone(),
                    at: self.now(),
                    changed,
                };
                // Boxed: an operator's writes are few, and every other write's future stays
                // the size it was.
                Box::pin(self.write_unaudited(audited)).await
            }
            None => self.write_unaudited(work).await,
        }
    }

    async fn write_unaudited<W: Work>(&self, work: W) -> Result<W::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => {
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

    /// Runs `work` in a transaction and undoes it: what it would have done (a dry run).
    pub async fn try_out<W: Work>(&self, work: W) -> Result<W::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => {
                direct
                    .write(move |c| {
                        direct::execute(c, "SAVEPOINT try_out", &[])?;
                        let output = ready(work.sqlite(&mut SqliteTx(c)));
                        direct::execute(c, "ROLLBACK TO try_out", &[])?;
                        direct::execute(c, "RELEASE try_out", &[])?;
                        output
                    })
                    .await
            }
            Pool::Postgres(pool) => {
                let mut tx = pool.begin().await?;
                let output = work.postgres(&mut PgTx(&mut tx)).await;
                tx.rollback().await?;
                output
            }
        }
    }

    /// Runs the half of `work` written for this store's backend.
    pub async fn fork<F: OnSqlite + OnPostgres>(&self, work: F) -> Result<F::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => work.sqlite(direct).await,
            Pool::Postgres(pool) => work.postgres(pool).await,
        }
    }

    /// Ends the writer thread's open bulk transaction, if any (SQLite; PostgreSQL has none):
    /// a write that is not a bulk write ends it at once.
    pub async fn end_bulk_writes(&self) -> Result<(), StoreError> {
        if let Pool::Sqlite(direct) = &self.pool {
            direct.write(|_| Ok(())).await?;
        }
        Ok(())
    }

    /// `sqlite` or `postgres`, for this store's backend: the parts of a statement whose text
    /// differs by a clause (a hint, a join's kind), chosen here rather than in domain code.
    pub fn dialect<T>(&self, sqlite: T, postgres: T) -> T {
        match self.pool {
            Pool::Sqlite(_) => sqlite,
            Pool::Postgres(_) => postgres,
        }
    }

    /// `sql` with `{skip_locked}` replaced by the clause that claims work rows on this backend:
    /// on PostgreSQL rows another node holds are passed over (`FOR UPDATE SKIP LOCKED`); SQLite's
    /// one writer never meets a row another claim holds.
    pub fn claiming(&self, sql: &str) -> String {
        let clause = self.dialect("", " FOR UPDATE SKIP LOCKED");
        sql.replace("{skip_locked}", clause)
    }
}
