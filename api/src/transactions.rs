//! Transactions (seed #29-32): the list and one transaction, BURN (synchronous) and EARN
//! (accepted with 202, processed by the workers, followed at its `statusCheckUrl`); and
//! reversals of either (a return of an earn, a refund of a burn), listed in the seed's types.

use std::borrow::Cow;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Datelike, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;
use store::{
    EarnInput, EarnRequest, NewBurn, NewCorrection, Tokens, Transaction, TransactionFilter,
    TransactionKind,
};
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{self, Checks, MAX_TEXT, schema};
use crate::http::error::{ApiError, FieldError, Problem};
use crate::http::json::JsonBody;
use crate::http::links::BaseUrl;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;
use crate::http::shapes::named_enum;
use crate::spends::{TOKEN_STEP, spend_body};

/// `sourceAmount`: an earn's amount as the rules were given it (see `earn_amount`), or null.
fn source_amount() -> Object {
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Number,
            Type::Null,
        ]))
        .minimum(Some(0))
        .maximum(Some(store::limits::MAX_EARN_AMOUNT))
        .build()
}

/// A decimal written as a JSON number with the digits it was stored with (`12.50`), which a
/// binary floating-point number could not keep.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ExactNumber(Box<RawValue>);

impl ExactNumber {
    /// The number's text.
    pub fn get(&self) -> &str {
        self.0.get()
    }
}

impl PartialEq for ExactNumber {
    fn eq(&self, other: &Self) -> bool {
        self.get() == other.get()
    }
}

fn exact_number(text: &str) -> Option<ExactNumber> {
    let value: rust_decimal::Decimal = text.parse().ok()?;
    RawValue::from_string(value.to_string())
        .ok()
        .map(ExactNumber)
}

fn earn_amount() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(0))
        .maximum(Some(store::limits::MAX_EARN_AMOUNT))
        .multiple_of(Some(TOKEN_STEP))
        .description(Some(
            "The value of the transaction (money spent, distance flown...), given to the rules; \
             read exactly as written, at most 6 decimals.",
        ))
        .build()
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TransactionView {
    pub id: String,
    pub date: DateTime<Utc>,
    pub description: Option<String>,
    /// Internal use.
    pub comment: Option<String>,
    /// The earn's `id` or the burn's `externalId`.
    pub external_id: Option<String>,
    /// EARN, BURN or EXPIRY. A reversal of an earn is a BURN and a refund of a burn an EARN,
    /// each naming what it corrects in `reversalOf`; a transfer is a BURN on the sending wallet
    /// and an EARN on the receiving one (one per expiry date of the tokens given), each naming
    /// the transfer in `transferId`.
    #[serde(rename = "type")]
    #[schema(value_type = TransactionType)]
    pub kind: Cow<'static, str>,
    /// Tokens moved (never negative; `type` says which way).
    #[schema(value_type = f64)]
    pub amount: Tokens,
    pub currency: String,
    pub wallet_id: String,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// EARN: the amount the rules were given; a reversal of an earn: the value returned. Exact,
    /// with the decimals it was given.
    #[schema(schema_with = source_amount)]
    pub source_amount: Option<ExactNumber>,
    /// A reversal of an earn or a refund of a burn: the transaction it corrects.
    pub reversal_of: Option<String>,
    /// Either side of a transfer between wallets: the transfer's id (`/v1/transfers/{id}`).
    pub transfer_id: Option<String>,
    /// An earn or a burn: the tokens its reversals (or refunds) have taken (or given) back so
    /// far.
    #[schema(value_type = Option<f64>)]
    pub reversed: Option<Tokens>,
    /// EARN: what each rule contributed, e.g. `base:+65;weekend:+65;~:-0.25`.
    pub rules_trace: Option<String>,
    /// EARN: the rule-set version used (absent: the default, one token per unit).
    pub rules_version: Option<i64>,
    /// EARN: whether its tokens are still pending (in the wallet's `pending`, not its balance)
    /// until `vestsAt`.
    pub pending: Option<bool>,
    /// EARN credited pending (a return window): when its tokens vest (become spendable); the
    /// background sweep moves them within a minute of it.
    pub vests_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<Transaction> for TransactionView {
    fn from(t: Transaction) -> Self {
        let transfer_id = match t.kind {
            TransactionKind::TransferOut => Some(t.id.clone()),
            TransactionKind::TransferIn => t.corrects.clone(),
            _ => None,
        };
        TransactionView {
            id: t.id,
            date: t.date,
            description: t.description,
            comment: t.comment,
            external_id: t.external_id,
            kind: listed_as(t.kind).as_str().into(),
            amount: t.amount,
            currency: t.currency,
            wallet_id: t.wallet_id,
            meta: t.meta,
            source_amount: t.source_amount.as_deref().and_then(exact_number),
            transfer_id,
            reversal_of: t
                .corrects
                .filter(|_| matches!(t.kind, TransactionKind::Refund | TransactionKind::Reversal)),
            reversed: matches!(t.kind, TransactionKind::Earn | TransactionKind::Burn)
                .then_some(t.corrected),
            rules_trace: t.trace,
            rules_version: t.rule_version,
            pending: (t.kind == TransactionKind::Earn).then_some(t.pending),
            vests_at: t.vests_at,
            created_at: t.created_at,
        }
    }
}

/// The list's filters. `type` may be repeated (`type=EARN&type=BURN`) or comma-separated.
#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct TransactionQuery {
    /// Only this wallet's (id or external reference); an unknown wallet has none.
    wallet_id: Option<String>,
    /// From this moment (RFC 3339) or day (YYYY-MM-DD, from its first instant in UTC), inclusive.
    #[param(schema_with = moment_or_day)]
    date_from: Option<String>,
    /// Up to this moment or day (to its last instant in UTC), inclusive.
    #[param(schema_with = moment_or_day)]
    date_to: Option<String>,
    /// EARN, BURN and/or EXPIRY.
    #[serde(rename = "type")]
    #[param(rename = "type", schema_with = kinds, explode = true, style = Form)]
    kind: Option<String>,
}

/// The transaction types the interface's versions know, which the `type` filter takes.
const LISTED: [TransactionKind; 3] = [
    TransactionKind::Earn,
    TransactionKind::Burn,
    TransactionKind::Expiry,
];

named_enum!(
    TransactionType,
    "TransactionType",
    "What a transaction did to the wallet: EARN added tokens, BURN spent them, EXPIRY let them \
     lapse.",
    LISTED.map(TransactionKind::as_str)
);

named_enum!(
    EarnStatusName,
    "EarnStatus",
    "Where an earn request stands: accepted (stored), processing, completed (credited), \
     rejected (see `reason`) or duplicate (an earlier earn had its `id`).",
    store::EarnStatus::ALL.map(store::EarnStatus::as_str)
);

/// The type a transaction is shown as: the ledger's corrections as the seed's types (a
/// reversal takes tokens away as a burn does, a refund gives them as an earn does).
fn listed_as(kind: TransactionKind) -> TransactionKind {
    match kind {
        TransactionKind::Reversal | TransactionKind::TransferOut => TransactionKind::Burn,
        TransactionKind::Refund | TransactionKind::TransferIn => TransactionKind::Earn,
        other => other,
    }
}

/// The `type` filter: a list of transaction kinds.
fn kinds() -> utoipa::openapi::schema::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(utoipa::openapi::Ref::from_schema_name("TransactionType"))
        .build()
}

fn moment_or_day() -> utoipa::openapi::schema::Schema {
    use utoipa::openapi::schema::{OneOfBuilder, Schema};
    Schema::OneOf(
        OneOfBuilder::new()
            .item(schema::date_time(false))
            .item(schema::day())
            .build(),
    )
}

/// A date filter: RFC 3339, or a day meaning its first (from) or last (to) instant in UTC.
fn date_param(field: &str, value: &str, end_of_day: bool) -> Result<DateTime<Utc>, FieldError> {
    if let Some(t) = checks::date_time(value) {
        return Ok(t);
    }
    NaiveDate::parse_from_str(value, "%Y-%m-%d")
        .ok()
        .filter(|d| d.year() != 0 && value.len() == 10)
        .and_then(|d| {
            if end_of_day {
                d.and_hms_micro_opt(23, 59, 59, 999_999)
            } else {
                d.and_hms_opt(0, 0, 0)
            }
        })
        .map(|t| store::into_calendar(t.and_utc()))
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
    query: TransactionQuery,
) -> Result<TransactionFilter, ApiError> {
    let mut filter = TransactionFilter {
        wallet_id: query.wallet_id,
        ..TransactionFilter::default()
    };
    let mut errors = Vec::new();
    let mut date = |field, value: Option<String>, end_of_day| {
        let value = value?;
        date_param(field, &value, end_of_day)
            .map_err(|e| errors.push(e))
            .ok()
    };
    filter.date_from = date("dateFrom", query.date_from, false);
    filter.date_to = date("dateTo", query.date_to, true);
    for part in query.kind.iter().flat_map(|k| k.split(',')) {
        match TransactionKind::parse_any_case(part).filter(|k| LISTED.contains(k)) {
            Some(kind) => filter.kinds.extend(
                TransactionKind::ALL
                    .iter()
                    .filter(|k| listed_as(**k) == kind),
            ),
            None => errors.push(FieldError::new(
                "type",
                "invalid_value",
                format!("`{part}`: use EARN, BURN or EXPIRY"),
            )),
        }
    }
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    // A wallet named by its reference is looked up; an unknown one simply has no transactions.
    if let Some(reference) = &filter.wallet_id
        && let Ok(wallet) = state
            .store
            .ledger()
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
    QueryParams(query): QueryParams<TransactionQuery>,
) -> Result<Json<PagedList<TransactionView>>, ApiError> {
    let filter = filter(&state, &caller, query).await?;
    let list = state
        .store
        .ledger()
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
            .ledger()
            .get_transaction(&caller.context.campaign, &id)
            .await?
            .into(),
    ))
}

spend_body! {
    /// Spend tokens. `externalId` is unique in the organisation: the same request again returns the
    /// first transaction; another request with it is 409.
    pub struct BurnInput {
        /// When absent, now. From 1970-01-01T00:00:00Z to a day ahead of the clock (the
        /// operator's `dates_ahead_secs`).
        #[schema(schema_with = schema::date_time_or_null)]
        date: Option<String>,
    }
}

fn new_burn(mut input: BurnInput) -> Result<NewBurn, ApiError> {
    let mut checks = Checks::default();
    let spend = input.spend(&mut checks);
    let burn = NewBurn {
        spend,
        date: checks.instant("date", input.date),
    };
    checks.finish(burn)
}

#[utoipa::path(post, path = "/v1/transactions/burn", tag = "transactions", summary = "Create a BURN Transaction",
    request_body = BurnInput,
    responses((status = 200, body = TransactionView), (status = 400, body = Problem),
        (status = 402, description = "the balance less the programme's minimum cannot cover the amount; the same \
            request again under its `externalId` is refused the same way (with the same `available`), \
            whatever the balance has become: retry under a new `externalId`", body = Problem),
        (status = 404, description = "unknown wallet", body = Problem),
        (status = 409, description = "`already_exists`: externalId already used for another request; `field` names the first field that differs", body = Problem)))]
async fn burn(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<BurnInput>,
) -> Result<Json<TransactionView>, ApiError> {
    let burned = state
        .store
        .ledger()
        .burn(&caller.context.campaign, new_burn(input)?)
        .await?;
    Ok(Json(burned.transaction.into()))
}

fn reversal_amount() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .exclusive_minimum(Some(0))
        .maximum(Some(store::limits::MAX_EARN_AMOUNT))
        .multiple_of(Some(TOKEN_STEP))
        .description(Some(
            "An EARN: the value of the purchase returned; its tokens are taken back in \
             proportion. A BURN: the tokens given back. More than 0, at most 6 decimals. \
             Absent: all that is not reversed yet.",
        ))
        .build()
}

/// Reverse an EARN (a return: its tokens taken back) or refund a BURN (its tokens given back
/// to the lots they came from). `externalId` is unique among the organisation's reversals: the
/// same request again returns the first reversal; another request with it is 409.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReversalBody {
    #[schema(schema_with = schema::id, required = true)]
    external_id: Option<String>,
    #[schema(schema_with = reversal_amount)]
    amount: Option<serde_json::Number>,
    #[schema(schema_with = schema::text_or_null)]
    description: Option<String>,
    #[schema(schema_with = schema::text_or_null)]
    comment: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
}

fn new_correction(id: String, body: ReversalBody) -> Result<NewCorrection, ApiError> {
    let mut checks = Checks::default();
    let amount = checks.amount("amount", body.amount);
    if amount.is_some_and(|a| a <= rules::Decimal::ZERO) {
        checks.fail("amount", "invalid_value", "must be more than 0");
    }
    let correction = NewCorrection {
        transaction_id: id,
        external_id: checks.required_id("externalId", body.external_id),
        amount,
        description: checks.text("description", body.description, MAX_TEXT),
        comment: checks.text("comment", body.comment, MAX_TEXT),
        meta: checks.meta(body.meta),
    };
    checks.finish(correction)
}

#[utoipa::path(post, path = "/v1/transactions/{id}/reversals", tag = "transactions",
    summary = "Reverse an EARN or refund a BURN",
    description = "A reversal of an EARN (a return) takes back the share of its tokens that the \
        returned value is of its purchase, rounded as the campaign's rules round (the last takes \
        exactly what is left), from its own lot first; the wallet's lifetime earnings and tier \
        follow. Tokens the member already spent are, by the campaign's shortfall policy, owed \
        (the balance goes below zero until later earns pay it; the default), forgiven, or the \
        reversal is refused (409 `reversal_shortfall`). A refund of a BURN gives its tokens back \
        to the lots they came from, with their expiry. Listed as a BURN (reversal) or an EARN \
        (refund) naming the original in `reversalOf`.",
    params(("id" = String, Path, description = "The EARN or BURN transaction")),
    request_body = ReversalBody,
    responses((status = 200, body = TransactionView), (status = 400, body = Problem),
        (status = 404, description = "unknown transaction", body = Problem),
        (status = 409, description = "`already_exists`: `externalId` used for another reversal \
            (`field` names the first field that differs); or refused: \
            `not_correctable` (not an EARN or BURN), `reversal_exceeds_earn`, \
            `refund_exceeds_burn`, `reversal_shortfall`, `lots_unknown`, `pays_order` (a BURN \
            that pays an order, given back only by cancelling the order); a refusal is kept: \
            the same request again under its `externalId` is refused the same way", body = Problem)))]
async fn reverse(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(body): JsonBody<ReversalBody>,
) -> Result<Json<TransactionView>, ApiError> {
    let corrected = state
        .store
        .ledger()
        .correct(&caller.context.campaign, new_correction(id, body)?)
        .await?;
    Ok(Json(corrected.transaction.into()))
}

/// Earn tokens: the rules decide how many. Validated now, processed in the background.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EarnBody {
    /// Unique in the organisation: the same earn again answers as the first; another earn
    /// under a used id is refused (409). Ids starting `activity:` are the service's own (an
    /// activity's award): 400.
    #[schema(schema_with = schema::id, required = true)]
    id: Option<String>,
    #[schema(schema_with = earn_amount, required = true)]
    amount: Option<serde_json::Number>,
    /// From 1970-01-01T00:00:00Z to a day ahead of the clock (the operator's
    /// `dates_ahead_secs`), and no older than the campaign's `earn_max_age_days` if it sets one.
    #[schema(schema_with = schema::date_time_required, required = true)]
    date: Option<String>,
    /// The wallet's id or external reference.
    #[schema(schema_with = schema::id, required = true)]
    wallet_id: Option<String>,
    #[schema(schema_with = schema::text_or_null)]
    description: Option<String>,
    #[schema(schema_with = schema::text_or_null)]
    comment: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
}

fn earn_input(body: EarnBody) -> Result<EarnInput, ApiError> {
    let mut checks = Checks::default();
    let amount = checks.amount("amount", body.amount);
    if amount.is_none() && !checks.has("amount") {
        checks.fail("amount", "missing_field", "is required");
    }
    let date_given = body.date.is_some();
    let date = checks.instant("date", body.date);
    if !date_given {
        checks.fail("date", "missing_field", "is required");
    }
    let earn_id = checks.required_id("id", body.id);
    if !checks.has("id")
        && let Err(refused) = store::limits::earn_id(&earn_id)
    {
        checks.fail("id", "invalid_value", refused.message());
    }
    let earn = EarnInput {
        activity: None,
        earn_id,
        wallet: checks.required_id("walletId", body.wallet_id),
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

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarnAccepted {
    /// Always `accepted`.
    pub status: Cow<'static, str>,
    pub request_id: String,
    /// Where to follow the request, an absolute URL: `GET` it.
    pub status_check_url: String,
    pub message: String,
}

#[utoipa::path(post, path = "/v1/transactions/earn", tag = "transactions", summary = "Create an EARN Transaction",
    description = "The earn's `id` is its idempotency key in the organisation, whichever way \
        the earn comes (this operation or a batch-file row): the same earn sent again is \
        answered with the first request (its `requestId`, and its outcome when it has one); \
        another earn under a used `id` is refused.",
    request_body = EarnBody,
    responses((status = 202, body = EarnAccepted), (status = 400, body = Problem),
        (status = 404, description = "unknown wallet", body = Problem),
        (status = 409, description = "`already_exists`: `id` was used for another earn \
            (`field` names the first field that differs)", body = Problem)))]
async fn earn(
    State(state): State<AppState>,
    caller: Caller,
    base: BaseUrl,
    JsonBody(body): JsonBody<EarnBody>,
) -> Result<(StatusCode, Json<EarnAccepted>), ApiError> {
    let pending = state
        .store
        .ledger()
        .pending_earn(&caller.context.campaign, earn_input(body)?)
        .await?;
    let request = state.earn_inbox.submit(pending).await?;
    Ok((
        StatusCode::ACCEPTED,
        Json(EarnAccepted {
            status: "accepted".into(),
            status_check_url: base.join(&format!("/v1/transactions/earn/{}", request.id)),
            request_id: request.id,
            message: "the earn is stored and will be evaluated by the campaign's rules".into(),
        }),
    ))
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct EarnStatusView {
    pub request_id: String,
    #[schema(value_type = EarnStatusName)]
    pub status: Cow<'static, str>,
    /// The earn's own `id`.
    pub id: String,
    pub wallet_id: String,
    /// completed: the EARN transaction; duplicate: the earlier one with the same id.
    pub transaction_id: Option<String>,
    /// completed: the tokens credited.
    #[schema(value_type = Option<f64>)]
    pub tokens: Option<Tokens>,
    /// rejected: why.
    pub reason: Option<String>,
    /// completed: what each rule contributed, e.g. `base:+65;weekend:+65;~:-0.25`.
    pub rules_trace: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl From<EarnRequest> for EarnStatusView {
    fn from(r: EarnRequest) -> Self {
        EarnStatusView {
            request_id: r.id,
            status: r.status.as_str().into(),
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
            .ledger()
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
        .routes(routes!(reverse))
        .routes(routes!(earn))
        .routes(routes!(earn_status))
}
