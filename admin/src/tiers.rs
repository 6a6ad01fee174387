//! A campaign's tiers: listed by threshold, added (wallets re-tiered at once), removed (its
//! wallets fall to the next tier they reach). The same store operations as `rewards tier`.

use api::plumbing::{ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem, Sign};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::limits::{MAX_NAME, MAX_TEXT};
use store::{NewTier, Tier, Tokens};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::state::AdminState;

/// The most benefits a tier lists.
const MAX_BENEFITS: usize = 50;
/// The highest precedence a tier may have.
const MAX_PRECEDENCE: u32 = 1_000_000;
/// The largest threshold, in tokens.
const MAX_THRESHOLD: i64 = 1_000_000_000_000;

/// A tier of a campaign.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierAdminView {
    pub id: String,
    pub name: String,
    /// Lower is higher priority among tiers of the same threshold.
    pub precedence: i64,
    /// Lifetime earned tokens from which a wallet holds the tier.
    #[schema(value_type = f64)]
    pub threshold: Tokens,
    pub benefits: Vec<String>,
    pub image_url: Option<String>,
}

impl From<Tier> for TierAdminView {
    fn from(t: Tier) -> TierAdminView {
        TierAdminView {
            id: t.id,
            name: t.name,
            precedence: t.precedence,
            threshold: t.threshold,
            benefits: t.benefits,
            image_url: t.image_url,
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/tiers", tag = "programme",
    summary = "List a campaign's tiers", description = "By threshold, then precedence.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<TierAdminView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_tiers(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
) -> Result<Json<PagedList<TierAdminView>>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let tiers = state.store().programme().list_tiers(&campaign).await?;
    Ok(Json(PagedList::of(tiers, page, TierAdminView::from)))
}

/// A tier to add.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct TierInput {
    #[schema(min_length = 1, max_length = 100, pattern = "\\S", required = true)]
    name: Option<String>,
    /// Lower is higher priority among tiers of the same threshold.
    #[schema(minimum = 0, maximum = 1000000, value_type = u32, required = true)]
    precedence: Option<serde_json::Number>,
    /// Lifetime earned tokens from which a wallet holds the tier (6 decimals at most).
    #[schema(minimum = 0, maximum = 1000000000000_i64, multiple_of = 0.000001, value_type = f64, required = true)]
    threshold: Option<serde_json::Number>,
    /// Benefits shown with the tier.
    #[serde(default)]
    #[schema(max_items = 50, value_type = Vec<String>)]
    benefits: Vec<String>,
    #[schema(min_length = 1, max_length = 256)]
    image_url: Option<String>,
}

impl TierInput {
    fn checked(self) -> Result<NewTier, ApiError> {
        let mut checks = Checks::default();
        let name = checks.required("name", self.name, MAX_NAME);
        let precedence = checks.whole("precedence", self.precedence.as_ref(), 0..=MAX_PRECEDENCE);
        if self.precedence.is_none() {
            checks.fail("precedence", "missing_field", "is required");
        }
        let threshold = checks.required_tokens(
            "threshold",
            self.threshold,
            Sign::NonNegative,
            MAX_THRESHOLD,
        );
        if self.benefits.len() > MAX_BENEFITS {
            let message = format!("at most {MAX_BENEFITS} benefits");
            checks.fail("benefits", "too_many", message);
        }
        for (n, benefit) in self.benefits.iter().enumerate() {
            checks.text(&format!("benefits[{n}]"), Some(benefit.clone()), MAX_TEXT);
        }
        let image_url = checks.text("imageUrl", self.image_url, MAX_TEXT);
        checks.finish(NewTier {
            name,
            precedence: precedence.unwrap_or_default().into(),
            threshold,
            benefits: self.benefits,
            image_url,
        })
    }
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/tiers", tag = "programme",
    summary = "Add a tier",
    description = "Every wallet of the campaign is re-tiered at once (a `wallet.tier_changed` \
        event for each that moves).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body = TierInput,
    responses((status = 201, body = TierAdminView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem),
        (status = 409, description = "the campaign has a tier of this name", body = Problem)))]
async fn add_tier(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    JsonBody(input): JsonBody<TierInput>,
) -> Result<(StatusCode, Json<TierAdminView>), ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let new = input.checked()?;
    let action = Action::new("tier.add")
        .org(org)
        .target(campaign.id.clone())
        .after(serde_json::json!({
            "name": new.name,
            "precedence": new.precedence,
            "threshold": new.threshold,
            "benefits": new.benefits,
            "imageUrl": new.image_url,
        }));
    let tier = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.programme().create_tier(&campaign, new).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(tier.into())))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/tiers/{tier}",
    tag = "programme", summary = "Remove a tier",
    description = "Its wallets fall to the next tier they reach (a `wallet.tier_changed` event \
        for each).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("tier" = String, Path, description = "the tier's id or name", max_length = 100)),
    responses((status = 204, description = "removed"),
        (status = 404, description = "unknown organisation or campaign, or no such tier",
            body = Problem)))]
async fn remove_tier(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign, tier)): Path<(String, String, String)>,
) -> Result<StatusCode, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let action = Action::new("tier.remove").org(org).target(tier.clone());
    principal
        .acting(state.store(), action, |store| async move {
            Ok(store.programme().remove_tier(&campaign, &tier).await?)
        })
        .await?;
    Ok(StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_tiers, add_tier))
        .routes(routes!(remove_tier))
}
