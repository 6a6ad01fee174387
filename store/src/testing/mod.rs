//! Fresh, isolated stores for tests, on either backend.
//!
//! SQLite: a new database file in a temporary directory. PostgreSQL: a new schema in the database
//! named by `REWARDS_TEST_POSTGRES_URL`, with every connection's `search_path` set to it, so
//! tests run in parallel without seeing each other's rows.

pub use crate::backend::schema;
pub use seam::testing::{POSTGRES_URL_VAR, postgres_url};

use seam::testing::TestDb;

use crate::Store;

/// A migrated store that lives as long as this value (the SQLite file is removed on drop).
pub struct TestStore {
    pub store: Store,
    /// The database's URL, for another process or store on the same database.
    pub url: String,
    _db: TestDb,
}

impl TestStore {
    pub async fn sqlite() -> TestStore {
        TestStore::sqlite_at(i64::MAX).await
    }

    /// A SQLite store migrated up to `version` only.
    pub async fn sqlite_at(version: i64) -> TestStore {
        TestStore::on(TestDb::sqlite_at(version).await)
    }

    /// Panics when `REWARDS_TEST_POSTGRES_URL` is unset: a PostgreSQL test that did not run must
    /// never count as passed.
    pub async fn postgres() -> TestStore {
        TestStore::postgres_at(i64::MAX).await
    }

    /// A PostgreSQL store migrated up to `version` only.
    pub async fn postgres_at(version: i64) -> TestStore {
        TestStore::on(TestDb::postgres_at(version).await)
    }

    fn on(db: TestDb) -> TestStore {
        TestStore {
            store: Store::on(db.db.clone()),
            url: db.url.clone(),
            _db: db,
        }
    }

    /// Another store on the same database, as a second node (or process) would open it.
    pub async fn another_node(&self) -> Store {
        Store::connect(&self.url, 8)
            .await
            .unwrap_or_else(|e| panic!("another store on {}: {e}", self.url))
    }
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
    ledger::testing::campaign_fixture(store.tenancy()).await
}

/// An organisation with a campaign (`PTS`), a member `card-1` and that member's wallet `w-1`.
pub async fn wallet_fixture(store: &Store) -> (crate::Campaign, crate::Wallet) {
    ledger::testing::wallet_fixture(store.ledger()).await
}

/// `wallet_fixture` with the member's wallets `references`, for a migration's test on an older
/// schema (see `ledger::testing::old_schema_fixture`).
pub async fn old_schema_fixture(
    store: &Store,
    references: &[&str],
) -> (crate::Campaign, Vec<crate::Wallet>) {
    ledger::testing::old_schema_fixture(store.ledger(), references).await
}

/// Stores `pending` as earn requests without looking at what their ids hold, as nodes that
/// each checked an id at the same moment would.
pub async fn store_unchecked(
    store: &Store,
    pending: Vec<crate::PendingEarn>,
) -> Vec<crate::EarnRequest> {
    ledger::testing::store_unchecked(store.ledger(), pending).await
}
