//! Activities from batch files: a row with an `activity` is what the owner of its wallet did, in
//! the wallet's campaign, recorded and awarded as `POST /v1/members/{id}/activities` does (the
//! row's id is the activity's `externalId`, its `meta` the attributes). Rows are taken one by
//! one, after their chunk's earns and returns: an activity's award is a write of its own.

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use members::activities::{ActivityRow, ActivitySource, BY_EXTERNAL_ID, NewActivity};
use serde_json::Value;

use crate::{Batches, Campaign, OrgScope, RuleBook, StoreError, Tokens};

/// An activity row of a file, mapped and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct FileActivity {
    /// The row's number in its file.
    pub row: u64,
    /// The row's id: the activity's `externalId`.
    pub id: String,
    /// The wallet (id or reference) whose owner did it, in whose campaign.
    pub wallet: String,
    /// Its type (`app.opened`).
    pub kind: String,
    pub date: DateTime<Utc>,
    /// The row's `meta`: what rules read as `activity.attributes`.
    pub attributes: Option<Value>,
}

/// What became of an activity row.
#[derive(Debug, Clone, PartialEq)]
pub enum ActivityOutcome {
    /// Recorded now and awarded `tokens` (what each rule gave in `trace`). In a check: would
    /// be recorded; its award is not evaluated (0).
    Recorded { tokens: Tokens, trace: String },
    /// This batch recorded it already (an attempt interrupted by a crash).
    RecordedBefore,
    /// The same activity was recorded before under this id (by the API or another file).
    Duplicate,
    /// No wallet of the organisation has the row's id or reference.
    UnknownWallet,
    /// Not recorded: `code` (`invalid_value`, or `already_exists` for another activity under the
    /// id), naming `field`.
    Refused {
        code: &'static str,
        field: String,
        message: String,
    },
}

/// Activities from batch files (scope: `OrgScope`).
impl Batches {
    /// Records and awards each row's activity under batch `batch_id` (with `check`, only looks:
    /// what recording would do, nothing written; a check may have no batch); each row's
    /// outcome, in order.
    #[tracing::instrument(skip_all)]
    pub async fn record_file_activities(
        &self,
        book: &RuleBook,
        org: &OrgScope,
        batch_id: Option<&str>,
        rows: &[FileActivity],
        check: bool,
    ) -> Result<Vec<ActivityOutcome>, StoreError> {
        const WALLET: &str = "SELECT id, campaign_id, owner_id FROM wallets WHERE org_id = $1 \
             AND (id = $2 OR external_id = $2) ORDER BY CASE WHEN id = $2 THEN 0 ELSE 1 END \
             LIMIT 1";
        let mut campaigns: HashMap<String, Campaign> = HashMap::new();
        let mut outcomes = Vec::with_capacity(rows.len());
        for row in rows {
            let wallet: Option<(String, String, String)> =
                self.read_row(WALLET, params![org.id(), row.wallet]).await?;
            let Some((_, campaign_id, member_id)) = wallet else {
                outcomes.push(ActivityOutcome::UnknownWallet);
                continue;
            };
            if !campaigns.contains_key(&campaign_id) {
                let campaign = self.tenancy().campaign_in(org.id(), &campaign_id).await?;
                campaigns.insert(campaign_id.clone(), campaign);
            }
            let new = NewActivity {
                campaign_id: campaign_id.clone(),
                member_id,
                external_id: row.id.clone(),
                kind: row.kind.clone(),
                occurred_at: Some(row.date),
                attributes: row.attributes.clone(),
                source: ActivitySource::File,
                batch_id: batch_id.map(str::to_string),
            };
            let outcome = if check {
                self.check_activity(org, batch_id, &new).await?
            } else {
                let campaign = &campaigns[&campaign_id];
                let recorded = self.ledger().record_activity(book, campaign, new).await;
                match recorded {
                    Ok((activity, true)) => {
                        let awards = activity.awards.iter();
                        let tokens = awards.map(|a| a.tokens.micros()).sum();
                        let trace = activity.awards.iter().filter_map(|a| a.trace.clone());
                        ActivityOutcome::Recorded {
                            tokens: Tokens::from_micros(tokens),
                            trace: trace.collect::<Vec<_>>().join(";"),
                        }
                    }
                    Ok((activity, false)) => earlier(batch_id, activity.batch_id.as_deref()),
                    Err(err) => refused(err)?,
                }
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    /// What recording `new` would do: refused, a repeat, or recorded.
    async fn check_activity(
        &self,
        org: &OrgScope,
        batch_id: Option<&str>,
        new: &NewActivity,
    ) -> Result<ActivityOutcome, StoreError> {
        if let Err(err) = self.ledger().check_activity(new) {
            return refused(err);
        }
        let row: Option<ActivityRow> = self
            .read_row(BY_EXTERNAL_ID, params![org.id(), new.external_id])
            .await?;
        let Some(row) = row else {
            return Ok(ActivityOutcome::Recorded {
                tokens: Tokens::ZERO,
                trace: String::new(),
            });
        };
        if let Err(err) = row.same_as(new) {
            return refused(err);
        }
        Ok(earlier(batch_id, row.activity()?.batch_id.as_deref()))
    }
}

/// A repeat of an activity recorded by batch `by` (this file's `batch_id`, or another's).
fn earlier(batch_id: Option<&str>, by: Option<&str>) -> ActivityOutcome {
    if by.is_some() && by == batch_id {
        ActivityOutcome::RecordedBefore
    } else {
        ActivityOutcome::Duplicate
    }
}

/// The refusal of a row that `err` says: a field at fault, or (not a row's fault) `Err`.
fn refused(err: StoreError) -> Result<ActivityOutcome, StoreError> {
    Ok(match err {
        StoreError::Invalid { field, message } => ActivityOutcome::Refused {
            code: "invalid_value",
            field: field.to_string(),
            message,
        },
        StoreError::Refused {
            code,
            field,
            message,
        } => ActivityOutcome::Refused {
            code,
            field: field.unwrap_or_else(|| "id".to_string()),
            message,
        },
        other => return Err(other),
    })
}
