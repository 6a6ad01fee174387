//! `Store`: the database with the domains' handles (`tenancy()`, `members()`, `programme()`,
//! `ledger()`, `batches()`, `orders()`, `catalogue()`, `community()`, `events()`,
//! `operators()`).

use crate::{
    Batches, CatalogueStore, Community, Db, Events, Ledger, Members, Operators, Orders, Programme,
    StoreError, Tenancy,
};

/// The system of record. Cheap to clone: clones share one connection pool and its caches.
#[derive(Clone)]
pub struct Store {
    db: Db,
    tenancy: Tenancy,
    members: Members,
    programme: Programme,
    catalogue: CatalogueStore,
    community: Community,
    events: Events,
    ledger: Ledger,
    batches: Batches,
    orders: Orders,
    operators: Operators,
}

db_handle!(Store);

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}

impl Store {
    /// The store on `db`.
    pub fn on(db: Db) -> Store {
        Store::composed(db.clone(), Programme::on(db), crate::DATES_AHEAD)
    }

    /// Every handle made once, in one place: those built on the ledger see its dates.
    fn composed(db: Db, programme: Programme, dates_ahead: chrono::Duration) -> Store {
        let members = Members::on(db.clone());
        let tenancy = Tenancy::on(db.clone());
        let ledger = Ledger::on(db.clone(), programme.clone(), members.clone())
            .with_dates_ahead(dates_ahead);
        Store {
            batches: Batches::on(db.clone(), tenancy.clone(), ledger.clone()),
            orders: Orders::on(db.clone(), ledger.clone()),
            tenancy,
            ledger,
            members,
            catalogue: CatalogueStore::on(programme.clone()),
            programme,
            community: Community::on(db.clone()),
            events: Events::on(db.clone()),
            operators: Operators::on(db.clone()),
            db,
        }
    }

    /// Opens (creating if missing) the SQLite database file at `path`, in WAL mode.
    #[tracing::instrument(skip_all)]
    pub async fn open_sqlite(path: &std::path::Path) -> Result<Store, StoreError> {
        Db::open_sqlite(path).await.map(Store::on)
    }

    /// Connects to `url`: `postgres://` or `postgresql://` for PostgreSQL, `sqlite:` for SQLite.
    #[tracing::instrument(skip_all)]
    pub async fn connect(url: &str, max_connections: u32) -> Result<Store, StoreError> {
        Db::connect(url, max_connections).await.map(Store::on)
    }

    /// Who may use the service: organisations, campaigns, API keys, SFTP users.
    pub fn tenancy(&self) -> &Tenancy {
        &self.tenancy
    }

    /// The people in the programme.
    pub fn members(&self) -> &Members {
        &self.members
    }

    /// A campaign's policies, tiers and rule sets.
    pub fn programme(&self) -> &Programme {
        &self.programme
    }

    /// Wallets and their transactions: earns, spends, corrections, expiry, the audit.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// Batch files received, their rows credited or reversed, and column mappings.
    pub fn batches(&self) -> &Batches {
        &self.batches
    }

    /// Orders of rewards paid with points, their codes and bookings.
    pub fn orders(&self) -> &Orders {
        &self.orders
    }

    /// The campaigns' reward catalogues as stored.
    pub fn catalogue(&self) -> &CatalogueStore {
        &self.catalogue
    }

    /// Members among themselves: the leaderboards and reviews.
    pub fn community(&self) -> &Community {
        &self.community
    }

    /// Events out: the feed, webhook endpoints and their deliveries.
    pub fn events(&self) -> &Events {
        &self.events
    }

    /// The people who run the service: operator accounts and their roles.
    pub fn operators(&self) -> &Operators {
        &self.operators
    }

    /// The database under this store.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// This store, letting transactions be dated up to `ahead` past the clock (`DATES_AHEAD`
    /// unless set).
    pub fn with_dates_ahead(self, ahead: chrono::Duration) -> Store {
        Store::composed(self.db, self.programme, ahead)
    }

    /// What an operator of `role` (the command line: an owner) may adjust by hand: its limit
    /// per adjustment and the approval threshold, as the owner set them.
    pub async fn adjustment_rules(
        &self,
        role: operators::Role,
    ) -> Result<ledger::AdjustmentRules, StoreError> {
        let limits = self.operators.adjustment_limits().await?;
        Ok(ledger::AdjustmentRules {
            limit: limits.limit_of(role),
            approval_over: limits.approval_over,
        })
    }

    /// Runs `action` for an operator: each write it makes that changes a row appends `trail`'s
    /// entry to the audit trail in the same transaction; if it fails, one entry says so (a
    /// success that changed nothing leaves none). The store it is given shares this store's
    /// caches.
    pub async fn acting<T, E, F>(
        &self,
        trail: std::sync::Arc<seam::audit::Trail>,
        action: impl FnOnce(Store) -> F,
    ) -> Result<T, E>
    where
        F: std::future::Future<Output = Result<T, E>>,
        E: From<StoreError> + std::fmt::Display,
    {
        let db = self.db.acting(trail.clone());
        let acting = Store::composed(
            db.clone(),
            self.programme.on_same(db),
            self.ledger.dates_ahead(),
        );
        let result = action(acting).await;
        trail.close(&self.db, &result).await?;
        result
    }
}
