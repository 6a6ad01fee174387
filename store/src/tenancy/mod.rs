//! Who may use the service: organisations (tenants) and their campaigns, API keys with the
//! interface version they speak, and SFTP users; and the scopes of these records
//! (`scope.rs`; the scope types are the seam's).

pub(crate) mod keys;
pub(crate) mod orgs;
pub(crate) mod scope;
pub(crate) mod sftp_bans;
pub(crate) mod sftp_users;
