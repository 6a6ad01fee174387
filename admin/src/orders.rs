//! A campaign's orders and bookings for support: found by member, read with their lines (codes
//! masked), cancelled whole or line by line (points refunded, stock returned, codes voided),
//! and bookings moved along their states or given a new date. The client API's functions do
//! the checks and the store calls, so both answer alike; shapes are version 1.9.5's.

use api::orders::{BookingUpdate, booking_patch, cancel_in};
use api::plumbing::{ApiError, JsonBody, PagedList, Paging, PagingParams, Problem, QueryParams};
use api::views::{BookingView, OrderView};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use store::audit::Action;
use store::{ApiVersion, BookingFilter, OrderScope};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::state::AdminState;

/// The shapes orders and bookings are shown in.
const SHAPES: ApiVersion = ApiVersion::V1_9_5;

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct OrderQuery {
    /// Only this member's (its id or external id); an unknown member has none.
    #[param(max_length = 128)]
    owner_id: Option<String>,
    /// With each order's lines (default false).
    include_lines: Option<bool>,
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/orders", tag = "support",
    summary = "List a campaign's orders", description = "Newest first.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        PagingParams, OrderQuery),
    responses((status = 200, body = PagedList<OrderView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_orders(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<OrderQuery>,
) -> Result<Json<PagedList<OrderView>>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let lines = query.include_lines.unwrap_or(false);
    let scope = OrderScope::campaign(&campaign);
    let owner = query.owner_id.as_deref();
    let orders = state
        .store()
        .orders()
        .list_orders(&scope, owner, lines, page)
        .await?;
    Ok(Json(PagedList::from_page(orders, |o| {
        OrderView::new(o, SHAPES, lines)
    })))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/orders/{id}",
    tag = "support", summary = "Get an order", description = "With its lines, codes masked.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = "the order's id", max_length = 64)),
    responses((status = 200, body = OrderView),
        (status = 404, description = "unknown organisation, campaign or order", body = Problem)))]
async fn get_order(
    State(state): State<AdminState>,
    Path((org, campaign, id)): Path<(String, String, String)>,
) -> Result<Json<OrderView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let scope = OrderScope::campaign(&campaign);
    let order = state.store().orders().get_order(&scope, &id, None).await?;
    Ok(Json(OrderView::new(order, SHAPES, true)))
}

async fn cancel(
    state: AdminState,
    principal: Principal,
    (org, campaign, id): (String, String, String),
    line: Option<String>,
) -> Result<Json<OrderView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let operation = match line {
        Some(_) => "order.cancel-line",
        None => "order.cancel",
    };
    let action = Action::new(operation)
        .org(org)
        .target(id.clone())
        .after(serde_json::json!({"campaignId": campaign.id, "lineId": line}));
    let app = &state.app;
    let order = principal
        .acting(state.store(), action, |store| async move {
            cancel_in(app, &store, &campaign, &id, line.as_deref()).await
        })
        .await?;
    Ok(Json(OrderView::new(order, SHAPES, true)))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/orders/{id}/cancel",
    tag = "support", summary = "Cancel an order",
    description = "Every line not cancelled yet, in one transaction: the points paid refunded to \
        the paying wallet, stock returned, codes voided and bookings cancelled. Refused whole \
        when a line has a redeemed code. Cancelling what is cancelled changes nothing.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = "the order's id", max_length = 64)),
    responses((status = 200, body = OrderView),
        (status = 404, description = "unknown organisation, campaign or order", body = Problem),
        (status = 409, description = "`line_redeemed`: a line has a redeemed code", body = Problem)))]
async fn cancel_order(
    State(state): State<AdminState>,
    principal: Principal,
    Path(path): Path<(String, String, String)>,
) -> Result<Json<OrderView>, ApiError> {
    cancel(state, principal, path, None).await
}

#[utoipa::path(post,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/orders/{id}/lines/{lineId}/cancel",
    tag = "support", summary = "Cancel an order line",
    description = "One line, as cancelling the order cancels them all.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = "the order's id", max_length = 64),
        ("lineId" = String, Path, description = "the line's id", max_length = 64)),
    responses((status = 200, body = OrderView),
        (status = 404, description = "unknown organisation, campaign, order or line", body = Problem),
        (status = 409, description = "`line_redeemed`: the line has a redeemed code", body = Problem)))]
async fn cancel_order_line(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign, id, line)): Path<(String, String, String, String)>,
) -> Result<Json<OrderView>, ApiError> {
    cancel(state, principal, (org, campaign, id), Some(line)).await
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct BookingQuery {
    /// Only this member's (its id or external id); an unknown member has none.
    #[param(max_length = 128)]
    owner_id: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/bookings",
    tag = "support", summary = "List a campaign's bookings", description = "Newest first.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        PagingParams, BookingQuery),
    responses((status = 200, body = PagedList<BookingView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_bookings(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<BookingQuery>,
) -> Result<Json<PagedList<BookingView>>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let filter = BookingFilter {
        id: None,
        owner: query.owner_id,
    };
    let bookings = state
        .store()
        .orders()
        .list_bookings(&campaign, &filter, page)
        .await?;
    Ok(Json(PagedList::from_page(bookings, BookingView::from)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/bookings/{id}",
    tag = "support", summary = "Get a booking",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = "the booking's id", max_length = 64)),
    responses((status = 200, body = BookingView),
        (status = 404, description = "unknown organisation, campaign or booking", body = Problem)))]
async fn get_booking(
    State(state): State<AdminState>,
    Path((org, campaign, id)): Path<(String, String, String)>,
) -> Result<Json<BookingView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let booking = state.store().orders().get_booking(&campaign, &id).await?;
    Ok(Json(booking.into()))
}

#[utoipa::path(patch, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/bookings/{id}",
    tag = "support", summary = "Change a booking",
    description = "`status` along the state machine (REQUESTED to PENDING, CONFIRMED, \
        UNSUCCESSFUL or CANCELLED; PENDING to CONFIRMED, UNSUCCESSFUL or CANCELLED; CONFIRMED \
        to CANCELLED), and `date` (checked as when booked), `pax` and `notes` while it is going \
        ahead. Nothing changed: the booking as it was.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = "the booking's id", max_length = 64)),
    request_body = BookingUpdate,
    responses((status = 200, body = BookingView),
        (status = 400, description = "a bad field, or a date in the past or on a weekday the product does not allow", body = Problem),
        (status = 404, description = "unknown organisation, campaign or booking", body = Problem),
        (status = 409, description = "`illegal_transition`, `booking_closed` or `product_withdrawn`", body = Problem)))]
async fn update_booking(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign, id)): Path<(String, String, String)>,
    JsonBody(input): JsonBody<BookingUpdate>,
) -> Result<Json<BookingView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let before = state.store().orders().get_booking(&campaign, &id).await?;
    let patch = booking_patch(input)?;
    let action = Action::new("booking.update")
        .org(org)
        .target(id.clone())
        .before(serde_json::json!(BookingView::from(before)));
    let booking = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.orders().update_booking(&campaign, &id, patch).await?)
        })
        .await?;
    Ok(Json(booking.into()))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_orders))
        .routes(routes!(get_order))
        .routes(routes!(cancel_order))
        .routes(routes!(cancel_order_line))
        .routes(routes!(list_bookings))
        .routes(routes!(get_booking, update_booking))
}
