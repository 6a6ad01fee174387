//! Who may use the service: organisations (tenants) and their campaigns, API keys with the
//! interface version they speak, and SFTP users; and
//! the scopes every operation on a tenant's data takes (`scope.rs`).

pub(crate) mod api_version;
pub(crate) mod keys;
pub(crate) mod orgs;
pub(crate) mod scope;
pub(crate) mod sftp_bans;
pub(crate) mod sftp_users;
