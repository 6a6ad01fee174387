//! Whose data an operation touches. Every operation on a tenant's data takes its scope as a
//! type: an `OrgScope` for the organisation's own records (members, keys, SFTP users, batches,
//! mappings, exports, reviews across campaigns), a `&Campaign` for a campaign's (wallets, the
//! ledger, rules, tiers, the catalogue, orders, the leaderboard). Only the store's domain crates
//! make either, from a record they read for a checked identity (an authenticated key, an SFTP
//! login, an organisation or campaign looked up by the operator, a claimed batch), so no
//! operation can be called for an organisation that nobody looked up, and none can forget to
//! say which.
//!
//! The records a scope is made from carry a `Sealed` mark in a field private to the crate that
//! reads them, so no other crate can build one. `Sealed::vouched` and `OrgScope::vouched` are
//! public only because those crates are several; a test of the workspace's layout
//! (`tests/service/layout.rs`) fails when code outside `store/` names either.

/// A mark that only the store's domains put on a record: the records a scope is made from
/// (organisations, campaigns, keys, SFTP users, batches, export schedules) cannot be built
/// outside them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sealed(());

impl Sealed {
    /// The mark, for a record the calling domain has just read from the database.
    pub fn vouched() -> Sealed {
        Sealed(())
    }
}

/// One organisation, as the operations on its records act for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct OrgScope(String);

impl OrgScope {
    /// The scope of `org_id`, for a sealed record of that organisation's.
    pub fn vouched(org_id: &str) -> OrgScope {
        OrgScope(org_id.to_string())
    }

    /// The organisation's id.
    pub fn id(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for OrgScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Locks the organisation's row until the transaction ends: what counts one of its bounds
/// (its endpoints, its deliveries by hand) and then adds to it does so one at a time.
pub async fn lock_org<T: crate::backend::Tx>(
    tx: &mut T,
    org_id: &str,
) -> Result<(), crate::error::StoreError> {
    const ORG: &str = "SELECT id FROM organisations WHERE id = $1";
    let _: Option<(String,)> = tx.row_locked(ORG, params![org_id]).await?;
    Ok(())
}
