//! Organisations (the tenants) and their campaigns (a programme with its own currency and look).

use crate::OrgScope;
use chrono::{DateTime, Utc};
use seam::scope::Sealed;

use crate::common::ids::new_id;
use crate::{StoreError, Tenancy};

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Organisation {
    pub id: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub(crate) sealed: Sealed,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Campaign {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub currency: String,
    pub logo: Option<String>,
    pub favicon: Option<String>,
    pub created_at: DateTime<Utc>,
    #[serde(skip)]
    pub(crate) sealed: Sealed,
}

#[derive(Debug, Clone, Default)]
pub struct NewCampaign {
    pub name: String,
    pub currency: String,
    pub logo: Option<String>,
    pub favicon: Option<String>,
}

/// A campaign's row, as `campaign_columns!` lists its columns.
pub type CampaignRow = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    DateTime<Utc>,
);

macro_rules! campaign_columns {
    () => {
        "id, org_id, name, currency, logo, favicon, created_at"
    };
}

/// A campaign as another domain's query of the store read it, in the order of
/// `campaign_columns!` (for the store's domains alone: it vouches for the row).
pub fn campaign_from_row(row: CampaignRow) -> Campaign {
    let (id, org_id, name, currency, logo, favicon, created_at) = row;
    Campaign {
        id,
        org_id,
        name,
        currency,
        logo,
        favicon,
        created_at,
        sealed: Sealed::vouched(),
    }
}

impl NewCampaign {
    /// Checks the campaign and normalises the currency code to upper case. A currency is a code of
    /// 2 to 16 letters, digits or `_` (ISO 4217 codes and programme units such as `POINTS`).
    fn validated(mut self) -> Result<Self, StoreError> {
        self.name = check_name(&self.name)?;
        self.currency = self.currency.trim().to_ascii_uppercase();
        let valid = (2..=16).contains(&self.currency.len())
            && self
                .currency
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(StoreError::invalid(
                "currency",
                "must be 2 to 16 letters, digits or underscores, e.g. EUR or POINTS",
            ));
        }
        for (field, url) in [("logo", &self.logo), ("favicon", &self.favicon)] {
            if let Some(url) = url
                && !web_address(url)
            {
                return Err(StoreError::invalid(
                    field,
                    format!(
                        "must be an http:// or https:// URL with a host, at most {} characters",
                        seam::limits::MAX_URL
                    ),
                ));
            }
        }
        Ok(self)
    }
}

/// Whether `url` is an http:// or https:// address of at most `MAX_URL` characters whose host
/// holds no space, control character or bracket, and which holds no NUL (the admin API's
/// schema says the same).
fn web_address(url: &str) -> bool {
    if url.chars().count() > seam::limits::MAX_URL {
        return false;
    }
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    let Some(rest) = rest else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or_default();
    let bad = |c: char| c <= ' ' || c == '\u{7f}' || matches!(c, '[' | ']');
    !host.is_empty() && !host.chars().any(bad) && !url.contains('\0')
}

/// An organisation's or a campaign's name, trimmed: not blank, no NUL (PostgreSQL cannot keep
/// one), at most `MAX_NAME` characters as given.
fn check_name(name: &str) -> Result<String, StoreError> {
    if name.chars().count() > seam::limits::MAX_NAME {
        return Err(StoreError::invalid(
            "name",
            format!("must be at most {} characters", seam::limits::MAX_NAME),
        ));
    }
    let name = name.trim();
    if name.is_empty() {
        return Err(StoreError::invalid("name", "must not be empty"));
    }
    if name.contains('\0') {
        return Err(StoreError::invalid("name", "must not hold a NUL character"));
    }
    Ok(name.to_owned())
}

/// Organisations and campaigns: the operator's records, and the lookups that give an `OrgScope` or
/// a `Campaign`.
impl Tenancy {
    /// A campaign by id alone, for operator commands that name only the campaign.
    #[tracing::instrument(skip_all)]
    pub async fn campaign_by_id(&self, id: &str) -> Result<Campaign, StoreError> {
        let row: Option<(String,)> = self
            .read_row("SELECT org_id FROM campaigns WHERE id = $1", params![id])
            .await?;
        let (org_id,) = row.ok_or(StoreError::NotFound { what: "campaign" })?;
        self.get_campaign(&OrgScope::vouched(&org_id), id).await
    }

    /// The organisation `reference` names: its id, or a name no other organisation has (an
    /// operator's `--org`). `Invalid` (`org`) when several have that name.
    #[tracing::instrument(skip_all)]
    pub async fn find_org(&self, reference: &str) -> Result<Organisation, StoreError> {
        match self.get_org(reference).await {
            Err(StoreError::NotFound { .. }) => {}
            found => return found,
        }
        let rows: Vec<(String,)> = self
            .read_rows(
                "SELECT id FROM organisations WHERE name = $1 ORDER BY id LIMIT 10",
                params![reference.trim()],
            )
            .await?;
        match only_one(&rows, "org", "organisations", reference)? {
            Some(id) => self.get_org(id).await,
            None => Err(StoreError::NotFound {
                what: "organisation",
            }),
        }
    }

    /// The campaign `reference` names: its id, or a name no other campaign (of `org`, when
    /// given) has: an operator's `--campaign`. `Invalid` (`campaign`) when several have it.
    #[tracing::instrument(skip_all)]
    pub async fn find_campaign(
        &self,
        reference: &str,
        org: Option<&OrgScope>,
    ) -> Result<Campaign, StoreError> {
        let org_id = org.map(OrgScope::id);
        match self.campaign_by_id(reference).await {
            Ok(found) if org_id.is_some_and(|id| id != found.org_id) => {
                return Err(StoreError::NotFound { what: "campaign" });
            }
            Err(StoreError::NotFound { .. }) => {}
            found => return found,
        }
        let rows: Vec<(String,)> = self
            .read_rows(
                "SELECT id FROM campaigns WHERE name = $1 AND org_id = COALESCE($2, org_id) \
                 ORDER BY id LIMIT 10",
                params![reference.trim(), org_id],
            )
            .await?;
        match only_one(&rows, "campaign", "campaigns", reference)? {
            Some(id) => self.campaign_by_id(id).await,
            None => Err(StoreError::NotFound { what: "campaign" }),
        }
    }

    #[tracing::instrument(skip_all)]
    pub async fn create_org(&self, name: &str) -> Result<Organisation, StoreError> {
        let name = check_name(name)?;
        let org = Organisation {
            id: new_id(),
            name,
            created_at: self.now(),
            sealed: Sealed::vouched(),
        };
        self.execute(
            "INSERT INTO organisations (id, name, created_at) VALUES ($1, $2, $3)",
            params![&org.id, &org.name, org.created_at],
        )
        .await?;
        Ok(org)
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_org(&self, id: &str) -> Result<Organisation, StoreError> {
        let row: Option<(String, String, DateTime<Utc>)> = self
            .read_row(
                "SELECT id, name, created_at FROM organisations WHERE id = $1",
                params![id],
            )
            .await?;
        let (id, name, created_at) = row.ok_or(StoreError::NotFound {
            what: "organisation",
        })?;
        Ok(Organisation {
            id,
            name,
            created_at,
            sealed: Sealed::vouched(),
        })
    }

    #[tracing::instrument(skip_all)]
    pub async fn list_orgs(&self) -> Result<Vec<Organisation>, StoreError> {
        let rows: Vec<(String, String, DateTime<Utc>)> = self
            .read_rows(
                "SELECT id, name, created_at FROM organisations ORDER BY id",
                params![],
            )
            .await?;
        Ok(rows
            .into_iter()
            .map(|(id, name, created_at)| Organisation {
                id,
                name,
                created_at,
                sealed: Sealed::vouched(),
            })
            .collect())
    }

    #[tracing::instrument(skip_all)]
    pub async fn create_campaign(
        &self,
        org: &OrgScope,
        new: NewCampaign,
    ) -> Result<Campaign, StoreError> {
        let org_id = org.id();
        let new = new.validated()?;
        self.get_org(org_id).await?;
        let campaign = Campaign {
            id: new_id(),
            org_id: org_id.to_string(),
            name: new.name,
            currency: new.currency,
            logo: new.logo,
            favicon: new.favicon,
            created_at: self.now(),
            sealed: Sealed::vouched(),
        };
        self.execute(
            "INSERT INTO campaigns (id, org_id, name, currency, logo, favicon, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7)",
            params![
                &campaign.id,
                &campaign.org_id,
                &campaign.name,
                &campaign.currency,
                &campaign.logo,
                &campaign.favicon,
                campaign.created_at
            ],
        )
        .await?;
        Ok(campaign)
    }

    /// The campaign `id` of organisation `org_id`; another organisation's campaign is `NotFound`.
    #[tracing::instrument(skip_all)]
    pub async fn get_campaign(&self, org: &OrgScope, id: &str) -> Result<Campaign, StoreError> {
        let org_id = org.id();
        let key = format!("{org_id}:{id}");
        if let Some(campaign) = self.campaigns.any(&key) {
            return Ok(campaign);
        }
        const SQL: &str = concat!(
            "SELECT ",
            campaign_columns!(),
            " FROM campaigns WHERE org_id = $1 AND id = $2"
        );
        let row: Option<CampaignRow> = self.read_row(SQL, params![org_id, id]).await?;
        let campaign = row
            .map(campaign_from_row)
            .ok_or(StoreError::NotFound { what: "campaign" })?;
        self.campaigns.put(&key, campaign.clone());
        Ok(campaign)
    }

    /// Campaign `id` if the organisation with id `org_id` has it: for a caller that names both
    /// (an operator's path), so that an unknown organisation simply has none.
    #[tracing::instrument(skip_all)]
    pub async fn campaign_in(&self, org_id: &str, id: &str) -> Result<Campaign, StoreError> {
        self.get_campaign(&OrgScope::vouched(org_id), id).await
    }

    #[tracing::instrument(skip_all)]
    pub async fn list_campaigns(&self, org: &OrgScope) -> Result<Vec<Campaign>, StoreError> {
        let org_id = org.id();
        const SQL: &str = concat!(
            "SELECT ",
            campaign_columns!(),
            " FROM campaigns WHERE org_id = $1 ORDER BY id"
        );
        let rows: Vec<CampaignRow> = self.read_rows(SQL, params![org_id]).await?;
        Ok(rows.into_iter().map(campaign_from_row).collect())
    }
}

/// The one id a name lookup found (`None`: none); `Invalid` (`field`) listing them when several
/// `what` share the name `reference`.
fn only_one<'a>(
    found: &'a [(String,)],
    field: &'static str,
    what: &str,
    reference: &str,
) -> Result<Option<&'a str>, StoreError> {
    match found {
        [] => Ok(None),
        [(id,)] => Ok(Some(id)),
        several => {
            let ids: Vec<&str> = several.iter().map(|(id,)| id.as_str()).collect();
            Err(StoreError::invalid(
                field,
                format!(
                    "{} {what} are named `{reference}`; give one's id: {}",
                    ids.len(),
                    ids.join(", ")
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::web_address;

    #[test]
    fn a_logo_is_an_http_address_with_a_host() {
        for good in [
            "https://acme.example/logo.png",
            "http://127.0.0.1:8080/a?b#c",
            "https://acme.example",
        ] {
            assert!(web_address(good), "{good}");
        }
        for bad in [
            "ftp://acme.example/logo.png",
            "https://",
            "https:///logo.png",
            "https://[",
            "https://acme example/",
            "https://acme.example/\0",
            "acme.example/logo.png",
        ] {
            assert!(!web_address(bad), "{bad:?}");
        }
        // The limit counts characters, as the schema's maxLength does.
        let longest = format!(
            "https://é.example/{}",
            "é".repeat(seam::limits::MAX_URL - 18)
        );
        assert_eq!(longest.chars().count(), seam::limits::MAX_URL);
        assert!(web_address(&longest));
        assert!(!web_address(&format!("{longest}é")));
    }
}
