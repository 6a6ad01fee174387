//! SFTP users: issued by an operator for one organisation, logging in with a password (kept as
//! an argon2id hash) and/or public keys. A key belongs to exactly one user, so a key can never
//! log in as anyone else; a disabled user cannot log in at all.

use crate::OrgScope;
use seam::scope::Sealed;

use chrono::{DateTime, Utc};

use crate::common::ids::new_id;
use crate::error::conflict_on;
use crate::passwords::{DECOY_HASH, blocking, hash_password, verify_password};
use crate::{StoreError, Tenancy};

#[derive(Debug, Clone, PartialEq)]
pub struct SftpUser {
    pub id: String,
    pub org_id: String,
    pub username: String,
    pub has_password: bool,
    pub keys: Vec<SftpKey>,
    pub disabled_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub(crate) sealed: Sealed,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SftpKey {
    /// `SHA256:...`, as `ssh-keygen -l` prints it.
    pub fingerprint: String,
    /// The key in OpenSSH's one-line format.
    pub public_key: String,
    pub created_at: DateTime<Utc>,
}

/// A public key as parsed by the caller (the store does not parse key formats).
#[derive(Debug, Clone)]
pub struct NewSftpKey {
    pub fingerprint: String,
    pub public_key: String,
}

#[derive(Debug, Clone, Default)]
pub struct NewSftpUser {
    pub username: String,
    pub password: Option<String>,
    pub key: Option<NewSftpKey>,
}

/// Who logged in: the organisation whose tree the session sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SftpLogin {
    pub user_id: String,
    pub org_id: String,
    pub username: String,
    pub(crate) sealed: Sealed,
}

fn check_username(username: &str) -> Result<(), StoreError> {
    let valid = (1..=64).contains(&username.len())
        && username
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        && !username.starts_with(['.', '-']);
    if valid {
        Ok(())
    } else {
        Err(StoreError::invalid(
            "username",
            "use 1 to 64 of a-z, 0-9, '.', '_' and '-', not starting with '.' or '-'",
        ))
    }
}

type KeyRow = (String, String, String, DateTime<Utc>);
type UserRow = (
    String,
    String,
    String,
    Option<String>,
    Option<DateTime<Utc>>,
    DateTime<Utc>,
);

/// SFTP users: an organisation's upload accounts, their keys and passwords, and logins (scope:
/// `OrgScope`; logins are how a session gets one).
impl Tenancy {
    /// Issues an SFTP user for organisation `org_id`, with a password, a key, or both.
    #[tracing::instrument(skip_all)]
    pub async fn create_sftp_user(
        &self,
        org: &OrgScope,
        new: NewSftpUser,
    ) -> Result<SftpUser, StoreError> {
        let org_id = org.id();
        self.get_org(org_id).await?;
        check_username(&new.username)?;
        if new.password.is_none() && new.key.is_none() {
            return Err(StoreError::invalid(
                "password",
                "give a password, a public key, or both",
            ));
        }
        let password_hash = match new.password {
            Some(password) => Some(blocking(move || hash_password(&password)).await?),
            None => None,
        };
        let id = new_id();
        let created_at = self.now();
        self.execute(
            "INSERT INTO sftp_users (id, org_id, username, password_hash, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            params![&id, org_id, &new.username, &password_hash, created_at],
        )
        .await
        .map_err(|e| conflict_on(e, &[("username", "username")]))?;
        if let Some(key) = new.key
            && let Err(err) = self.add_sftp_key(org, &new.username, key).await
        {
            // A user is issued whole or not at all.
            self.remove_sftp_user(org, &new.username).await?;
            return Err(err);
        }
        self.get_sftp_user(org, &new.username).await
    }

    /// Adds a public key to a user. A key already held by any user is a conflict.
    #[tracing::instrument(skip_all)]
    pub async fn add_sftp_key(
        &self,
        org: &OrgScope,
        username: &str,
        key: NewSftpKey,
    ) -> Result<SftpKey, StoreError> {
        let user = self.get_sftp_user(org, username).await?;
        let added = SftpKey {
            fingerprint: key.fingerprint,
            public_key: key.public_key,
            created_at: self.now(),
        };
        self.execute(
            "INSERT INTO sftp_keys (id, user_id, fingerprint, public_key, created_at) \
                 VALUES ($1, $2, $3, $4, $5)",
            params![
                new_id(),
                &user.id,
                &added.fingerprint,
                &added.public_key,
                added.created_at
            ],
        )
        .await
        .map_err(|e| conflict_on(e, &[("fingerprint", "publicKey")]))?;
        Ok(added)
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_sftp_user(
        &self,
        org: &OrgScope,
        username: &str,
    ) -> Result<SftpUser, StoreError> {
        let org_id = org.id();
        let users = self.sftp_users(org_id, Some(username)).await?;
        users
            .into_iter()
            .next()
            .ok_or(StoreError::NotFound { what: "SFTP user" })
    }

    #[tracing::instrument(skip_all)]
    pub async fn list_sftp_users(&self, org: &OrgScope) -> Result<Vec<SftpUser>, StoreError> {
        let org_id = org.id();
        self.sftp_users(org_id, None).await
    }

    async fn sftp_users(
        &self,
        org_id: &str,
        username: Option<&str>,
    ) -> Result<Vec<SftpUser>, StoreError> {
        const USERS: &str = "SELECT id, org_id, username, password_hash, disabled_at, created_at \
             FROM sftp_users WHERE org_id = $1 AND ($2 IS NULL OR username = $2) ORDER BY username";
        const KEYS: &str = "SELECT k.user_id, k.fingerprint, k.public_key, k.created_at \
             FROM sftp_keys k JOIN sftp_users u ON u.id = k.user_id \
             WHERE u.org_id = $1 AND ($2 IS NULL OR u.username = $2) ORDER BY k.created_at";
        let users: Vec<UserRow> = self.read_rows(USERS, params![org_id, username]).await?;
        let keys: Vec<KeyRow> = self.read_rows(KEYS, params![org_id, username]).await?;
        Ok(users
            .into_iter()
            .map(
                |(id, org_id, username, hash, disabled_at, created_at)| SftpUser {
                    keys: keys
                        .iter()
                        .filter(|k| k.0 == id)
                        .map(|k| SftpKey {
                            fingerprint: k.1.clone(),
                            public_key: k.2.clone(),
                            created_at: k.3,
                        })
                        .collect(),
                    id,
                    org_id,
                    username,
                    has_password: hash.is_some(),
                    disabled_at,
                    created_at,
                    sealed: Sealed::vouched(),
                },
            )
            .collect())
    }

    /// Stops a user from logging in (sessions already open are not cut).
    #[tracing::instrument(skip_all)]
    pub async fn disable_sftp_user(
        &self,
        org: &OrgScope,
        username: &str,
    ) -> Result<SftpUser, StoreError> {
        let org_id = org.id();
        let changed = self
            .execute(
                "UPDATE sftp_users SET disabled_at = COALESCE(disabled_at, $3) \
                 WHERE org_id = $1 AND username = $2",
                params![org_id, username, self.now()],
            )
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "SFTP user" });
        }
        self.get_sftp_user(org, username).await
    }

    /// Removes a user and its keys; the batches it uploaded keep its name.
    #[tracing::instrument(skip_all)]
    pub async fn remove_sftp_user(&self, org: &OrgScope, username: &str) -> Result<(), StoreError> {
        let user = self.get_sftp_user(org, username).await?;
        let user = params![user.id];
        self.execute_all(&[
            ("DELETE FROM sftp_keys WHERE user_id = $1", user),
            ("DELETE FROM sftp_users WHERE id = $1", user),
        ])
        .await?;
        Ok(())
    }

    /// The login for `username` with `password`, if both are right and the user is enabled.
    #[tracing::instrument(skip_all)]
    pub async fn sftp_login_password(
        &self,
        username: &str,
        password: &str,
    ) -> Result<Option<SftpLogin>, StoreError> {
        let row: Option<(String, String, Option<String>)> = self
            .read_row(
                "SELECT id, org_id, password_hash FROM sftp_users \
                 WHERE username = $1 AND disabled_at IS NULL",
                params![username],
            )
            .await?;
        // An unknown user costs the same hash as a known one, so timing tells nothing.
        let hash = row
            .as_ref()
            .and_then(|r| r.2.clone())
            .unwrap_or_else(|| DECOY_HASH.clone());
        let password = password.to_string();
        let matches = blocking(move || Ok(verify_password(&password, &hash))).await?;
        Ok(row
            .filter(|r| matches && r.2.is_some())
            .map(|(user_id, org_id, _)| SftpLogin {
                user_id,
                org_id,
                username: username.to_string(),
                sealed: Sealed::vouched(),
            }))
    }

    /// The login for `username` presenting the key with `fingerprint`, if that key is this
    /// user's and the user is enabled.
    #[tracing::instrument(skip_all)]
    pub async fn sftp_login_key(
        &self,
        username: &str,
        fingerprint: &str,
    ) -> Result<Option<SftpLogin>, StoreError> {
        let row: Option<(String, String)> = self
            .read_row(
                "SELECT u.id, u.org_id FROM sftp_keys k JOIN sftp_users u ON u.id = k.user_id \
                 WHERE k.fingerprint = $1 AND u.username = $2 AND u.disabled_at IS NULL",
                params![fingerprint, username],
            )
            .await?;
        Ok(row.map(|(user_id, org_id)| SftpLogin {
            user_id,
            org_id,
            username: username.to_string(),
            sealed: Sealed::vouched(),
        }))
    }
}
