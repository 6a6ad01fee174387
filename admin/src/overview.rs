//! A campaign at a glance: its wallets, what it owes its members, how they spread over its
//! tiers, and the tokens the ledger recorded each day over a period, by type. The days this
//! node summed and that are over are kept (`recorded_days.rs`): the database is asked only
//! for the days after them. The whole answer is kept too (`recorded_days::Latest`) while the ledger's marker
//! says nothing was recorded since, for at most `FRESH_FOR`: on the day a million-row file
//! lands, today alone is a million rows to sum.

use std::collections::BTreeMap;

use api::plumbing::{ApiError, Problem, QueryParams};
use axum::Json;
use axum::extract::{Path, State};
use chrono::{Duration, DurationRound, NaiveDate};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::recorded_days::{DayView, MAX_DAYS, OverviewView, TierShareView};
use crate::state::AdminState;

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct OverviewQuery {
    /// The days the period covers, ending today (UTC): 1 to 366, default 90.
    #[param(minimum = 1, maximum = 366)]
    days: Option<i64>,
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/overview",
    tag = "programme", summary = "A campaign at a glance",
    description = "Its wallets (and those whose balance changed within the period), the tokens \
        they hold (the programme's liability) and those pending, how they spread over the \
        tiers, and the tokens the ledger recorded each day of the period (by the day it \
        recorded them, UTC) by type.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64), OverviewQuery),
    responses((status = 200, body = OverviewView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn campaign_overview(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    QueryParams(query): QueryParams<OverviewQuery>,
) -> Result<Json<OverviewView>, ApiError> {
    let days = query.days.unwrap_or(90);
    if !(1..=MAX_DAYS).contains(&days) {
        return Err(ApiError::invalid(
            "days",
            "out_of_range",
            format!("must be from 1 to {MAX_DAYS}"),
        ));
    }
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let now = state.store().now();
    let today = now
        .duration_trunc(Duration::days(1))
        .map_err(|e| ApiError::Internal(e.to_string()))?;
    let first = today - Duration::days(days - 1);
    let ledger = state.store().ledger();
    let marker = ledger.campaign_marker(&campaign).await?;
    let key = (campaign.id.clone(), days);
    if let Some(view) = state.overviews.get(&key, &marker, now) {
        return Ok(Json(view));
    }
    let figures = ledger.campaign_figures(&campaign, first).await?;
    let summed = state.closed_days.read(&campaign.id, first, now);
    let missing = summed.first_missing.unwrap_or(today + Duration::days(1));
    let recorded = ledger
        .recorded_by_day(&campaign, missing, today + Duration::days(1))
        .await?;
    let mut by_day: BTreeMap<NaiveDate, DayView> = summed.days;
    let mut day = first;
    while day <= today {
        let date = day.date_naive();
        by_day.entry(date).or_insert_with(|| DayView {
            day: date,
            ..DayView::default()
        });
        day += Duration::days(1);
    }
    for row in &recorded {
        if let Some(view) = by_day.get_mut(&row.day.date_naive()) {
            view.add(row);
        }
    }
    state.closed_days.keep(&campaign.id, &by_day, missing, now);
    let view = OverviewView {
        wallets: figures.wallets,
        active_wallets: figures.active_wallets,
        outstanding: figures.outstanding,
        pending: figures.pending,
        tiers: figures
            .tiers
            .into_iter()
            .map(|(tier_id, name, wallets)| TierShareView {
                tier_id,
                name,
                wallets,
            })
            .collect(),
        days: by_day.into_values().collect(),
    };
    state.overviews.keep(key, marker, now, &view);
    Ok(Json(view))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(campaign_overview))
}
