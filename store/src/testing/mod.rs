//! Fresh, isolated stores for tests, on either backend.
//!
//! SQLite: a new database file in a temporary directory. PostgreSQL: a new schema in the database
//! named by `REWARDS_TEST_POSTGRES_URL`, with every connection's `search_path` set to it, so
//! tests run in parallel without seeing each other's rows.

use sqlx::Connection;
use sqlx::postgres::PgConnection;
use sqlx::sqlite::SqliteConnectOptions;

pub use crate::backend::schema;

use crate::common::ids::random_token;
use crate::{Db, Store, StoreError};

/// The variable naming the PostgreSQL server for tests.
pub const POSTGRES_URL_VAR: &str = "REWARDS_TEST_POSTGRES_URL";

/// A migrated store that lives as long as this value (the SQLite file is removed on drop).
pub struct TestStore {
    pub store: Store,
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

impl TestStore {
    pub async fn sqlite() -> TestStore {
        TestStore::sqlite_at(i64::MAX).await
    }

    /// A SQLite store migrated up to `version` only.
    pub async fn sqlite_at(version: i64) -> TestStore {
        let dir = TempDir(std::env::temp_dir().join(random_token("rewards-test-", 8)));
        let file = dir.0.join("rewards.db");
        let store = async {
            std::fs::create_dir_all(&dir.0)
                .map_err(|e| StoreError::invalid("dir", e.to_string()))?;
            let db = Db::sqlite_with(SqliteConnectOptions::new().filename(&file)).await?;
            let store = Store::on(db);
            store.migrate_to(version).await?;
            Ok::<_, StoreError>(store)
        };
        let store = store
            .await
            .unwrap_or_else(|e| panic!("test SQLite store: {e}"));
        TestStore {
            store,
            url: format!("sqlite:{}", file.display()),
            _dir: Some(dir),
        }
    }

    /// Panics when `REWARDS_TEST_POSTGRES_URL` is unset: a PostgreSQL test that did not run must
    /// never count as passed.
    pub async fn postgres() -> TestStore {
        TestStore::postgres_at(i64::MAX).await
    }

    /// A PostgreSQL store migrated up to `version` only.
    pub async fn postgres_at(version: i64) -> TestStore {
        let url = postgres_url().await;
        let store = async {
            let store = Store::connect(&url, 8).await?;
            store.migrate_to(version).await?;
            Ok::<_, StoreError>(store)
        };
        let store = store
            .await
            .unwrap_or_else(|e| panic!("test PostgreSQL store: {e}"));
        TestStore {
            store,
            url,
            _dir: None,
        }
    }

    /// Another store on the same database, as a second node (or process) would open it.
    pub async fn another_node(&self) -> Store {
        Store::connect(&self.url, 8)
            .await
            .unwrap_or_else(|e| panic!("another store on {}: {e}", self.url))
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

/// Declares a test once per backend: `backend_tests!(name, other_name)` expects
/// `async fn name(store: Store)` in scope and emits `sqlite::name` and `postgres::name`.
/// The PostgreSQL copies are ignored unless asked for (`--ignored`), with the reason shown.
#[macro_export]
macro_rules! backend_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = $crate::testing::TestStore::sqlite().await;
                    super::$name(db.store.clone()).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
                async fn $name() {
                    let db = $crate::testing::TestStore::postgres().await;
                    super::$name(db.store.clone()).await;
                }
            )*
        }
    };
}

/// A new organisation `Acme` with a campaign `Main` in `PTS`.
pub async fn campaign_fixture(store: &Store) -> crate::Campaign {
    let made = async {
        let org = store.tenancy().create_org("Acme").await?;
        let campaign = crate::NewCampaign {
            name: "Main".into(),
            currency: "PTS".into(),
            ..Default::default()
        };
        store
            .tenancy()
            .create_campaign(&org.scope(), campaign)
            .await
    };
    made.await
        .unwrap_or_else(|e| panic!("campaign fixture: {e}"))
}

/// An organisation with a campaign (`PTS`), a member `card-1` and that member's wallet `w-1`.
pub async fn wallet_fixture(store: &Store) -> (crate::Campaign, crate::Wallet) {
    use crate::{NewMember, NewWallet};
    let campaign = campaign_fixture(store).await;
    let made = async {
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "card-1".into(),
            ..Default::default()
        };
        store
            .members()
            .create_member(&campaign.org(), member)
            .await?;
        let wallet = NewWallet {
            owner: Some("card-1".into()),
            external_id: Some("w-1".into()),
            name: None,
        };
        let wallet = store.create_wallet(&campaign, wallet).await?;
        Ok::<_, crate::StoreError>((campaign, wallet))
    };
    made.await.unwrap_or_else(|e| panic!("wallet fixture: {e}"))
}

/// Stores `pending` as earn requests without looking at what their ids hold, as nodes that
/// each checked an id at the same moment would.
pub async fn store_unchecked(
    store: &Store,
    pending: Vec<crate::PendingEarn>,
) -> Vec<crate::EarnRequest> {
    store.store_new_earns(pending).await.unwrap()
}

/// Fault injection for the store's own tests: an earn described as `panic at {stage}` panics
/// when it reaches `stage`.
#[cfg(test)]
pub(crate) fn fault(earn: &crate::EarnInput, stage: &str) {
    let wanted = earn
        .description
        .as_deref()
        .and_then(|d| d.strip_prefix("panic at "));
    if wanted == Some(stage) {
        panic!("injected fault at {stage}");
    }
}

/// What tests read of a wallet's lots beyond the ledger's own operations.
impl Store {
    /// What spending transaction `id` took from each earn's lot: (earn id, micro-tokens), by
    /// earn id.
    pub async fn spends_of(&self, id: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = "SELECT earn_id, amount FROM spends WHERE transaction_id = $1 ORDER BY earn_id";
        self.read_rows(sql, params![id]).await
    }

    /// What is left in each of wallet `id`'s lots, by its spending position and aside rows
    /// (see `ledger::fifo`): (earn id, micro-tokens) for every earn that holds some, by earn id.
    pub async fn lots_of(&self, id: &str) -> Result<Vec<(String, i64)>, StoreError> {
        const SQL: &str = concat!(
            "SELECT t.id, ",
            crate::ledger::fifo::lot_left!(),
            " FROM transactions t JOIN wallets w ON w.id = t.wallet_id \
             LEFT JOIN lots_aside a ON a.transaction_id = t.id \
             WHERE t.wallet_id = $1 AND t.kind IN ",
            crate::ledger::transactions::lot_kinds!(),
            " ORDER BY t.id"
        );
        let rows: Vec<(String, i64)> = self.read_rows(SQL, params![id]).await?;
        Ok(rows.into_iter().filter(|(_, left)| *left != 0).collect())
    }
}
