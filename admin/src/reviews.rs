//! Review moderation: the reviews of an organisation the thresholds held back (their profanity
//! score or their reports), and an operator's decision on one: approve it (listed whatever is
//! reported later) or remove it. The same store operations as `rewards reviews`.

use api::plumbing::{ApiError, PagedList, Paging, PagingParams, Problem};
use api::views::ReviewView;
use axum::Json;
use axum::extract::{Path, State};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, org_of};
use crate::state::AdminState;

const REVIEW: &str = "the review's id";

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/reviews/pending", tag = "support",
    summary = "List the reviews waiting for a decision",
    description = "Reviews hidden from lists and averages because their language or their \
        reports passed a threshold, oldest first.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<ReviewView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_pending_reviews(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<ReviewView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let rules = &state.app.settings.moderation;
    let pending = state
        .store()
        .community()
        .pending_reviews(&org, rules, page)
        .await?;
    Ok(Json(PagedList::from_page(pending, |r| {
        ReviewView::new(r, rules)
    })))
}

/// An operator's decision on a review.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DecisionView {
    /// The review's id.
    pub id: String,
    /// `approved` or `removed`.
    pub decision: String,
}

/// Records `approve` (or removal) of review `id` as the principal's.
async fn decide(
    state: &AdminState,
    principal: &Principal,
    org: String,
    id: String,
    approve: bool,
) -> Result<Json<DecisionView>, ApiError> {
    let scope = org_of(state, &org).await?;
    let decision = if approve { "approved" } else { "removed" };
    let operation = if approve {
        "review.approve"
    } else {
        "review.remove"
    };
    let action = Action::new(operation).org(org).target(id.clone());
    let decided = id.clone();
    principal
        .acting(state.store(), action, |store| async move {
            let community = store.community();
            Ok(community.moderate_review(&scope, &decided, approve).await?)
        })
        .await?;
    Ok(Json(DecisionView {
        id,
        decision: decision.to_owned(),
    }))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/reviews/{id}/approve", tag = "support",
    summary = "Approve a review",
    description = "It is listed again, and stays listed whatever is reported later.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = REVIEW, max_length = 64)),
    responses((status = 200, body = DecisionView),
        (status = 404, description = "unknown organisation, or no review of it (not removed) \
            has this id", body = Problem)))]
async fn approve_review(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<DecisionView>, ApiError> {
    decide(&state, &principal, org, id, true).await
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/reviews/{id}/remove", tag = "support",
    summary = "Remove a review",
    description = "It is no longer listed or counted in averages; its reviewer may not post \
        another for the same voucher.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = REVIEW, max_length = 64)),
    responses((status = 200, body = DecisionView),
        (status = 404, description = "unknown organisation, or no review of it (not removed \
            already) has this id", body = Problem)))]
async fn remove_review(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<DecisionView>, ApiError> {
    decide(&state, &principal, org, id, false).await
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_pending_reviews))
        .routes(routes!(approve_review))
        .routes(routes!(remove_review))
}
