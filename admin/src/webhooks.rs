//! An organisation's webhook endpoints: added (the signing secret shown then and at a rotation
//! only), changed, disabled, removed, tested, their delivery log read and events delivered
//! again. The client API's organisation-scoped functions (`api::webhooks`) do the checks and
//! the store calls, so both APIs answer alike.

use api::plumbing::{ApiError, JsonBody, PagedList, Paging, PagingParams, Problem};
use api::webhooks::{
    AttemptView, EndpointUpdate, EndpointView, NewEndpointView, NewFields, Queued, RedeliveryInput,
    RotationInput,
};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use store::audit::Action;
use store::{ApiVersion, OrgScope};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, body_campaign, org_of};
use crate::schemas::not_null;
use crate::state::AdminState;

/// The path parameter naming an endpoint.
const ENDPOINT: &str = "the endpoint's id";

/// A new endpoint.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdminEndpointInput {
    #[schema(schema_with = api::webhooks::url_schema, required = true)]
    #[serde(default, deserialize_with = "not_null")]
    url: Option<String>,
    /// What it is for, at most 256 characters.
    #[schema(max_length = 256)]
    description: Option<String>,
    /// The event types to receive; absent or empty: every type.
    #[schema(schema_with = api::webhooks::event_types)]
    #[serde(default, deserialize_with = "not_null")]
    event_types: Option<Vec<String>>,
    /// Only this campaign's events (and the organisation's own); absent: every campaign's.
    #[schema(max_length = 64)]
    campaign_id: Option<String>,
    /// The version whose shapes deliveries carry; absent: the newest.
    #[schema(schema_with = api::webhooks::version_schema)]
    #[serde(default, deserialize_with = "not_null")]
    api_version: Option<String>,
}

/// The organisation's endpoint `id`, or 404 naming the endpoint.
async fn endpoint_in(state: &AdminState, org: &str, id: &str) -> Result<OrgScope, ApiError> {
    let scope = org_of(state, org).await?;
    api::webhooks::get(&state.app, &scope, id).await?;
    Ok(scope)
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/webhooks", tag = "webhooks",
    summary = "List an organisation's webhook endpoints",
    description = "Oldest first, never with their secrets.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<EndpointView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_webhooks(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<EndpointView>>, ApiError> {
    let scope = org_of(&state, &org).await?;
    Ok(Json(api::webhooks::list(&state.app, &scope, page).await?))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/webhooks", tag = "webhooks",
    summary = "Add a webhook endpoint",
    description = "Events are delivered to it signed as the Standard Webhooks specification \
        says. The answer carries the signing secret, shown only here and at a rotation. An \
        organisation has at most the operator's `webhook_endpoints_per_org` endpoints.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = AdminEndpointInput,
    responses((status = 201, body = NewEndpointView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, or `campaignId` names none of its campaigns", body = Problem),
        (status = 409, description = "`too_many_endpoints`: the organisation has as many endpoints as it may", body = Problem)))]
async fn add_webhook(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<AdminEndpointInput>,
) -> Result<(StatusCode, Json<NewEndpointView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let campaign_id = match &input.campaign_id {
        Some(id) => Some(body_campaign(&state, &scope, id).await?.id),
        None => None,
    };
    let action = Action::new("webhook.add")
        .org(org)
        .after(serde_json::json!({
            "url": input.url,
            "eventTypes": input.event_types,
            "campaignId": campaign_id,
            "apiVersion": input.api_version,
        }));
    let fields = NewFields {
        url: input.url,
        description: input.description,
        event_types: input.event_types,
        api_version: input.api_version,
    };
    let newest = ApiVersion::default();
    let app = &state.app;
    let made = principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::add(app, &store, &scope, campaign_id, fields, newest).await
        })
        .await?;
    Ok((StatusCode::CREATED, Json(made)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/webhooks/{id}", tag = "webhooks",
    summary = "Get a webhook endpoint",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    responses((status = 200, body = EndpointView),
        (status = 404, description = "unknown organisation or endpoint", body = Problem)))]
async fn get_webhook(
    State(state): State<AdminState>,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<EndpointView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    Ok(Json(
        api::webhooks::get(&state.app, &scope, &id).await?.into(),
    ))
}

#[utoipa::path(patch, path = "/admin/v1/orgs/{org}/webhooks/{id}", tag = "webhooks",
    summary = "Change, disable or enable a webhook endpoint",
    description = "The fields given change; the others stay. Enabling a disabled endpoint \
        clears its reason; the deliveries that waited are then sent.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    request_body = EndpointUpdate,
    responses((status = 200, body = EndpointView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or endpoint", body = Problem)))]
async fn update_webhook(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
    JsonBody(input): JsonBody<EndpointUpdate>,
) -> Result<Json<EndpointView>, ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    let action = Action::new("webhook.update").org(org).target(id.clone());
    let app = &state.app;
    let changed = principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::update(app, &store, &scope, &id, input).await
        })
        .await?;
    Ok(Json(changed))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/webhooks/{id}", tag = "webhooks",
    summary = "Remove a webhook endpoint",
    description = "Its pending deliveries and its log go with it.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    responses((status = 204, description = "removed"),
        (status = 404, description = "unknown organisation or endpoint", body = Problem)))]
async fn remove_webhook(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<StatusCode, ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    let action = Action::new("webhook.remove").org(org).target(id.clone());
    principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::remove(&store, &scope, &id).await
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/webhooks/{id}/rotate-secret",
    tag = "webhooks", summary = "Rotate a webhook endpoint's secret",
    description = "A new signing secret, returned here once. Until the window ends each \
        delivery carries two signatures (the new secret's and the old one's).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    request_body = RotationInput,
    responses((status = 200, body = NewEndpointView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or endpoint", body = Problem)))]
async fn rotate_webhook_secret(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
    JsonBody(input): JsonBody<RotationInput>,
) -> Result<Json<NewEndpointView>, ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    let action = Action::new("webhook.rotate-secret")
        .org(org)
        .target(id.clone());
    let app = &state.app;
    let rotated = principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::rotate(app, &store, &scope, &id, input).await
        })
        .await?;
    Ok(Json(rotated))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/webhooks/{id}/test", tag = "webhooks",
    summary = "Send a test event",
    description = "A `webhook.test` event, delivered to this endpoint alone, whatever types it \
        receives. Tests and redeliveries together: at most 10,000 deliveries per organisation \
        in an hour.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    responses((status = 202, body = Queued),
        (status = 404, description = "unknown organisation or endpoint", body = Problem),
        (status = 429, description = "`redelivery_limit`: the organisation's deliveries by hand in the last hour are at the bound", body = Problem)))]
async fn test_webhook(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    let action = Action::new("webhook.test").org(org).target(id.clone());
    let app = &state.app;
    let queued = principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::test(app, &store, &scope, &id).await
        })
        .await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/webhooks/{id}/redeliveries",
    tag = "webhooks", summary = "Deliver events again",
    description = "A new delivery to this endpoint of one event (`eventId`), or of every event \
        of a time range (`from`, `to`, at most 31 days) that it receives, each with its \
        original `webhook-id`. At most 1,000 deliveries a request.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64)),
    request_body = RedeliveryInput,
    responses((status = 202, body = Queued),
        (status = 400, description = "a malformed body, or a range of more than 1,000 events the endpoint receives (`to`)", body = Problem),
        (status = 404, description = "unknown organisation, endpoint or event", body = Problem),
        (status = 429, description = "`redelivery_limit`: the organisation's deliveries by hand in the last hour would pass 10,000", body = Problem)))]
async fn redeliver_webhook(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
    JsonBody(input): JsonBody<RedeliveryInput>,
) -> Result<(StatusCode, Json<Queued>), ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    let action = Action::new("webhook.redeliver").org(org).target(id.clone());
    let app = &state.app;
    let queued = principal
        .acting(state.store(), action, |store| async move {
            api::webhooks::deliver_again(app, &store, &scope, &id, input).await
        })
        .await?;
    Ok((StatusCode::ACCEPTED, Json(queued)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/webhooks/{id}/attempts", tag = "webhooks",
    summary = "Get a webhook endpoint's delivery log",
    description = "Every attempt to deliver to it, newest first, with the receiver's status, \
        the time it took and the first KiB of its answer.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = ENDPOINT, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<AttemptView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or endpoint", body = Problem)))]
async fn list_webhook_attempts(
    State(state): State<AdminState>,
    Path((org, id)): Path<(String, String)>,
    Paging(page): Paging,
) -> Result<Json<PagedList<AttemptView>>, ApiError> {
    let scope = endpoint_in(&state, &org, &id).await?;
    Ok(Json(
        api::webhooks::attempts(&state.app, &scope, &id, page).await?,
    ))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_webhooks, add_webhook))
        .routes(routes!(get_webhook, update_webhook, remove_webhook))
        .routes(routes!(rotate_webhook_secret))
        .routes(routes!(test_webhook))
        .routes(routes!(redeliver_webhook))
        .routes(routes!(list_webhook_attempts))
}
