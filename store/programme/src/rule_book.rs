//! The compiled rule sets of each campaign, cached in the programme (so once per process: the
//! API, the batch pipeline and corrections share them). A campaign's active set is trusted for a
//! second, then its active version number is looked up again (one indexed query); a new version
//! is loaded and compiled. So `rewards rules set` takes effect within a second in every process,
//! with no restart. A version itself never changes: compiled once, it is kept.

use crate::Campaign;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use rules::RuleSet;
use seam::common::cache::FRESH_FOR;

use crate::{Programme, StoreError};

/// The programme's compiled rule sets, as one reader trusts them. Cheap to clone: every book of
/// a programme shares its cache.
#[derive(Clone)]
pub struct RuleBook {
    programme: Programme,
    fresh_for: Duration,
}

impl RuleBook {
    pub fn new(programme: Programme) -> Self {
        RuleBook::fresh_for(programme, FRESH_FOR)
    }

    /// A book that trusts a cached active set for `window` (`FRESH_FOR` in the service; tests
    /// choose theirs rather than wait a second).
    pub fn fresh_for(programme: Programme, window: Duration) -> Self {
        RuleBook {
            programme,
            fresh_for: window,
        }
    }

    /// The campaign's active rule set and its version (`None` for the default), for the store's
    /// own evaluation of earns whose campaign it read from their wallets.
    pub async fn active(
        &self,
        org_id: &str,
        campaign_id: &str,
    ) -> Result<(Option<i64>, Arc<RuleSet>), StoreError> {
        let cache = &self.programme.caches.active_rules;
        if let Some(active) = cache.fresh(campaign_id, self.fresh_for) {
            return Ok(active);
        }
        let removals = cache.removals();
        let version = self
            .programme
            .rule_set_version_of(org_id, campaign_id)
            .await?;
        if let Some(active) = cache.any(campaign_id).filter(|(v, _)| *v == version) {
            cache.confirm(campaign_id);
            return Ok(active);
        }
        let rules = self.version(org_id, campaign_id, version).await?;
        cache.put_since(campaign_id, (version, rules.clone()), removals);
        Ok((version, rules))
    }

    /// Whether a campaign of the organisation has a limited rule set active (limits or a
    /// budget): a batch file's rows are then taken in date order (see the ingest pipeline).
    pub async fn any_limited(&self, org_id: &str) -> Result<bool, StoreError> {
        const CAMPAIGNS: &str = "SELECT DISTINCT campaign_id FROM rule_sets WHERE org_id = $1";
        let campaigns: Vec<(String,)> =
            self.programme.read_rows(CAMPAIGNS, params![org_id]).await?;
        for (campaign_id,) in campaigns {
            if self.active(org_id, &campaign_id).await?.1.has_limits() {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Version `version` of the campaign's rule set (`None`: the default set), compiled.
    pub async fn version(
        &self,
        org_id: &str,
        campaign_id: &str,
        version: Option<i64>,
    ) -> Result<Arc<RuleSet>, StoreError> {
        static DEFAULT: OnceLock<Arc<RuleSet>> = OnceLock::new();
        let Some(version) = version else {
            return Ok(DEFAULT
                .get_or_init(|| Arc::new(RuleSet::one_per_unit()))
                .clone());
        };
        let key = format!("{campaign_id}:{version}");
        let cache = &self.programme.caches.versions;
        if let Some(rules) = cache.any(&key) {
            return Ok(rules);
        }
        let stored = self
            .programme
            .rule_set_of(org_id, campaign_id, Some(version))
            .await?;
        // Stored sets were compiled before they were stored; this only fails if a later build
        // reads the format differently.
        let rules = Arc::new(RuleSet::parse(&stored.source).map_err(StoreError::InvalidRules)?);
        cache.put(&key, rules.clone());
        Ok(rules)
    }
}

/// Rule sets in force: the version a campaign's earns are evaluated by.
impl Programme {
    /// The number of the campaign's active rule-set version, if it has one.
    #[tracing::instrument(skip_all)]
    pub async fn active_rule_set_version(
        &self,
        campaign: &Campaign,
    ) -> Result<Option<i64>, StoreError> {
        self.rule_set_version_of(&campaign.org_id, &campaign.id)
            .await
    }

    #[tracing::instrument(skip_all)]
    pub async fn rule_set_version_of(
        &self,
        org_id: &str,
        campaign_id: &str,
    ) -> Result<Option<i64>, StoreError> {
        const SQL: &str =
            "SELECT MAX(version) FROM rule_sets WHERE org_id = $1 AND campaign_id = $2";
        let row: Option<(Option<i64>,)> = self.read_row(SQL, params![org_id, campaign_id]).await?;
        Ok(row.and_then(|(version,)| version))
    }
}
