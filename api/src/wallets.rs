//! Wallets (seed #25-28) and the member guide's `POST /api/wallets`. A wallet lives in the key's
//! campaign and takes its currency; clients find it by id or by their own reference.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::{ApiVersion, NewWallet, Tokens, Wallet, WalletFilter};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::catalogue::TierView;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct WalletView {
    pub id: String,
    pub currency: String,
    pub name: Option<String>,
    #[schema(value_type = f64)]
    pub balance: Tokens,
    /// Of the balance, the tokens open holds reserve: spent only by their capture.
    #[schema(value_type = f64)]
    pub held: Tokens,
    /// What a burn, an order or a hold may take now: the balance less what is held and less
    /// the programme's minimum balance (never below 0).
    #[schema(value_type = f64)]
    pub available: Tokens,
    /// Tokens earned but not vested yet (the campaign's pending policy or a rule holds them for
    /// a return window): not in the balance, not spendable, until they vest.
    #[schema(value_type = f64)]
    pub pending: Tokens,
    pub tier: Option<TierView>,
    /// The client's reference (card or policy number).
    pub external_id: Option<String>,
    /// The owning member's id.
    pub owner_id: String,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl WalletView {
    /// The view of `w` in a campaign whose minimum balance is `min_balance`.
    pub fn of(w: Wallet, min_balance: Tokens) -> Self {
        let available = w
            .balance
            .checked_sub(w.held)
            .and_then(|free| free.checked_sub(min_balance))
            .map_or(Tokens::ZERO, |free| free.max(Tokens::ZERO));
        WalletView {
            id: w.id,
            currency: w.currency,
            name: w.name,
            balance: w.balance,
            held: w.held,
            available,
            pending: w.pending,
            tier: w.tier.map(Into::into),
            external_id: w.external_id,
            owner_id: w.owner_id,
            created_at: w.created_at,
            updated_at: w.updated_at,
        }
    }
}

/// Create a wallet. `owner` is a member id or external id; without it, the member whose
/// external id equals `externalId` owns the wallet.
/// At least one of `owner` and `externalId` is required (see `document`).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WalletInput {
    #[schema(schema_with = schema::id_or_null)]
    owner: Option<String>,
    #[schema(schema_with = schema::id_or_null)]
    external_id: Option<String>,
    #[schema(schema_with = schema::id_or_null)]
    name: Option<String>,
}

/// `null` or leaving `name` out keeps the name.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct WalletRename {
    #[schema(schema_with = schema::id_or_null)]
    name: Option<String>,
}

/// What the derived schemas cannot say: a new wallet names its owner, its reference or both.
pub fn document(api: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::{AllOfBuilder, AnyOfBuilder, ObjectBuilder, Schema, Type};
    let Some(components) = api.components.as_mut() else {
        return;
    };
    if let Some(fields) = components.schemas.remove("WalletInput") {
        // Present and not null: a null field counts as left out.
        let given = |field: &str| {
            ObjectBuilder::new()
                .property(field, ObjectBuilder::new().schema_type(Type::String))
                .required(field)
        };
        let either = AnyOfBuilder::new()
            .item(given("owner"))
            .item(given("externalId"));
        let schema = AllOfBuilder::new().item(fields).item(either).build();
        components
            .schemas
            .insert("WalletInput".into(), RefOr::T(Schema::AllOf(schema)));
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct WalletQuery {
    /// Only the wallet with this reference.
    external_id: Option<String>,
    /// Only wallets of this member (id or external id). Version 1.9.5 only.
    owner_id: Option<String>,
}

/// The list in the request's version: 1.9.5 answers the paged object, 1.6.2 wraps it in an array.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum WalletList {
    Paged(PagedList<WalletView>),
    Wrapped(Vec<PagedList<WalletView>>),
}

/// The minimum balance the caller's campaign keeps (its policy, cached).
async fn min_balance(state: &AppState, caller: &Caller) -> Result<Tokens, ApiError> {
    Ok(state
        .store
        .programme()
        .policy(&caller.context.campaign)
        .await?
        .min_balance)
}

fn new_wallet(input: WalletInput) -> Result<NewWallet, ApiError> {
    let mut checks = Checks::default();
    let wallet = NewWallet {
        owner: checks.id("owner", input.owner),
        external_id: checks.id("externalId", input.external_id),
        name: checks.id("name", input.name),
    };
    checks.finish(wallet)
}

#[utoipa::path(get, path = "/v1/wallets", tag = "wallets", summary = "Get All Wallets",
    params(PagingParams, WalletQuery),
    responses((status = 200, body = WalletList), (status = 400, body = Problem)))]
async fn list_wallets(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<WalletQuery>,
) -> Result<Json<WalletList>, ApiError> {
    if caller.version == ApiVersion::V1_6_2 && query.owner_id.is_some() {
        return Err(ApiError::invalid(
            "ownerId",
            "not_allowed",
            "is a version 1.9.5 filter",
        ));
    }
    let filter = WalletFilter {
        external_id: query.external_id,
        owner: query.owner_id,
    };
    let wallets = state
        .store
        .ledger()
        .list_wallets(&caller.context.campaign, &filter, page)
        .await?;
    let min = min_balance(&state, &caller).await?;
    let list = PagedList::from_page(wallets, |w| WalletView::of(w, min));
    Ok(Json(match caller.version {
        ApiVersion::V1_9_5 => WalletList::Paged(list),
        ApiVersion::V1_6_2 => WalletList::Wrapped(vec![list]),
    }))
}

#[utoipa::path(post, path = "/v1/wallets", tag = "wallets", summary = "Create a Wallet",
    request_body = WalletInput,
    responses((status = 201, body = WalletView),
        (status = 400, description = "a field is invalid, or no member has the owner's (or else the externalId's) id or external id", body = Problem),
        (status = 409, description = "externalId already used", body = Problem)))]
async fn create_wallet(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<WalletInput>,
) -> Result<(StatusCode, Json<WalletView>), ApiError> {
    let wallet = state
        .store
        .ledger()
        .create_wallet(&caller.context.campaign, new_wallet(input)?)
        .await?;
    let min = min_balance(&state, &caller).await?;
    Ok((StatusCode::CREATED, Json(WalletView::of(wallet, min))))
}

#[utoipa::path(get, path = "/v1/wallets/{id}", tag = "wallets", summary = "Get a Wallet",
    description = "By the wallet's id or by the external reference it was created with (the sign-up check).",
    params(("id" = String, Path, description = "the wallet's id or external reference")),
    responses((status = 200, body = WalletView), (status = 404, body = Problem)))]
async fn get_wallet(
    State(state): State<AppState>,
    caller: Caller,
    Path(reference): Path<String>,
) -> Result<Json<WalletView>, ApiError> {
    let wallet = state
        .store
        .ledger()
        .get_wallet(&caller.context.campaign, &reference)
        .await?;
    let min = min_balance(&state, &caller).await?;
    Ok(Json(WalletView::of(wallet, min)))
}

#[utoipa::path(patch, path = "/v1/wallets/{id}", tag = "wallets", summary = "Update a Wallet",
    params(("id" = String, Path)), request_body = WalletRename,
    responses((status = 200, body = WalletView), (status = 400, body = Problem), (status = 404, body = Problem)))]
async fn update_wallet(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<WalletRename>,
) -> Result<Json<WalletView>, ApiError> {
    let mut checks = Checks::default();
    let name = checks.id("name", input.name);
    let name = checks.finish(name)?;
    let wallet = state
        .store
        .ledger()
        .rename_wallet(&caller.context.campaign, &id, name)
        .await?;
    let min = min_balance(&state, &caller).await?;
    Ok(Json(WalletView::of(wallet, min)))
}

#[utoipa::path(post, path = "/api/wallets", tag = "member guide", summary = "Create a Wallet (member guide)",
    description = "`owner` is the member's external id.",
    request_body = WalletInput,
    responses((status = 201, body = WalletView),
        (status = 400, description = "a field is invalid, or no member has the owner's (or else the externalId's) external id", body = Problem),
        (status = 409, body = Problem)))]
async fn create_guide_wallet(
    state: State<AppState>,
    caller: Caller,
    body: JsonBody<WalletInput>,
) -> Result<(StatusCode, Json<WalletView>), ApiError> {
    create_wallet(state, caller, body).await
}

/// The longest look ahead `within` takes: ten years, in days or in weeks.
const MAX_WITHIN_DAYS: i64 = 3_660;
const MAX_WITHIN_WEEKS: i64 = 522;
/// `within` as its document says: 1 to 3660 days or 1 to 522 weeks, no leading zero.
const WITHIN: &str = "^P(([1-9][0-9]{0,2}|[12][0-9]{3}|3[0-5][0-9]{2}|36[0-5][0-9]|3660)D\
     |([1-9][0-9]?|[1-4][0-9]{2}|5[01][0-9]|52[0-2])W)$";

fn within() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .pattern(Some(WITHIN))
        .description(Some(
            "How far ahead, as an ISO 8601 duration in days or weeks (`P30D`, `P2W`): 1 to \
             3660 days or 1 to 522 weeks. Default `P30D`.",
        ))
        .build()
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct ExpiringQuery {
    #[param(schema_with = within)]
    within: Option<String>,
}

/// `within` as days: `PnD` (1 to `MAX_WITHIN_DAYS`) or `PnW` (1 to `MAX_WITHIN_WEEKS`).
fn within_days(text: Option<&str>) -> Result<i64, ApiError> {
    let Some(text) = text else {
        return Ok(30);
    };
    let refused = || {
        ApiError::invalid(
            "within",
            "invalid_value",
            format!("`{text}`: use days or weeks as P30D or P2W, from a day to ten years"),
        )
    };
    let body = text.strip_prefix('P').ok_or_else(refused)?;
    let (number, unit) = body.split_at(body.len().saturating_sub(1));
    let digits = number.bytes().all(|b| b.is_ascii_digit()) && !number.starts_with('0');
    let n: i64 = match digits {
        true => number.parse().map_err(|_| refused())?,
        false => return Err(refused()),
    };
    match unit {
        "D" if (1..=MAX_WITHIN_DAYS).contains(&n) => Ok(n),
        "W" if (1..=MAX_WITHIN_WEEKS).contains(&n) => Ok(n * 7),
        _ => Err(refused()),
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpiringView {
    pub wallet_id: String,
    /// The end of the look ahead: now plus `within`.
    pub until: DateTime<Utc>,
    /// All that expires by then.
    #[schema(value_type = f64)]
    pub total: Tokens,
    /// Per day (UTC), soonest first; days when nothing expires are left out.
    pub days: Vec<ExpiringDayView>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExpiringDayView {
    #[schema(value_type = String, format = Date)]
    pub date: chrono::NaiveDate,
    #[schema(value_type = f64)]
    pub tokens: Tokens,
}

#[utoipa::path(get, path = "/v1/wallets/{id}/expiring", tag = "wallets",
    summary = "Tokens expiring soon",
    description = "What the wallet's tokens lose to expiry from now until `within` ahead, per \
        day in UTC (for members' reminders): what each lot holds now, so tokens a hold reserves \
        are not counted while it holds them. A lot already due that the sweep (each minute) has \
        not expired yet is counted on its day.",
    params(("id" = String, Path, description = "the wallet's id or external reference"),
        ExpiringQuery),
    responses((status = 200, body = ExpiringView), (status = 400, body = Problem),
        (status = 404, body = Problem)))]
async fn expiring(
    State(state): State<AppState>,
    caller: Caller,
    Path(reference): Path<String>,
    QueryParams(query): QueryParams<ExpiringQuery>,
) -> Result<Json<ExpiringView>, ApiError> {
    let days = within_days(query.within.as_deref())?;
    let until = state.store.now() + chrono::Duration::days(days);
    let campaign = &caller.context.campaign;
    let wallet = state
        .store
        .ledger()
        .get_wallet(campaign, &reference)
        .await?;
    let found = state
        .store
        .ledger()
        .expiring(campaign, &wallet.id, until)
        .await?;
    let total = found
        .iter()
        .try_fold(Tokens::ZERO, |sum, day| sum.checked_add(day.tokens))
        .unwrap_or(Tokens::MAX);
    Ok(Json(ExpiringView {
        wallet_id: wallet.id,
        until,
        total,
        days: found
            .into_iter()
            .map(|d| ExpiringDayView {
                date: d.date,
                tokens: d.tokens,
            })
            .collect(),
    }))
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct BalanceQuery {
    /// The instant (RFC 3339); default now.
    #[param(schema_with = schema::date_time_required)]
    at: Option<String>,
}

/// A wallet's figures at an instant.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BalanceView {
    pub wallet_id: String,
    pub currency: String,
    /// The instant the figures are of.
    pub at: DateTime<Utc>,
    /// The tokens the wallet held then, as its transactions dated by then say (pending ones
    /// not included).
    #[schema(value_type = f64)]
    pub balance: Tokens,
    /// Of the balance, what the holds open then reserved.
    #[schema(value_type = f64)]
    pub held: Tokens,
    /// Tokens earned by then but not vested then.
    #[schema(value_type = f64)]
    pub pending: Tokens,
}

#[utoipa::path(get, path = "/v1/wallets/{id}/balance", tag = "wallets",
    summary = "A wallet's balance at an instant",
    description = "The wallet's balance, held and pending tokens at `at` (for support staff: a \
        statement's closing figures), computed from the ledger: the balance is the sum of the \
        transactions dated by then (each transaction's `date`, as the wallet's history lists \
        them, so one dated back counts from its date), less the earns pending then; held, the \
        holds open at that instant. Without `at`, the wallet's figures now.",
    params(("id" = String, Path, description = "the wallet's id or external reference"),
        BalanceQuery),
    responses((status = 200, body = BalanceView), (status = 400, body = Problem),
        (status = 404, body = Problem)))]
async fn balance_at(
    State(state): State<AppState>,
    caller: Caller,
    Path(reference): Path<String>,
    QueryParams(query): QueryParams<BalanceQuery>,
) -> Result<Json<BalanceView>, ApiError> {
    let at = query.at()?;
    let campaign = &caller.context.campaign;
    let wallet = state
        .store
        .ledger()
        .get_wallet(campaign, &reference)
        .await?;
    Ok(Json(
        BalanceView::of(&state.store, campaign, wallet, at).await?,
    ))
}

impl BalanceQuery {
    /// The instant asked for, if any.
    pub fn at(self) -> Result<Option<DateTime<Utc>>, ApiError> {
        let mut checks = Checks::default();
        let at = checks.instant("at", self.at);
        checks.finish(at)
    }
}

impl BalanceView {
    /// `wallet`'s figures at `at`, or now.
    pub async fn of(
        store: &store::Store,
        campaign: &store::Campaign,
        wallet: Wallet,
        at: Option<DateTime<Utc>>,
    ) -> Result<BalanceView, ApiError> {
        let view = |at, balance, held, pending| BalanceView {
            wallet_id: wallet.id.clone(),
            currency: wallet.currency.clone(),
            at,
            balance,
            held,
            pending,
        };
        Ok(match at {
            None => view(store.now(), wallet.balance, wallet.held, wallet.pending),
            Some(at) => {
                let then = store.ledger().balance_at(campaign, &wallet.id, at).await?;
                view(then.at, then.balance, then.held, then.pending)
            }
        })
    }
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_wallets, create_wallet))
        .routes(routes!(get_wallet, update_wallet))
        .routes(routes!(expiring))
        .routes(routes!(balance_at))
        .routes(routes!(create_guide_wallet))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn within_takes_what_its_pattern_admits() {
        let pattern = regex::Regex::new(WITHIN).unwrap();
        for text in [
            "P1D", "P30D", "P3660D", "P1W", "P522W", "P0D", "P3661D", "P523W", "P030D", "P1M",
            "30D", "P", "PD", "P-1D", "P1.5D",
        ] {
            assert_eq!(
                within_days(Some(text)).is_ok(),
                pattern.is_match(text),
                "{text}"
            );
        }
        assert_eq!(within_days(Some("P2W")).unwrap(), 14);
        assert_eq!(within_days(None).unwrap(), 30);
    }
}
