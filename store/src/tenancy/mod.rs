//! Who may use the service: organisations (tenants) and their campaigns, API keys with the
//! interface version they speak, and SFTP users.

pub(crate) mod api_version;
pub(crate) mod keys;
pub(crate) mod orgs;
pub(crate) mod sftp_users;
