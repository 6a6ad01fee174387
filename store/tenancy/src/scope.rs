//! The scopes of tenancy's records (the types are the seam's, `seam::scope`): each record
//! read from the database gives the scope of its organisation.

use crate::OrgScope;

impl crate::Organisation {
    /// The scope of this organisation's records.
    pub fn scope(&self) -> OrgScope {
        OrgScope::vouched(&self.id)
    }
}

impl crate::Campaign {
    /// The scope of the organisation that runs this campaign.
    pub fn org(&self) -> OrgScope {
        OrgScope::vouched(&self.org_id)
    }
}

impl crate::ApiKey {
    /// The scope of the organisation that issued this key.
    pub fn org(&self) -> OrgScope {
        OrgScope::vouched(&self.org_id)
    }
}

impl crate::SftpUser {
    /// The scope of the organisation this user uploads for.
    pub fn org(&self) -> OrgScope {
        OrgScope::vouched(&self.org_id)
    }
}

impl crate::SftpLogin {
    /// The scope of the organisation whose tree this session sees.
    pub fn org(&self) -> OrgScope {
        OrgScope::vouched(&self.org_id)
    }
}
