//! Manual adjustments: support credits or debits a wallet with a reason and a comment, within
//! its role's limit; above the owner's threshold the adjustment waits for another operator's
//! approval; a CSV file of them is tried (a dry run) and then made row by row. The owner sets
//! the limits. The same store operations and checks as `rewards adjustment`.

use api::plumbing::{
    ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem, QueryParams, Sign,
    body_bytes, schema,
};
use axum::Json;
use axum::body::Bytes;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::StatusCode;
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{
    Adjustment, AdjustmentFilter, AdjustmentLimits, AdjustmentReason, AdjustmentRules,
    AdjustmentStatus, BulkReport, NewAdjustment, Requester, StoreError, Tokens,
};
use utoipa::openapi::schema::{Object, ObjectBuilder, OneOfBuilder, Type};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::schemas::FileBytes;
use crate::schemas::present;
use crate::state::AdminState;

/// The most tokens one adjustment moves either way: a wallet holds at most a trillion.
const MAX_ADJUSTMENT: i64 = 1_000_000_000_000;
const ADJUSTMENT: &str = "the adjustment's id";

/// What `Checks::tokens` accepts of a `Sign::NonZero` amount: from -1e12 to 1e12 but 0, at most 6 decimals.
fn signed_amount() -> utoipa::openapi::schema::Schema {
    let side = |min: f64, max: f64| {
        ObjectBuilder::new()
            .schema_type(Type::Number)
            .minimum(Some(min))
            .maximum(Some(max))
            .multiple_of(Some(0.000_001))
            .build()
    };
    let max = MAX_ADJUSTMENT as f64;
    OneOfBuilder::new()
        .item(side(-max, -0.000_001))
        .item(side(0.000_001, max))
        .description(Some(
            "Tokens to credit (more than 0) or debit (less than 0), at most 6 decimals.",
        ))
        .build()
        .into()
}

fn reason() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(AdjustmentReason::ALL.map(AdjustmentReason::as_str)))
        .description(Some(
            "goodwill (a gesture to the member), correction (the programme got it wrong), \
             fraud (taken back from abuse) or migration (brought from another programme).",
        ))
        .build()
}

/// An adjustment to make.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AdjustmentInput {
    /// The wallet's id or external reference.
    #[schema(schema_with = schema::id, required = true)]
    wallet_id: Option<String>,
    #[schema(schema_with = signed_amount, required = true)]
    amount: Option<serde_json::Number>,
    #[schema(schema_with = reason, required = true)]
    reason: Option<String>,
    /// Why, in words: the member's history shows it.
    #[schema(schema_with = schema::text_required, required = true)]
    comment: Option<String>,
    /// Your key for it, unique among the organisation's adjustments: the same request again
    /// answers the first (200), another under it is refused (409).
    #[schema(schema_with = schema::id_or_null)]
    external_id: Option<String>,
}

impl AdjustmentInput {
    fn checked(self) -> Result<NewAdjustment, ApiError> {
        let mut checks = Checks::default();
        let wallet = checks.required_id("walletId", self.wallet_id);
        let amount = checks.required_tokens("amount", self.amount, Sign::NonZero, MAX_ADJUSTMENT);
        let reason = match self.reason.as_deref().map(AdjustmentReason::parse) {
            None => {
                checks.fail("reason", "missing_field", "is required");
                None
            }
            Some(None) => {
                checks.fail(
                    "reason",
                    "invalid_value",
                    "use goodwill, correction, fraud or migration",
                );
                None
            }
            Some(reason) => reason,
        };
        let comment = checks.required("comment", self.comment, store::limits::MAX_TEXT);
        let external_id = checks.id("externalId", self.external_id);
        let new = NewAdjustment {
            wallet,
            amount,
            reason: reason.unwrap_or(AdjustmentReason::Goodwill),
            comment,
            external_id,
        };
        checks.finish(new)
    }
}

/// Who the principal is to an adjustment.
fn requester(principal: &Principal) -> Requester {
    Requester {
        id: principal.operator.id.clone(),
        name: principal.operator.email.clone(),
    }
}

/// A limit or four-eyes refusal is the caller's permission, not the adjustment's state: 403.
fn refusal(err: StoreError) -> ApiError {
    match err {
        StoreError::Refused {
            code: code @ ("over_limit" | "own_request"),
            message,
            ..
        } => ApiError::Forbidden {
            code,
            detail: message,
        },
        other => other.into(),
    }
}

/// What the principal's role may adjust, as the owner set it.
async fn rules_of(state: &AdminState, principal: &Principal) -> Result<AdjustmentRules, ApiError> {
    Ok(state
        .store()
        .adjustment_rules(principal.operator.role)
        .await?)
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments",
    tag = "support", summary = "Adjust a wallet",
    description = "Credits (an EARN) or debits (a BURN, oldest tokens first, never below the \
        programme's minimum balance) a wallet by hand, with a reason and a comment the member's \
        history shows. Within the role's limit per adjustment (403 `over_limit`); above the \
        owner's approval threshold it waits, `pending`, for another operator's approval.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    request_body = AdjustmentInput,
    responses((status = 201, description = "made: applied, or pending approval",
            body = Adjustment),
        (status = 200, description = "made before by the same request", body = Adjustment),
        (status = 400, body = Problem),
        (status = 402, description = "the wallet cannot cover the debit", body = Problem),
        (status = 404, description = "unknown organisation, campaign or wallet", body = Problem),
        (status = 409, description = "`already_exists`: `externalId` was used for another \
            adjustment", body = Problem)))]
async fn adjust_wallet(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    JsonBody(input): JsonBody<AdjustmentInput>,
) -> Result<(StatusCode, Json<Adjustment>), ApiError> {
    let new = input.checked()?;
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let rules = rules_of(&state, &principal).await?;
    let who = requester(&principal);
    let action = Action::new("adjustment.make")
        .org(org)
        .target(new.wallet.clone())
        .after(serde_json::json!({
            "campaignId": campaign.id,
            "amount": new.amount,
            "reason": new.reason,
            "comment": new.comment,
            "externalId": new.external_id,
        }));
    let made = principal
        .acting(state.store(), action, |store| async move {
            store
                .ledger()
                .adjust(&campaign, new, &who, &rules)
                .await
                .map_err(refusal)
        })
        .await?;
    let status = match made.replayed {
        true => StatusCode::OK,
        false => StatusCode::CREATED,
    };
    Ok((status, Json(made.adjustment)))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct AdjustmentQuery {
    /// Only adjustments with this status.
    #[param(pattern = "^(pending|applied|rejected)$")]
    status: Option<String>,
    /// Only this wallet's (its id).
    #[param(max_length = 128)]
    wallet_id: Option<String>,
    /// Only those made from this bulk file.
    #[param(max_length = 64)]
    batch_id: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments",
    tag = "support", summary = "List adjustments",
    description = "The campaign's adjustments, newest first: `status=pending` is the approval \
        queue.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        PagingParams, AdjustmentQuery),
    responses((status = 200, body = PagedList<Adjustment>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn list_adjustments(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<AdjustmentQuery>,
) -> Result<Json<PagedList<Adjustment>>, ApiError> {
    let status = match query.status.as_deref() {
        None => None,
        Some(text) => Some(AdjustmentStatus::parse(text).ok_or_else(|| {
            ApiError::invalid(
                "status",
                "invalid_value",
                "use pending, applied or rejected",
            )
        })?),
    };
    for (field, value, max) in [
        ("walletId", &query.wallet_id, 128),
        ("batchId", &query.batch_id, 64),
    ] {
        if value.as_ref().is_some_and(|v| v.chars().count() > max) {
            return Err(ApiError::invalid(
                field,
                "too_long",
                format!("must be at most {max} characters"),
            ));
        }
    }
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let filter = AdjustmentFilter {
        status,
        wallet_id: query.wallet_id,
        batch_id: query.batch_id,
    };
    let listed = state
        .store()
        .ledger()
        .list_adjustments(&campaign, &filter, page)
        .await?;
    Ok(Json(PagedList::from_page(listed, std::convert::identity)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments/{id}",
    tag = "support", summary = "Get an adjustment",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = ADJUSTMENT, max_length = 64)),
    responses((status = 200, body = Adjustment),
        (status = 404, description = "unknown organisation, campaign or adjustment",
            body = Problem)))]
async fn get_adjustment(
    State(state): State<AdminState>,
    Path((org, campaign, id)): Path<(String, String, String)>,
) -> Result<Json<Adjustment>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let adjustment = state
        .store()
        .ledger()
        .get_adjustment(&campaign, &id)
        .await?;
    Ok(Json(adjustment))
}

#[utoipa::path(post,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments/{id}/approve",
    tag = "support", summary = "Approve a pending adjustment",
    description = "Applies it. Another operator than the one who asked (403 `own_request`), \
        within the approver's own limit (403 `over_limit`).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = ADJUSTMENT, max_length = 64)),
    responses((status = 200, body = Adjustment),
        (status = 402, description = "the wallet cannot cover the debit now (it stays pending)",
            body = Problem),
        (status = 404, description = "unknown organisation, campaign or adjustment",
            body = Problem),
        (status = 409, description = "`not_pending`: approved or rejected before",
            body = Problem)))]
async fn approve_adjustment(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign, id)): Path<(String, String, String)>,
) -> Result<Json<Adjustment>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let rules = rules_of(&state, &principal).await?;
    let who = requester(&principal);
    let action = Action::new("adjustment.approve")
        .org(org)
        .target(id.clone());
    let approved = principal
        .acting(state.store(), action, |store| async move {
            store
                .ledger()
                .approve_adjustment(&campaign, &id, &who, &rules)
                .await
                .map_err(refusal)
        })
        .await?;
    Ok(Json(approved))
}

/// Why an adjustment is rejected.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RejectInput {
    #[schema(schema_with = schema::text_or_null)]
    note: Option<String>,
}

#[utoipa::path(post,
    path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments/{id}/reject",
    tag = "support", summary = "Reject a pending adjustment",
    description = "Nothing is written to the wallet. The one who asked may reject (withdraw) \
        its own request.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        ("id" = String, Path, description = ADJUSTMENT, max_length = 64)),
    request_body = RejectInput,
    responses((status = 200, body = Adjustment), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, campaign or adjustment",
            body = Problem),
        (status = 409, description = "`not_pending`: approved or rejected before",
            body = Problem)))]
async fn reject_adjustment(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign, id)): Path<(String, String, String)>,
    JsonBody(input): JsonBody<RejectInput>,
) -> Result<Json<Adjustment>, ApiError> {
    let mut checks = Checks::default();
    let note = checks.text("note", input.note, store::limits::MAX_TEXT);
    checks.finish(())?;
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let who = requester(&principal);
    let action = Action::new("adjustment.reject")
        .org(org)
        .target(id.clone())
        .after(serde_json::json!({ "note": note }));
    let rejected = principal
        .acting(state.store(), action, |store| async move {
            Ok(store
                .ledger()
                .reject_adjustment(&campaign, &id, &who, note)
                .await?)
        })
        .await?;
    Ok(Json(rejected))
}

/// A CSV body (`Content-Type: text/csv`, or none): its bytes, within the size limit.
pub struct CsvBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for CsvBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        body_bytes(req, state, "text/csv").await.map(CsvBody)
    }
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct BulkQuery {
    /// `false` to make the adjustments; by default the file is only tried, and nothing is
    /// written.
    dry_run: Option<bool>,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/adjustments/bulk",
    tag = "support", summary = "Adjust wallets from a CSV file",
    description = "A CSV file with the columns `wallet`, `amount`, `reason`, `comment` (and \
        optionally `external_id`), at most 10,000 rows. By default a dry run: each row's \
        outcome (`would_apply`, `would_wait`, `refused` with why), nothing written. With \
        `dryRun=false` each row is made as an adjustment of its own, carrying the file's \
        `batchId`: `applied`, `pending`, `replayed` or `refused`. A row without an \
        `external_id` is keyed by the file's content and its line, so the same file sent again \
        makes only what was not made.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64), BulkQuery),
    request_body(content = FileBytes, content_type = "text/csv"),
    responses((status = 200, body = BulkReport),
        (status = 400, description = "not a CSV file with the columns, or no rows, or too many",
            body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem),
        (status = 413, description = "the file is larger than the body limit", body = Problem),
        (status = 415, description = "a content type other than text/csv", body = Problem)))]
async fn bulk_adjust(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    QueryParams(query): QueryParams<BulkQuery>,
    CsvBody(csv): CsvBody,
) -> Result<Json<BulkReport>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let rules = rules_of(&state, &principal).await?;
    let who = requester(&principal);
    let dry_run = query.dry_run.unwrap_or(true);
    let target = campaign.id.clone();
    let bulk = |store: store::Store| async move {
        store
            .ledger()
            .adjust_bulk(&campaign, &csv, &who, &rules, dry_run)
            .await
            .map_err(refusal)
    };
    let report = match dry_run {
        // A dry run writes nothing: no entry in the audit trail.
        true => bulk(state.store().clone()).await?,
        false => {
            let action = Action::new("adjustment.bulk").org(org).target(target);
            principal.acting(state.store(), action, bulk).await?
        }
    };
    Ok(Json(report))
}

/// How much each role may adjust at a time (`null`: no limit), and the threshold above which an
/// adjustment waits for a second operator (`null`: none waits).
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LimitsView {
    #[schema(value_type = Option<f64>)]
    pub owner: Option<Tokens>,
    #[schema(value_type = Option<f64>)]
    pub support: Option<Tokens>,
    #[schema(value_type = Option<f64>)]
    pub approval_over: Option<Tokens>,
}

impl From<AdjustmentLimits> for LimitsView {
    fn from(l: AdjustmentLimits) -> LimitsView {
        LimitsView {
            owner: l.owner,
            support: l.support,
            approval_over: l.approval_over,
        }
    }
}

/// The limits to change: a field left out keeps its value, `null` removes the limit.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LimitsInput {
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = limit)]
    owner: Option<Option<serde_json::Number>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = limit)]
    support: Option<Option<serde_json::Number>>,
    #[serde(default, deserialize_with = "present")]
    #[schema(schema_with = limit)]
    approval_over: Option<Option<serde_json::Number>>,
}

fn limit() -> Object {
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::Number,
            Type::Null,
        ]))
        .minimum(Some(0))
        .maximum(Some(MAX_ADJUSTMENT))
        .multiple_of(Some(0.000_001))
        .build()
}

#[utoipa::path(get, path = "/admin/v1/adjustment-limits", tag = "support",
    summary = "Get the adjustment limits",
    responses((status = 200, body = LimitsView)))]
async fn get_adjustment_limits(
    State(state): State<AdminState>,
) -> Result<Json<LimitsView>, ApiError> {
    let limits = state.store().operators().adjustment_limits().await?;
    Ok(Json(limits.into()))
}

#[utoipa::path(patch, path = "/admin/v1/adjustment-limits", tag = "operators",
    summary = "Change the adjustment limits",
    description = "Each role's limit per adjustment and the approval threshold, from the next \
        adjustment on (an owner's setting). A field left out keeps its value; `null` removes \
        the limit (or, for `approvalOver`, the need of approval).",
    request_body = LimitsInput,
    responses((status = 200, body = LimitsView), (status = 400, body = Problem)))]
async fn set_adjustment_limits(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<LimitsInput>,
) -> Result<Json<LimitsView>, ApiError> {
    let mut limits = state.store().operators().adjustment_limits().await?;
    let mut checks = Checks::default();
    for (field, given, slot) in [
        ("owner", input.owner, &mut limits.owner),
        ("support", input.support, &mut limits.support),
        (
            "approvalOver",
            input.approval_over,
            &mut limits.approval_over,
        ),
    ] {
        match given {
            None => {}
            Some(None) => *slot = None,
            Some(number) => *slot = checks.tokens(field, number, Sign::NonNegative, MAX_ADJUSTMENT),
        }
    }
    checks.finish(())?;
    let view = LimitsView::from(limits);
    let action = Action::new("adjustment.limits").after(serde_json::json!(view));
    principal
        .acting(state.store(), action, |store| async move {
            Ok(store.operators().set_adjustment_limits(limits).await?)
        })
        .await?;
    Ok(Json(view))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(adjust_wallet, list_adjustments))
        .routes(routes!(bulk_adjust))
        .routes(routes!(get_adjustment))
        .routes(routes!(approve_adjustment))
        .routes(routes!(reject_adjustment))
        .routes(routes!(get_adjustment_limits, set_adjustment_limits))
}
