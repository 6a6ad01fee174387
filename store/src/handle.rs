//! `Store`: the database with the domains' handles (`tenancy()`, `members()`, `programme()`,
//! `catalogue()`, `community()`, `events()`) and what the domains still in this crate keep
//! beside it (their caches, the dates a transaction may carry).

use std::sync::Arc;

use rules::RuleSet;
use seam::common::cache::Cache;

use crate::{
    CatalogueStore, Community, DateWindow, Db, Events, Members, Programme, StoreError, Tenancy,
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
    pub(crate) caches: Arc<Caches>,
    /// How far ahead of the clock a transaction may be dated (`DateWindow`).
    pub(crate) dates_ahead: chrono::Duration,
}

/// The caches a store keeps, shared by its clones.
pub(crate) struct Caches {
    /// `campaign id:version` -> that rule-set version, compiled (a partial return rounds by it).
    pub rule_sets: Cache<Arc<RuleSet>>,
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
        let programme = Programme::on(db.clone());
        Store {
            tenancy: Tenancy::on(db.clone()),
            members: Members::on(db.clone()),
            catalogue: CatalogueStore::on(programme.clone()),
            programme,
            community: Community::on(db.clone()),
            events: Events::on(db.clone()),
            db,
            caches: Arc::new(Caches {
                rule_sets: Cache::default(),
            }),
            dates_ahead: crate::DATES_AHEAD,
        }
    }

    /// Opens (creating if missing) the SQLite database file at `path`, in WAL mode.
    pub async fn open_sqlite(path: &std::path::Path) -> Result<Store, StoreError> {
        Db::open_sqlite(path).await.map(Store::on)
    }

    /// Connects to `url`: `postgres://` or `postgresql://` for PostgreSQL, `sqlite:` for SQLite.
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

    /// The database under this store.
    pub fn db(&self) -> &Db {
        &self.db
    }

    /// This store, letting transactions be dated up to `ahead` past the clock (`DATES_AHEAD`
    /// unless set).
    pub fn with_dates_ahead(mut self, ahead: chrono::Duration) -> Store {
        self.dates_ahead = ahead;
        self
    }

    /// The dates a transaction may carry now; an earn of a campaign that allows earns at most
    /// `back_days` old, no further back.
    pub fn date_window(&self, back_days: Option<u32>) -> DateWindow {
        DateWindow::at(crate::common::ids::now(), self.dates_ahead, back_days)
    }
}
