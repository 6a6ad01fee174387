//! Holds: tokens reserved on a wallet (a checkout waiting for its payment), then captured
//! (spent as a BURN, whole or in part), voided, or lapsed at their expiry by the background
//! sweep. What a wallet may spend is its balance less what is held (`held`, `available` on the
//! wallet).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use store::{Hold, HoldFilter, HoldStatus, NewHold};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, Sign, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;
use crate::spends::{MAX_BURN, burn_amount, spend_body};

/// A hold, as the store keeps it: its fields are documented there for the OpenAPI document.
pub type HoldView = Hold;

spend_body! {
    /// Reserve tokens. `externalId` is unique among the organisation's holds: the same request
    /// again returns the first hold; another request with it is 409.
    pub struct HoldInput {
        /// When the hold lapses if neither captured nor voided: later than now (else 409
        /// `expiry_passed`). Absent: it does not lapse.
        #[schema(schema_with = schema::date_time_or_null)]
        expires_at: Option<String>,
    }
}

fn new_hold(mut input: HoldInput) -> Result<NewHold, ApiError> {
    let mut checks = Checks::default();
    let spend = input.spend(&mut checks);
    let expires_at = checks.instant("expiresAt", input.expires_at);
    checks.finish(NewHold { spend, expires_at })
}

#[utoipa::path(post, path = "/v1/holds", tag = "holds", summary = "Place a hold",
    description = "Reserves tokens of the wallet, taken from its oldest lots as a burn takes \
        them: no burn, order or other hold can spend them, and they do not expire while held \
        (released after their date, they expire at the next sweep). The balance keeps them until \
        the hold is captured; the wallet's `held` counts them and its `available` leaves them \
        out.",
    request_body = HoldInput,
    responses((status = 201, body = HoldView),
        (status = 200, description = "the same request again: the first hold", body = HoldView),
        (status = 400, body = Problem),
        (status = 402, description = "the balance less what is held and the programme's \
            minimum cannot cover the amount; the same request again under its `externalId` is \
            refused the same way: retry under a new `externalId`", body = Problem),
        (status = 404, description = "unknown wallet", body = Problem),
        (status = 409, description = "`already_exists`: externalId already used for another \
            hold; `field` names the first field that differs; `expiry_passed` (naming \
            `expiresAt`): the moment has gone by", body = Problem)))]
async fn place_hold(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<HoldInput>,
) -> Result<(StatusCode, Json<HoldView>), ApiError> {
    let hold = new_hold(input)?;
    // Well formed, but the moment has gone by: the clock is state, as a balance is.
    if hold.expires_at.is_some_and(|at| at <= state.store.now()) {
        return Err(ApiError::Refused {
            code: "expiry_passed",
            field: Some("expiresAt".into()),
            detail: "expiresAt must be later than now".into(),
        });
    }
    let placed = state
        .store
        .ledger()
        .hold(&caller.context.campaign, hold)
        .await?;
    let status = match placed.replayed {
        true => StatusCode::OK,
        false => StatusCode::CREATED,
    };
    Ok((status, Json(placed.hold)))
}

fn hold_status() -> utoipa::openapi::Ref {
    utoipa::openapi::Ref::from_schema_name("HoldStatus")
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct HoldQuery {
    /// Only this wallet's (id or external reference); an unknown wallet has none.
    wallet_id: Option<String>,
    /// Only holds in this state.
    #[param(schema_with = hold_status)]
    status: Option<String>,
}

#[utoipa::path(get, path = "/v1/holds", tag = "holds", summary = "Get all holds",
    description = "Newest first.",
    params(PagingParams, HoldQuery),
    responses((status = 200, body = PagedList<HoldView>), (status = 400, body = Problem)))]
async fn list_holds(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<HoldQuery>,
) -> Result<Json<PagedList<HoldView>>, ApiError> {
    let campaign = &caller.context.campaign;
    let status = match query.status {
        None => None,
        Some(text) => Some(HoldStatus::parse_any_case(&text).ok_or_else(|| {
            ApiError::invalid(
                "status",
                "invalid_value",
                "use held, captured, voided or lapsed",
            )
        })?),
    };
    let mut filter = HoldFilter {
        wallet_id: query.wallet_id,
        status,
    };
    // A wallet named by its reference is looked up; an unknown one simply has no holds.
    if let Some(reference) = &filter.wallet_id
        && let Ok(wallet) = state.store.ledger().get_wallet(campaign, reference).await
    {
        filter.wallet_id = Some(wallet.id);
    }
    let holds = state
        .store
        .ledger()
        .list_holds(campaign, &filter, page)
        .await?;
    Ok(Json(PagedList::from_page(holds, std::convert::identity)))
}

#[utoipa::path(get, path = "/v1/holds/{id}", tag = "holds", summary = "Get a hold",
    params(("id" = String, Path, description = "the hold's id or externalId")),
    responses((status = 200, body = HoldView), (status = 404, body = Problem)))]
async fn get_hold(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<HoldView>, ApiError> {
    let hold = state
        .store
        .ledger()
        .get_hold(&caller.context.campaign, &id)
        .await?;
    Ok(Json(hold))
}

/// Capture a hold: spend `amount` of it (absent: all of it) as a BURN; the rest is released.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CaptureInput {
    #[schema(schema_with = burn_amount)]
    amount: Option<serde_json::Number>,
}

#[utoipa::path(post, path = "/v1/holds/{id}/capture", tag = "holds", summary = "Capture a hold",
    description = "Spends the hold's oldest tokens as a BURN (its `externalId` is `hold:` and \
        the hold's) and releases the rest to their lots. The same capture again (the same \
        amount, or none) answers with the hold as captured.",
    params(("id" = String, Path, description = "the hold's id or externalId")),
    request_body = CaptureInput,
    responses((status = 200, body = HoldView), (status = 400, body = Problem),
        (status = 404, description = "unknown hold", body = Problem),
        (status = 409, description = "`capture_exceeds_hold` (naming `amount`): more than the \
            hold reserves; `hold_closed` (naming `id`): the hold was voided, lapsed (its expiry \
            has come) or captured for another amount; `pays_order`: the hold pays an order's \
            line, settled with its booking", body = Problem)))]
async fn capture_hold(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<CaptureInput>,
) -> Result<Json<HoldView>, ApiError> {
    let mut checks = Checks::default();
    let amount = checks.tokens("amount", input.amount, Sign::Positive, MAX_BURN);
    let amount = checks.finish(amount)?;
    let settled = state
        .store
        .ledger()
        .capture_hold(&caller.context.campaign, &id, amount)
        .await?;
    Ok(Json(settled.hold))
}

#[utoipa::path(post, path = "/v1/holds/{id}/void", tag = "holds", summary = "Void a hold",
    description = "Releases every token of the hold to its lot. A hold already released \
        (voided or lapsed) is answered as it is.",
    params(("id" = String, Path, description = "the hold's id or externalId")),
    responses((status = 200, body = HoldView),
        (status = 404, description = "unknown hold", body = Problem),
        (status = 409, description = "`hold_closed` (naming `id`): the hold was captured; \
            `pays_order`: the hold pays an order's line, settled with its booking",
            body = Problem)))]
async fn void_hold(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<HoldView>, ApiError> {
    let settled = state
        .store
        .ledger()
        .void_hold(&caller.context.campaign, &id)
        .await?;
    Ok(Json(settled.hold))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(place_hold, list_holds))
        .routes(routes!(get_hold))
        .routes(routes!(capture_hold))
        .routes(routes!(void_hold))
}
