//! Placing orders (`POST /v1/orders`) and random orders (`POST /v1/orders/random`), and
//! cancelling them or one of their lines.

use axum::Json;
use axum::extract::{Path, State};
use store::{NewLine, NewOrder, Placed, StoreError};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::input::{OrderInput, RandomOrderInput, new_order, new_random_order};
use super::views::OrderView;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_order))
        .routes(routes!(random_order))
        .routes(routes!(cancel_order))
        .routes(routes!(cancel_line))
}

/// Places `order`; a variant it sold out leaves this node's search index at once (other nodes
/// notice within a second).
async fn place(state: &AppState, caller: &Caller, order: NewOrder) -> Result<Placed, StoreError> {
    let campaign = &caller.context.campaign;
    let placed = state
        .store
        .orders()
        .place_order(campaign, order, state.codes.clone())
        .await?;
    if placed.sold_out {
        state.catalogues.forget(&campaign.id);
    }
    Ok(placed)
}

#[utoipa::path(post, path = "/v1/orders", tag = "orders", summary = "Create a new Order",
    description = "Each line costs its variant's price per unit; the order's total is the sum. \
        A variant with limited stock loses the units ordered, atomically. One redemption code \
        is made per unit (shown masked). With `walletId` the total is burned from that wallet \
        of the owner in the same transaction. The same body again with its `reference` returns \
        the first order, or is refused as the first was (402, `out_of_stock`, `tier_required`).",
    request_body = OrderInput,
    responses((status = 200, body = OrderView),
        (status = 400, description = "a bad field, or a line naming an unknown product or variant, an unavailable variant, a variant of another product, or a booking the product does not allow (`field` is the line's, e.g. `lines[2].variantId`)", body = Problem),
        (status = 402, description = "the paying wallet cannot cover the total: no order is made", body = Problem),
        (status = 404, description = "no member `owner`, or no wallet `walletId`", body = Problem),
        (status = 409, description = "`out_of_stock`, `tier_required` (the owner's wallets have not reached the variant's tier), or `already_exists` (the reference was used for another request; `field` names the first field that differs)", body = Problem)))]
async fn create_order(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<OrderInput>,
) -> Result<Json<OrderView>, ApiError> {
    let placed = place(&state, &caller, new_order(input)?).await?;
    Ok(Json(OrderView::new(placed.order, caller.version, true)))
}

/// Attempts at a random order: a draw from a search index that a moment's change to the
/// catalogue made stale is drawn again from a fresh one.
const DRAWS: usize = 3;

#[utoipa::path(post, path = "/v1/orders/random", tag = "orders", summary = "Create a new Order with a random product",
    description = "One unit of a product drawn from the campaign's available products with a \
        probability proportional to its `weight` (a weight of 0 is never drawn; variants that \
        require a tier are left out), at `cost` tokens (default 1). The same body again with \
        its `reference` returns the first order, or is refused as the first was (402, \
        `out_of_stock`).",
    request_body = RandomOrderInput,
    responses((status = 200, body = OrderView),
        (status = 400, body = Problem),
        (status = 402, description = "the paying wallet cannot cover the cost: no order is made", body = Problem),
        (status = 404, description = "no member `owner`, or no wallet `walletId`", body = Problem),
        (status = 409, description = "`no_available_product` (nothing can be drawn), `out_of_stock`, or `already_exists` (the reference was used for another request; `field` names the first field that differs)", body = Problem)))]
async fn random_order(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<RandomOrderInput>,
) -> Result<Json<OrderView>, ApiError> {
    let mut order = new_random_order(input)?;
    let campaign = &caller.context.campaign;
    let mut attempt = 0;
    let placed = loop {
        attempt += 1;
        let index = state.catalogues.get(campaign).await?;
        let Some((product, variant)) = index.draw(store::random_roll()) else {
            return Err(ApiError::Refused {
                code: "no_available_product",
                field: None,
                detail: "the campaign has no available product with a weight above 0 to draw"
                    .into(),
            });
        };
        order.lines = vec![NewLine {
            product_id: product.id.clone(),
            variant_id: Some(variant.id.clone()),
            quantity: 1,
            reference: None,
            booking: None,
            meta: None,
        }];
        match place(&state, &caller, order.clone()).await {
            Err(
                StoreError::Refused {
                    code: "out_of_stock",
                    ..
                }
                | StoreError::Rejected(_),
            ) if attempt < DRAWS => {
                state.catalogues.forget(&campaign.id);
            }
            other => break other?,
        }
    };
    Ok(Json(OrderView::new(placed.order, caller.version, true)))
}

/// Cancels order `id` (or its line `line`) of the caller's campaign.
async fn cancel(
    state: &AppState,
    caller: &Caller,
    id: &str,
    line: Option<&str>,
) -> Result<Json<OrderView>, ApiError> {
    let order = cancel_in(state, &state.store, &caller.context.campaign, id, line).await?;
    Ok(Json(OrderView::new(order, caller.version, true)))
}

/// Cancels order `id` of `campaign` (or its line `line`) through `store` (the admin API's
/// records it in the audit trail); a variant it made available again rejoins this node's
/// search index at once.
pub async fn cancel_in(
    state: &AppState,
    store: &store::Store,
    campaign: &store::Campaign,
    id: &str,
    line: Option<&str>,
) -> Result<store::Order, ApiError> {
    let (order, restocked) = store.orders().cancel_order(campaign, id, line).await?;
    if restocked {
        state.catalogues.forget(&campaign.id);
    }
    Ok(order)
}

#[utoipa::path(post, path = "/v1/orders/{id}/cancel", tag = "orders", summary = "Cancel an Order",
    description = "Cancels every line not cancelled yet, in one transaction: the points paid for \
        them are refunded to the paying wallet (a refund of the order's BURN, into the lots it \
        took them from), their stock returned, their codes voided (a voided code cannot be \
        redeemed) and their bookings going ahead cancelled. Refused whole when a line has a \
        redeemed code. Cancelling what is already cancelled changes nothing.",
    params(("id" = String, Path)),
    responses((status = 200, body = OrderView),
        (status = 404, description = "no such order in the campaign", body = Problem),
        (status = 409, description = "`line_redeemed`: a line has a redeemed code (`field` is `lineId`; the detail names it)", body = Problem)))]
async fn cancel_order(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<OrderView>, ApiError> {
    cancel(&state, &caller, &id, None).await
}

#[utoipa::path(post, path = "/v1/orders/{id}/lines/{lineId}/cancel", tag = "orders",
    summary = "Cancel an Order line",
    description = "Cancels one line as `POST /v1/orders/{id}/cancel` cancels them all: its points \
        refunded, stock returned, codes voided, booking cancelled.",
    params(("id" = String, Path), ("lineId" = String, Path)),
    responses((status = 200, body = OrderView),
        (status = 404, description = "no such order in the campaign, or no such line in it", body = Problem),
        (status = 409, description = "`line_redeemed`: the line has a redeemed code", body = Problem)))]
async fn cancel_line(
    State(state): State<AppState>,
    caller: Caller,
    Path((id, line_id)): Path<(String, String)>,
) -> Result<Json<OrderView>, ApiError> {
    cancel(&state, &caller, &id, Some(&line_id)).await
}
