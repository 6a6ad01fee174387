//! Bookings (seed #14-17) of order lines whose product is booked in advance: created for a line
//! (`POST /v1/redemptions/{redemptionId}/bookings`), found, read, and moved along their state
//! machine (REQUESTED -> PENDING | CONFIRMED | UNSUCCESSFUL | CANCELLED; PENDING -> CONFIRMED |
//! UNSUCCESSFUL | CANCELLED; CONFIRMED -> CANCELLED; UNSUCCESSFUL and CANCELLED are final).

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use store::BookingFilter;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;
use crate::orders::views::BookingView;
use crate::orders::{BookingInput, BookingUpdate, booking_patch, new_booking};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(find_bookings))
        .routes(routes!(get_booking))
        .routes(routes!(update_booking))
        .routes(routes!(create_booking))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct BookingQuery {
    /// Only the booking with this id.
    id: Option<String>,
    /// Only this member's bookings (external id or id); an unknown member has none.
    owner_id: Option<String>,
}

#[utoipa::path(get, path = "/v1/bookings", tag = "bookings", summary = "Find Bookings",
    description = "The campaign's bookings, newest first.",
    params(PagingParams, BookingQuery),
    responses((status = 200, body = PagedList<BookingView>), (status = 400, body = Problem)))]
async fn find_bookings(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<BookingQuery>,
) -> Result<Json<PagedList<BookingView>>, ApiError> {
    let filter = BookingFilter {
        id: query.id,
        owner: query.owner_id,
    };
    let bookings = state
        .store
        .orders()
        .list_bookings(&caller.context.campaign, &filter, page)
        .await?;
    Ok(Json(PagedList::from_page(bookings, BookingView::from)))
}

#[utoipa::path(get, path = "/v1/bookings/{id}", tag = "bookings", summary = "Get a single Booking",
    params(("id" = String, Path)),
    responses((status = 200, body = BookingView), (status = 404, body = Problem)))]
async fn get_booking(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BookingView>, ApiError> {
    let booking = state
        .store
        .orders()
        .get_booking(&caller.context.campaign, &id)
        .await?;
    Ok(Json(booking.into()))
}

#[utoipa::path(patch, path = "/v1/bookings/{id}", tag = "bookings", summary = "Update Booking",
    description = "Changes `status` along the state machine, and `date` (checked as when \
        booked), `pax` and `notes` while the booking is going ahead. Nothing changed: the \
        booking as it was.",
    params(("id" = String, Path)),
    request_body = BookingUpdate,
    responses((status = 200, body = BookingView),
        (status = 400, description = "a bad field, or a date in the past or on a weekday the product does not allow", body = Problem),
        (status = 404, body = Problem),
        (status = 409, description = "`illegal_transition` (the move names both statuses), `booking_closed` (details of an UNSUCCESSFUL or CANCELLED booking), or `product_withdrawn` (a new date for a product no longer in the catalogue)", body = Problem)))]
async fn update_booking(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<BookingUpdate>,
) -> Result<Json<BookingView>, ApiError> {
    let patch = booking_patch(input)?;
    let booking = state
        .store
        .orders()
        .update_booking(&caller.context.campaign, &id, patch)
        .await?;
    Ok(Json(booking.into()))
}

#[utoipa::path(post, path = "/v1/redemptions/{redemptionId}/bookings", tag = "bookings", summary = "Create Booking",
    description = "Books an order line (`redemptionId` is the line's id) whose product is booked \
        in advance. Its status starts REQUESTED.",
    params(("redemptionId" = String, Path, description = "The order line's id.")),
    request_body = BookingInput,
    responses((status = 200, body = BookingView),
        (status = 400, description = "a bad field; a date in the past or on a weekday the product does not allow; a branch that is not the product's", body = Problem),
        (status = 404, description = "no such order line in the campaign", body = Problem),
        (status = 409, description = "`booking_not_required`, `booking_exists` (one is going ahead: cancel it first), or `product_withdrawn`", body = Problem)))]
async fn create_booking(
    State(state): State<AppState>,
    caller: Caller,
    Path(redemption_id): Path<String>,
    JsonBody(input): JsonBody<BookingInput>,
) -> Result<Json<BookingView>, ApiError> {
    let booking = state
        .store
        .orders()
        .create_booking(
            &caller.context.campaign,
            &redemption_id,
            new_booking(input)?,
        )
        .await?;
    Ok(Json(booking.into()))
}
