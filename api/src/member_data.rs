//! A member's own data (`GET /v1/members/{id}/data`, permission `member-data`): everything the
//! service holds about a member, in every campaign of the organisation, as one JSON document
//! for a right-of-access request; each record in the shape its own operation answers it.

use std::collections::HashMap;

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use store::{LimitCount, MemberData, Permission, StoreError, Tokens};
use utoipa::ToSchema;

use crate::AppState;
use crate::events::EventView;
use crate::holds::HoldView;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::members::MemberView;
use crate::members::activities::ActivityView;
use crate::members::referrals::{ReferralCodeView, ReferralView};
use crate::orders::views::OrderView;
use crate::reviews::ReviewView;
use crate::transactions::{EarnStatusView, TransactionView};
use crate::wallets::WalletView;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(export_member_data))
}

/// A review the member reported.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReportView {
    pub review_id: String,
    pub reported_at: DateTime<Utc>,
}

/// What a limit (or the budget) of a campaign's rules counted of the member in one period.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitCountView {
    pub campaign_id: String,
    /// The limit: its period, scope and rule (`month member visit-bonus`).
    pub counter: String,
    /// The member's id, or one of its wallets'.
    pub scope: String,
    /// The first day of the period (the day itself for a rolling one).
    pub period_start: NaiveDate,
    /// How many times its rule fired.
    pub times: i64,
    /// The tokens its rule gave.
    #[schema(value_type = f64)]
    pub tokens: Tokens,
}

/// Everything the service holds about a member.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberDataView {
    /// Its profile: names, contacts, identifiers, meta, preferences, birth date.
    pub member: MemberView,
    /// Its wallets in every campaign of the organisation.
    pub wallets: Vec<WalletView>,
    /// Every transaction of those wallets, newest first per wallet.
    pub transactions: Vec<TransactionView>,
    /// Earns sent for those wallets over the API, those rejected included.
    pub earn_requests: Vec<EarnStatusView>,
    pub holds: Vec<HoldView>,
    /// Its orders in every campaign, with their lines and bookings (codes masked).
    pub orders: Vec<OrderView>,
    /// Its reviews, whether shown or held back.
    pub reviews: Vec<ReviewView>,
    /// The reviews it reported.
    pub reports: Vec<ReportView>,
    pub activities: Vec<ActivityView>,
    /// Its referral code, if one was made.
    pub referral_code: Option<ReferralCodeView>,
    /// The members it brought, and the one that brought it.
    pub referrals: Vec<ReferralView>,
    /// What its rules' limits counted of it.
    pub limits: Vec<LimitCountView>,
    /// The events about it or any record above, oldest first.
    pub events: Vec<EventView>,
}

#[utoipa::path(get, path = "/v1/members/{id}/data", tag = "members", summary = "Export a member's data",
    description = "Everything the service holds about the member (id or external id), in every \
        campaign of the key's organisation: profile, preferences, wallets, transactions, earn \
        requests, holds, orders with their bookings, reviews and reports, activities, its \
        referral code and referrals, and the events about them, each as its own operation shows it. For a right-of-access request; \
        needs the key's `member-data` permission. A deleted member's data is gone: 404.",
    params(("id" = String, Path, description = "The member's id or external id")),
    responses((status = 200, body = MemberDataView),
        (status = 403, description = "`permission_required`: the key lacks `member-data`", body = Problem),
        (status = 404, description = "no such member", body = Problem)))]
async fn export_member_data(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberDataView>, ApiError> {
    caller.require(Permission::MemberData)?;
    let data = state.store.member_data(caller.org(), &id).await?;
    let version = caller.version;
    let moderation = state.settings.moderation;
    let MemberData {
        member,
        wallets,
        transactions,
        earn_requests,
        holds,
        orders,
        reviews,
        reports,
        activities,
        referral_code,
        referrals,
        limits,
        events,
    } = data;
    let mut minimums: HashMap<String, Tokens> = HashMap::new();
    let mut wallet_views = Vec::with_capacity(wallets.len());
    for wallet in wallets {
        let min = match minimums.get(&wallet.campaign_id) {
            Some(min) => *min,
            None => {
                let policy = state
                    .store
                    .programme()
                    .policy_of(&wallet.campaign_id)
                    .await?;
                minimums.insert(wallet.campaign_id.clone(), policy.min_balance);
                policy.min_balance
            }
        };
        wallet_views.push(WalletView::of(wallet, min));
    }
    let events = events
        .into_iter()
        .map(|e| EventView::render(e, version))
        .collect::<Result<_, _>>()?;
    Ok(Json(MemberDataView {
        member: MemberView::new(member, version),
        wallets: wallet_views,
        transactions: transactions.into_iter().map(Into::into).collect(),
        earn_requests: earn_requests.into_iter().map(Into::into).collect(),
        holds,
        orders: orders
            .into_iter()
            .map(|o| OrderView::new(o, version, true))
            .collect(),
        reviews: reviews
            .into_iter()
            .map(|r| ReviewView::new(r, &moderation))
            .collect(),
        reports: reports
            .into_iter()
            .map(|(review_id, reported_at)| ReportView {
                review_id,
                reported_at,
            })
            .collect(),
        activities: activities.into_iter().map(Into::into).collect(),
        referral_code: referral_code.map(Into::into),
        referrals: referrals.into_iter().map(Into::into).collect(),
        limits: limits
            .into_iter()
            .map(limit_view)
            .collect::<Result<_, _>>()?,
        events,
    }))
}

/// `count` as shown; an error when its stored period does not read as a day.
fn limit_view(count: LimitCount) -> Result<LimitCountView, StoreError> {
    let period_start = count
        .bucket
        .parse()
        .map_err(|_| StoreError::UnknownStored {
            table: "limit_counters",
            column: "bucket",
            value: count.bucket.clone(),
        })?;
    Ok(LimitCountView {
        period_start,
        campaign_id: count.campaign_id,
        counter: count.counter,
        scope: count.scope,
        times: count.times,
        tokens: Tokens::from_micros(count.tokens),
    })
}
