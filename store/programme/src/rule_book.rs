//! The compiled rule set of each campaign, cached. A cached set is trusted for a second, then
//! the campaign's active version number is looked up again (one indexed query); a new version is
//! loaded and compiled. So `rewards rules set` takes effect within a second in every process,
//! with no restart.

use crate::Campaign;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rules::RuleSet;

use crate::{Programme, StoreError};

/// How long a cached set is trusted before its campaign's version is looked up again.
pub const FRESH_FOR: Duration = Duration::from_secs(1);

#[derive(Clone)]
struct Entry {
    /// `None`: the campaign has no rule set and gets the default.
    version: Option<i64>,
    rules: Arc<RuleSet>,
    checked: Instant,
}

/// Active rule sets per campaign. Cheap to clone: clones share the cache.
#[derive(Clone)]
pub struct RuleBook {
    programme: Programme,
    entries: Arc<Mutex<HashMap<String, Entry>>>,
    default: Arc<RuleSet>,
    fresh_for: Duration,
}

impl RuleBook {
    pub fn new(programme: Programme) -> Self {
        RuleBook::fresh_for(programme, FRESH_FOR)
    }

    /// A book that trusts a cached set for `window` (`FRESH_FOR` in the service; tests choose
    /// theirs rather than wait a second).
    pub fn fresh_for(programme: Programme, window: Duration) -> Self {
        RuleBook {
            programme,
            entries: Arc::default(),
            default: Arc::new(RuleSet::one_per_unit()),
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
        let cached = self
            .entries
            .lock()
            .expect("rule book lock")
            .get(campaign_id)
            .cloned();
        if let Some(entry) = &cached
            && entry.checked.elapsed() < self.fresh_for
        {
            return Ok((entry.version, entry.rules.clone()));
        }
        let version = self
            .programme
            .rule_set_version_of(org_id, campaign_id)
            .await?;
        let rules = match (&cached, version) {
            (Some(entry), _) if entry.version == version => entry.rules.clone(),
            (_, None) => self.default.clone(),
            (_, Some(v)) => {
                let stored = self
                    .programme
                    .rule_set_of(org_id, campaign_id, Some(v))
                    .await?;
                // Stored sets were compiled before they were stored; this only fails if a later
                // build reads the format differently.
                Arc::new(RuleSet::parse(&stored.source).map_err(StoreError::InvalidRules)?)
            }
        };
        let entry = Entry {
            version,
            rules: rules.clone(),
            checked: Instant::now(),
        };
        self.entries
            .lock()
            .expect("rule book lock")
            .insert(campaign_id.to_string(), entry);
        Ok((version, rules))
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
