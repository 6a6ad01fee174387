//! Members among themselves: each campaign's leaderboard and members' reviews, reached through
//! the `Community` handle. It reads the ledger's and the catalogue's tables but calls no other
//! domain: it sits on the seam, tenancy (a `Campaign` is its scope), members (who wrote
//! or reported a review) and events (a review's events). Where things live:
//!
//! - `leaderboard/`: the ranking, a snapshot rebuilt on an interval (`build.rs`, with its
//!   SQLite and PostgreSQL halves) and read by rank (`read.rs`);
//! - `reviews/`: reviews with their profanity scores (`profanity.rs`), reports and
//!   moderation, written in `write.rs` and read in `read.rs`.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

pub mod leaderboard;
pub mod reviews;

use seam::scope::OrgScope;
use seam::{Db, Page, Paged, StoreError, Tokens, backend, common, error};
use tenancy::Campaign;

pub use leaderboard::{Built, Neighbourhood, Snapshot, Standing, display_name};

/// The leaderboards and the reviews. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Community {
    db: Db,
    /// Where reviewers and reporters are found by reference.
    members: members::Members,
}

impl Community {
    /// The community's records in `db`.
    pub fn on(db: Db) -> Community {
        Community {
            members: members::Members::on(db.clone()),
            db,
        }
    }
}

db_handle!(Community);
