//! Deliveries: each event to each endpoint that wants it, at least once.
//!
//! The dispatcher (`dispatch_events`, one node at a time: it holds `event_dispatch`'s row)
//! numbers the events that committed since it last ran and makes a pending delivery for each
//! enabled endpoint that wants one. Workers on any node claim an endpoint's due deliveries by
//! moving `claimed_until` past the attempt's timeout (on PostgreSQL passing over rows another
//! node holds), send them, and record each attempt (`record_attempts`): delivered, or due again
//! after a backoff that doubles from `FIRST_RETRY` to `LONGEST_RETRY` (each with a fifth of
//! jitter), or failed once `RETRY_FOR` has passed since the delivery was made. A node that dies
//! mid-attempt leaves its claims to run out; the deliveries are then claimed and sent again.
//!
//! An endpoint whose every attempt fails is paused for a while that grows with how long it has
//! failed (so a dead receiver costs its workers little and never holds others'), is disabled
//! once it has failed for `DISABLE_AFTER`, and at once when it answers 410 Gone.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};

use crate::backend::{Arg, Steps, ToArg, Tx};
use crate::common::ids::{new_id, random_roll};
use crate::endpoints::{ENDPOINT_COLUMNS, EndpointRow, WebhookEndpoint, endpoint_from_row};
use crate::error::StoreError;
use crate::{Event, EventRow, EventType, Events, NewEvent, TestEvent};
use seam::scope::OrgScope;
use seam::{Page, Paged};

/// The wait after a delivery's first failed attempt by default; each failure after doubles it.
pub const FIRST_RETRY: Duration = Duration::seconds(10);
/// The longest wait between two attempts.
pub const LONGEST_RETRY: Duration = Duration::hours(6);
/// How long after it was made a delivery is tried before it is marked failed.
pub const RETRY_FOR: Duration = Duration::days(3);
/// How long an endpoint may fail every attempt before it is disabled.
pub const DISABLE_AFTER: Duration = Duration::days(5);
/// The longest an endpoint that fails is paused between rounds of attempts.
const LONGEST_PAUSE: Duration = Duration::minutes(5);

/// The wait before attempt `attempts + 1` of a delivery whose attempt `attempts` failed, the
/// first wait being `first`, `roll` (0..1) choosing its jitter.
pub fn retry_after(first: Duration, attempts: i64, roll: f64) -> Duration {
    let doublings = u32::try_from(attempts.saturating_sub(1).clamp(0, 20)).unwrap_or(20);
    let wait = first
        .checked_mul(1 << doublings)
        .unwrap_or(LONGEST_RETRY)
        .min(LONGEST_RETRY);
    let millis = wait.num_milliseconds() as f64 * (0.8 + 0.4 * roll);
    Duration::milliseconds(millis as i64)
}

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum DeliveryStatus ("delivery status") {
        Pending = "pending",
        Delivered = "delivered",
        Failed = "failed",
    }
}

/// What the dispatcher did in one run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Dispatched {
    /// Events numbered.
    pub events: usize,
    /// Deliveries made for them.
    pub deliveries: usize,
    /// Whether more may be waiting: as many were numbered as one call takes, or numbered events
    /// are not all fanned out yet.
    pub full: bool,
}

/// What one dispatch transaction fans out at most: about this many deliveries (an endpoint's
/// share of a run is never split), to at most `ENDPOINTS_PER_DISPATCH` endpoints. Each delivery
/// is a row and four index entries on SQLite's one writer: one tenant's thousand endpoints make
/// many short writes, between which every other tenant's writes take their turn.
const DELIVERIES_PER_DISPATCH: usize = 100;
const ENDPOINTS_PER_DISPATCH: usize = 100;
/// The most events fanned out together (one run may take several transactions).
const FAN_OUT_RUN: i64 = 1_000;

/// A delivery claimed for an attempt: send `event` to the endpoint, then `record_attempts`.
#[derive(Debug, Clone)]
pub struct ClaimedDelivery {
    pub id: String,
    /// This attempt's number (1 for the first).
    pub attempt: i64,
    pub created_at: DateTime<Utc>,
    pub event: Event,
}

/// What one attempt came to.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptOutcome {
    pub attempted_at: DateTime<Utc>,
    /// The receiver's status; `None` when it gave none (refused, timed out, closed).
    pub status_code: Option<u16>,
    pub latency_ms: u32,
    /// The beginning of the answer's body, or what went wrong.
    pub response: Option<String>,
}

impl AttemptOutcome {
    /// A 2xx answer: delivered.
    pub fn succeeded(&self) -> bool {
        self.status_code.is_some_and(|s| (200..300).contains(&s))
    }

    /// 410 Gone: the receiver wants no more.
    pub fn gone(&self) -> bool {
        self.status_code == Some(410)
    }
}

/// One attempt in an endpoint's delivery log.
#[derive(Debug, Clone, PartialEq)]
pub struct DeliveryAttempt {
    pub id: String,
    pub delivery_id: String,
    pub event_id: String,
    pub event_type: EventType,
    pub attempted_at: DateTime<Utc>,
    pub status_code: Option<u16>,
    pub latency_ms: u32,
    pub succeeded: bool,
    pub response: Option<String>,
    /// The delivery's status after this attempt's round (its latest).
    pub delivery_status: DeliveryStatus,
}

/// Which events to deliver again to an endpoint.
#[derive(Debug, Clone)]
pub enum Redelivery {
    Event(String),
    /// The events that occurred from `from` up to (not including) `to`.
    Range {
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    },
}

/// What the attempts of a round did to their endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndpointAfter {
    Healthy,
    /// Failing, paused until then.
    Paused(DateTime<Utc>),
    /// Disabled now, for this reason (for the operator's log).
    Disabled(String),
}

const INSERT_DELIVERY: &str = "INSERT INTO deliveries (id, org_id, endpoint_id, event_id, \
     status, attempts, next_at, created_at, updated_at)";

/// The values of a new pending delivery, in `INSERT_DELIVERY`'s order.
fn delivery_values<'a>(
    id: &'a str,
    org_id: &'a str,
    endpoint_id: &'a str,
    event_id: &'a str,
    at: DateTime<Utc>,
) -> [Arg<'a>; 9] {
    [
        id.to_arg(),
        org_id.to_arg(),
        endpoint_id.to_arg(),
        event_id.to_arg(),
        Arg::Text(Some("pending")),
        Arg::Int(Some(0)),
        Arg::Time(Some(at)),
        Arg::Time(Some(at)),
        Arg::Time(Some(at)),
    ]
}

/// Numbers the committed events not yet numbered (at most `limit`) and goes on fanning out
/// the numbered ones: a run of up to `FAN_OUT_RUN` events, endpoint after endpoint (by id), at
/// most `ENDPOINTS_PER_DISPATCH` endpoints or about `DELIVERIES_PER_DISPATCH` deliveries a
/// transaction, its place kept in `event_dispatch` for the next.
struct Dispatch {
    lock: String,
    limit: i64,
    /// When it runs, as the store's clock says.
    at: DateTime<Utc>,
}

/// An event as the dispatcher fans it out: id, organisation, campaign, type, when.
type Numbered = (String, String, Option<String>, String, DateTime<Utc>);

/// The enabled endpoints a transaction of the dispatcher fans out to: of each organisation a
/// run's events belong to (an event only ever goes to its own organisation's), the first after
/// the place the last transaction left (by id): as many as would be given about
/// `DELIVERIES_PER_DISPATCH` deliveries if each wanted every event, at most
/// `ENDPOINTS_PER_DISPATCH`.
struct NextEndpoints {
    /// By id.
    endpoints: Vec<WebhookEndpoint>,
    /// Whether an organisation may have more after these.
    more: bool,
}

impl NextEndpoints {
    async fn read<T: Tx>(
        tx: &mut T,
        events: &[Numbered],
        after: Option<&str>,
    ) -> Result<NextEndpoints, StoreError> {
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM webhook_endpoints WHERE org_id = $1 \
             AND status = 'enabled' AND id > $2 ORDER BY id LIMIT $3"
        );
        let (mut endpoints, mut more) = (Vec::new(), false);
        let mut orgs: Vec<&str> = events.iter().map(|e| e.1.as_str()).collect();
        orgs.sort_unstable();
        orgs.dedup();
        // As many as the run's events would give about the deliveries a transaction makes.
        let most = (DELIVERIES_PER_DISPATCH / events.len().max(1)).clamp(1, ENDPOINTS_PER_DISPATCH);
        for org_id in orgs {
            let rows: Vec<EndpointRow> = tx
                .rows(&sql, params![org_id, after.unwrap_or(""), most as i64])
                .await?;
            more |= rows.len() >= most;
            for row in rows {
                endpoints.push(endpoint_from_row(row)?);
            }
        }
        endpoints.sort_unstable_by(|a, b| a.id.cmp(&b.id));
        more |= endpoints.len() > most;
        endpoints.truncate(most);
        Ok(NextEndpoints { endpoints, more })
    }
}

/// A run's events by organisation, each with its type (those the dispatcher delivers).
fn by_org(run: &[Numbered]) -> HashMap<&str, Vec<(&Numbered, EventType)>> {
    let mut by_org: HashMap<&str, Vec<(&Numbered, EventType)>> = HashMap::new();
    for event in run {
        if let Some(kind) = EventType::parse(&event.3).filter(|k| *k != EventType::WebhookTest) {
            by_org
                .entry(event.1.as_str())
                .or_default()
                .push((event, kind));
        }
    }
    by_org
}

impl Steps for Dispatch {
    type Output = Dispatched;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Dispatched, StoreError> {
        // By time, then id: the database's own events (`wallet.tier_changed`) have random ids.
        // One statement numbers them (`UPDATE ... FROM`: SQLite 3.33 and later).
        const NUMBER: &str = "UPDATE events SET seq = n.seq FROM (SELECT id, \
             $1 + ROW_NUMBER() OVER (ORDER BY occurred_at, id) AS seq FROM events \
             WHERE seq IS NULL ORDER BY occurred_at, id LIMIT $2) n WHERE events.id = n.id \
             RETURNING events.seq";
        const RUN: &str = "SELECT id, org_id, campaign_id, type, occurred_at FROM events \
             WHERE seq > $1 AND seq <= $2 ORDER BY seq";
        const MOVE: &str = "UPDATE event_dispatch SET last_seq = $1, fanned_seq = $2, \
             fanning_to = $3, fanned_endpoint = $4 WHERE id = 1";
        type Place = (i64, i64, i64, Option<String>);
        let Some((last, fanned, fanning_to, after)): Option<Place> =
            tx.row(&self.lock, params![]).await?
        else {
            // Another node is dispatching.
            return Ok(Dispatched::default());
        };
        let numbered: Vec<(i64,)> = tx.rows(NUMBER, params![last, self.limit]).await?;
        let last = last + numbered.len() as i64;
        // The run under way, or the next one.
        let (to, after) = match fanning_to > fanned {
            true => (fanning_to, after),
            false => (last.min(fanned + FAN_OUT_RUN), None),
        };
        let run: Vec<Numbered> = match to > fanned {
            true => tx.rows(RUN, params![fanned, to]).await?,
            false => Vec::new(),
        };
        let next = NextEndpoints::read(tx, &run, after.as_deref()).await?;
        let events = by_org(&run);
        let at = self.at;
        let mut fanned_out = Vec::new();
        let mut place: Option<&str> = None;
        let mut whole = !next.more;
        for endpoint in &next.endpoints {
            if fanned_out.len() >= DELIVERIES_PER_DISPATCH {
                whole = false;
                break;
            }
            let theirs = events
                .get(endpoint.org_id.as_str())
                .map_or(&[][..], Vec::as_slice);
            for (event, kind) in theirs {
                let (id, org_id, campaign_id, _, occurred_at) = event;
                if endpoint.created_at <= *occurred_at
                    && endpoint.wants(*kind, campaign_id.as_deref())
                {
                    fanned_out.push((new_id(), org_id, &endpoint.id, id));
                }
            }
            place = Some(&endpoint.id);
        }
        let values: Vec<Arg<'_>> = fanned_out
            .iter()
            .flat_map(|(id, org, endpoint, event)| delivery_values(id, org, endpoint, event, at))
            .collect();
        if !values.is_empty() {
            tx.insert_rows(INSERT_DELIVERY, "", 9, &values).await?;
        }
        let (fanned, place) = match whole {
            true => (to, None),
            false => (fanned, place.or(after.as_deref())),
        };
        tx.execute(MOVE, params![last, fanned, to, place]).await?;
        Ok(Dispatched {
            events: numbered.len(),
            deliveries: fanned_out.len(),
            full: numbered.len() as i64 >= self.limit || fanned < last,
        })
    }
}

const CLAIM: &str = "UPDATE deliveries SET claimed_until = $2, attempts = attempts + 1, \
     updated_at = $3 WHERE id IN (SELECT id FROM deliveries WHERE endpoint_id = $1 \
     AND status = 'pending' AND next_at <= $3 AND (claimed_until IS NULL OR claimed_until < $3) \
     ORDER BY next_at LIMIT $4{skip_locked}) RETURNING id, event_id, attempts, created_at";

/// A round of an endpoint's due deliveries claimed until `until`, and the endpoint marked as
/// sending until then.
struct Claiming {
    sql: String,
    endpoint_id: String,
    until: DateTime<Utc>,
    at: DateTime<Utc>,
    limit: i64,
}

impl Steps for Claiming {
    type Output = Vec<(String, String, i64, DateTime<Utc>)>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        const SENDING: &str = "UPDATE webhook_endpoints SET sending_until = $2 WHERE id = $1";
        let (endpoint, until) = (&self.endpoint_id, self.until);
        let args = params![endpoint, until, self.at, self.limit];
        let claimed: Self::Output = tx.rows(&self.sql, args).await?;
        if !claimed.is_empty() {
            tx.execute(SENDING, params![&self.endpoint_id, self.until])
                .await?;
        }
        Ok(claimed)
    }
}

/// Marks the endpoint's round ended: it may be due again.
const SENT: &str = "UPDATE webhook_endpoints SET sending_until = NULL WHERE id = $1";

/// Claims given back unattempted: each delivery due again at once, its attempt not counted.
struct Release {
    claims: Vec<(String, i64)>,
}

impl Steps for Release {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        // As in `Record`: only the claim's holder gives it back.
        const RELEASE: &str = "UPDATE deliveries SET claimed_until = NULL, \
             attempts = attempts - 1 WHERE id = $1 AND attempts = $2 AND status = 'pending'";
        for (id, attempt) in &self.claims {
            tx.execute(RELEASE, params![id, attempt]).await?;
        }
        Ok(())
    }
}

/// Deliveries settled by one statement at most (4 parameters each).
const SETTLED_AT_ONCE: usize = 1_000;

/// Settles `rows` deliveries at `$1`: each row's id, attempt, status and next time (`$2`...).
/// Only the claim's holder moves a delivery on: a claim that ran out and was taken again by
/// another node (its `attempts` moved on) is that node's to settle.
fn settle_sql(rows: usize) -> String {
    let values: Vec<String> = (0..rows)
        .map(|row| {
            let n = 2 + row * 4;
            format!("(${n}, ${}, ${}, ${})", n + 1, n + 2, n + 3)
        })
        .collect();
    format!(
        "UPDATE deliveries SET status = v.column3, next_at = v.column4, claimed_until = NULL, \
         updated_at = $1 FROM (VALUES {}) AS v WHERE deliveries.id = v.column1 \
         AND deliveries.attempts = v.column2 AND deliveries.status = 'pending'",
        values.join(", ")
    )
}

/// Records a round of attempts to one endpoint and what they make of it.
struct Record {
    endpoint_id: String,
    first_retry: Duration,
    attempts: Vec<(ClaimedDelivery, AttemptOutcome)>,
    /// When it runs, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Record {
    type Output = EndpointAfter;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<EndpointAfter, StoreError> {
        const LOG: &str = "INSERT INTO delivery_attempts (id, delivery_id, endpoint_id, event_id, \
             attempted_at, status_code, latency_ms, succeeded, response)";
        const ENDPOINT: &str = "SELECT failing_since FROM webhook_endpoints WHERE id = $1";
        const HEALTHY: &str = "UPDATE webhook_endpoints SET failing_since = NULL, \
             paused_until = NULL WHERE id = $1 AND failing_since IS NOT NULL";
        const PAUSE: &str = "UPDATE webhook_endpoints SET failing_since = $2, paused_until = $3 \
             WHERE id = $1";
        const DISABLE: &str = "UPDATE webhook_endpoints SET status = 'disabled', \
             disabled_reason = $2, failing_since = COALESCE(failing_since, $3), \
             paused_until = NULL, updated_at = $3 WHERE id = $1 AND status = 'enabled'";
        let at = self.at;
        tx.execute(SENT, params![&self.endpoint_id]).await?;
        let ids: Vec<String> = self.attempts.iter().map(|_| new_id()).collect();
        let log: Vec<Arg<'_>> = self
            .attempts
            .iter()
            .zip(&ids)
            .flat_map(|((delivery, outcome), id)| {
                [
                    id.to_arg(),
                    delivery.id.to_arg(),
                    self.endpoint_id.to_arg(),
                    delivery.event.id.to_arg(),
                    outcome.attempted_at.to_arg(),
                    Arg::Int(outcome.status_code.map(i64::from)),
                    outcome.latency_ms.to_arg(),
                    Arg::Bool(Some(outcome.succeeded())),
                    Arg::Text(outcome.response.as_deref()),
                ]
            })
            .collect();
        if !log.is_empty() {
            tx.insert_rows(LOG, "", 9, &log).await?;
        }
        let settled: Vec<(&ClaimedDelivery, DeliveryStatus, DateTime<Utc>)> = self
            .attempts
            .iter()
            .map(|(delivery, outcome)| {
                let (status, next_at) = if outcome.succeeded() {
                    (DeliveryStatus::Delivered, at)
                } else {
                    let wait = retry_after(self.first_retry, delivery.attempt, random_roll());
                    let next = at + wait;
                    match next > delivery.created_at + RETRY_FOR {
                        true => (DeliveryStatus::Failed, at),
                        false => (DeliveryStatus::Pending, next),
                    }
                };
                (delivery, status, next_at)
            })
            .collect();
        // The round's deliveries in one statement (not one a delivery: each is a round trip
        // on PostgreSQL), at most `SETTLED_AT_ONCE` a statement.
        for round in settled.chunks(SETTLED_AT_ONCE) {
            let mut args = params![at].to_vec();
            for (delivery, status, next_at) in round {
                args.extend(params![delivery.id, delivery.attempt, *status, *next_at]);
            }
            tx.execute(&settle_sql(round.len()), &args).await?;
        }
        let outcomes = self.attempts.iter().map(|(_, o)| o);
        if let Some(gone) = outcomes.clone().find(|o| o.gone()) {
            let reason = format!("the receiver answered 410 Gone at {}", gone.attempted_at);
            tx.execute(DISABLE, params![&self.endpoint_id, &reason, at])
                .await?;
            return Ok(EndpointAfter::Disabled(reason));
        }
        if outcomes.clone().any(AttemptOutcome::succeeded) || self.attempts.is_empty() {
            tx.execute(HEALTHY, params![&self.endpoint_id]).await?;
            return Ok(EndpointAfter::Healthy);
        }
        let (failing_since,): (Option<DateTime<Utc>>,) = tx
            .row(ENDPOINT, params![&self.endpoint_id])
            .await?
            .ok_or(StoreError::NotFound { what: "endpoint" })?;
        let since = failing_since.unwrap_or(at);
        if at - since >= DISABLE_AFTER {
            let reason = format!("every attempt failed since {since}");
            tx.execute(DISABLE, params![&self.endpoint_id, &reason, at])
                .await?;
            return Ok(EndpointAfter::Disabled(reason));
        }
        let pause = (at - since).clamp(self.first_retry.min(LONGEST_PAUSE), LONGEST_PAUSE);
        let until = at + pause;
        tx.execute(PAUSE, params![&self.endpoint_id, since, until])
            .await?;
        Ok(EndpointAfter::Paused(until))
    }
}

/// Makes a `webhook.test` event and its one delivery, to the endpoint alone.
struct Test {
    event: NewEvent,
    endpoint_id: String,
    per_hour: i64,
}

impl Steps for Test {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let e = &self.event;
        within_manual_bound(tx, &e.org_id, e.occurred_at, 1, self.per_hour).await?;
        super::record(tx, &self.event).await?;
        let id = new_id();
        let values = delivery_values(&id, &e.org_id, &self.endpoint_id, &e.id, e.occurred_at);
        tx.insert_rows(INSERT_DELIVERY, "", 9, &values).await?;
        tx.execute_each(MARK_MANUAL, params![], &[id]).await?;
        Ok(())
    }
}

/// How many deliveries an organisation may ask for by hand: events per redelivery request,
/// and deliveries in an hour (redeliveries and tests together).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ManualBounds {
    pub per_request: usize,
    pub per_hour: i64,
}

impl Default for ManualBounds {
    fn default() -> Self {
        ManualBounds {
            per_request: 1_000,
            per_hour: 10_000,
        }
    }
}

const MARK_MANUAL: &str = "UPDATE deliveries SET manual = TRUE WHERE id {key}";

/// Refuses `more` deliveries by hand (`Throttled`) when the organisation's in the hour up to
/// `at` would pass `per_hour`; counted under the organisation's lock, so concurrent requests
/// cannot pass it together.
async fn within_manual_bound<T: Tx>(
    tx: &mut T,
    org_id: &str,
    at: DateTime<Utc>,
    more: i64,
    per_hour: i64,
) -> Result<(), StoreError> {
    const RECENT: &str = "SELECT COUNT(*), MIN(created_at) FROM deliveries \
         WHERE org_id = $1 AND manual AND created_at > $2";
    seam::scope::lock_org(tx, org_id).await?;
    let since = at - Duration::hours(1);
    let (recent, oldest): (i64, Option<DateTime<Utc>>) = tx
        .row(RECENT, params![org_id, since])
        .await?
        .unwrap_or((0, None));
    if recent.saturating_add(more) <= per_hour {
        return Ok(());
    }
    let free_at = oldest.map_or(at, |oldest| oldest + Duration::hours(1));
    Err(StoreError::Throttled {
        code: "redelivery_limit",
        message: format!(
            "the organisation asked for {recent} deliveries by hand (redeliveries and tests) in \
             the last hour; at most {per_hour} are made in an hour, and this would make \
             {more} more"
        ),
        retry_after: u64::try_from((free_at - at).num_seconds().max(1)).unwrap_or(1),
    })
}

/// Events to endpoints: the dispatcher, the workers' claims and records, the delivery log and
/// redeliveries (the operator's and the API's: scope `OrgScope`).
impl Events {
    /// Numbers up to `limit` committed events and makes deliveries of the numbered ones, a few
    /// endpoints' worth a call (see `Dispatch`); nothing when another node is doing it. Call
    /// again while `full`.
    #[tracing::instrument(skip_all)]
    pub async fn dispatch_events(&self, limit: i64) -> Result<Dispatched, StoreError> {
        // Reads first: an idle dispatcher takes no turn of SQLite's one writer.
        const UNNUMBERED: &str = "SELECT id FROM events WHERE seq IS NULL LIMIT 1";
        const UNFANNED: &str = "SELECT last_seq FROM event_dispatch WHERE fanned_seq < last_seq";
        let unnumbered: Option<(String,)> = self.read_row(UNNUMBERED, params![]).await?;
        let unfanned: Option<(i64,)> = match unnumbered {
            Some(_) => Some((1,)),
            None => self.read_row(UNFANNED, params![]).await?,
        };
        if unfanned.is_none() {
            return Ok(Dispatched::default());
        }
        let lock = self.claiming(
            "SELECT last_seq, fanned_seq, fanning_to, fanned_endpoint FROM event_dispatch \
             WHERE id = 1{skip_locked}",
        );
        self.write(Dispatch {
            lock,
            limit,
            at: self.now(),
        })
        .await
    }

    /// The enabled endpoints, not paused, that have deliveries due and none in flight (claimed
    /// by a round not yet recorded, on any node): at most `per_org` of each organisation, by
    /// id. An endpoint a node is sending to is that node's until its rounds end, so what is
    /// returned is what a worker may start, and one tenant's thousand endpoints cost each look
    /// no more than its share.
    #[tracing::instrument(skip_all)]
    pub async fn endpoints_due(&self, per_org: usize) -> Result<Vec<WebhookEndpoint>, StoreError> {
        let sql = format!(
            "SELECT {ENDPOINT_COLUMNS} FROM (SELECT e.*, ROW_NUMBER() OVER (PARTITION BY \
             e.org_id ORDER BY e.id) AS place FROM webhook_endpoints e WHERE status = 'enabled' \
             AND (paused_until IS NULL OR paused_until <= $1) \
             AND (sending_until IS NULL OR sending_until < $1) AND EXISTS (SELECT 1 FROM \
             deliveries d WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_at <= $1 \
             AND (d.claimed_until IS NULL OR d.claimed_until < $1))) due \
             WHERE place <= $2 ORDER BY id"
        );
        let per_org = i64::try_from(per_org).unwrap_or(i64::MAX);
        let rows: Vec<EndpointRow> = self.read_rows(&sql, params![self.now(), per_org]).await?;
        rows.into_iter().map(endpoint_from_row).collect()
    }

    /// Claims up to `limit` of the endpoint's due deliveries for `lease`, oldest due first.
    #[tracing::instrument(skip_all)]
    pub async fn claim_deliveries(
        &self,
        endpoint_id: &str,
        limit: i64,
        lease: Duration,
    ) -> Result<Vec<ClaimedDelivery>, StoreError> {
        let at = self.now();
        let claiming = Claiming {
            sql: self.claiming(CLAIM),
            endpoint_id: endpoint_id.to_string(),
            until: at + lease,
            at,
            limit,
        };
        let claimed = self.write(claiming).await?;
        if claimed.is_empty() {
            return Ok(Vec::new());
        }
        // An event may be in several of them (redelivered): each is read once.
        let mut ids: Vec<&str> = claimed.iter().map(|c| c.1.as_str()).collect();
        ids.sort_unstable();
        ids.dedup();
        const EVENTS: &str = "SELECT id, org_id, campaign_id, type, occurred_at, data, seq \
             FROM events WHERE id {key}";
        let rows: Vec<EventRow> = self.read_each(EVENTS, params![], &ids).await?;
        let events = rows
            .into_iter()
            .map(|r| r.into_event().map(|e| (e.id.clone(), e)))
            .collect::<Result<std::collections::HashMap<_, _>, _>>()?;
        Ok(claimed
            .into_iter()
            .filter_map(|(id, event_id, attempt, created_at)| {
                let event = events.get(&event_id)?.clone();
                Some(ClaimedDelivery {
                    id,
                    attempt,
                    created_at,
                    event,
                })
            })
            .collect())
    }

    /// Gives back claims that were never attempted (a node stopping at the end of its grace):
    /// those deliveries are due again at once, for any node, as if never claimed.
    #[tracing::instrument(skip_all)]
    pub async fn release_claims(&self, claimed: &[ClaimedDelivery]) -> Result<(), StoreError> {
        let claims = claimed.iter().map(|c| (c.id.clone(), c.attempt)).collect();
        self.write(Release { claims }).await
    }

    /// Records a round of attempts to the endpoint: the log, each delivery's next step (a
    /// failed one is due again after a wait that starts at `first_retry`, normally
    /// `FIRST_RETRY`), and the endpoint's health.
    #[tracing::instrument(skip_all)]
    pub async fn record_attempts(
        &self,
        endpoint_id: &str,
        attempts: Vec<(ClaimedDelivery, AttemptOutcome)>,
        first_retry: Duration,
    ) -> Result<EndpointAfter, StoreError> {
        self.write(Record {
            at: self.now(),
            endpoint_id: endpoint_id.to_string(),
            first_retry,
            attempts,
        })
        .await
    }

    /// The endpoint's delivery log, newest attempt first.
    #[tracing::instrument(skip_all)]
    pub async fn delivery_attempts(
        &self,
        org: &OrgScope,
        endpoint_id: &str,
        page: Page,
    ) -> Result<Paged<DeliveryAttempt>, StoreError> {
        self.found_endpoint(org, endpoint_id).await?;
        type Row = (
            String,
            String,
            String,
            String,
            DateTime<Utc>,
            Option<i64>,
            i64,
            bool,
            Option<String>,
            String,
        );
        let rows = self
            .read_page(
                page,
                "a.id, a.delivery_id, a.event_id, e.type, a.attempted_at, a.status_code, \
                 a.latency_ms, a.succeeded, a.response, d.status",
                "FROM delivery_attempts a JOIN deliveries d ON d.id = a.delivery_id \
                 JOIN events e ON e.id = a.event_id WHERE a.endpoint_id = $1",
                "a.attempted_at DESC, a.id DESC",
                params![endpoint_id],
            )
            .await?;
        Paged::of(rows, page, |r: Row| {
            let table = "delivery_attempts";
            Ok(DeliveryAttempt {
                event_type: crate::error::known(EventType::parse(&r.3), table, "type", &r.3)?,
                delivery_status: crate::error::known(
                    DeliveryStatus::parse(&r.9),
                    table,
                    "status",
                    &r.9,
                )?,
                id: r.0,
                delivery_id: r.1,
                event_id: r.2,
                attempted_at: r.4,
                status_code: r.5.and_then(|s| u16::try_from(s).ok()),
                latency_ms: u32::try_from(r.6).unwrap_or(u32::MAX),
                succeeded: r.7,
                response: r.8,
            })
        })
    }

    /// Delivers again to the endpoint the events `which` names that it wants: a new pending
    /// delivery each, due now (a pause after failures is lifted). How many were made; `NotFound` (`event`) for an event the
    /// organisation's feed does not hold; `Invalid` (`to`) for a range of more than
    /// `bounds.per_request` events; `Throttled` past `bounds.per_hour`.
    #[tracing::instrument(skip_all)]
    pub async fn redeliver(
        &self,
        org: &OrgScope,
        endpoint_id: &str,
        which: Redelivery,
        bounds: ManualBounds,
    ) -> Result<u64, StoreError> {
        let endpoint = self.found_endpoint(org, endpoint_id).await?;
        let (from, to, id) = match &which {
            Redelivery::Event(id) => {
                self.event(org, endpoint.campaign_id.as_deref(), id)
                    .await?
                    .filter(|e| e.seq.is_some())
                    .ok_or(StoreError::NotFound { what: "event" })?;
                (None, None, Some(id.as_str()))
            }
            Redelivery::Range { from, to } => (Some(*from), Some(*to), None),
        };
        // Read in seq order, at most `scanned_most` (the events of a range the endpoint does
        // not want count too): a range beyond it is refused before anything is queued.
        let scanned_most = bounds.per_request.saturating_mul(10);
        const SQL: &str = "SELECT id, campaign_id, type FROM events WHERE org_id = $1 \
             AND seq IS NOT NULL AND type <> 'webhook.test' AND ($2 IS NULL OR occurred_at >= $2) \
             AND ($3 IS NULL OR occurred_at < $3) AND ($4 IS NULL OR id = $4) ORDER BY seq \
             LIMIT $5";
        let events: Vec<(String, Option<String>, String)> = self
            .read_rows(
                SQL,
                params![
                    org.id(),
                    from,
                    to,
                    id,
                    i64::try_from(scanned_most).unwrap_or(i64::MAX - 1) + 1
                ],
            )
            .await?;
        let scanned = events.len();
        let at = self.now();
        let ids: Vec<(String, String)> = events
            .into_iter()
            .filter(|(_, campaign, kind)| {
                EventType::parse(kind).is_some_and(|k| endpoint.wants(k, campaign.as_deref()))
            })
            .map(|(event_id, ..)| (new_id(), event_id))
            .collect();
        if scanned > scanned_most || ids.len() > bounds.per_request {
            let held = if scanned > scanned_most {
                format!("more than {scanned_most} of the organisation's events")
            } else {
                format!("{} events this endpoint receives", ids.len())
            };
            return Err(StoreError::invalid(
                "to",
                format!(
                    "the range holds {held}; one request redelivers at most {}: narrow \
                     `from` and `to`",
                    bounds.per_request
                ),
            ));
        }
        if ids.is_empty() {
            return Ok(0);
        }
        let values: Vec<Arg<'_>> = ids
            .iter()
            .flat_map(|(id, event)| delivery_values(id, org.id(), endpoint_id, event, at))
            .collect();
        self.write(Insert {
            org_id: org.id().to_string(),
            endpoint_id: endpoint_id.to_owned(),
            at,
            ids: ids.iter().map(|(id, _)| id.clone()).collect(),
            per_hour: bounds.per_hour,
            values: crate::backend::owned(&values),
        })
        .await
    }

    /// Records a `webhook.test` event and delivers it to the endpoint alone; its id.
    /// `Throttled` past `bounds.per_hour`.
    #[tracing::instrument(skip_all)]
    pub async fn send_test_event(
        &self,
        org: &OrgScope,
        endpoint_id: &str,
        bounds: ManualBounds,
    ) -> Result<String, StoreError> {
        let endpoint = self.found_endpoint(org, endpoint_id).await?;
        let data = TestEvent {
            endpoint_id: endpoint.id.clone(),
        };
        let event = NewEvent::new(
            org.id(),
            endpoint.campaign_id.as_deref(),
            EventType::WebhookTest,
            &data,
            self.now(),
        )?;
        let id = event.id.clone();
        self.write(Test {
            event,
            endpoint_id: endpoint.id,
            per_hour: bounds.per_hour,
        })
        .await?;
        Ok(id)
    }
}

/// New pending deliveries asked for by hand (`INSERT_DELIVERY`'s values, row after row), within
/// the organisation's bound.
struct Insert {
    org_id: String,
    /// Its pause (after failures) is lifted: an operator delivering again wants it now.
    endpoint_id: String,
    at: DateTime<Utc>,
    ids: Vec<String>,
    per_hour: i64,
    values: Vec<crate::backend::OwnedArg>,
}

impl Steps for Insert {
    type Output = u64;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<u64, StoreError> {
        let more = i64::try_from(self.ids.len()).unwrap_or(i64::MAX);
        within_manual_bound(tx, &self.org_id, self.at, more, self.per_hour).await?;
        let values = crate::backend::borrowed(&self.values);
        let made = tx.insert_rows(INSERT_DELIVERY, "", 9, &values).await?;
        tx.execute_each(MARK_MANUAL, params![], &self.ids).await?;
        const UNPAUSE: &str =
            "UPDATE webhook_endpoints SET paused_until = NULL WHERE id = $1 AND org_id = $2";
        tx.execute(UNPAUSE, params![&self.endpoint_id, &self.org_id])
            .await?;
        Ok(made)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_double_to_the_longest_wait_and_last_about_three_days() {
        let after = |attempts, roll| retry_after(FIRST_RETRY, attempts, roll);
        assert_eq!(after(1, 0.5), FIRST_RETRY);
        assert_eq!(after(2, 0.5), FIRST_RETRY * 2);
        assert_eq!(after(40, 0.5), LONGEST_RETRY);
        assert!(after(1, 0.0) >= FIRST_RETRY * 4 / 5);
        assert!(after(1, 0.999) <= FIRST_RETRY * 6 / 5);
        // The attempts a delivery gets within `RETRY_FOR`, with the middle of the jitter.
        let (mut waited, mut attempts) = (Duration::zero(), 1);
        while waited + after(attempts, 0.5) <= RETRY_FOR {
            waited += after(attempts, 0.5);
            attempts += 1;
        }
        assert!((15..=30).contains(&attempts), "{attempts} attempts");
    }
}
