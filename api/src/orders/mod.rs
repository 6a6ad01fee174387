//! Orders (seed #9-13): placing them (`place`), reading them and their lines, a line's codes in
//! clear (logged), and partners redeeming codes (`codes`). Bookings have their own module.

mod codes;
mod input;
mod place;
pub(crate) mod views;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use serde::Deserialize;
use store::{ApiVersion, OrderScope};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub(crate) use input::{BookingInput, new_booking};
pub use input::{BookingUpdate, booking_patch};
pub use place::cancel_in;
use views::{LineView, OrderView};

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;
use crate::ops::REQUEST_ID;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_orders))
        .routes(routes!(get_order))
        .routes(routes!(decrypt_line))
        .merge(place::router())
        .merge(codes::router())
}

/// 400 for a parameter version 1.6.2 does not have.
fn newer_only(caller: &Caller, field: &str, given: bool) -> Result<(), ApiError> {
    if caller.version == ApiVersion::V1_6_2 && given {
        return Err(ApiError::invalid(
            field,
            "not_allowed",
            "is a version 1.9.5 parameter",
        ));
    }
    Ok(())
}

/// The orders a request may see: the key's campaign, or with `acrossCampaigns` (1.9.5) every
/// campaign of the organisation.
fn scope(caller: &Caller, across: Option<bool>) -> Result<OrderScope, ApiError> {
    newer_only(caller, "acrossCampaigns", across.is_some())?;
    let campaign = &caller.context.campaign;
    Ok(match across {
        Some(true) => OrderScope::organisation(campaign),
        _ => OrderScope::campaign(campaign),
    })
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct OrderQuery {
    /// Only this member's orders (external id or id); an unknown member has none.
    owner_id: Option<String>,
    /// With each order's lines (default false).
    include_lines: Option<bool>,
    /// Orders of every campaign of the organisation, not only the key's. Version 1.9.5 only.
    across_campaigns: Option<bool>,
}

#[utoipa::path(get, path = "/v1/orders", tag = "orders", summary = "Search Orders",
    description = "Newest first.",
    params(PagingParams, OrderQuery),
    responses((status = 200, body = PagedList<OrderView>),
        (status = 400, description = "a bad parameter, or `acrossCampaigns` in version 1.6.2", body = Problem)))]
async fn search_orders(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<OrderQuery>,
) -> Result<Json<PagedList<OrderView>>, ApiError> {
    let scope = scope(&caller, query.across_campaigns)?;
    let with_lines = query.include_lines.unwrap_or(false);
    let orders = state
        .store
        .orders()
        .list_orders(&scope, query.owner_id.as_deref(), with_lines, page)
        .await?;
    Ok(Json(PagedList::from_page(orders, |o| {
        OrderView::new(o, caller.version, with_lines)
    })))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct OneOrderQuery {
    /// The order must be this member's (external id or id); else 404.
    owner_id: Option<String>,
    /// Look in every campaign of the organisation. Version 1.9.5 only.
    across_campaigns: Option<bool>,
}

#[utoipa::path(get, path = "/v1/orders/{id}", tag = "orders", summary = "Get order by id",
    params(("id" = String, Path), OneOrderQuery),
    responses((status = 200, body = OrderView),
        (status = 400, description = "`acrossCampaigns` in version 1.6.2", body = Problem),
        (status = 404, description = "no such order in scope, or not the owner's", body = Problem)))]
async fn get_order(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<OneOrderQuery>,
) -> Result<Json<OrderView>, ApiError> {
    let scope = scope(&caller, query.across_campaigns)?;
    let order = state
        .store
        .orders()
        .get_order(&scope, &id, query.owner_id.as_deref())
        .await?;
    Ok(Json(OrderView::new(order, caller.version, true)))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct DecryptQuery {
    /// true: the codes in clear (each such read is logged with the key and request id);
    /// false: masked.
    #[param(required = true)]
    decrypt: Option<bool>,
    /// The order must be this member's (external id or id). Version 1.9.5 only.
    owner_id: Option<String>,
    /// Look in every campaign of the organisation. Version 1.9.5 only.
    across_campaigns: Option<bool>,
}

#[utoipa::path(get, path = "/v1/orders/{id}/lines/{lineId}", tag = "orders", summary = "Decrypts the line",
    description = "One line of an order; with `decrypt=true` its redemption codes in clear, \
        which only a key that may change things may ask (a read-only key is refused before \
        anything is looked up).",
    params(("id" = String, Path), ("lineId" = String, Path), DecryptQuery),
    responses((status = 200, body = LineView),
        (status = 400, description = "`decrypt` missing, or a 1.9.5 parameter in version 1.6.2", body = Problem),
        (status = 403, description = "`read_only_key`: `decrypt=true` with a read-only key", body = Problem),
        (status = 404, description = "no such order or line in scope, or not the owner's", body = Problem)))]
async fn decrypt_line(
    State(state): State<AppState>,
    caller: Caller,
    headers: HeaderMap,
    Path((id, line_id)): Path<(String, String)>,
    QueryParams(query): QueryParams<DecryptQuery>,
) -> Result<Json<LineView>, ApiError> {
    let Some(decrypt) = query.decrypt else {
        return Err(ApiError::invalid(
            "decrypt",
            "missing_field",
            "is required: true or false",
        ));
    };
    if decrypt && caller.context.key.read_only {
        return Err(ApiError::Forbidden {
            code: "read_only_key",
            detail: "a read-only key may not see redemption codes in clear: ask with \
                     decrypt=false, or with a key that may change things"
                .to_string(),
        });
    }
    newer_only(&caller, "ownerId", query.owner_id.is_some())?;
    let scope = scope(&caller, query.across_campaigns)?;
    let key = decrypt.then_some(&*state.codes);
    let line = state
        .store
        .orders()
        .order_line(&scope, &id, &line_id, query.owner_id.as_deref(), key)
        .await?;
    if decrypt {
        let request_id = headers.get(REQUEST_ID).and_then(|v| v.to_str().ok());
        tracing::info!(
            target: "rewards::audit",
            key_id = %caller.context.key.id,
            request_id = request_id.unwrap_or_default(),
            order_id = %id,
            line_id = %line_id,
            codes = line.codes.len(),
            "redemption codes decrypted"
        );
    }
    Ok(Json(LineView::new(line, caller.version)))
}
