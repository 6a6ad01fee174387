//! Partners redeeming members' codes (`POST /v1/codes/redeem`), with keys that hold the
//! `redeem-codes` permission.

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use store::Permission;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views::RedeemedView;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(redeem_code))
}

/// A code as the member shows it; case, spaces and dashes do not matter.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RedeemInput {
    #[schema(schema_with = schema::id, required = true, example = "7KQ4-XW2M-9HTRC")]
    code: Option<String>,
}

#[utoipa::path(post, path = "/v1/codes/redeem", tag = "orders", summary = "Redeem a code",
    description = "Marks a member's redemption code redeemed, once: of two redeems of one code, \
        exactly one succeeds. Any code of the key's organisation. Needs the `redeem-codes` \
        permission.",
    request_body = RedeemInput,
    responses((status = 200, body = RedeemedView), (status = 400, body = Problem),
        (status = 403, description = "the key lacks the `redeem-codes` permission", body = Problem),
        (status = 404, description = "no such code in the organisation", body = Problem),
        (status = 409, description = "`already_redeemed`, or `code_voided` (its order line was cancelled)", body = Problem)))]
async fn redeem_code(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<RedeemInput>,
) -> Result<Json<RedeemedView>, ApiError> {
    caller.require(Permission::RedeemCodes)?;
    let mut checks = Checks::default();
    let code = checks.required_id("code", input.code);
    let code = checks.finish(code)?;
    let key = &caller.context.key;
    let redeemed = state
        .store
        .orders()
        .redeem_code(caller.org(), &code, &state.codes, &key.id)
        .await?;
    Ok(Json(redeemed.into()))
}
