//! Transfers between two wallets of the key's campaign (a member's gift, a family pooling its
//! points): both sides or neither, the tokens keeping their expiry dates, idempotent by
//! `externalId`. Each side shows in its wallet's history in the seed's types (BURN, EARN).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;
use serde_json::Value;
use store::{NewTransfer, Received, Transfer};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, MAX_TEXT, Sign, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::spends::{MAX_BURN, burn_amount};

/// A transfer, and what its receiver got, as the store keeps them: their fields are documented
/// there for the OpenAPI document.
pub type TransferView = Transfer;
pub type ReceivedView = Received;

/// Give tokens to another wallet of the campaign. `externalId` is unique among the
/// organisation's transfers: the same request again returns the first transfer; another
/// request with it is 409.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TransferInput {
    /// The sending wallet's id or external reference.
    #[schema(schema_with = schema::id, required = true)]
    from_wallet_id: Option<String>,
    /// The receiving wallet's id or external reference: another wallet of the campaign.
    #[schema(schema_with = schema::id, required = true)]
    to_wallet_id: Option<String>,
    #[schema(schema_with = schema::id, required = true)]
    external_id: Option<String>,
    #[schema(schema_with = burn_amount, required = true)]
    amount: Option<serde_json::Number>,
    #[schema(schema_with = schema::text_or_null)]
    description: Option<String>,
    #[schema(schema_with = schema::text_or_null)]
    comment: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
}

fn new_transfer(input: TransferInput) -> Result<NewTransfer, ApiError> {
    let mut checks = Checks::default();
    let amount = checks.required_tokens("amount", input.amount, Sign::Positive, MAX_BURN);
    let transfer = NewTransfer {
        from: checks.required_id("fromWalletId", input.from_wallet_id),
        to: checks.required_id("toWalletId", input.to_wallet_id),
        external_id: checks.required_id("externalId", input.external_id),
        amount,
        description: checks.text("description", input.description, MAX_TEXT),
        comment: checks.text("comment", input.comment, MAX_TEXT),
        meta: checks.meta(input.meta),
    };
    checks.finish(transfer)
}

#[utoipa::path(post, path = "/v1/transfers", tag = "transfers", summary = "Transfer tokens",
    description = "Moves tokens from one wallet of the campaign to another in one step (both \
        sides or neither). The sender's tokens are taken from its oldest lots, as a burn takes \
        them; the receiver gets them as lots keeping their expiry dates (one EARN per date). \
        Lifetime earnings, and so tiers, move only when the campaign's policy says so; the \
        policy may forbid transfers or cap what a wallet sends in a day (UTC).",
    request_body = TransferInput,
    responses((status = 201, body = TransferView),
        (status = 200, description = "the same request again: the first transfer", body = TransferView),
        (status = 400, body = Problem),
        (status = 402, description = "the sender's balance less what is held and the \
            programme's minimum cannot cover the amount; kept under the `externalId`", body = Problem),
        (status = 404, description = "no such wallet in the organisation (`field` names it)", body = Problem),
        (status = 409, description = "`already_exists`: externalId used for another transfer \
            (`field` names the first field that differs); `other_campaign` (naming \
            `fromWalletId` or `toWalletId`): a wallet of another campaign, so perhaps another \
            currency; `transfers_forbidden`: the programme does not allow transfers; \
            `transfer_cap_exceeded` (naming `amount`): past the sender's daily cap, kept under \
            the `externalId`; `same_wallet` (naming `toWalletId`): the tokens would go back to \
            the wallet they come from; `balance_ceiling`: the receiver would pass a trillion \
            tokens", body = Problem)))]
async fn transfer(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<TransferInput>,
) -> Result<(StatusCode, Json<TransferView>), ApiError> {
    let made = state
        .store
        .ledger()
        .transfer(&caller.context.campaign, new_transfer(input)?)
        .await?;
    let status = match made.replayed {
        true => StatusCode::OK,
        false => StatusCode::CREATED,
    };
    Ok((status, Json(made.transfer)))
}

#[utoipa::path(get, path = "/v1/transfers/{id}", tag = "transfers", summary = "Get a transfer",
    params(("id" = String, Path, description = "the transfer's id or externalId")),
    responses((status = 200, body = TransferView), (status = 404, body = Problem)))]
async fn get_transfer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TransferView>, ApiError> {
    let transfer = state
        .store
        .ledger()
        .get_transfer(&caller.context.campaign, &id)
        .await?;
    Ok(Json(transfer))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(transfer))
        .routes(routes!(get_transfer))
}
