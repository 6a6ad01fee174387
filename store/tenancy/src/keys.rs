//! API keys: issued by an operator for one organisation and campaign, checked on every request.
//!
//! A key is a public handle (`rk_` + 128 random bits) and a secret (`rs_` + 256 random bits).
//! Only the SHA-256 of the secret is stored. A slow password hash would cost milliseconds per
//! request; it buys nothing here because the secret is random and far too long to guess, so a
//! fast hash with a constant-time comparison is as safe and keeps thousands of requests a second
//! cheap.

use crate::OrgScope;
use seam::scope::Sealed;
use std::fmt;

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use crate::common::ids::{constant_time_eq, new_id, random_token, sha256};
use crate::error::known;
use crate::{ApiVersion, Campaign, StoreError, Tenancy};

string_enum! {
    /// Something a key may do beyond the ordinary operations, granted by an operator.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum Permission ("permission") {
        /// The vector-based product search.
        VectorSearch = "vector-search",
        /// Importing the campaign's catalogue over HTTP (`PUT /v1/catalogue`).
        CatalogueWrite = "catalogue-write",
        /// Redeeming members' codes (`POST /v1/codes/redeem`): for partners' keys.
        RedeemCodes = "redeem-codes",
        /// Managing the organisation's webhook endpoints (`/v1/webhooks`): their addresses,
        /// secrets, delivery logs and redeliveries.
        Webhooks = "webhooks",
        /// Exporting a member's own data (`GET /v1/members/{id}/data`): everything the service
        /// holds about the member, in every campaign of the organisation.
        MemberData = "member-data",
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKey {
    pub id: String,
    pub org_id: String,
    pub campaign_id: String,
    /// The full public handle. Shown to the operator when issued; the API shows `obfuscated()`.
    pub api_key: String,
    pub permissions: Vec<Permission>,
    /// The version a request gets when it sends no `x-api-version`.
    pub version: Option<ApiVersion>,
    /// A read-only key may only read (GET); anything else is 403. For dashboards and reports.
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
    pub(crate) sealed: Sealed,
}

impl ApiKey {
    /// The key with its middle hidden, e.g. `rk_3f9a…c1d2`: enough to recognise, not to use.
    pub fn obfuscated(&self) -> String {
        let key = &self.api_key;
        match (key.get(..7), key.get(key.len().saturating_sub(4)..)) {
            (Some(head), Some(tail)) if key.len() > 11 => format!("{head}…{tail}"),
            _ => "…".to_string(),
        }
    }

    pub fn allows(&self, permission: Permission) -> bool {
        self.permissions.contains(&permission)
    }
}

#[derive(Debug, Clone, Default)]
pub struct NewKey {
    pub campaign_id: String,
    pub permissions: Vec<Permission>,
    pub version: Option<ApiVersion>,
    pub read_only: bool,
}

/// A freshly issued key with its secret: the only time the secret exists outside the caller.
pub struct IssuedKey {
    pub key: ApiKey,
    pub secret: String,
}

impl fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IssuedKey")
            .field("key", &self.key)
            .field("secret", &"<redacted>")
            .finish()
    }
}

/// What a request learns about its caller once its key is checked.
#[derive(Debug, Clone)]
pub struct KeyContext {
    pub key: ApiKey,
    /// The organisation the key acts for.
    pub org: OrgScope,
    /// The campaign the key acts in.
    pub campaign: Campaign,
}

macro_rules! key_columns {
    () => {
        "k.id, k.org_id, k.campaign_id, k.api_key, k.permissions, k.version, k.read_only, \
         k.created_at, k.revoked_at"
    };
}

type KeyRow = (
    String,
    String,
    String,
    String,
    Json<Vec<String>>,
    Option<String>,
    bool,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

fn key_from_row(row: KeyRow) -> Result<ApiKey, StoreError> {
    let (id, org_id, campaign_id, api_key, permissions, version, read_only, created_at, revoked_at) =
        row;
    Ok(ApiKey {
        id,
        org_id,
        campaign_id,
        api_key,
        // A permission this build does not know (granted by a newer one) is simply not held.
        permissions: permissions
            .0
            .iter()
            .filter_map(|p| p.parse().ok())
            .collect(),
        version: match version {
            Some(v) => Some(known(v.parse().ok(), "api_keys", "version", &v)?),
            None => None,
        },
        read_only,
        created_at,
        revoked_at,
        sealed: Sealed::vouched(),
    })
}

/// API keys: issue, list and revoke an organisation's keys, and authenticate a request (which gives
/// the caller's `KeyContext` with its scopes).
impl Tenancy {
    /// Issues a key for a campaign of organisation `org_id`. The returned secret is not kept.
    #[tracing::instrument(skip_all)]
    pub async fn issue_key(&self, org: &OrgScope, new: NewKey) -> Result<IssuedKey, StoreError> {
        let org_id = org.id();
        self.get_campaign(org, &new.campaign_id).await?;
        let mut permissions = new.permissions;
        permissions.sort_by_key(|p| p.as_str());
        permissions.dedup();
        let key = ApiKey {
            id: new_id(),
            org_id: org_id.to_string(),
            campaign_id: new.campaign_id,
            api_key: random_token("rk_", 16),
            permissions,
            version: new.version,
            read_only: new.read_only,
            created_at: self.now(),
            revoked_at: None,
            sealed: Sealed::vouched(),
        };
        let secret = random_token("rs_", 32);
        let names: Vec<&str> = key.permissions.iter().map(|p| p.as_str()).collect();
        self.execute(
            "INSERT INTO api_keys \
             (id, org_id, campaign_id, api_key, secret_hash, permissions, version, read_only, \
             created_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
            params![
                key.id,
                key.org_id,
                key.campaign_id,
                key.api_key,
                sha256(&secret)[..],
                serde_json::json!(names),
                key.version
                    .map(seam::common::api_version::ApiVersion::as_str),
                key.read_only,
                key.created_at
            ],
        )
        .await?;
        Ok(IssuedKey { key, secret })
    }

    #[tracing::instrument(skip_all)]
    pub async fn list_keys(&self, org: &OrgScope) -> Result<Vec<ApiKey>, StoreError> {
        let org_id = org.id();
        const SQL: &str = concat!(
            "SELECT ",
            key_columns!(),
            " FROM api_keys k WHERE k.org_id = $1 ORDER BY k.id"
        );
        let rows: Vec<KeyRow> = self.read_rows(SQL, params![org_id]).await?;
        rows.into_iter().map(key_from_row).collect()
    }

    /// Revokes key `key_id` (its record id): requests with it get 401 from then on. Revoking a
    /// revoked key changes nothing and returns it as it is.
    #[tracing::instrument(skip_all)]
    pub async fn revoke_key(&self, key_id: &str) -> Result<ApiKey, StoreError> {
        const REVOKE: &str =
            "UPDATE api_keys SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1";
        const SELECT: &str = concat!(
            "SELECT ",
            key_columns!(),
            " FROM api_keys k WHERE k.id = $1"
        );
        self.execute(REVOKE, params![key_id, self.now()]).await?;
        let row: Option<KeyRow> = self.read_row(SELECT, params![key_id]).await?;
        let key = row
            .ok_or(StoreError::NotFound { what: "API key" })
            .and_then(key_from_row)?;
        Ok(key)
    }

    /// The caller behind `api_key` if `secret` is its secret and the key is not revoked.
    /// An unknown key, a wrong secret and a revoked key all give `None`, alike.
    #[tracing::instrument(skip_all)]
    pub async fn authenticate(
        &self,
        api_key: &str,
        secret: &str,
    ) -> Result<Option<KeyContext>, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            key_columns!(),
            ", k.secret_hash, c.name, c.currency, c.logo, c.favicon, c.created_at \
             FROM api_keys k JOIN campaigns c ON c.id = k.campaign_id WHERE k.api_key = $1"
        );
        row_struct! {
            /// The key (`key_columns!`), its secret's hash and its campaign.
            struct Row {
                id: String,
                org_id: String,
                campaign_id: String,
                api_key: String,
                permissions: Json<Vec<String>>,
                version: Option<String>,
                read_only: bool,
                created_at: DateTime<Utc>,
                revoked_at: Option<DateTime<Utc>>,
                secret_hash: Vec<u8>,
                campaign_name: String,
                currency: String,
                logo: Option<String>,
                favicon: Option<String>,
                campaign_created_at: DateTime<Utc>,
            }
        }
        let presented = sha256(secret);
        let row: Option<Row> = self.read_row(SQL, params![api_key]).await?;
        let Some(r) = row else { return Ok(None) };
        if !constant_time_eq(&presented, &r.secret_hash) || r.revoked_at.is_some() {
            return Ok(None);
        }
        let key = key_from_row((
            r.id,
            r.org_id,
            r.campaign_id,
            r.api_key,
            r.permissions,
            r.version,
            r.read_only,
            r.created_at,
            r.revoked_at,
        ))?;
        let campaign = Campaign {
            id: key.campaign_id.clone(),
            org_id: key.org_id.clone(),
            name: r.campaign_name,
            currency: r.currency,
            logo: r.logo,
            favicon: r.favicon,
            created_at: r.campaign_created_at,
            sealed: Sealed::vouched(),
        };
        Ok(Some(KeyContext {
            org: key.org(),
            key,
            campaign,
        }))
    }
}
