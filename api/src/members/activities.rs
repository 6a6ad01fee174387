//! A member's activities: what a member did that the campaign's rules with `on = "activity"`
//! award tokens for, recorded by the client (`POST /v1/members/{id}/activities`) or by the
//! platform itself (a first wallet, a published review, a first order), and listed with what
//! each earned.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{Activity, ActivitySource, Award, NewActivity, Tokens};
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::{IntoParams, ToSchema};

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;

/// An activity of the member.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ActivityInput {
    /// Unique in the organisation: the same activity again answers as the first; another
    /// activity under a used id is refused (409).
    #[schema(schema_with = schema::id, required = true)]
    external_id: Option<String>,
    #[serde(rename = "type")]
    #[schema(schema_with = activity_type, required = true)]
    kind: Option<String>,
    /// When it happened (now when absent): from 1970 to a day ahead of the clock.
    #[schema(schema_with = schema::date_time_or_null)]
    occurred_at: Option<String>,
    /// What rules read as `activity.attributes.<key>`.
    #[schema(schema_with = schema::meta)]
    attributes: Option<Value>,
}

fn activity_type() -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .min_length(Some(1))
        .max_length(Some(store::MAX_ACTIVITY_TYPE))
        .pattern(Some("^[a-z][a-z0-9_]*(\\.[a-z][a-z0-9_]*)*$"))
        .description(Some(
            "Words of lower-case letters, digits and underscores, each starting with a letter, \
             joined by dots (`app.opened`). The platform's own (`member.signed_up`, \
             `member.birthday`, `review.published`, `order.first`, `referral.converted`) are \
             refused: the platform records them.",
        ))
}

/// Who recorded an activity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ActivitySource)]
pub enum Source {
    /// A client, over the API.
    Api,
    /// The platform itself (its built-in types).
    Platform,
    /// A batch file's row.
    File,
}

/// What an activity earned in one wallet: an EARN transaction (reversible as any other).
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AwardView {
    pub wallet_id: String,
    pub transaction_id: String,
    #[schema(value_type = f64)]
    pub tokens: Tokens,
    /// What each rule contributed, and each limit that cut it.
    pub rules_trace: Option<String>,
}

/// A member's activity and what it earned.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ActivityView {
    pub id: String,
    pub external_id: String,
    pub member_id: String,
    pub campaign_id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub occurred_at: DateTime<Utc>,
    #[schema(value_type = Option<Object>)]
    pub attributes: Option<Value>,
    pub source: Source,
    /// The member's first wallet in the campaign, credited as its rules say; empty when they
    /// give nothing (or the member has no wallet in the campaign) and while it waits.
    pub awards: Vec<AwardView>,
    /// When its awards were settled; null while it waits for them (a platform's activity is
    /// awarded within moments).
    pub awarded_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<Activity> for ActivityView {
    fn from(a: Activity) -> Self {
        ActivityView {
            id: a.id,
            external_id: a.external_id,
            member_id: a.member_id,
            campaign_id: a.campaign_id,
            kind: a.kind,
            occurred_at: a.occurred_at,
            attributes: a.attributes,
            source: match a.source {
                ActivitySource::Api => Source::Api,
                ActivitySource::Platform => Source::Platform,
                ActivitySource::File => Source::File,
            },
            awards: a.awards.into_iter().map(AwardView::from).collect(),
            awarded_at: a.awarded_at,
            created_at: a.created_at,
        }
    }
}

impl From<Award> for AwardView {
    fn from(a: Award) -> Self {
        AwardView {
            wallet_id: a.wallet_id,
            transaction_id: a.transaction_id,
            tokens: a.tokens,
            rules_trace: a.trace,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct ActivityQuery {
    /// Only activities of this type.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    kind: Option<String>,
}

/// The live member of the caller's organisation that `reference` names (id or external id).
pub(super) async fn member_id(
    state: &AppState,
    caller: &Caller,
    reference: &str,
) -> Result<String, ApiError> {
    state
        .store
        .members()
        .member_id_by_reference(caller.org(), reference)
        .await?
        .ok_or_else(|| store::StoreError::NotFound { what: "member" }.into())
}

#[utoipa::path(post, path = "/v1/members/{id}/activities", tag = "members", summary = "Record an activity",
    description = "Records something the member did, in the key's campaign, and awards it at \
        once: the campaign's rules with `on = \"activity\"` decide the tokens (they read \
        `activity.type` and `activity.attributes.<key>`, and their limits apply), credited to \
        the member's first wallet in the campaign as an EARN linked to the activity. \
        `externalId` is the idempotency key: the same activity again answers as the first \
        (with its awards), another one under the id is refused. Records `activity.recorded`.",
    params(("id" = String, Path, description = "The member's id or external id")),
    request_body = ActivityInput,
    responses((status = 201, body = ActivityView),
        (status = 400, description = "a missing or bad field, each named: `type` not a type or \
            one the platform records, `occurredAt` past a day ahead, `attributes` too large", body = Problem),
        (status = 404, description = "no such member", body = Problem),
        (status = 409, description = "`already_exists`: `externalId` names another activity \
            (`field` names the first field that differs)", body = Problem)))]
pub(super) async fn record_activity(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<ActivityInput>,
) -> Result<(StatusCode, Json<ActivityView>), ApiError> {
    let mut checks = Checks::default();
    let external_id = checks.required_id("externalId", input.external_id);
    let kind = checks.required("type", input.kind, store::MAX_ACTIVITY_TYPE);
    if let Some(problem) = store::activity_type_problem(&kind).filter(|_| !checks.has("type")) {
        checks.fail("type", "invalid_value", problem);
    }
    let occurred_at = checks.instant("occurredAt", input.occurred_at);
    let attributes = checks.meta_at("attributes", input.attributes.filter(|a| !a.is_null()));
    let (external_id, kind) = checks.finish((external_id, kind))?;
    let member_id = member_id(&state, &caller, &id).await?;
    let new = NewActivity {
        campaign_id: caller.context.campaign.id.clone(),
        member_id,
        external_id,
        kind,
        occurred_at,
        attributes,
        source: ActivitySource::Api,
        batch_id: None,
    };
    let (activity, _) = state
        .store
        .ledger()
        .record_activity(&state.rule_book, &caller.context.campaign, new)
        .await?;
    Ok((StatusCode::CREATED, Json(activity.into())))
}

#[utoipa::path(get, path = "/v1/members/{id}/activities", tag = "members", summary = "List a member's activities",
    description = "The member's activities in the key's campaign, newest first (by when they \
        happened), each with what it earned.",
    params(("id" = String, Path, description = "The member's id or external id"), PagingParams, ActivityQuery),
    responses((status = 200, body = PagedList<ActivityView>),
        (status = 400, body = Problem), (status = 404, description = "no such member", body = Problem)))]
pub(super) async fn list_activities(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<ActivityQuery>,
) -> Result<Json<PagedList<ActivityView>>, ApiError> {
    let mut checks = Checks::default();
    if let Some(problem) = query.kind.as_deref().and_then(store::activity_type_problem) {
        checks.fail("type", "invalid_value", problem);
    }
    checks.finish(())?;
    let member_id = member_id(&state, &caller, &id).await?;
    let found = state
        .store
        .ledger()
        .list_activities(
            &caller.context.campaign,
            &member_id,
            query.kind.as_deref(),
            page,
        )
        .await?;
    Ok(Json(PagedList::from_page(found, ActivityView::from)))
}
