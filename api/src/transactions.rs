//! Transactions (seed #29-32): the list and one transaction, BURN (synchronous) and EARN
//! (accepted with 202, processed by the workers, followed at its `statusCheckUrl`).

use std::str::FromStr;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use chrono::{DateTime, NaiveDate, Utc};
use rules::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{
    EarnInput, EarnRequest, NewBurn, Tokens, Transaction, TransactionFilter, TransactionKind,
};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Caller;
use crate::checks::Checks;
use crate::error::{ApiError, FieldError, Problem};
use crate::json::JsonBody;
use crate::paging::{PagedList, Paging, PagingParams};

const MAX_TEXT: usize = 256;
const MAX_ID: usize = 128;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransactionView {
    id: String,
    date: DateTime<Utc>,
    description: Option<String>,
    /// Internal use.
    comment: Option<String>,
    /// The earn's `id` or the burn's `externalId`.
    external_id: Option<String>,
    #[serde(rename = "type")]
    #[schema(value_type = String, example = "EARN")]
    kind: &'static str,
    /// Tokens moved (never negative; `type` says which way).
    #[schema(value_type = f64)]
    amount: Tokens,
    currency: String,
    wallet_id: String,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    /// EARN: the amount the rules were given.
    source_amount: Option<String>,
    /// EARN: what each rule contributed, e.g. `base:+65;weekend:+65;~:-0.25`.
    rules_trace: Option<String>,
    /// EARN: the rule-set version used (absent: the default, one token per unit).
    rules_version: Option<i64>,
    created_at: DateTime<Utc>,
}

impl From<Transaction> for TransactionView {
    fn from(t: Transaction) -> Self {
        TransactionView {
            id: t.id,
            date: t.date,
            description: t.description,
            comment: t.comment,
            external_id: t.external_id,
            kind: t.kind.as_str(),
            amount: t.amount,
            currency: t.currency,
            wallet_id: t.wallet_id,
            meta: t.meta,
            source_amount: t.source_amount,
            rules_trace: t.trace,
            rules_version: t.rule_version,
            created_at: t.created_at,
        }
    }
}

/// The list's filters as documented; they are read from the raw query so that `type` may be
/// repeated (`type=EARN&type=BURN`) or comma-separated.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
struct TransactionQuery {
    /// Only this wallet's (id or external reference).
    #[param(rename = "walletId")]
    wallet_id: Option<String>,
    /// From this moment (RFC 3339) or day (YYYY-MM-DD), inclusive.
    #[param(rename = "dateFrom")]
    date_from: Option<String>,
    /// Up to this moment or day, inclusive.
    #[param(rename = "dateTo")]
    date_to: Option<String>,
    /// EARN, BURN and/or EXPIRY.
    #[param(rename = "type")]
    kind: Option<Vec<String>>,
}

/// A date filter: RFC 3339, or a day meaning its first (from) or last (to) instant in UTC.
fn date_param(field: &str, value: &str, end_of_day: bool) -> Result<DateTime<Utc>, FieldError> {
    if let Ok(t) = DateTime::parse_from_rfc3339(value) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .ok()
        .and_then(|d| {
            if end_of_day {
                d.and_hms_micro_opt(23, 59, 59, 999_999)
            } else {
                d.and_hms_opt(0, 0, 0)
            }
        })
        .map(|t| t.and_utc())
        .ok_or_else(|| {
            FieldError::new(
                field,
                "invalid_value",
                format!("`{value}` is not RFC 3339 or YYYY-MM-DD"),
            )
        })
}

async fn filter(
    state: &AppState,
    caller: &Caller,
    pairs: Vec<(String, String)>,
) -> Result<TransactionFilter, ApiError> {
    let mut filter = TransactionFilter::default();
    let mut errors = Vec::new();
    for (name, value) in pairs {
        match name.as_str() {
            "walletId" => filter.wallet_id = Some(value),
            "dateFrom" => date_param("dateFrom", &value, false)
                .map(|d| filter.date_from = Some(d))
                .unwrap_or_else(|e| errors.push(e)),
            "dateTo" => date_param("dateTo", &value, true)
                .map(|d| filter.date_to = Some(d))
                .unwrap_or_else(|e| errors.push(e)),
            "type" => {
                for part in value.split(',').filter(|p| !p.trim().is_empty()) {
                    match TransactionKind::parse(part) {
                        Some(kind) => filter.kinds.push(kind),
                        None => errors.push(FieldError::new(
                            "type",
                            "invalid_value",
                            format!("`{part}`: use EARN, BURN or EXPIRY"),
                        )),
                    }
                }
            }
            _ => {}
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    // A wallet named by its reference is looked up; an unknown one simply has no transactions.
    if let Some(reference) = &filter.wallet_id
        && let Ok(wallet) = state
            .store
            .get_wallet(&caller.context.campaign, reference)
            .await
    {
        filter.wallet_id = Some(wallet.id);
    }
    Ok(filter)
}

#[utoipa::path(get, path = "/v1/transactions", tag = "transactions", summary = "Get All Transactions",
    description = "Newest first.",
    params(PagingParams, TransactionQuery),
    responses((status = 200, body = PagedList<TransactionView>), (status = 400, body = Problem)))]
async fn list_transactions(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    Query(pairs): Query<Vec<(String, String)>>,
) -> Result<Json<PagedList<TransactionView>>, ApiError> {
    let filter = filter(&state, &caller, pairs).await?;
    let list = state
        .store
        .list_transactions(&caller.context.campaign, &filter, page)
        .await?;
    Ok(Json(PagedList::from_page(list, TransactionView::from)))
}

#[utoipa::path(get, path = "/v1/transactions/{id}", tag = "transactions", summary = "Get a Transaction",
    params(("id" = String, Path)),
    responses((status = 200, body = TransactionView), (status = 404, body = Problem)))]
async fn get_transaction(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<TransactionView>, ApiError> {
    Ok(Json(
        state
            .store
            .get_transaction(&caller.context.campaign, &id)
            .await?
            .into(),
    ))
}

/// A JSON number read exactly (`12.30` stays 12.30, never a binary float).
fn exact(checks: &mut Checks, field: &str, number: Option<serde_json::Number>) -> Option<Decimal> {
    let number = number?;
    match Decimal::from_str(&number.to_string())
        .or_else(|_| Decimal::from_scientific(&number.to_string()))
    {
        Ok(value) => Some(value),
        Err(_) => {
            checks.fail(
                field,
                "invalid_value",
                format!("{number} is not a number this service can hold exactly"),
            );
            None
        }
    }
}

fn date(checks: &mut Checks, field: &str, value: Option<String>) -> Option<DateTime<Utc>> {
    let value = value?;
    match DateTime::parse_from_rfc3339(&value) {
        Ok(t) => Some(t.with_timezone(&Utc)),
        Err(_) => {
            checks.fail(
                field,
                "invalid_value",
                format!("`{value}` is not an RFC 3339 date-time (2026-11-18T10:15:00Z)"),
            );
            None
        }
    }
}

/// Spend tokens. `externalId` is unique in the organisation: the same request again returns the
/// first transaction; another request with it is 409.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BurnInput {
    /// When absent, now.
    date: Option<String>,
    description: Option<String>,
    comment: Option<String>,
    external_id: Option<String>,
    #[schema(value_type = f64)]
    amount: Option<serde_json::Number>,
    /// The wallet's id or external reference.
    wallet_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
}

fn new_burn(input: BurnInput) -> Result<NewBurn, ApiError> {
    let mut checks = Checks::default();
    let amount = exact(&mut checks, "amount", input.amount);
    let tokens = match amount {
        None => {
            checks.fail("amount", "missing_field", "is required");
            Tokens::ZERO
        }
        Some(a) if a <= Decimal::ZERO => {
            checks.fail("amount", "invalid_value", "must be more than 0");
            Tokens::ZERO
        }
        Some(a) => Tokens::from_decimal(a).unwrap_or_else(|message| {
            checks.fail("amount", "invalid_value", message);
            Tokens::ZERO
        }),
    };
    let burn = NewBurn {
        wallet: checks.required("walletId", input.wallet_id, MAX_ID),
        external_id: checks.required("externalId", input.external_id, MAX_ID),
        amount: tokens,
        description: checks.required("description", input.description, MAX_TEXT),
        comment: checks.text("comment", input.comment, MAX_TEXT),
        meta: checks.meta(input.meta),
        date: date(&mut checks, "date", input.date),
    };
    checks.finish(burn)
}

#[utoipa::path(post, path = "/v1/transactions/burn", tag = "transactions", summary = "Create a BURN Transaction",
    request_body = BurnInput,
    responses((status = 200, body = TransactionView), (status = 400, body = Problem),
        (status = 402, description = "the balance less the programme's minimum cannot cover the amount", body = Problem),
        (status = 404, description = "unknown wallet", body = Problem),
        (status = 409, description = "externalId already used for another burn", body = Problem)))]
async fn burn(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<BurnInput>,
) -> Result<Json<TransactionView>, ApiError> {
    let burned = state
        .store
        .burn(&caller.context.campaign, new_burn(input)?)
        .await?;
    Ok(Json(burned.transaction.into()))
}

/// Earn tokens: the rules decide how many. Validated now, processed in the background.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarnBody {
    /// Unique in the organisation: a repeat credits nothing and ends `duplicate`.
    id: Option<String>,
    /// The value of the transaction (money spent, distance flown...), given to the rules.
    #[schema(value_type = f64)]
    amount: Option<serde_json::Number>,
    date: Option<String>,
    /// The wallet's id or external reference.
    wallet_id: Option<String>,
    description: Option<String>,
    comment: Option<String>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
}

fn earn_input(body: EarnBody) -> Result<EarnInput, ApiError> {
    let mut checks = Checks::default();
    let amount = exact(&mut checks, "amount", body.amount);
    match amount {
        None if !checks.has("amount") => checks.fail("amount", "missing_field", "is required"),
        Some(a) if a < Decimal::ZERO => {
            checks.fail("amount", "invalid_value", "must not be negative")
        }
        _ => {}
    }
    let date_given = body.date.is_some();
    let date = date(&mut checks, "date", body.date);
    if !date_given {
        checks.fail("date", "missing_field", "is required");
    }
    let earn = EarnInput {
        earn_id: checks.required("id", body.id, MAX_ID),
        wallet: checks.required("walletId", body.wallet_id, MAX_ID),
        amount: amount
            .map(|a| a.normalize().to_string())
            .unwrap_or_default(),
        date: date.unwrap_or_default(),
        description: checks.text("description", body.description, MAX_TEXT),
        comment: checks.text("comment", body.comment, MAX_TEXT),
        meta: checks.meta(body.meta),
    };
    checks.finish(earn)
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarnAccepted {
    /// Always `accepted`.
    status: &'static str,
    request_id: String,
    /// Where to follow the request: `GET` it.
    status_check_url: String,
    message: String,
}

#[utoipa::path(post, path = "/v1/transactions/earn", tag = "transactions", summary = "Create an EARN Transaction",
    request_body = EarnBody,
    responses((status = 202, body = EarnAccepted), (status = 400, body = Problem),
        (status = 404, description = "unknown wallet", body = Problem)))]
async fn earn(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(body): JsonBody<EarnBody>,
) -> Result<(StatusCode, Json<EarnAccepted>), ApiError> {
    let pending = state
        .store
        .pending_earn(&caller.context.campaign, earn_input(body)?)
        .await?;
    let request = state
        .earn_inbox
        .submit(pending)
        .await
        .map_err(ApiError::Internal)?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EarnAccepted {
            status: "accepted",
            status_check_url: format!("/v1/transactions/earn/{}", request.id),
            request_id: request.id,
            message: "the earn is stored and will be evaluated by the campaign's rules".into(),
        }),
    ))
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarnStatusView {
    request_id: String,
    /// accepted, processing, completed, rejected or duplicate.
    #[schema(example = "completed")]
    status: &'static str,
    /// The earn's own `id`.
    id: String,
    wallet_id: String,
    /// completed: the EARN transaction; duplicate: the earlier one with the same id.
    transaction_id: Option<String>,
    /// completed: the tokens credited.
    #[schema(value_type = Option<f64>)]
    tokens: Option<Tokens>,
    /// rejected: why.
    reason: Option<String>,
    /// completed: what each rule contributed, e.g. `base:+65;weekend:+65;~:-0.25`.
    rules_trace: Option<String>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl From<EarnRequest> for EarnStatusView {
    fn from(r: EarnRequest) -> Self {
        EarnStatusView {
            request_id: r.id,
            status: r.status.as_str(),
            id: r.earn_id,
            wallet_id: r.wallet_id,
            transaction_id: r.transaction_id,
            tokens: r.tokens,
            reason: r.reason,
            rules_trace: r.trace,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

#[utoipa::path(get, path = "/v1/transactions/earn/{requestId}", tag = "transactions", summary = "Earn status",
    params(("requestId" = String, Path)),
    responses((status = 200, body = EarnStatusView), (status = 404, body = Problem)))]
async fn earn_status(
    State(state): State<AppState>,
    caller: Caller,
    Path(request_id): Path<String>,
) -> Result<Json<EarnStatusView>, ApiError> {
    Ok(Json(
        state
            .store
            .earn_request(&caller.context.campaign, &request_id)
            .await?
            .into(),
    ))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_transactions))
        .routes(routes!(get_transaction))
        .routes(routes!(burn))
        .routes(routes!(earn))
        .routes(routes!(earn_status))
}
