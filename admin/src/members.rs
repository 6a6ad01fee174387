//! Members and their wallets, as support looks them up: a member found by id, external id,
//! e-mail or user id, or erased; its wallets; a wallet's history, its balance at an instant and its holds.
//! The client API's views and the same store reads.

use api::plumbing::{ApiError, PagedList, Paging, PagingParams, Problem, QueryParams};
use api::views::{BalanceQuery, BalanceView, HoldView, MemberView, TransactionView, WalletView};
use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use store::audit::Action;
use store::{ApiVersion, Campaign, HoldFilter, TransactionFilter, WalletFilter};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of, org_of};
use crate::state::AdminState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct MemberQuery {
    /// The member's id, external id, user id or e-mail (in any case); absent: every member.
    #[param(max_length = 320)]
    q: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/members", tag = "support",
    summary = "Find members",
    description = "The organisation's members that `q` names (by id, external id, user id or \
        e-mail), in the order they were made; without `q`, all of them.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams, MemberQuery),
    responses((status = 200, body = PagedList<MemberView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn find_members(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<MemberQuery>,
) -> Result<Json<PagedList<MemberView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let members = state.store().members();
    let found = match query.q.as_deref().map(str::trim).filter(|q| !q.is_empty()) {
        Some(q) if q.chars().count() > 320 => {
            return Err(ApiError::invalid(
                "q",
                "too_long",
                "must be at most 320 characters",
            ));
        }
        Some(q) => members.find_members(&org, q, page).await?,
        None => members.list_members(&org, page).await?,
    };
    let view = |m| MemberView::new(m, ApiVersion::default());
    Ok(Json(PagedList::from_page(found, view)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/members/{id}", tag = "support",
    summary = "Get a member",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = "the member's id or external id", max_length = 128)),
    responses((status = 200, body = MemberView),
        (status = 404, description = "unknown organisation or member", body = Problem)))]
async fn get_member(
    State(state): State<AdminState>,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<MemberView>, ApiError> {
    let org = org_of(&state, &org).await?;
    let members = state.store().members();
    let id = members
        .member_id_by_reference(&org, &id)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    let member = members.get_member(&org, &id).await?;
    Ok(Json(MemberView::new(member, ApiVersion::default())))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/members/{id}", tag = "support",
    summary = "Erase a member",
    description = "Erases the member's personal data (a right-to-erasure request: names, \
        contacts, identifiers, preferences) and answers the member as it was. What the ledger \
        needs (wallets, transactions) stays; the member is not found again.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = "the member's id or external id", max_length = 128)),
    responses((status = 200, body = MemberView),
        (status = 404, description = "unknown organisation or member", body = Problem)))]
async fn erase_member(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<MemberView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let id = state
        .store()
        .members()
        .member_id_by_reference(&scope, &id)
        .await?
        .ok_or(ApiError::NotFound("member"))?;
    let action = Action::new("member.erase").org(org).target(id.clone());
    let erased = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.members().delete_member(&scope, &id).await?)
        })
        .await?;
    Ok(Json(MemberView::new(erased, ApiVersion::default())))
}

/// The wallet a path names (its id or reference), in a campaign of the organisation's.
async fn wallet_of(
    state: &AdminState,
    org: &str,
    campaign: &str,
    wallet: &str,
) -> Result<(Campaign, store::Wallet), ApiError> {
    let campaign = campaign_of(state, org, campaign).await?;
    let wallet = state.store().ledger().get_wallet(&campaign, wallet).await?;
    Ok((campaign, wallet))
}

async fn min_balance(state: &AdminState, campaign: &Campaign) -> Result<store::Tokens, ApiError> {
    Ok(state
        .store()
        .programme()
        .policy(campaign)
        .await?
        .min_balance)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct WalletQuery {
    /// Only this member's wallets (its id or external id).
    #[param(max_length = 128)]
    owner: Option<String>,
}

const WALLET: &str = "the wallet's id or external reference";

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/wallets", tag = "support",
    summary = "List a campaign's wallets", description = "In the order they were made.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        PagingParams, WalletQuery),
    responses((status = 200, body = PagedList<WalletView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_wallets(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<WalletQuery>,
) -> Result<Json<PagedList<WalletView>>, ApiError> {
    if query
        .owner
        .as_ref()
        .is_some_and(|o| o.chars().count() > 128)
    {
        return Err(ApiError::invalid(
            "owner",
            "too_long",
            "must be at most 128 characters",
        ));
    }
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let filter = WalletFilter {
        external_id: None,
        owner: query.owner,
    };
    let wallets = state
        .store()
        .ledger()
        .list_wallets(&campaign, &filter, page)
        .await?;
    let min = min_balance(&state, &campaign).await?;
    Ok(Json(PagedList::from_page(wallets, |w| {
        WalletView::of(w, min)
    })))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/wallets/{wallet}",
    tag = "support", summary = "Get a wallet",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("wallet" = String, Path, description = WALLET, max_length = 128)),
    responses((status = 200, body = WalletView),
        (status = 404, description = "unknown organisation, campaign or wallet", body = Problem)))]
async fn get_wallet(
    State(state): State<AdminState>,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
) -> Result<Json<WalletView>, ApiError> {
    let (campaign, wallet) = wallet_of(&state, &org, &campaign, &wallet).await?;
    let min = min_balance(&state, &campaign).await?;
    Ok(Json(WalletView::of(wallet, min)))
}

#[utoipa::path(get,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/wallets/{wallet}/transactions",
    tag = "support", summary = "A wallet's history",
    description = "Its transactions, newest first, each with its reason and the transaction it \
        corrects (a reversal's original).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("wallet" = String, Path, description = WALLET, max_length = 128), PagingParams),
    responses((status = 200, body = PagedList<TransactionView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, campaign or wallet", body = Problem)))]
async fn wallet_history(
    State(state): State<AdminState>,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
    Paging(page): Paging,
) -> Result<Json<PagedList<TransactionView>>, ApiError> {
    let (campaign, wallet) = wallet_of(&state, &org, &campaign, &wallet).await?;
    let ledger = state.store().ledger();
    let filter = TransactionFilter {
        wallet_id: Some(wallet.id),
        ..TransactionFilter::default()
    };
    let history = ledger.list_transactions(&campaign, &filter, page).await?;
    Ok(Json(PagedList::from_page(history, TransactionView::from)))
}

#[utoipa::path(get,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/wallets/{wallet}/balance",
    tag = "support", summary = "A wallet's balance at an instant",
    description = "Its balance, held and pending tokens at `at` (a statement's closing \
        figures), computed from the ledger; without `at`, now.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("wallet" = String, Path, description = WALLET, max_length = 128), BalanceQuery),
    responses((status = 200, body = BalanceView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, campaign or wallet", body = Problem)))]
async fn wallet_balance(
    State(state): State<AdminState>,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
    QueryParams(query): QueryParams<BalanceQuery>,
) -> Result<Json<BalanceView>, ApiError> {
    let at = query.at()?;
    let (campaign, wallet) = wallet_of(&state, &org, &campaign, &wallet).await?;
    Ok(Json(
        BalanceView::of(state.store(), &campaign, wallet, at).await?,
    ))
}

#[utoipa::path(get,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/wallets/{wallet}/holds",
    tag = "support", summary = "A wallet's holds", description = "Newest first.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("wallet" = String, Path, description = WALLET, max_length = 128), PagingParams),
    responses((status = 200, body = PagedList<HoldView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, campaign or wallet", body = Problem)))]
async fn wallet_holds(
    State(state): State<AdminState>,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
    Paging(page): Paging,
) -> Result<Json<PagedList<HoldView>>, ApiError> {
    let (campaign, wallet) = wallet_of(&state, &org, &campaign, &wallet).await?;
    let ledger = state.store().ledger();
    let filter = HoldFilter {
        wallet_id: Some(wallet.id),
        status: None,
    };
    let holds = ledger.list_holds(&campaign, &filter, page).await?;
    Ok(Json(PagedList::from_page(holds, std::convert::identity)))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(find_members))
        .routes(routes!(get_member, erase_member))
        .routes(routes!(list_wallets))
        .routes(routes!(get_wallet))
        .routes(routes!(wallet_history))
        .routes(routes!(wallet_balance))
        .routes(routes!(wallet_holds))
}
