//! Fresh, isolated databases for tests, on either backend (feature `testing`).
//!
//! SQLite: a new database file in a temporary directory. PostgreSQL: a new schema in the database
//! named by `REWARDS_TEST_POSTGRES_URL`, with every connection's `search_path` set to it, so
//! tests run in parallel without seeing each other's rows.

use sqlx::Connection;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::SqliteConnectOptions;

use crate::common::ids::random_token;
use crate::{Db, StoreError};

/// The variable naming the PostgreSQL server for tests.
pub const POSTGRES_URL_VAR: &str = "REWARDS_TEST_POSTGRES_URL";

/// A migrated database that lives as long as this value (the SQLite file is removed on drop).
pub struct TestDb {
    pub db: Db,
    /// The database's URL, for another process or store on the same database.
    pub url: String,
    _dir: Option<TempDir>,
}

/// A directory removed when dropped; ten lines instead of another dependency.
struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl TestDb {
    pub async fn sqlite() -> TestDb {
        TestDb::sqlite_at(i64::MAX).await
    }

    /// A SQLite database migrated up to `version` only.
    pub async fn sqlite_at(version: i64) -> TestDb {
        let dir = TempDir(std::env::temp_dir().join(random_token("rewards-test-", 8)));
        let file = dir.0.join("rewards.db");
        let db = async {
            std::fs::create_dir_all(&dir.0)
                .map_err(|e| StoreError::invalid("dir", e.to_string()))?;
            let db = Db::sqlite_with(SqliteConnectOptions::new().filename(&file)).await?;
            db.migrate_to(version).await?;
            Ok::<_, StoreError>(db)
        };
        let db = db
            .await
            .unwrap_or_else(|e| panic!("test SQLite store: {e}"));
        TestDb {
            db,
            url: format!("sqlite:{}", file.display()),
            _dir: Some(dir),
        }
    }

    /// Panics when `REWARDS_TEST_POSTGRES_URL` is unset: a PostgreSQL test that did not run must
    /// never count as passed.
    pub async fn postgres() -> TestDb {
        TestDb::postgres_at(i64::MAX).await
    }

    /// A PostgreSQL database migrated up to `version` only.
    pub async fn postgres_at(version: i64) -> TestDb {
        let url = postgres_url().await;
        let db = async {
            let db = Db::connect(&url, 8).await?;
            db.migrate_to(version).await?;
            Ok::<_, StoreError>(db)
        };
        let db = db
            .await
            .unwrap_or_else(|e| panic!("test PostgreSQL store: {e}"));
        TestDb {
            db,
            url,
            _dir: None,
        }
    }
}

/// A URL for a new, empty schema on the test server (`search_path` set through the URL's
/// `options`), for tests that hand a `DATABASE_URL` to the binary.
pub async fn postgres_url() -> String {
    let url = std::env::var(POSTGRES_URL_VAR).unwrap_or_else(|_| {
        panic!("set {POSTGRES_URL_VAR} (e.g. postgres://postgres@127.0.0.1:5432/test)")
    });
    let schema = random_token("t_", 8);
    let created = async {
        let mut admin = PgConnection::connect(&url).await?;
        sqlx::raw_sql(sqlx::AssertSqlSafe(format!("CREATE SCHEMA {schema}")))
            .execute(&mut admin)
            .await?;
        admin.close().await
    };
    created
        .await
        .unwrap_or_else(|e| panic!("creating test schema on {url}: {e}"));
    let separator = if url.contains('?') { '&' } else { '?' };
    format!("{url}{separator}options=-c%20search_path%3D{schema}")
}

/// Declares a test once per backend: `tests_on_both!(make; name, other_name)` expects
/// `async fn name(handle: T)` in scope and `make: fn(&TestDb) -> T` (a path from the crate
/// root), and emits `sqlite::name` and `postgres::name`. The PostgreSQL copies are ignored
/// unless asked for (`--ignored`), with the reason shown.
#[macro_export]
macro_rules! tests_on_both {
    ($make:path; $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::testing::TestDb::sqlite().await;
                    super::$name($make(&db)).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
                async fn $name() {
                    let db = $crate::testing::TestDb::postgres().await;
                    super::$name($make(&db)).await;
                }
            )*
        }
    };
}
