//! Who may use the service: organisations (tenants) and their campaigns, API keys with the
//! interface version they speak, SFTP users and the addresses banned from SFTP, reached through
//! the `Tenancy` handle. It sits on the seam alone: every other domain reads its records (a
//! `Campaign` is the scope most operations take) and none is read by it. Where things live:
//!
//! - `orgs.rs`: organisations and campaigns, and the lookups that give their scopes;
//! - `keys.rs`: API keys, their permissions, and the authentication of a request's key;
//! - `sftp_users.rs`: SFTP users, their passwords (argon2id) and public keys, and logins;
//! - `passwords.rs`: argon2id hashes of SFTP users' and operators' passwords;
//! - `sftp_bans.rs`: addresses banned from the SFTP door after failed logins;
//! - `scope.rs`: the organisation scope each record gives (the types are the seam's).

#[macro_use]
extern crate seam;

pub mod keys;
pub mod orgs;
pub mod passwords;
mod scope;
pub mod sftp_bans;
pub mod sftp_users;

use seam::{Db, common, error};

pub use keys::{ApiKey, IssuedKey, KeyContext, NewKey, Permission};
pub use orgs::{Campaign, CampaignRow, NewCampaign, Organisation, campaign_from_row};
pub use passwords::MIN_PASSWORD;
use seam::StoreError;
use seam::common::api_version::ApiVersion;
pub use seam::scope::OrgScope;
pub use sftp_bans::SftpBan;
pub use sftp_users::{NewSftpKey, NewSftpUser, SftpKey, SftpLogin, SftpUser};

/// Organisations, campaigns, keys and SFTP users. Cheap to clone.
#[derive(Clone)]
pub struct Tenancy {
    db: Db,
    /// `org id:campaign id` -> the campaign, shared by the handle's clones. A campaign never
    /// changes once made, so an entry is read as it is (`Cache::any`).
    campaigns: std::sync::Arc<common::cache::Cache<Campaign>>,
}

impl std::fmt::Debug for Tenancy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tenancy")
            .field("db", &self.db)
            .finish_non_exhaustive()
    }
}

impl Tenancy {
    /// Tenancy's records in `db`.
    pub fn on(db: Db) -> Tenancy {
        let campaigns = std::sync::Arc::new(common::cache::Cache::on(db.clock().clone()));
        Tenancy { db, campaigns }
    }
}

db_handle!(Tenancy);
