//! Events: what happened in the programme, in the shape webhooks deliver them and the feed
//! (`GET /v1/events`) lists them, for clients that cannot receive webhooks. An event's `data`
//! is the record it carries in this interface's own shape for the version asked for (the
//! caller's here; the endpoint's for a delivery).

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use store::{
    ApiVersion, Event, EventData, EventFilter, EventType, Paged, StoreError, TierRef, Tokens,
};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::batches::BatchView;
use crate::http::auth::Caller;
use crate::http::checks::{self, schema};
use crate::http::error::{ApiError, FieldError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;
use crate::http::shapes::named_enum;
use crate::members::MemberView;
use crate::members::activities::ActivityView;
use crate::members::referrals::ReferralView;
use crate::orders::views::{BookingView, OrderView, RedeemedView};
use crate::reviews::ReviewView;
use crate::transactions::{EarnStatusView, TransactionView};

/// One event, as webhooks deliver it and the feed lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EventView {
    /// Unique; a delivery's `webhook-id` (the same on every attempt and redelivery, so a
    /// receiver can tell a repeat).
    pub id: String,
    /// What happened.
    #[serde(rename = "type")]
    #[schema(value_type = EventTypeName)]
    pub kind: String,
    /// When it happened.
    pub timestamp: DateTime<Utc>,
    pub organisation_id: String,
    /// Absent for an event of the organisation's own (a member's, a batch file's).
    pub campaign_id: Option<String>,
    /// The record the event carries, as this interface shows it (a `transaction.created`
    /// carries a transaction as `GET /v1/transactions/{id}` answers it).
    #[schema(value_type = Object)]
    pub data: Value,
}

impl EventView {
    /// `event` in the shapes of `version`; an error when its stored record does not read as
    /// the type it names.
    pub fn render(event: Event, version: ApiVersion) -> Result<EventView, StoreError> {
        let data = match EventData::of(&event.data)? {
            EventData::Transaction(t) => json!(TransactionView::from(*t)),
            EventData::Member(m) => json!(MemberView::new(*m, version)),
            EventData::Batch(b) => json!(BatchView::from(*b)),
            EventData::Earn(r) => json!(EarnStatusView::from(*r)),
            EventData::Order(o) => json!(OrderView::new(*o, version, true)),
            EventData::Redeemed(r) => json!(RedeemedView::from(*r)),
            EventData::Booking(b) => json!(BookingView::from(*b)),
            EventData::Activity(a) => json!(ActivityView::from(*a)),
            EventData::Referral(r) => json!(ReferralView::from(*r)),
            EventData::Review { review, status } => {
                json!(ReviewView::with_status(*review, status))
            }
            EventData::TierChanged {
                wallet_id,
                member_id,
                from,
                to,
            } => json!(TierChangedView {
                wallet_id,
                member_id,
                from: from.map(TierNameView::from),
                to: to.map(TierNameView::from),
            }),
            EventData::PointsExpiring {
                wallet_id,
                member_id,
                tokens,
                date,
            } => json!(PointsExpiringView {
                wallet_id,
                member_id,
                tokens,
                date,
            }),
            // A deleted member's events keep no personal data.
            EventData::MemberErased { id } => json!({ "id": id }),
            EventData::Test { endpoint_id } => json!({
                "endpointId": endpoint_id,
                "message": "A test delivery from the operator of your rewards programme.",
            }),
        };
        Ok(EventView {
            id: event.id,
            kind: event.kind.as_str().to_string(),
            timestamp: event.occurred_at,
            organisation_id: event.org_id,
            campaign_id: event.campaign_id,
            data,
        })
    }
}

/// A `wallet.tier_changed` event's data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierChangedView {
    pub wallet_id: String,
    /// The wallet's owner.
    pub member_id: String,
    /// The tier it held before (null: none).
    pub from: Option<TierNameView>,
    /// The tier it holds now (null: none).
    pub to: Option<TierNameView>,
}

/// A tier, by id and name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TierNameView {
    pub id: String,
    pub name: String,
}

impl From<TierRef> for TierNameView {
    fn from(t: TierRef) -> Self {
        TierNameView {
            id: t.id,
            name: t.name,
        }
    }
}

/// A `wallet.points_expiring` event's data: what the wallet's lots hold that expires on `date`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PointsExpiringView {
    pub wallet_id: String,
    /// The wallet's owner.
    pub member_id: String,
    /// The tokens that expire that day, as the notice found them.
    #[schema(value_type = f64)]
    pub tokens: Tokens,
    /// The day (UTC) they expire.
    pub date: NaiveDate,
}

/// The event types a filter or an endpoint may name (the test event is only ever sent).
pub(crate) fn listed_types() -> impl Iterator<Item = EventType> {
    EventType::ALL
        .into_iter()
        .filter(|t| *t != EventType::WebhookTest)
}

/// The names of the event types an endpoint may receive (the console lists them).
pub fn listed_type_names() -> Vec<&'static str> {
    listed_types().map(EventType::as_str).collect()
}

named_enum!(
    EventTypeName,
    "EventType",
    "What an event says happened (docs/events.md describes each type and what it carries).",
    EventType::ALL.map(EventType::as_str)
);

/// The `type` filter and an endpoint's `eventTypes`: a list of event types.
pub fn event_types() -> utoipa::openapi::schema::Array {
    let names: Vec<&str> = listed_types().map(EventType::as_str).collect();
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(names)),
        )
        .build()
}

/// Event types named in `texts` (each may hold several, comma-separated); the errors name
/// `field`.
pub(crate) fn parse_types<'a>(
    field: &str,
    texts: impl IntoIterator<Item = &'a str>,
    errors: &mut Vec<FieldError>,
) -> Vec<EventType> {
    let mut types = Vec::new();
    for part in texts.into_iter().flat_map(|t| t.split(',')) {
        match EventType::parse_any_case(part).filter(|t| *t != EventType::WebhookTest) {
            Some(kind) => types.push(kind),
            None => errors.push(FieldError::new(
                field,
                "invalid_value",
                format!("`{part}` is not an event type"),
            )),
        }
    }
    types
}

fn order() -> utoipa::openapi::schema::Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(["oldest", "newest"]))
        .build()
}

/// The feed's filters. `type` may be repeated or comma-separated.
#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct EventQuery {
    /// Only events of these types.
    #[serde(rename = "type")]
    #[param(rename = "type", schema_with = event_types, explode = true, style = Form)]
    kind: Option<String>,
    /// Only events that happened at or after this moment (RFC 3339).
    #[param(schema_with = date_time_param)]
    from: Option<String>,
    /// Only events that happened before this moment (RFC 3339).
    #[param(schema_with = date_time_param)]
    to: Option<String>,
    /// `oldest` first (the default: the order to follow the feed in) or `newest` first.
    #[param(schema_with = order)]
    order: Option<String>,
    /// Only the events after this one in the order asked for: the last event a reader has
    /// seen, to read on from it.
    #[param(schema_with = schema::id)]
    after: Option<String>,
}

fn date_time_param() -> utoipa::openapi::schema::Object {
    schema::date_time(false)
}

fn filter(query: EventQuery) -> Result<EventFilter, ApiError> {
    let mut errors = Vec::new();
    let types = parse_types("type", query.kind.as_deref(), &mut errors);
    let mut moment = |field: &str, value: Option<String>| {
        let value = value?;
        let parsed = checks::date_time(&value);
        if parsed.is_none() {
            errors.push(FieldError::new(
                field,
                "invalid_value",
                format!("`{value}` is not an RFC 3339 date-time (2026-11-18T10:15:00Z)"),
            ));
        }
        parsed
    };
    let from = moment("from", query.from);
    let to = moment("to", query.to);
    let newest_first = match query.order.as_deref() {
        None | Some("oldest") => false,
        Some("newest") => true,
        Some(other) => {
            errors.push(FieldError::new(
                "order",
                "invalid_value",
                format!("`{other}`: use oldest or newest"),
            ));
            false
        }
    };
    if let Some(after) = &query.after
        && (after.is_empty() || after.len() > 100)
    {
        errors.push(FieldError::new(
            "after",
            "invalid_value",
            "an event id of 1 to 100 characters",
        ));
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    Ok(EventFilter {
        types,
        from,
        to,
        after: query.after,
        newest_first,
    })
}

#[utoipa::path(get, path = "/v1/events", tag = "events", summary = "Get all events",
    description = "The programme's events (the key's campaign's, and the organisation's own), \
        with the payloads webhooks deliver, in the order they were numbered once committed: a \
        reader that keeps the last id it read and asks `after` it never misses one. Events \
        appear here within moments of the change they describe.",
    params(PagingParams, EventQuery),
    responses((status = 200, body = PagedList<EventView>),
        (status = 400, description = "a bad filter; `after` naming no event of the feed",
            body = Problem)))]
async fn list_events(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<EventQuery>,
) -> Result<Json<PagedList<EventView>>, ApiError> {
    let filter = filter(query)?;
    let campaign = &caller.context.campaign;
    let events = state
        .store
        .events()
        .feed(caller.org(), Some(&campaign.id), &filter, page)
        .await?;
    let version = caller.version;
    let views = Paged::of((events.total, events.items), events.page, |e| {
        EventView::render(e, version)
    })?;
    Ok(Json(PagedList::from_page(views, |v| v)))
}

#[utoipa::path(get, path = "/v1/events/{id}", tag = "events", summary = "Get an event",
    params(("id" = String, Path)),
    responses((status = 200, body = EventView), (status = 404, body = Problem)))]
async fn get_event(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<EventView>, ApiError> {
    let campaign = &caller.context.campaign;
    let event = state
        .store
        .events()
        .event(caller.org(), Some(&campaign.id), &id)
        .await?
        .filter(|e| e.seq.is_some() && e.kind != EventType::WebhookTest)
        .ok_or(ApiError::NotFound("event"))?;
    Ok(Json(EventView::render(event, caller.version)?))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_events))
        .routes(routes!(get_event))
}
