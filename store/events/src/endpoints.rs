//! Webhook endpoints: where an organisation's events are delivered (scope: `OrgScope`).
//!
//! An endpoint takes the organisation's events of the types it lists (every type when it lists
//! none), of one campaign or of all, in the shapes of one API version. Its signing secret is
//! kept encrypted with the service's data key (`CodeKey`); the caller makes secrets and checks
//! addresses (the API's `webhooks` module). A rotation keeps the secret before signing beside
//! the new one until the window given ends.

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use crate::backend::{Arg, Steps, Tx};
use crate::common::api_version::ApiVersion;
use crate::common::codes::CodeKey;
use crate::common::ids::new_id;
use crate::error::StoreError;
use crate::{EventType, Events};
use seam::scope::OrgScope;
use seam::{Page, Paged};

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum EndpointStatus ("endpoint status") {
        Enabled = "enabled",
        Disabled = "disabled",
    }
}

/// The longest endpoint address kept.
pub use seam::limits::MAX_URL;

#[derive(Debug, Clone, PartialEq)]
pub struct WebhookEndpoint {
    pub id: String,
    pub org_id: String,
    /// `None`: every campaign's events (and the organisation's own).
    pub campaign_id: Option<String>,
    pub url: String,
    pub description: Option<String>,
    /// Empty: every type.
    pub event_types: Vec<EventType>,
    pub api_version: ApiVersion,
    pub status: EndpointStatus,
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed.
    pub failing_since: Option<DateTime<Utc>>,
    /// While a rotation's window lasts: when the secret before stops signing.
    pub previous_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl WebhookEndpoint {
    /// Whether the endpoint takes events of `kind` from `campaign_id`.
    pub fn wants(&self, kind: EventType, campaign_id: Option<&str>) -> bool {
        let campaign = match (&self.campaign_id, campaign_id) {
            (Some(mine), Some(theirs)) => mine == theirs,
            _ => true,
        };
        campaign && (self.event_types.is_empty() || self.event_types.contains(&kind))
    }
}

/// A new endpoint. `secret` is the signing secret in the form receivers are given (`whsec_...`).
#[derive(Debug, Clone)]
pub struct NewEndpoint {
    pub campaign_id: Option<String>,
    pub url: String,
    pub description: Option<String>,
    pub event_types: Vec<EventType>,
    pub api_version: ApiVersion,
    pub secret: String,
}

/// What an update changes; `None` keeps the field.
#[derive(Debug, Clone, Default)]
pub struct EndpointPatch {
    pub url: Option<String>,
    pub description: Option<Option<String>>,
    pub event_types: Option<Vec<EventType>>,
    pub api_version: Option<ApiVersion>,
    /// Enabling clears the reason and the failing time; disabling by hand gives the reason.
    pub status: Option<EndpointStatus>,
}

/// The secrets that sign an endpoint's deliveries now: the current one, and during a rotation
/// the one before.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Secrets {
    pub current: String,
    pub previous: Option<String>,
}

row_struct! {
    pub(crate) struct EndpointRow {
        id: String,
        org_id: String,
        campaign_id: Option<String>,
        url: String,
        description: Option<String>,
        event_types: Json<Vec<String>>,
        api_version: String,
        status: String,
        disabled_reason: Option<String>,
        failing_since: Option<DateTime<Utc>>,
        previous_until: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

pub(crate) const ENDPOINT_COLUMNS: &str = "id, org_id, campaign_id, url, description, \
     event_types, api_version, status, disabled_reason, failing_since, previous_until, \
     created_at, updated_at";

pub(crate) fn endpoint_from_row(row: EndpointRow) -> Result<WebhookEndpoint, StoreError> {
    let table = "webhook_endpoints";
    let event_types = row
        .event_types
        .0
        .iter()
        .map(|t| crate::error::known(EventType::parse(t), table, "event_types", t))
        .collect::<Result<_, _>>()?;
    Ok(WebhookEndpoint {
        api_version: crate::error::known(
            ApiVersion::parse(&row.api_version),
            table,
            "api_version",
            &row.api_version,
        )?,
        status: crate::error::known(
            EndpointStatus::parse(&row.status),
            table,
            "status",
            &row.status,
        )?,
        id: row.id,
        org_id: row.org_id,
        campaign_id: row.campaign_id,
        url: row.url,
        description: row.description,
        event_types,
        disabled_reason: row.disabled_reason,
        failing_since: row.failing_since,
        previous_until: row.previous_until,
        created_at: row.created_at,
        updated_at: row.updated_at,
    })
}

fn types_json(types: &[EventType]) -> String {
    let mut names: Vec<&str> = types.iter().map(|t| t.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    serde_json::Value::from(names).to_string()
}

fn check_url(url: &str) -> Result<(), StoreError> {
    if url.is_empty() || url.chars().count() > MAX_URL {
        return Err(StoreError::invalid(
            "url",
            format!("an address of 1 to {MAX_URL} characters"),
        ));
    }
    Ok(())
}

/// An endpoint to insert, within its organisation's bound.
struct Creating {
    id: String,
    org_id: String,
    types: String,
    sealed: Vec<u8>,
    new: NewEndpoint,
    most: usize,
    /// When it runs, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Creating {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        const COUNT: &str = "SELECT COUNT(*) FROM webhook_endpoints WHERE org_id = $1";
        const SQL: &str = "INSERT INTO webhook_endpoints (id, org_id, campaign_id, url, \
             description, event_types, api_version, secret, status, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'enabled', $9, $9)";
        // The campaign is the organisation's (the table is tenancy's; this crate names no
        // domain's type).
        const CAMPAIGN: &str = "SELECT id FROM campaigns WHERE id = $1 AND org_id = $2";
        if let Some(campaign) = &self.new.campaign_id {
            let found: Option<(String,)> =
                tx.row(CAMPAIGN, params![campaign, &self.org_id]).await?;
            if found.is_none() {
                return Err(StoreError::UnknownReference {
                    field: "campaign",
                    message: format!("no campaign `{campaign}` in the organisation"),
                });
            }
        }
        seam::scope::lock_org(tx, &self.org_id).await?;
        let (count,): (i64,) = tx.row(COUNT, params![&self.org_id]).await?.unwrap_or((0,));
        if usize::try_from(count).unwrap_or(usize::MAX) >= self.most {
            return Err(StoreError::refused(
                "too_many_endpoints",
                Some("url".into()),
                format!(
                    "the organisation has {count} webhook endpoints, the most it may have \
                     (the operator's webhook_endpoints_per_org is {}): remove one first",
                    self.most
                ),
            ));
        }
        let new = &self.new;
        tx.execute(
            SQL,
            params![
                &self.id,
                &self.org_id,
                &new.campaign_id,
                &new.url,
                &new.description,
                Arg::JsonText(Some(&self.types)),
                new.api_version,
                &self.sealed,
                self.at
            ],
        )
        .await?;
        Ok(())
    }
}

/// Webhook endpoints: made, changed, listed and removed by an operator or a key allowed to
/// (scope: `OrgScope`).
impl Events {
    /// Makes an endpoint, unless the organisation already has `most` (409 `too_many_endpoints`,
    /// counted under the organisation's lock so that concurrent requests cannot pass it).
    #[tracing::instrument(skip_all)]
    pub async fn create_endpoint(
        &self,
        org: &OrgScope,
        new: NewEndpoint,
        key: &CodeKey,
        most: usize,
    ) -> Result<WebhookEndpoint, StoreError> {
        check_url(&new.url)?;
        let id = new_id();
        let sealed = key.seal(org.id(), &new.secret);
        let creating = Creating {
            at: self.now(),
            id: id.clone(),
            org_id: org.id().to_string(),
            types: types_json(&new.event_types),
            sealed,
            new,
            most,
        };
        self.write(creating).await?;
        self.found_endpoint(org, &id).await
    }

    #[tracing::instrument(skip_all)]
    pub async fn endpoint(
        &self,
        org: &OrgScope,
        id: &str,
    ) -> Result<Option<WebhookEndpoint>, StoreError> {
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE id = $1 AND org_id = $2"
        );
        let row: Option<EndpointRow> = self.read_row(&sql, params![id, org.id()]).await?;
        row.map(endpoint_from_row).transpose()
    }

    /// `endpoint`, or `NotFound` when the organisation has no such endpoint.
    pub(crate) async fn found_endpoint(
        &self,
        org: &OrgScope,
        id: &str,
    ) -> Result<WebhookEndpoint, StoreError> {
        self.endpoint(org, id)
            .await?
            .ok_or(StoreError::NotFound { what: "endpoint" })
    }

    /// The organisation's endpoints, oldest first.
    #[tracing::instrument(skip_all)]
    pub async fn endpoints(
        &self,
        org: &OrgScope,
        page: Page,
    ) -> Result<Paged<WebhookEndpoint>, StoreError> {
        let rows = self
            .read_page(
                page,
                ENDPOINT_COLUMNS,
                "FROM webhook_endpoints WHERE org_id = $1",
                "created_at, id",
                params![org.id()],
            )
            .await?;
        Paged::of(rows, page, endpoint_from_row)
    }

    #[tracing::instrument(skip_all)]
    pub async fn update_endpoint(
        &self,
        org: &OrgScope,
        id: &str,
        patch: EndpointPatch,
    ) -> Result<WebhookEndpoint, StoreError> {
        const SQL: &str = "UPDATE webhook_endpoints SET url = COALESCE($3, url), \
             description = CASE WHEN $4 THEN $5 ELSE description END, \
             event_types = COALESCE($6, event_types), api_version = COALESCE($7, api_version), \
             status = COALESCE($8, status), \
             disabled_reason = CASE WHEN $8 IS NULL THEN disabled_reason \
               WHEN $8 = 'enabled' THEN NULL ELSE 'disabled by hand' END, \
             failing_since = CASE WHEN $8 = 'enabled' THEN NULL ELSE failing_since END, \
             updated_at = $9 WHERE id = $1 AND org_id = $2";
        if let Some(url) = &patch.url {
            check_url(url)?;
        }
        let types = patch.event_types.as_deref().map(types_json);
        let changed = self
            .execute(
                SQL,
                params![
                    id,
                    org.id(),
                    patch.url,
                    patch.description.is_some(),
                    patch.description.flatten(),
                    Arg::JsonText(types.as_deref()),
                    patch.api_version,
                    patch.status,
                    self.now()
                ],
            )
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "endpoint" });
        }
        self.found_endpoint(org, id).await
    }

    /// Removes the endpoint and its deliveries (their log with them); false when it had none.
    #[tracing::instrument(skip_all)]
    pub async fn remove_endpoint(&self, org: &OrgScope, id: &str) -> Result<bool, StoreError> {
        const ATTEMPTS: &str = "DELETE FROM delivery_attempts WHERE endpoint_id = $1 \
             AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1 AND org_id = $2)";
        const DELIVERIES: &str = "DELETE FROM deliveries WHERE endpoint_id = $1 \
             AND EXISTS (SELECT 1 FROM webhook_endpoints WHERE id = $1 AND org_id = $2)";
        const ENDPOINT: &str = "DELETE FROM webhook_endpoints WHERE id = $1 AND org_id = $2";
        let org_id = org.id();
        let args = params![id, org_id];
        let changed = self
            .execute_all(&[(ATTEMPTS, args), (DELIVERIES, args), (ENDPOINT, args)])
            .await?;
        Ok(changed.last().copied().unwrap_or(0) > 0)
    }

    /// Makes `secret` the endpoint's signing secret; the one before keeps signing beside it
    /// until `previous_until` (none: it stops now).
    #[tracing::instrument(skip_all)]
    pub async fn rotate_endpoint_secret(
        &self,
        org: &OrgScope,
        id: &str,
        secret: &str,
        previous_until: Option<DateTime<Utc>>,
        key: &CodeKey,
    ) -> Result<WebhookEndpoint, StoreError> {
        const SQL: &str = "UPDATE webhook_endpoints SET \
             previous_secret = CASE WHEN $4 IS NULL THEN NULL ELSE secret END, \
             previous_until = $4, secret = $3, updated_at = $5 WHERE id = $1 AND org_id = $2";
        let sealed = key.seal(org.id(), secret);
        let at = self.now();
        let until = previous_until.filter(|until| *until > at);
        let changed = self
            .execute(SQL, params![id, org.id(), sealed, until, at])
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "endpoint" });
        }
        self.found_endpoint(org, id).await
    }

    /// The secrets that sign the endpoint's deliveries now.
    #[tracing::instrument(skip_all)]
    pub async fn endpoint_secrets(
        &self,
        endpoint_id: &str,
        key: &CodeKey,
    ) -> Result<Secrets, StoreError> {
        const SQL: &str = "SELECT org_id, secret, previous_secret, previous_until \
             FROM webhook_endpoints WHERE id = $1";
        type Row = (String, Vec<u8>, Option<Vec<u8>>, Option<DateTime<Utc>>);
        let (org_id, secret, previous, until): Row = self
            .read_row(SQL, params![endpoint_id])
            .await?
            .ok_or(StoreError::NotFound { what: "endpoint" })?;
        let open = |sealed: &[u8]| {
            key.open(&org_id, sealed)
                .ok_or_else(|| StoreError::UnknownStored {
                    table: "webhook_endpoints",
                    column: "secret",
                    value: format!("{endpoint_id}: does not open with this data key"),
                })
        };
        let previous = match (previous, until) {
            (Some(sealed), Some(until)) if until > self.now() => Some(open(&sealed)?),
            _ => None,
        };
        Ok(Secrets {
            current: open(&secret)?,
            previous,
        })
    }
}
