//! A campaign's policy: its minimum balance, expiry, reversal shortfall, transfers, pending
//! window, expiry notice and how old an earn may be. Shown, and changed field by field (a field
//! left out keeps its value). The same store operation and checks as `rewards campaign policy`.

use api::plumbing::{ApiError, Checks, JsonBody, Problem, Sign};
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{Policy, Tokens};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::schemas::present;
use crate::state::AdminState;

/// The largest amount a policy names, in tokens.
const MAX_POLICY_TOKENS: i64 = 1_000_000_000_000;

/// A campaign's policy.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PolicyView {
    /// Tokens a burn must leave in the wallet.
    #[schema(value_type = f64)]
    pub min_balance: Tokens,
    /// `never`, `end-of-month`, `end-of-year` or `days:N`.
    pub expiry: String,
    /// What a reversal does with tokens already spent: `debt`, `clip` or `refuse`.
    pub shortfall: String,
    /// `allow` or `forbid`.
    pub transfers: String,
    /// The most one wallet may transfer out in a day (UTC); `null`: no cap.
    #[schema(value_type = Option<f64>)]
    pub transfer_daily_cap: Option<Tokens>,
    pub transfers_move_earned: bool,
    /// Days earned tokens stay pending before they can be spent (0: at once).
    pub pending_days: u32,
    pub pending_counts_tier: bool,
    /// What the expiry of tokens that were pending counts from: `earn` or `vest`.
    pub expiry_from: String,
    /// Days before their expiry that tokens about to expire are announced (0: never).
    pub expiry_notice_days: u32,
    /// How many days back an earn may be dated; `null`: back to 1970.
    pub earn_max_age_days: Option<u32>,
}

impl From<Policy> for PolicyView {
    fn from(p: Policy) -> PolicyView {
        PolicyView {
            min_balance: p.min_balance,
            expiry: p.expiry.to_string(),
            shortfall: p.shortfall.as_str().to_owned(),
            transfers: p.transfers.as_str().to_owned(),
            transfer_daily_cap: p.transfer_daily_cap,
            transfers_move_earned: p.transfers_move_earned,
            pending_days: p.pending_days,
            pending_counts_tier: p.pending_counts_tier,
            expiry_from: p.expiry_from.as_str().to_owned(),
            expiry_notice_days: p.expiry_notice_days,
            earn_max_age_days: p.earn_max_age_days,
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/policy", tag = "programme",
    summary = "Get a campaign's policy",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    responses((status = 200, body = PolicyView),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn get_policy(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
) -> Result<Json<PolicyView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    Ok(Json(
        state.store().programme().policy(&campaign).await?.into(),
    ))
}

/// The policy's fields to change; a field left out keeps its value.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PolicyInput {
    #[schema(minimum = 0, maximum = 1000000000000_i64, multiple_of = 0.000001, value_type = f64)]
    min_balance: Option<serde_json::Number>,
    /// `never`, `end-of-month`, `end-of-year` or `days:N` (N from 1 to 36525).
    #[schema(
        max_length = 16,
        pattern = "^(never|end-of-month|end-of-year|days:([1-9][0-9]{0,3}|[12][0-9]{4}|3[0-5][0-9]{3}|36[0-4][0-9]{2}|365[01][0-9]|3652[0-5]))$"
    )]
    expiry: Option<String>,
    #[schema(max_length = 8, pattern = "^(debt|clip|refuse)$")]
    shortfall: Option<String>,
    #[schema(max_length = 8, pattern = "^(allow|forbid)$")]
    transfers: Option<String>,
    /// `null` removes the cap.
    #[serde(default, deserialize_with = "present")]
    #[schema(
        exclusive_minimum = 0,
        maximum = 1000000000000_i64,
        multiple_of = 0.000001,
        value_type = Option<f64>
    )]
    transfer_daily_cap: Option<Option<serde_json::Number>>,
    transfers_move_earned: Option<bool>,
    #[schema(minimum = 0, maximum = 3650, value_type = u32)]
    pending_days: Option<serde_json::Number>,
    pending_counts_tier: Option<bool>,
    #[schema(max_length = 8, pattern = "^(earn|vest)$")]
    expiry_from: Option<String>,
    #[schema(minimum = 0, maximum = 366, value_type = u32)]
    expiry_notice_days: Option<serde_json::Number>,
    /// `null`: earns may be dated back to 1970.
    #[serde(default, deserialize_with = "present")]
    #[schema(minimum = 1, maximum = 36525, value_type = Option<u32>)]
    earn_max_age_days: Option<Option<serde_json::Number>>,
}

/// `text` read by `parse`, or the failure recorded at `field`.
fn word<T: std::str::FromStr<Err = String>>(
    checks: &mut Checks,
    field: &str,
    text: Option<String>,
) -> Option<T> {
    let parsed = text?.parse::<T>();
    parsed
        .map_err(|message| checks.fail(field, "invalid_value", message))
        .ok()
}

impl PolicyInput {
    /// `policy` with the fields given changed, each checked.
    fn apply(self, mut policy: Policy) -> Result<Policy, ApiError> {
        let mut checks = Checks::default();
        let whole = |checks: &mut Checks, field: &str, n: Option<&serde_json::Number>| {
            checks.whole(field, n, 0..=u32::MAX)
        };
        if let Some(min) = checks.tokens(
            "minBalance",
            self.min_balance,
            Sign::NonNegative,
            MAX_POLICY_TOKENS,
        ) {
            policy.min_balance = min;
        }
        if let Some(expiry) = word(&mut checks, "expiry", self.expiry) {
            policy.expiry = expiry;
        }
        if let Some(shortfall) = word(&mut checks, "shortfall", self.shortfall) {
            policy.shortfall = shortfall;
        }
        if let Some(transfers) = word(&mut checks, "transfers", self.transfers) {
            policy.transfers = transfers;
        }
        match self.transfer_daily_cap {
            None => {}
            Some(None) => policy.transfer_daily_cap = None,
            Some(cap) => {
                let cap = checks.tokens("transferDailyCap", cap, Sign::Positive, MAX_POLICY_TOKENS);
                policy.transfer_daily_cap = cap.or(policy.transfer_daily_cap);
            }
        }
        if let Some(moves) = self.transfers_move_earned {
            policy.transfers_move_earned = moves;
        }
        if let Some(days) = whole(&mut checks, "pendingDays", self.pending_days.as_ref()) {
            policy.pending_days = days;
        }
        if let Some(counts) = self.pending_counts_tier {
            policy.pending_counts_tier = counts;
        }
        if let Some(from) = word(&mut checks, "expiryFrom", self.expiry_from) {
            policy.expiry_from = from;
        }
        let notice = self.expiry_notice_days.as_ref();
        if let Some(days) = whole(&mut checks, "expiryNoticeDays", notice) {
            policy.expiry_notice_days = days;
        }
        match self.earn_max_age_days {
            None => {}
            Some(None) => policy.earn_max_age_days = None,
            Some(Some(days)) => {
                let days = whole(&mut checks, "earnMaxAgeDays", Some(&days));
                policy.earn_max_age_days = days.or(policy.earn_max_age_days);
            }
        }
        checks.finish(policy)
    }
}

#[utoipa::path(patch, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/policy",
    tag = "programme", summary = "Change a campaign's policy",
    description = "The fields given change; the others keep their values. Earns, burns and \
        expiries from then on follow it; tokens already earned keep the expiry they were given.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body = PolicyInput,
    responses((status = 200, body = PolicyView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn set_policy(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    JsonBody(input): JsonBody<PolicyInput>,
) -> Result<Json<PolicyView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let before = state.store().programme().policy(&campaign).await?;
    let policy = input.apply(before)?;
    let action = Action::new("campaign.policy")
        .org(org)
        .target(campaign.id.clone())
        .before(serde_json::json!(PolicyView::from(before)))
        .after(serde_json::json!(PolicyView::from(policy)));
    let set = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.programme().set_policy(&campaign, policy).await?)
        })
        .await?;
    Ok(Json(set.into()))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new().routes(routes!(get_policy, set_policy))
}
