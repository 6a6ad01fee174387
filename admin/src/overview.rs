//! A campaign at a glance: its wallets, what it owes its members, how they spread over its
//! tiers, and the tokens the ledger recorded each day over a period, by type. Days end, and
//! a recorded day does not change once over, so this node keeps the days it has summed
//! (an hour after their end, so that a transaction still committing at midnight is in them)
//! and asks the database only for the days after them.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use api::plumbing::{ApiError, Problem, QueryParams};
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Duration, DurationRound, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use store::{RecordedDay, Tokens, TransactionKind};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::state::AdminState;

/// The longest period a chart covers, in days.
const MAX_DAYS: i64 = 366;

/// The days of each campaign this node has summed, kept once they are over.
#[derive(Clone, Default)]
pub struct ClosedDays(Arc<Mutex<HashMap<String, BTreeMap<NaiveDate, DayView>>>>);

/// A campaign now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewView {
    pub wallets: u64,
    /// Wallets whose balance changed within the period.
    pub active_wallets: u64,
    /// What the wallets hold: the tokens the programme owes its members.
    #[schema(value_type = f64)]
    pub outstanding: Tokens,
    /// Tokens earned and not vested yet.
    #[schema(value_type = f64)]
    pub pending: Tokens,
    /// Wallets per tier, the most first (`tierId` absent: no tier).
    pub tiers: Vec<TierShareView>,
    /// Each day of the period, oldest first, with what the ledger recorded that day.
    pub days: Vec<DayView>,
}

#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierShareView {
    pub tier_id: Option<String>,
    pub name: Option<String>,
    pub wallets: u64,
}

/// The tokens the ledger recorded on a day (UTC), per type.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayView {
    pub day: NaiveDate,
    #[schema(value_type = f64)]
    pub earned: Tokens,
    #[schema(value_type = f64)]
    pub burned: Tokens,
    #[schema(value_type = f64)]
    pub expired: Tokens,
    /// Taken back by reversals (returns, corrections).
    #[schema(value_type = f64)]
    pub reversed: Tokens,
    /// Given back by refunds of burns.
    #[schema(value_type = f64)]
    pub refunded: Tokens,
    /// Moved between wallets (out of one, into another: the same tokens).
    #[schema(value_type = f64)]
    pub transferred: Tokens,
    pub transactions: u64,
}

impl DayView {
    fn add(&mut self, recorded: &RecordedDay) {
        let tokens = recorded.tokens;
        match recorded.kind {
            TransactionKind::Earn => self.earned = plus(self.earned, tokens),
            TransactionKind::Burn => self.burned = plus(self.burned, tokens),
            TransactionKind::Expiry => self.expired = plus(self.expired, tokens),
            TransactionKind::Reversal => self.reversed = plus(self.reversed, tokens),
            TransactionKind::Refund => self.refunded = plus(self.refunded, tokens),
            TransactionKind::TransferIn => self.transferred = plus(self.transferred, tokens),
            TransactionKind::TransferOut => {}
        }
        self.transactions += recorded.transactions;
    }
}

fn plus(a: Tokens, b: Tokens) -> Tokens {
    Tokens::from_micros(a.micros().saturating_add(b.micros()))
}

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
    Ok(Json(OverviewView {
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
    }))
}

/// What a node has kept of a campaign's period, and where its gap starts.
struct Summed {
    days: BTreeMap<NaiveDate, DayView>,
    /// The first day of the period not kept; `None`: every day is.
    first_missing: Option<DateTime<Utc>>,
}

/// A day is over for good an hour after its end.
fn closed(day: NaiveDate, now: DateTime<Utc>) -> bool {
    let end = day
        .and_hms_opt(0, 0, 0)
        .map(|d| d.and_utc() + Duration::days(1));
    end.is_some_and(|end| end + Duration::hours(1) <= now)
}

impl ClosedDays {
    fn read(&self, campaign: &str, first: DateTime<Utc>, now: DateTime<Utc>) -> Summed {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut days = BTreeMap::new();
        let mut day = first;
        let known = kept.get(campaign);
        loop {
            let date = day.date_naive();
            match known.and_then(|k| k.get(&date)) {
                Some(view) if closed(date, now) => {
                    days.insert(date, view.clone());
                }
                _ if day > now => {
                    return Summed {
                        days,
                        first_missing: None,
                    };
                }
                _ => {
                    return Summed {
                        days,
                        first_missing: Some(day),
                    };
                }
            }
            day += Duration::days(1);
        }
    }

    /// Keeps the closed days of `by_day` from `from` on.
    fn keep(
        &self,
        campaign: &str,
        by_day: &BTreeMap<NaiveDate, DayView>,
        from: DateTime<Utc>,
        now: DateTime<Utc>,
    ) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let days = kept.entry(campaign.to_owned()).or_default();
        for (date, view) in by_day.range(from.date_naive()..) {
            if closed(*date, now) {
                days.insert(*date, view.clone());
            }
        }
        // A year and a little of days a campaign at most.
        while days.len() > (MAX_DAYS + 2) as usize {
            days.pop_first();
        }
    }
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(campaign_overview))
}
