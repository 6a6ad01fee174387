//! `/v1/webhooks`: the organisation's webhook endpoints, their delivery logs, tests and
//! redeliveries. Every operation needs the `webhooks` permission.

use std::borrow::Cow;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Duration, Utc};
use serde::{Deserialize, Serialize};
use store::{
    ApiVersion, DeliveryAttempt, EndpointPatch, EndpointStatus, NewEndpoint, OrgScope, Page,
    Permission, Redelivery, WebhookEndpoint,
};
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::events::{event_types, parse_types};
use crate::http::auth::Caller;
use crate::http::checks::{self, Checks, MAX_TEXT, schema};
use crate::http::error::{ApiError, FieldError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::shapes::named_enum;
use outbound::signature::new_secret;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EndpointView {
    pub id: String,
    pub url: String,
    pub description: Option<String>,
    /// The event types it receives; empty: every type.
    #[schema(value_type = Vec<crate::events::EventTypeName>)]
    pub event_types: Vec<String>,
    /// Only this campaign's events (and the organisation's own); absent: every campaign's.
    pub campaign_id: Option<String>,
    /// The version whose shapes its deliveries carry.
    #[schema(example = "1.9.5")]
    pub api_version: String,
    #[schema(value_type = EndpointStatusName)]
    pub status: Cow<'static, str>,
    /// Why it was disabled: by hand, a 410 Gone, or failing for days.
    pub disabled_reason: Option<String>,
    /// Since when every attempt has failed (absent: the last one succeeded).
    pub failing_since: Option<DateTime<Utc>>,
    /// During a secret rotation: until when the secret before still signs beside the new one.
    pub previous_secret_until: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<WebhookEndpoint> for EndpointView {
    fn from(e: WebhookEndpoint) -> Self {
        EndpointView {
            id: e.id,
            url: e.url,
            description: e.description,
            event_types: e.event_types.iter().map(|t| t.as_str().into()).collect(),
            campaign_id: e.campaign_id,
            api_version: e.api_version.as_str().into(),
            status: e.status.as_str().into(),
            disabled_reason: e.disabled_reason,
            failing_since: e.failing_since,
            previous_secret_until: e.previous_until,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

/// An endpoint with its signing secret: shown when it is made and when the secret is rotated,
/// never again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct NewEndpointView {
    #[serde(flatten)]
    pub endpoint: EndpointView,
    /// The signing secret (`whsec_` and base64), for a Standard Webhooks verifier.
    pub secret: String,
}

/// One attempt of a delivery.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AttemptView {
    pub id: String,
    pub delivery_id: String,
    pub event_id: String,
    #[schema(value_type = crate::events::EventTypeName)]
    pub event_type: String,
    pub attempted_at: DateTime<Utc>,
    /// The receiver's HTTP status; absent when it gave none (refused, timed out, closed).
    pub status_code: Option<u16>,
    pub latency_ms: u32,
    /// A 2xx answer.
    pub succeeded: bool,
    /// The first KiB of the answer, or what went wrong.
    pub response: Option<String>,
    /// The delivery's status now.
    #[schema(value_type = DeliveryStatusName)]
    pub delivery_status: Cow<'static, str>,
}

named_enum!(
    EndpointStatusName,
    "EndpointStatus",
    "Whether an endpoint receives deliveries: enabled or disabled (by hand, by a 410 Gone, or \
     after failing for days: see `disabledReason`).",
    store::EndpointStatus::ALL.map(store::EndpointStatus::as_str)
);

named_enum!(
    DeliveryStatusName,
    "DeliveryStatus",
    "Where a delivery stands: pending (to be tried again), delivered or failed (given up).",
    store::DeliveryStatus::ALL.map(store::DeliveryStatus::as_str)
);

impl From<DeliveryAttempt> for AttemptView {
    fn from(a: DeliveryAttempt) -> Self {
        AttemptView {
            id: a.id,
            delivery_id: a.delivery_id,
            event_id: a.event_id,
            event_type: a.event_type.as_str().into(),
            attempted_at: a.attempted_at,
            status_code: a.status_code,
            latency_ms: a.latency_ms,
            succeeded: a.succeeded,
            response: a.response,
            delivery_status: a.delivery_status.as_str().into(),
        }
    }
}

pub fn url_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(store::MAX_WEBHOOK_URL))
        .description(Some(
            "An absolute https:// address (http:// where the operator allows it) that does not \
             resolve to a loopback, private, link-local or other special address.",
        ))
        .build()
}

pub fn version_schema() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ApiVersion::ALL.map(ApiVersion::as_str)))
        .build()
}

/// A new endpoint.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointInput {
    #[schema(schema_with = url_schema, required = true)]
    url: Option<String>,
    #[schema(schema_with = schema::text_or_null)]
    description: Option<String>,
    /// The event types to receive; absent or empty: every type.
    #[schema(schema_with = event_types)]
    event_types: Option<Vec<String>>,
    /// Receive every campaign's events, not only the key's campaign's (default false).
    all_campaigns: Option<bool>,
    /// The version whose shapes deliveries carry; absent: the caller's.
    #[schema(schema_with = version_schema)]
    api_version: Option<String>,
}

/// What to change; absent fields stay.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EndpointUpdate {
    #[schema(schema_with = url_schema)]
    url: Option<String>,
    #[serde(default, deserialize_with = "checks::nullable")]
    #[schema(schema_with = schema::text_or_null)]
    description: Option<Option<String>>,
    #[schema(schema_with = event_types)]
    event_types: Option<Vec<String>>,
    #[schema(schema_with = version_schema)]
    api_version: Option<String>,
    /// false disables the endpoint (its deliveries wait); true enables it again.
    enabled: Option<bool>,
}

fn version(checks: &mut Checks, value: Option<String>) -> Option<ApiVersion> {
    let text = value?;
    let parsed = ApiVersion::parse(&text);
    if parsed.is_none() {
        checks.fail("apiVersion", "invalid_value", "use 1.6.2 or 1.9.5");
    }
    parsed
}

fn types(checks: &mut Checks, value: Option<Vec<String>>) -> Option<Vec<store::EventType>> {
    let texts = value?;
    let mut errors: Vec<FieldError> = Vec::new();
    let types = parse_types("eventTypes", texts.iter().map(String::as_str), &mut errors);
    errors.into_iter().for_each(|e| checks.push(e));
    Some(types)
}

/// `url` if the address rules allow it (resolving its host now); the problem names `url`.
async fn checked_url(state: &AppState, url: String) -> Result<String, ApiError> {
    if url.chars().count() > store::MAX_WEBHOOK_URL {
        let most = store::MAX_WEBHOOK_URL;
        return Err(ApiError::invalid(
            "url",
            "invalid_value",
            format!("at most {most} characters"),
        ));
    }
    match state.settings.webhooks.rules.check(&url).await {
        Ok(_) => Ok(url),
        Err(why) => Err(ApiError::invalid("url", "invalid_value", why)),
    }
}

#[utoipa::path(post, path = "/v1/webhooks", tag = "webhooks", summary = "Add a webhook endpoint",
    description = "Events are delivered to it by POST, signed as the Standard Webhooks \
        specification says (`webhook-id`, `webhook-timestamp`, `webhook-signature`), at least \
        once, retried with growing waits for about three days. The answer carries the signing \
        secret, shown only here and at a rotation. An organisation has at most the operator's \
        `webhook_endpoints_per_org` endpoints (25 unless set). Needs the `webhooks` permission.",
    request_body = EndpointInput,
    responses((status = 201, body = NewEndpointView), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 409, description = "`too_many_endpoints`: the organisation has as many endpoints as it may", body = Problem)))]
async fn create_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<EndpointInput>,
) -> Result<(StatusCode, Json<NewEndpointView>), ApiError> {
    caller.require(Permission::Webhooks)?;
    let campaign_id = match input.all_campaigns {
        Some(true) => None,
        _ => Some(caller.context.campaign.id.clone()),
    };
    let fields = NewFields {
        url: input.url,
        description: input.description,
        event_types: input.event_types,
        api_version: input.api_version,
    };
    let made = add(
        &state,
        &state.store,
        caller.org(),
        campaign_id,
        fields,
        caller.version,
    );
    Ok((StatusCode::CREATED, Json(made.await?)))
}

/// A new endpoint's fields as either API's body has them, unchecked.
pub struct NewFields {
    pub url: Option<String>,
    pub description: Option<String>,
    pub event_types: Option<Vec<String>>,
    pub api_version: Option<String>,
}

/// Adds an endpoint to the organisation (for `campaign_id`'s events alone, or every
/// campaign's), its deliveries in `api_version` or else `version`: the checks and the store
/// call both APIs make. `store` is the one the write goes through (the admin API's records it
/// in the audit trail).
pub async fn add(
    state: &AppState,
    store: &store::Store,
    org: &OrgScope,
    campaign_id: Option<String>,
    fields: NewFields,
    version: ApiVersion,
) -> Result<NewEndpointView, ApiError> {
    let mut checks = Checks::default();
    let url = checks.required("url", fields.url, store::MAX_WEBHOOK_URL);
    let description = checks.text("description", fields.description, MAX_TEXT);
    let event_types = types(&mut checks, fields.event_types).unwrap_or_default();
    let api_version = self::version(&mut checks, fields.api_version).unwrap_or(version);
    checks.finish(())?;
    let url = checked_url(state, url).await?;
    let secret = new_secret();
    let new = NewEndpoint {
        campaign_id,
        url,
        description,
        event_types,
        api_version,
        secret: secret.clone(),
    };
    let limit = state.settings.webhooks.endpoints_per_org;
    let endpoint = store
        .events()
        .create_endpoint(org, new, &state.codes, limit)
        .await?;
    Ok(NewEndpointView {
        endpoint: endpoint.into(),
        secret,
    })
}

#[utoipa::path(get, path = "/v1/webhooks", tag = "webhooks", summary = "Get all webhook endpoints",
    description = "The organisation's endpoints, oldest first. Needs the `webhooks` permission.",
    params(PagingParams),
    responses((status = 200, body = PagedList<EndpointView>), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem)))]
async fn list_endpoints(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
) -> Result<Json<PagedList<EndpointView>>, ApiError> {
    caller.require(Permission::Webhooks)?;
    Ok(Json(list(&state, caller.org(), page).await?))
}

/// A page of the organisation's endpoints, oldest first.
pub async fn list(
    state: &AppState,
    org: &OrgScope,
    page: Page,
) -> Result<PagedList<EndpointView>, ApiError> {
    let endpoints = state.store.events().endpoints(org, page).await?;
    Ok(PagedList::from_page(endpoints, EndpointView::from))
}

/// One of the organisation's endpoints (404 `endpoint` for another's).
pub async fn get(state: &AppState, org: &OrgScope, id: &str) -> Result<WebhookEndpoint, ApiError> {
    state
        .store
        .events()
        .endpoint(org, id)
        .await?
        .ok_or(ApiError::NotFound("endpoint"))
}

async fn endpoint_of(
    state: &AppState,
    caller: &Caller,
    id: &str,
) -> Result<WebhookEndpoint, ApiError> {
    caller.require(Permission::Webhooks)?;
    get(state, caller.org(), id).await
}

#[utoipa::path(get, path = "/v1/webhooks/{id}", tag = "webhooks", summary = "Get a webhook endpoint",
    params(("id" = String, Path)),
    responses((status = 200, body = EndpointView),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem)))]
async fn get_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<EndpointView>, ApiError> {
    Ok(Json(endpoint_of(&state, &caller, &id).await?.into()))
}

#[utoipa::path(patch, path = "/v1/webhooks/{id}", tag = "webhooks", summary = "Update a webhook endpoint",
    description = "Enabling a disabled endpoint clears its reason; the deliveries that waited are \
        then sent (those older than their three days fail at their next failure).",
    params(("id" = String, Path)),
    request_body = EndpointUpdate,
    responses((status = 200, body = EndpointView), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem)))]
async fn update_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<EndpointUpdate>,
) -> Result<Json<EndpointView>, ApiError> {
    endpoint_of(&state, &caller, &id).await?;
    Ok(Json(
        update(&state, &state.store, caller.org(), &id, input).await?,
    ))
}

/// Changes what `input` names of the organisation's endpoint `id`.
pub async fn update(
    state: &AppState,
    store: &store::Store,
    org: &OrgScope,
    id: &str,
    input: EndpointUpdate,
) -> Result<EndpointView, ApiError> {
    let mut checks = Checks::default();
    let url = input
        .url
        .map(|url| checks.required("url", Some(url), store::MAX_WEBHOOK_URL));
    let description = input
        .description
        .map(|d| checks.text("description", d, MAX_TEXT));
    let patch = EndpointPatch {
        url: None,
        description,
        event_types: types(&mut checks, input.event_types),
        api_version: version(&mut checks, input.api_version),
        status: input.enabled.map(|on| match on {
            true => EndpointStatus::Enabled,
            false => EndpointStatus::Disabled,
        }),
    };
    let mut patch = checks.finish(patch)?;
    if let Some(url) = url {
        patch.url = Some(checked_url(state, url).await?);
    }
    let endpoint = store.events().update_endpoint(org, id, patch).await?;
    Ok(endpoint.into())
}

#[utoipa::path(delete, path = "/v1/webhooks/{id}", tag = "webhooks", summary = "Remove a webhook endpoint",
    description = "Its pending deliveries and its log go with it.",
    params(("id" = String, Path)),
    responses((status = 204, description = "removed"),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem)))]
async fn remove_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    caller.require(Permission::Webhooks)?;
    remove(&state.store, caller.org(), &id).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Removes the organisation's endpoint `id` with its pending deliveries and its log.
pub async fn remove(store: &store::Store, org: &OrgScope, id: &str) -> Result<(), ApiError> {
    match store.events().remove_endpoint(org, id).await? {
        true => Ok(()),
        false => Err(ApiError::NotFound("endpoint")),
    }
}

fn hours() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(0))
        .maximum(Some(168))
        .build()
}

/// How long the secret before keeps signing beside the new one.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RotationInput {
    /// Hours, 0 to 168 (a week); absent: 24. 0 stops the old secret at once.
    #[schema(schema_with = hours)]
    keep_previous_hours: Option<serde_json::Number>,
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/rotate-secret", tag = "webhooks",
    summary = "Rotate a webhook endpoint's secret",
    description = "A new signing secret, returned here once. Until the window ends each delivery \
        carries two signatures (the new secret's and the old one's), so a receiver can change \
        its secret at leisure.",
    params(("id" = String, Path)),
    request_body = RotationInput,
    responses((status = 200, body = NewEndpointView), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem)))]
async fn rotate_secret(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<RotationInput>,
) -> Result<Json<NewEndpointView>, ApiError> {
    endpoint_of(&state, &caller, &id).await?;
    Ok(Json(
        rotate(&state, &state.store, caller.org(), &id, input).await?,
    ))
}

/// A new signing secret for the organisation's endpoint `id`, the old one kept as `input` says.
pub async fn rotate(
    state: &AppState,
    store: &store::Store,
    org: &OrgScope,
    id: &str,
    input: RotationInput,
) -> Result<NewEndpointView, ApiError> {
    let mut checks = Checks::default();
    let hours = checks.whole(
        "keepPreviousHours",
        input.keep_previous_hours.as_ref(),
        0..=168,
    );
    checks.finish(())?;
    let window = match hours {
        Some(hours) => Duration::hours(i64::from(hours)),
        None => Duration::from_std(state.settings.webhooks.rotation_window)
            .unwrap_or(Duration::hours(24)),
    };
    let secret = new_secret();
    let until = (window > Duration::zero()).then(|| state.store.now() + window);
    let endpoint = store
        .events()
        .rotate_endpoint_secret(org, id, &secret, until, &state.codes)
        .await?;
    Ok(NewEndpointView {
        endpoint: endpoint.into(),
        secret,
    })
}

/// The event a test or a redelivery made.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Queued {
    /// The test event's id (a test), absent for a redelivery.
    pub event_id: Option<String>,
    /// Deliveries queued.
    pub deliveries: u64,
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/test", tag = "webhooks",
    summary = "Send a test event",
    description = "A `webhook.test` event, delivered to this endpoint alone (never in the feed), \
        whatever types it receives; a disabled endpoint receives it once enabled again. Tests \
        and redeliveries together: at most 10,000 deliveries per organisation in an hour.",
    params(("id" = String, Path)),
    responses((status = 202, body = Queued),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem),
        (status = 429, description = "`redelivery_limit`: the organisation's deliveries by hand in the last hour are at the bound; `Retry-After` says when to ask again", body = Problem)))]
async fn test_endpoint(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    endpoint_of(&state, &caller, &id).await?;
    let queued = test(&state, &state.store, caller.org(), &id).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// Queues a `webhook.test` event for the organisation's endpoint `id` alone.
pub async fn test(
    state: &AppState,
    store: &store::Store,
    org: &OrgScope,
    id: &str,
) -> Result<Queued, ApiError> {
    let event = store
        .events()
        .send_test_event(org, id, state.settings.webhooks.manual)
        .await?;
    state.deliveries_waiting.notify_one();
    Ok(Queued {
        event_id: Some(event),
        deliveries: 1,
    })
}

/// Which events to deliver again: one (`eventId`) or those of a time range (`from`, `to`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RedeliveryInput {
    #[schema(schema_with = schema::id)]
    event_id: Option<String>,
    /// From this moment (inclusive); with `to`, instead of `eventId`.
    #[schema(schema_with = schema::date_time_or_null)]
    from: Option<String>,
    /// Up to this moment (exclusive), at most 31 days after `from`.
    #[schema(schema_with = schema::date_time_or_null)]
    to: Option<String>,
}

fn redelivery(input: RedeliveryInput) -> Result<Redelivery, ApiError> {
    let mut checks = Checks::default();
    let event = checks.id("eventId", input.event_id);
    let from = checks.instant("from", input.from);
    let to = checks.instant("to", input.to);
    let which = match (event, from, to) {
        (Some(id), None, None) => Some(Redelivery::Event(id)),
        (None, Some(from), Some(to)) if from < to && to - from <= Duration::days(31) => {
            Some(Redelivery::Range { from, to })
        }
        (None, Some(_), Some(_)) => {
            checks.fail(
                "to",
                "invalid_value",
                "after `from`, at most 31 days after it",
            );
            None
        }
        _ => None,
    };
    let which = checks.finish(which)?;
    which.ok_or_else(|| {
        ApiError::invalid("eventId", "required", "give `eventId`, or `from` and `to`")
    })
}

#[utoipa::path(post, path = "/v1/webhooks/{id}/redeliveries", tag = "webhooks",
    summary = "Deliver events again",
    description = "A new delivery to this endpoint of one event, or of every event of a time \
        range that it receives (by type and campaign), each with its original `webhook-id`. \
        One request queues at most 1,000 deliveries (a range that holds more is refused: 400 \
        naming `to`); tests and redeliveries together, at most 10,000 per organisation in an \
        hour.",
    params(("id" = String, Path)),
    request_body = RedeliveryInput,
    responses((status = 202, body = Queued),
        (status = 400, description = "a malformed body, or a range of more than 1,000 events the endpoint receives (`to`)", body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, description = "unknown endpoint or event", body = Problem),
        (status = 429, description = "`redelivery_limit`: the organisation's deliveries by hand in the last hour would pass 10,000; `Retry-After` says when to ask again", body = Problem)))]
async fn redeliver(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<RedeliveryInput>,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    endpoint_of(&state, &caller, &id).await?;
    let queued = deliver_again(&state, &state.store, caller.org(), &id, input).await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

/// Queues again, to the organisation's endpoint `id`, the event or the range `input` names.
pub async fn deliver_again(
    state: &AppState,
    store: &store::Store,
    org: &OrgScope,
    id: &str,
    input: RedeliveryInput,
) -> Result<Queued, ApiError> {
    let which = redelivery(input)?;
    let deliveries = store
        .events()
        .redeliver(org, id, which, state.settings.webhooks.manual)
        .await?;
    state.deliveries_waiting.notify_one();
    Ok(Queued {
        event_id: None,
        deliveries,
    })
}

#[utoipa::path(get, path = "/v1/webhooks/{id}/attempts", tag = "webhooks",
    summary = "Get a webhook endpoint's delivery log",
    description = "Every attempt to deliver to it, newest first.",
    params(("id" = String, Path), PagingParams),
    responses((status = 200, body = PagedList<AttemptView>), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `webhooks` permission", body = Problem),
        (status = 404, body = Problem)))]
async fn list_attempts(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<AttemptView>>, ApiError> {
    caller.require(Permission::Webhooks)?;
    Ok(Json(attempts(&state, caller.org(), &id, page).await?))
}

/// A page of the delivery log of the organisation's endpoint `id`, newest first.
pub async fn attempts(
    state: &AppState,
    org: &OrgScope,
    id: &str,
    page: Page,
) -> Result<PagedList<AttemptView>, ApiError> {
    let attempts = state
        .store
        .events()
        .delivery_attempts(org, id, page)
        .await?;
    Ok(PagedList::from_page(attempts, AttemptView::from))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_endpoint, list_endpoints))
        .routes(routes!(get_endpoint, update_endpoint, remove_endpoint))
        .routes(routes!(rotate_secret))
        .routes(routes!(test_endpoint))
        .routes(routes!(redeliver))
        .routes(routes!(list_attempts))
}
