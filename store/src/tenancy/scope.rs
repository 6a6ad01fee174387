//! Whose data an operation touches. Every operation on a tenant's data takes its scope as a
//! type: an `OrgScope` for the organisation's own records (members, keys, SFTP users, batches,
//! mappings, exports, reviews across campaigns), a `&Campaign` for a campaign's (wallets, the
//! ledger, rules, tiers, the catalogue, orders, the leaderboard). Only the store makes either,
//! from a record it read for a checked identity (an authenticated key, an SFTP login, an
//! organisation or campaign looked up by the operator, a claimed batch), so no operation can be
//! called for an organisation that nobody looked up, and none can forget to say which.

/// A mark that only the store can put on a record: the records a scope is made from
/// (organisations, campaigns, keys, SFTP users, batches) cannot be built outside it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Sealed(());

/// One organisation, as the operations on its records act for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct OrgScope(String);

impl OrgScope {
    pub(crate) fn new(org_id: &str) -> OrgScope {
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

impl crate::Organisation {
    /// The scope of this organisation's records.
    pub fn scope(&self) -> OrgScope {
        OrgScope::new(&self.id)
    }
}

impl crate::Campaign {
    /// The scope of the organisation that runs this campaign.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}

impl crate::ApiKey {
    /// The scope of the organisation that issued this key.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}

impl crate::SftpUser {
    /// The scope of the organisation this user uploads for.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}

impl crate::ExportSchedule {
    /// The scope of the organisation whose export this is.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}

impl crate::SftpLogin {
    /// The scope of the organisation whose tree this session sees.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}

impl crate::Batch {
    /// The scope of the organisation whose file this is.
    pub fn org(&self) -> OrgScope {
        OrgScope::new(&self.org_id)
    }
}
