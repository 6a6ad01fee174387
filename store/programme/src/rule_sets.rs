//! Rule-set versions per campaign. Setting a rule set stores it as the campaign's next version,
//! which is active from that moment: the highest version is the active one, so activation is a
//! single insert and every server process sees it on its next look.

use crate::Campaign;
use chrono::{DateTime, Utc};

use crate::common::ids::new_id;
use crate::{Programme, StoreError};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleSetVersion {
    pub id: String,
    pub campaign_id: String,
    /// 1, 2, 3... per campaign; the highest is active.
    pub version: i64,
    /// The rule set as written (TOML).
    pub source: String,
    pub created_at: DateTime<Utc>,
}

type VersionRow = (String, String, i64, String, DateTime<Utc>);

fn version_from_row((id, campaign_id, version, source, created_at): VersionRow) -> RuleSetVersion {
    RuleSetVersion {
        id,
        campaign_id,
        version,
        source,
        created_at,
    }
}

/// Rule sets: a campaign's versioned rules (scope: `&Campaign`).
impl Programme {
    /// Compiles `source` and, if it has no errors, stores it as the campaign's next version,
    /// active from now on. Concurrent calls each get their own version number.
    #[tracing::instrument(skip_all)]
    pub async fn set_rule_set(
        &self,
        campaign: &Campaign,
        source: &str,
    ) -> Result<RuleSetVersion, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        rules::RuleSet::parse(source).map_err(StoreError::InvalidRules)?;
        const INSERT: &str = "INSERT INTO rule_sets (id, org_id, campaign_id, version, source, created_at) \
             SELECT $1, $2, $3, COALESCE(MAX(version), 0) + 1, $4, $5 FROM rule_sets WHERE campaign_id = $3 \
             RETURNING id, campaign_id, version, source, created_at";
        // Two setters may read the same highest version; the unique index lets one win and the
        // other tries again with the next number.
        let mut attempts = 0;
        loop {
            let result: Result<Option<VersionRow>, StoreError> = self
                .write_row(
                    INSERT,
                    params![new_id(), org_id, campaign_id, source, self.now()],
                )
                .await;
            match result {
                Ok(Some(row)) => {
                    // This process evaluates by it at once; others within a second.
                    self.caches.active_rules.remove(campaign_id);
                    return Ok(version_from_row(row));
                }
                Ok(None) => return Err(StoreError::NotFound { what: "campaign" }),
                Err(err) if err.is_unique_violation() && attempts < 20 => attempts += 1,
                Err(err) => return Err(err),
            }
        }
    }

    /// The campaign's versions, newest first, without their sources.
    #[tracing::instrument(skip_all)]
    pub async fn rule_set_versions(
        &self,
        campaign: &Campaign,
    ) -> Result<Vec<RuleSetVersion>, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        const SQL: &str = "SELECT id, campaign_id, version, '', created_at FROM rule_sets \
             WHERE org_id = $1 AND campaign_id = $2 ORDER BY version DESC";
        let rows: Vec<VersionRow> = self.read_rows(SQL, params![org_id, campaign_id]).await?;
        Ok(rows.into_iter().map(version_from_row).collect())
    }

    /// Version `version` of the campaign's rule set, or the active one when `None`. A campaign
    /// without rule sets gives `NotFound`.
    #[tracing::instrument(skip_all)]
    pub async fn rule_set(
        &self,
        campaign: &Campaign,
        version: Option<i64>,
    ) -> Result<RuleSetVersion, StoreError> {
        self.rule_set_of(&campaign.org_id, &campaign.id, version)
            .await
    }

    #[tracing::instrument(skip_all)]
    pub async fn rule_set_of(
        &self,
        org_id: &str,
        campaign_id: &str,
        version: Option<i64>,
    ) -> Result<RuleSetVersion, StoreError> {
        const SQL: &str = "SELECT id, campaign_id, version, source, created_at FROM rule_sets \
             WHERE org_id = $1 AND campaign_id = $2 AND ($3 IS NULL OR version = $3) \
             ORDER BY version DESC LIMIT 1";
        let row: Option<VersionRow> = self
            .read_row(SQL, params![org_id, campaign_id, version])
            .await?;
        row.map(version_from_row)
            .ok_or(StoreError::NotFound { what: "rule set" })
    }
}
