//! Members: the people in a programme, with their identity-provider links and communication
//! preferences, reached through the `Members` handle. Members belong to an organisation (shared
//! by its campaigns). It sits on the seam and events alone: the ledger, orders and the
//! community find members here. Where things live:
//!
//! - `records.rs`: members and their preferences, created, read, changed and erased, and the
//!   records their events carry;
//! - `activities.rs`: what members did that rules may award, recorded here by every domain in
//!   its own transaction (the ledger awards them);
//! - `referrals.rs`: members' referral codes, the members they brought, and their conversion
//!   (in the transaction of the credit or activity that converts them);
//! - here: the handle, and finding a live member by id or external id.
//!
//! Deleting a member erases its personal data but keeps its row, so records that must stay for
//! the ledger (wallets, transactions, orders) still point at something; a deleted member is
//! never listed or found again.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

#[macro_use]
mod records;
pub mod activities;
pub mod referrals;

use seam::scope::OrgScope;
use seam::{Db, Page, Paged, StoreError, backend, common, error};

pub use records::*;

/// Members and their preferences. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Members {
    db: Db,
}

impl Members {
    /// The members in `db`.
    pub fn on(db: Db) -> Members {
        Members { db }
    }

    /// The live member with id `reference`, else the one with that external id.
    #[tracing::instrument(skip_all)]
    pub async fn member_id_by_reference(
        &self,
        org: &OrgScope,
        reference: &str,
    ) -> Result<Option<String>, StoreError> {
        self.member_id_of(org.id(), reference).await
    }

    /// Like `member_id_by_reference`, for the organisation with id `org_id` (a scope the
    /// caller holds already: a campaign's).
    #[tracing::instrument(skip_all)]
    pub async fn member_id_of(
        &self,
        org_id: &str,
        reference: &str,
    ) -> Result<Option<String>, StoreError> {
        Ok(self
            .member_by_reference(org_id, reference)
            .await?
            .map(|(id, _)| id))
    }

    /// Like `member_id_of`, with the member's external id.
    #[tracing::instrument(skip_all)]
    pub async fn member_by_reference(
        &self,
        org_id: &str,
        reference: &str,
    ) -> Result<Option<(String, Option<String>)>, StoreError> {
        const SQL: &str = "SELECT id, external_id FROM members WHERE org_id = $1 \
             AND deleted_at IS NULL AND (id = $2 OR external_id = $2) \
             ORDER BY CASE WHEN id = $2 THEN 0 ELSE 1 END LIMIT 1";
        self.read_row(SQL, params![org_id, reference]).await
    }
}

db_handle!(Members);
