//! Transfers between two wallets of the key's campaign (a member's gift, a family pooling its
//! points): both sides or neither, the tokens keeping their expiry dates, idempotent by
//! `externalId`. Each side shows in its wallet's history in the seed's types (BURN, EARN).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{NewTransfer, Received, Tokens, Transfer};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, MAX_TEXT, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::spends::{MAX_BURN, burn_amount};

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransferView {
    /// The sending side's transaction (a BURN in the sender's history).
    pub id: String,
    pub external_id: String,
    pub from_wallet_id: String,
    pub to_wallet_id: String,
    #[schema(value_type = f64)]
    pub amount: Tokens,
    pub currency: String,
    pub description: Option<String>,
    /// Internal use.
    pub comment: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    pub date: DateTime<Utc>,
    /// Whether lifetime earnings (and so tiers) moved with the tokens: the campaign's policy.
    pub earned_moved: bool,
    /// The receiving side: one EARN per expiry date among the tokens given, soonest first.
    pub received: Vec<ReceivedView>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReceivedView {
    pub transaction_id: String,
    #[schema(value_type = f64)]
    pub amount: Tokens,
    /// When these tokens expire (absent: never), as they did in the sender's wallet.
    pub expires_at: Option<DateTime<Utc>>,
}

impl From<Transfer> for TransferView {
    fn from(t: Transfer) -> Self {
        TransferView {
            id: t.id,
            external_id: t.external_id,
            from_wallet_id: t.from_wallet_id,
            to_wallet_id: t.to_wallet_id,
            amount: t.amount,
            currency: t.currency,
            description: t.description,
            comment: t.comment,
            meta: t.meta,
            date: t.date,
            earned_moved: t.earned_moved,
            received: t
                .received
                .into_iter()
                .map(|r: Received| ReceivedView {
                    transaction_id: r.transaction_id,
                    amount: r.amount,
                    expires_at: r.expires_at,
                })
                .collect(),
        }
    }
}

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
    let amount = checks.required_tokens("amount", input.amount, MAX_BURN);
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
    Ok((status, Json(made.transfer.into())))
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
    Ok(Json(transfer.into()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(transfer))
        .routes(routes!(get_transfer))
}
