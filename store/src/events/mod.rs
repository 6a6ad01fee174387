//! Events out: what happened in a programme, for its webhook endpoints and its event feed.
//!
//! An event is written by the change it describes, in the same database transaction
//! (`record`): a change that rolls back leaves no event, and a committed one always has its
//! event, whatever happens to the process after the commit. It carries a snapshot of the record
//! the change made (`EventData`, the store's own JSON of it), which the API renders in the shape
//! of the version a reader or an endpoint asks for.
//!
//! Events are numbered after they commit, by one dispatcher at a time (`deliveries.rs`): an
//! event's `seq` is its place in the feed, so a reader paging by it never skips an event that
//! committed after a later-numbered one. The dispatcher also fans each event out to the
//! endpoints that want it (`endpoints.rs`), one delivery each.

pub mod deliveries;
pub mod endpoints;
pub mod retention;

use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};

use crate::backend::Tx;
use crate::common::ids::{new_id, now};
use crate::{
    Batch, Booking, EarnRequest, Member, Order, OrgScope, Page, Paged, Redeemed, Review,
    ReviewStatus, Store, StoreError, Tokens, Transaction,
};

string_enum! {
    /// What an event says happened.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum EventType ("event type") {
        EarnCompleted = "earn.completed",
        EarnRejected = "earn.rejected",
        TransactionCreated = "transaction.created",
        WalletTierChanged = "wallet.tier_changed",
        WalletPointsExpiring = "wallet.points_expiring",
        BatchCompleted = "batch.completed",
        BatchFailed = "batch.failed",
        BatchDuplicate = "batch.duplicate",
        OrderCreated = "order.created",
        OrderCancelled = "order.cancelled",
        CodeRedeemed = "code.redeemed",
        BookingCreated = "booking.created",
        BookingStatusChanged = "booking.status_changed",
        ReviewCreated = "review.created",
        ReviewHeld = "review.held",
        ReviewReported = "review.reported",
        MemberCreated = "member.created",
        MemberUpdated = "member.updated",
        MemberDeleted = "member.deleted",
        /// Sent to one endpoint by an operator's test; never in the feed.
        WebhookTest = "webhook.test",
    }
}

/// The record an event carries, as the change left it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "record", content = "value", rename_all = "snake_case")]
pub enum EventData {
    /// `transaction.created`: the transaction written.
    Transaction(Box<Transaction>),
    /// `member.created`, `member.updated`: the member as the change left it.
    Member(Box<Member>),
    /// `member.deleted`, and what a deleted member's earlier events carry from then on: the
    /// member's id, no personal data.
    MemberErased { id: String },
    /// `batch.completed`, `batch.failed`, `batch.duplicate`: the file as it ended (counts,
    /// summary with the reports' names, why it failed, the batch a duplicate repeats).
    Batch(Box<Batch>),
    /// `earn.completed`, `earn.rejected`: the earn request as it ended.
    Earn(Box<EarnRequest>),
    /// `order.created`, `order.cancelled`: the order with its lines as the change left them
    /// (codes masked).
    Order(Box<Order>),
    /// `code.redeemed`: the code (masked) and what it was for.
    Redeemed(Box<Redeemed>),
    /// `booking.created`, `booking.status_changed`: the booking as the change left it.
    Booking(Box<Booking>),
    /// `review.created`, `review.held`, `review.reported`: the review, and where it stood with
    /// moderation after the change.
    Review {
        review: Box<Review>,
        status: ReviewStatus,
    },
    /// `wallet.tier_changed`: the wallet, its owner and its tiers before and after (`None`: no
    /// tier). Written by the database itself (a trigger on `wallets`, see migration 25), so
    /// every statement that moves a wallet's tier records it.
    TierChanged {
        wallet_id: String,
        member_id: String,
        from: Option<TierRef>,
        to: Option<TierRef>,
    },
    /// `wallet.points_expiring`: what the wallet's lots hold that expires on `date` (UTC), as
    /// the daily notice found it.
    PointsExpiring {
        wallet_id: String,
        member_id: String,
        tokens: Tokens,
        date: NaiveDate,
    },
    /// `webhook.test`: the endpoint it was sent to.
    Test { endpoint_id: String },
}

/// A tier as a `wallet.tier_changed` event names it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TierRef {
    pub id: String,
    pub name: String,
}

impl EventData {
    /// The id of the record the event is about.
    fn subject_id(&self) -> Option<&str> {
        match self {
            EventData::Transaction(t) => Some(&t.id),
            EventData::Member(m) => Some(&m.id),
            EventData::MemberErased { id } => Some(id),
            EventData::Batch(b) => Some(&b.id),
            EventData::Earn(r) => Some(&r.id),
            EventData::Order(o) => Some(&o.id),
            EventData::Redeemed(r) => Some(&r.line_id),
            EventData::Booking(b) => Some(&b.id),
            EventData::Review { review, .. } => Some(&review.id),
            EventData::TierChanged { wallet_id, .. } => Some(wallet_id),
            EventData::PointsExpiring { wallet_id, .. } => Some(wallet_id),
            EventData::Test { .. } => None,
        }
    }
}

/// Records `transaction.created` for `transaction`, written by an API request or a sweep (not
/// a batch file's row: a file makes one event for all its rows), in the caller's transaction.
pub(crate) async fn transaction_created(
    tx: &mut impl Tx,
    org_id: &str,
    campaign_id: &str,
    transaction: &Transaction,
) -> Result<(), StoreError> {
    let data = EventData::Transaction(Box::new(transaction.clone()));
    let event = NewEvent::new(
        org_id,
        Some(campaign_id),
        EventType::TransactionCreated,
        &data,
    )?;
    record(tx, &event).await
}

/// `data` as stored.
fn snapshot(data: &EventData) -> Result<String, StoreError> {
    serde_json::to_string(data)
        .map_err(|e| StoreError::NotCommitted(format!("an event's record: {e}")))
}

/// Replaces the data of the member's earlier events with its id alone, and clears its external
/// id from its orders' events, in the caller's transaction (the member's erasure): no personal
/// data of the member stays in the events or reaches an endpoint after it.
pub(crate) async fn erase_member(
    tx: &mut impl Tx,
    org_id: &str,
    member_id: &str,
) -> Result<(), StoreError> {
    const SQL: &str = "UPDATE events SET data = $3 WHERE subject_id = $2 AND org_id = $1 \
         AND type IN ('member.created', 'member.updated')";
    let erased = EventData::MemberErased {
        id: member_id.to_string(),
    };
    let data = snapshot(&erased)?;
    tx.execute(SQL, params![org_id, member_id, &data]).await?;
    // The member's orders name it by its external id: gone from their events as from the
    // orders themselves (which read it from the member).
    const ORDER_EVENTS: &str = "SELECT id, data FROM events WHERE org_id = $1 \
         AND type IN ('order.created', 'order.cancelled') AND subject_id IN \
         (SELECT id FROM orders WHERE org_id = $1 AND owner_id = $2)";
    const REWRITE: &str = "UPDATE events SET data = $2 WHERE id = $1";
    let rows: Vec<(String, String)> = tx.rows(ORDER_EVENTS, params![org_id, member_id]).await?;
    for (id, data) in rows {
        let mut data = stored_data(&id, &data)?;
        if let EventData::Order(order) = &mut data {
            order.owner = String::new();
        }
        tx.execute(REWRITE, params![id, snapshot(&data)?]).await?;
    }
    Ok(())
}

/// One event, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub org_id: String,
    /// `None`: an event of the organisation's, not of one campaign's.
    pub campaign_id: Option<String>,
    pub kind: EventType,
    pub occurred_at: DateTime<Utc>,
    pub data: EventData,
    /// Its place in the organisation's feed (`None` until the dispatcher numbers it).
    pub seq: Option<i64>,
}

/// An event to record with a change, its JSON made before the change's transaction starts.
#[derive(Debug, Clone)]
pub(crate) struct NewEvent {
    pub(crate) id: String,
    pub(crate) org_id: String,
    pub(crate) campaign_id: Option<String>,
    pub(crate) kind: EventType,
    pub(crate) subject_id: Option<String>,
    pub(crate) occurred_at: DateTime<Utc>,
    pub(crate) data: String,
}

impl NewEvent {
    pub(crate) fn new(
        org_id: &str,
        campaign_id: Option<&str>,
        kind: EventType,
        data: &EventData,
    ) -> Result<NewEvent, StoreError> {
        Ok(NewEvent {
            id: new_id(),
            org_id: org_id.to_string(),
            campaign_id: campaign_id.map(str::to_string),
            kind,
            subject_id: data.subject_id().map(str::to_string),
            occurred_at: now(),
            data: snapshot(data)?,
        })
    }

    /// The statement's arguments, in `INSERT`'s column order.
    pub(crate) fn args(&self) -> [crate::backend::Arg<'_>; 7] {
        use crate::backend::ToArg;
        [
            self.id.to_arg(),
            self.org_id.to_arg(),
            self.campaign_id.to_arg(),
            self.kind.to_arg(),
            self.subject_id.to_arg(),
            self.occurred_at.to_arg(),
            self.data.to_arg(),
        ]
    }
}

/// `INSERT`'s column list (`NewEvent::args` gives their values); a statement that records an
/// event with other work names these.
macro_rules! event_columns {
    () => {
        "id, org_id, campaign_id, type, subject_id, occurred_at, data"
    };
}
pub(crate) use event_columns;

const INSERT: &str = concat!(
    "INSERT INTO events (",
    event_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
);

/// Records `event` in the caller's transaction: it commits or rolls back with the change.
pub(crate) async fn record(tx: &mut impl Tx, event: &NewEvent) -> Result<(), StoreError> {
    tx.execute(INSERT, &event.args()).await?;
    Ok(())
}

/// Records `events` in the caller's transaction (on PostgreSQL in multi-row statements).
pub(crate) async fn record_all(tx: &mut impl Tx, events: &[NewEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = events.iter().flat_map(NewEvent::args).collect();
    let head = concat!("INSERT INTO events (", event_columns!(), ")");
    tx.insert_rows(head, "", 7, &values).await?;
    Ok(())
}

row_struct! {
    pub(crate) struct EventRow {
        id: String,
        org_id: String,
        campaign_id: Option<String>,
        kind: String,
        occurred_at: DateTime<Utc>,
        data: String,
        seq: Option<i64>,
    }
}

pub(crate) const EVENT_COLUMNS: &str = "id, org_id, campaign_id, type, occurred_at, data, seq";

/// Event `id`'s data as stored.
fn stored_data(id: &str, data: &str) -> Result<EventData, StoreError> {
    serde_json::from_str(data).map_err(|e| StoreError::UnknownStored {
        table: "events",
        column: "data",
        value: format!("{id}: {e}"),
    })
}

pub(crate) fn event_from_row(row: EventRow) -> Result<Event, StoreError> {
    let kind = crate::error::known(EventType::parse(&row.kind), "events", "type", &row.kind)?;
    let data = stored_data(&row.id, &row.data)?;
    Ok(Event {
        id: row.id,
        org_id: row.org_id,
        campaign_id: row.campaign_id,
        kind,
        occurred_at: row.occurred_at,
        data,
        seq: row.seq,
    })
}

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
impl Store {
    /// The feed's page: numbered events of the organisation that are the campaign's (or of no
    /// campaign), by their number. `Invalid` (`after`) when `after` names no event of theirs.
    pub async fn events(
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
        Paged::of(rows, page, |row: EventRow| event_from_row(row))
    }

    /// The organisation's event `id` (the campaign's, or of no campaign), numbered or not.
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
        row.map(event_from_row).transpose()
    }
}
