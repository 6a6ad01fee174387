//! A campaign's programme: its policies (minimum balance, expiry, pending days, transfers),
//! tiers, versioned rule sets and the compiled rule book, reached through the `Programme`
//! handle. It sits on the seam, tenancy (a `Campaign` is its scope) and events (a tier change's
//! record); the ledger evaluates earns under it. Where things live:
//!
//! - `policies.rs`: the policy of a campaign, cached per process and dropped when it is set;
//! - `tiers.rs`: tiers and their thresholds, and `tier_for!`, the one SQL choice of a
//!   wallet's tier the ledger's statements embed;
//! - `rule_sets.rs`: the stored, versioned rule sets;
//! - `rule_book.rs`: each campaign's rule sets compiled, cached once per process (the API, the
//!   batch pipeline and corrections read the same).

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

pub mod policies;
pub mod rule_book;
pub mod rule_sets;
#[macro_use]
pub mod tiers;

use std::sync::Arc;

use rules::RuleSet;
use seam::common::cache::Cache;
use seam::{Db, Page, Paged, StoreError, Tokens, common, error};
use tenancy::Campaign;

pub use policies::{Expiry, ExpiryFrom, Policy, Shortfall, Transfers};
pub use rule_book::RuleBook;
pub use rule_sets::RuleSetVersion;
pub use tiers::{NewTier, Tier, TierChanged, TierRef};

/// Policies, tiers and rule sets. Cheap to clone: clones share the caches.
#[derive(Clone)]
pub struct Programme {
    db: Db,
    caches: Arc<Caches>,
}

/// What the programme keeps in memory, shared by the handle's clones.
struct Caches {
    /// Campaign id -> its policy.
    policies: Cache<Policy>,
    /// Campaign id -> its active rule-set version and that set compiled (`RuleBook`).
    active_rules: Cache<(Option<i64>, Arc<RuleSet>)>,
    /// `campaign id:version` -> that version compiled (a version never changes).
    versions: Cache<Arc<RuleSet>>,
}

impl Programme {
    /// The programme's records in `db`.
    pub fn on(db: Db) -> Programme {
        let clock = db.clock().clone();
        Programme {
            db,
            caches: Arc::new(Caches {
                policies: Cache::on(clock.clone()),
                active_rules: Cache::on(clock.clone()),
                versions: Cache::on(clock),
            }),
        }
    }

    /// This programme on `db` (the same database, its writes made for an operator's action),
    /// sharing this handle's caches.
    pub fn on_same(&self, db: Db) -> Programme {
        Programme {
            db,
            caches: self.caches.clone(),
        }
    }
}

db_handle!(Programme);

impl std::fmt::Debug for Programme {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}
