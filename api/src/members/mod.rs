//! Members (seed #18-23), the member guide's `POST /api/members`, members' activities
//! (`activities.rs`) and referrals (`referrals.rs`).
//!
//! `communicationPreferences` is stored once and spoken in each version's shape
//! (`preferences`). An update changes only the fields, categories and (in 1.9.5) channels it
//! names.

pub(crate) mod activities;
mod input;
pub(crate) mod preferences;
pub(crate) mod referrals;

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{ApiVersion, Member};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

pub use self::input::Status;
use self::input::{
    GUIDE, GuideMemberInput, MemberInput, MemberUpdate, REFERENCE, member_patch, new_member,
};
pub(crate) use self::preferences::ListPreferences;
use self::preferences::PreferencesBody;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::ApiError;
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    pub id: String,
    pub first_name: String,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub status: Status,
    pub idp: String,
    pub user_id: String,
    pub external_id: String,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// In version 1.6.2 each category holds the channels it accepts instead of flags:
    /// `{"general": {"channels": ["email", "sms"]}, ...}`.
    #[schema(value_type = preferences::FlagPreferences)]
    pub communication_preferences: PreferencesBody,
    /// The day of the member's `member.birthday` activity.
    pub birth_date: Option<NaiveDate>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl MemberView {
    pub fn new(member: Member, version: ApiVersion) -> Self {
        MemberView {
            communication_preferences: PreferencesBody::render(
                &member.communication_preferences,
                version,
            ),
            id: member.id,
            first_name: member.first_name,
            last_name: member.last_name,
            email: member.email,
            phone: member.phone,
            status: member.status.into(),
            idp: member.idp,
            user_id: member.user_id,
            external_id: member.external_id,
            meta: member.meta,
            birth_date: member.birth_date,
            created_at: member.created_at,
            updated_at: member.updated_at,
        }
    }
}

#[utoipa::path(get, path = "/v1/members", tag = "members", summary = "Find All Members",
    params(PagingParams),
    responses((status = 200, body = PagedList<MemberView>), (status = 400, body = crate::http::error::Problem)))]
async fn list_members(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
) -> Result<Json<PagedList<MemberView>>, ApiError> {
    let members = state
        .store
        .members()
        .list_members(caller.org(), page)
        .await?;
    Ok(Json(PagedList::from_page(members, |m| {
        MemberView::new(m, caller.version)
    })))
}

#[utoipa::path(post, path = "/v1/members", tag = "members", summary = "Create Member",
    request_body = MemberInput,
    responses((status = 200, body = MemberView),
        (status = 400, description = "a missing or bad field, each named; `referralCode` that \
            no member holds", body = crate::http::error::Problem),
        (status = 409, description = "externalId or (idp, userId) already used", body = crate::http::error::Problem)))]
async fn create_member(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<MemberInput>,
) -> Result<Json<MemberView>, ApiError> {
    let new = new_member(input, caller.version, &REFERENCE, today(&state))?;
    let member = state
        .store
        .members()
        .create_member(caller.org(), new)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(get, path = "/v1/members/idp/{idp}/{id}", tag = "members", summary = "Find Member By IDP",
    params(("idp" = String, Path, description = "identity provider"), ("id" = String, Path, description = "user id at that provider")),
    responses((status = 200, body = MemberView), (status = 404, body = crate::http::error::Problem)))]
async fn find_member_by_idp(
    State(state): State<AppState>,
    caller: Caller,
    Path((idp, user_id)): Path<(String, String)>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state
        .store
        .members()
        .find_member_by_idp(caller.org(), &idp, &user_id)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(get, path = "/v1/members/{id}", tag = "members", summary = "Find Member",
    params(("id" = String, Path)),
    responses((status = 200, body = MemberView), (status = 404, body = crate::http::error::Problem)))]
async fn get_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state.store.members().get_member(caller.org(), &id).await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(patch, path = "/v1/members/{id}", tag = "members", summary = "Update Member",
    params(("id" = String, Path)), request_body = MemberUpdate,
    responses((status = 200, body = MemberView), (status = 400, body = crate::http::error::Problem),
        (status = 404, body = crate::http::error::Problem), (status = 409, body = crate::http::error::Problem)))]
async fn update_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<MemberUpdate>,
) -> Result<Json<MemberView>, ApiError> {
    let patch = member_patch(input, caller.version, today(&state))?;
    let member = state
        .store
        .members()
        .update_member(caller.org(), &id, patch)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(delete, path = "/v1/members/{id}", tag = "members", summary = "Delete Member",
    description = "Erases the member's personal data and returns the member as it was. Records the \
        ledger needs (wallets, transactions) stay; the member is not found again.",
    params(("id" = String, Path)),
    responses((status = 200, body = MemberView), (status = 404, body = crate::http::error::Problem)))]
async fn delete_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state
        .store
        .members()
        .delete_member(caller.org(), &id)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(post, path = "/api/members", tag = "member guide", summary = "Create Member (member guide)",
    request_body = GuideMemberInput,
    responses((status = 200, body = MemberView), (status = 400, body = crate::http::error::Problem),
        (status = 409, body = crate::http::error::Problem)))]
async fn create_guide_member(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<GuideMemberInput>,
) -> Result<Json<MemberView>, ApiError> {
    let input = MemberInput::from(input);
    let new = new_member(input, caller.version, &GUIDE, today(&state))?;
    let member = state
        .store
        .members()
        .create_member(caller.org(), new)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

/// The clock's day (UTC): no member is born after it.
fn today(state: &AppState) -> NaiveDate {
    state.store.now().date_naive()
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_members, create_member))
        .routes(routes!(find_member_by_idp))
        .routes(routes!(get_member, update_member, delete_member))
        .routes(routes!(create_guide_member))
        .routes(routes!(
            activities::record_activity,
            activities::list_activities
        ))
        .routes(routes!(referrals::referral_code))
        .routes(routes!(referrals::refer))
        .routes(routes!(referrals::list_referrals))
}
