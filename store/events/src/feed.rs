//! The `Events` handle, and the feed a client pages through.

use chrono::{DateTime, Utc};
use seam::Db;

use crate::error::StoreError;
use crate::{EVENT_COLUMNS, Event, EventRow, EventType};
use seam::backend::ToArg;
use seam::scope::OrgScope;
use seam::{Page, Paged};

/// Events out: the feed, webhook endpoints and their deliveries. Cheap to clone: it shares the
/// database's pool.
#[derive(Clone, Debug)]
pub struct Events {
    db: Db,
}

impl Events {
    /// The events kept in `db`.
    pub fn on(db: Db) -> Events {
        Events { db }
    }
}

db_handle!(Events);

/// Which events a feed reader wants.
#[derive(Debug, Clone, Default)]
pub struct EventFilter {
    /// Empty: every type.
    pub types: Vec<EventType>,
    pub from: Option<DateTime<Utc>>,
    pub to: Option<DateTime<Utc>>,
    /// Only the events after this one in the order asked for (newer when oldest first, older
    /// when newest first).
    pub after: Option<String>,
    pub newest_first: bool,
}

/// The event feed (scope: the organisation, and a campaign's events beside the
/// organisation's own).
impl Events {
    /// The feed's page: numbered events of the organisation that are the campaign's (or of no
    /// campaign), by their number. `Invalid` (`after`) when `after` names no event of theirs.
    #[tracing::instrument(skip_all)]
    pub async fn feed(
        &self,
        org: &OrgScope,
        campaign_id: Option<&str>,
        filter: &EventFilter,
        page: Page,
    ) -> Result<Paged<Event>, StoreError> {
        let after = match &filter.after {
            Some(id) => Some(
                self.event(org, campaign_id, id)
                    .await?
                    .and_then(|e| e.seq)
                    .ok_or_else(|| {
                        StoreError::invalid("after", format!("no event `{id}` in the feed"))
                    })?,
            ),
            None => None,
        };
        let types: Vec<&str> = filter.types.iter().map(|t| t.as_str()).collect();
        let types = serde_json::Value::from(types).to_string();
        let (compare, order) = match filter.newest_first {
            false => (">", "seq"),
            true => ("<", "seq DESC"),
        };
        let from = format!(
            "FROM events WHERE org_id = $1 AND seq IS NOT NULL AND type <> 'webhook.test' \
             AND ($2 IS NULL OR campaign_id IS NULL OR campaign_id = $2) \
             AND ($3 = '[]' OR type IN (SELECT value FROM {json_texts})) \
             AND ($4 IS NULL OR occurred_at >= $4) AND ($5 IS NULL OR occurred_at < $5) \
             AND ($6 IS NULL OR seq {compare} $6)",
            json_texts = self.dialect("json_each($3)", "jsonb_array_elements_text($3::jsonb)"),
        );
        let rows = self
            .read_page(
                page,
                EVENT_COLUMNS,
                &from,
                order,
                params![org.id(), campaign_id, &types, filter.from, filter.to, after],
            )
            .await?;
        Paged::of(rows, page, EventRow::into_event)
    }

    /// The organisation's events about any of `subjects` (records' ids), in the order they
    /// happened: what a member's own data holds of its events.
    #[tracing::instrument(skip_all)]
    pub async fn events_about(
        &self,
        org: &OrgScope,
        subjects: &[String],
    ) -> Result<Vec<Event>, StoreError> {
        let (mut events, org_id) = (Vec::new(), org.id());
        for some in subjects.chunks(500) {
            let places: Vec<String> = (2..some.len() + 2).map(|n| format!("${n}")).collect();
            let sql = format!(
                "SELECT {EVENT_COLUMNS} FROM events WHERE org_id = $1 \
                 AND type <> 'webhook.test' AND subject_id IN ({})",
                places.join(", ")
            );
            let mut args = params![org_id].to_vec();
            args.extend(some.iter().map(|id| id.to_arg()));
            let rows: Vec<EventRow> = self.read_rows(&sql, &args).await?;
            for row in rows {
                events.push(row.into_event()?);
            }
        }
        events.sort_by(|a, b| (a.occurred_at, &a.id).cmp(&(b.occurred_at, &b.id)));
        Ok(events)
    }

    /// The organisation's event `id` (the campaign's, or of no campaign), numbered or not.
    #[tracing::instrument(skip_all)]
    pub async fn event(
        &self,
        org: &OrgScope,
        campaign_id: Option<&str>,
        id: &str,
    ) -> Result<Option<Event>, StoreError> {
        let sql = format!(
            "SELECT {EVENT_COLUMNS} FROM events WHERE id = $1 AND org_id = $2 \
             AND ($3 IS NULL OR campaign_id IS NULL OR campaign_id = $3)"
        );
        let row: Option<EventRow> = self
            .read_row(&sql, params![id, org.id(), campaign_id])
            .await?;
        row.map(EventRow::into_event).transpose()
    }
}
