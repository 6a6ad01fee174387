//! Referrals: a member's referral code (made on request), a member signing up with another's
//! code after its creation (at creation it is `referralCode` of Create Member), and a member's
//! referrals with where each stands. A referral converts on its referee's first completed earn
//! (or the activity the campaign's rules name), recording `referral.converted` for both
//! members and as an event; the rules award both sides.

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::{Referral, ReferralCode, ReferralRole, ReferralStatus};
use utoipa::openapi::schema::{ObjectBuilder, SchemaType, Type};
use utoipa::{IntoParams, ToSchema};

use super::activities::member_id;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::Checks;
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;

/// The longest referral code accepted as typed (a code is 8 characters, shown `XXXX-XXXX`;
/// spaces and dashes are ignored).
pub const MAX_REFERRAL_CODE: usize = 32;

/// What a typed code may hold: letters and digits, with dashes and spaces between.
const TYPED: &str = "^[ -]*[0-9A-Za-z][0-9A-Za-z -]*$";

/// A referral code as typed (`field`): as `referral_code_schema` says; `None` when absent or
/// refused (recorded).
pub fn checked_code(checks: &mut Checks, field: &str, value: Option<String>) -> Option<String> {
    let value = value?;
    let typed = |c: char| c.is_ascii_alphanumeric() || c == '-' || c == ' ';
    if value.len() > MAX_REFERRAL_CODE
        || !value.chars().all(typed)
        || !value.chars().any(|c| c.is_ascii_alphanumeric())
    {
        let message = format!(
            "a referral code is letters and digits (XXXX-XXXX), dashes and spaces between, at \
             most {MAX_REFERRAL_CODE} characters"
        );
        checks.fail(field, "invalid_value", message);
        return None;
    }
    Some(value)
}

/// A referral code as a client sends it.
pub fn referral_code_schema() -> ObjectBuilder {
    typed_code(SchemaType::Type(Type::String))
}

/// `referral_code_schema`, or `null` (read as absent).
pub fn referral_code_or_null() -> ObjectBuilder {
    typed_code(SchemaType::from_iter([Type::String, Type::Null]))
}

fn typed_code(kind: SchemaType) -> ObjectBuilder {
    ObjectBuilder::new()
        .schema_type(kind)
        .min_length(Some(1))
        .max_length(Some(MAX_REFERRAL_CODE))
        .pattern(Some(TYPED))
        .description(Some(
            "Another member's referral code (`XXXX-XXXX`, in any case, dashes and spaces \
             ignored): this member becomes its referee. A code no member holds is refused \
             (400 naming `referralCode`).",
        ))
}

/// A member's referral code.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferralCodeView {
    pub member_id: String,
    /// What the member shares: `XXXX-XXXX`.
    pub code: String,
    /// How many of the member's referees converted.
    pub converted: i64,
    pub created_at: DateTime<Utc>,
}

impl From<ReferralCode> for ReferralCodeView {
    fn from(c: ReferralCode) -> Self {
        ReferralCodeView {
            member_id: c.member_id,
            code: c.code,
            converted: c.converted,
            created_at: c.created_at,
        }
    }
}

/// Where a referral stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ReferralStatus)]
pub enum Status {
    /// Its referee has not earned yet.
    Pending,
    /// Its referee's first earn (or the activity its campaign names) came.
    Converted,
}

/// A member brought by another with its code.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReferralView {
    pub id: String,
    /// The member whose code it was.
    pub referrer_id: String,
    /// The member it brought.
    pub referee_id: String,
    pub code: String,
    pub status: Status,
    /// The campaign it converted in.
    pub campaign_id: Option<String>,
    pub converted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl From<Referral> for ReferralView {
    fn from(r: Referral) -> Self {
        ReferralView {
            id: r.id,
            referrer_id: r.referrer_id,
            referee_id: r.referee_id,
            code: r.code,
            status: match r.status {
                ReferralStatus::Pending => Status::Pending,
                ReferralStatus::Converted => Status::Converted,
            },
            campaign_id: r.campaign_id,
            converted_at: r.converted_at,
            created_at: r.created_at,
        }
    }
}

/// A member signing up with another's code.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(super) struct ReferralInput {
    #[schema(schema_with = referral_code_schema, required = true)]
    referral_code: Option<String>,
}

/// Whose referrals to list.
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ReferralRole)]
pub enum Role {
    /// Those the member brought.
    Referrer,
    /// The one that brought the member.
    Referee,
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub(super) struct ReferralQuery {
    /// Only the referrals in which the member has this role (both when absent).
    #[param(inline)]
    role: Option<Role>,
}

#[utoipa::path(post, path = "/v1/members/{id}/referral-code", tag = "members", summary = "Get a member's referral code",
    description = "The member's referral code, made on the first request (random, unique in \
        the organisation, not derived from any id) and the same ever after, with how many of \
        its referees converted.",
    params(("id" = String, Path, description = "The member's id or external id")),
    responses((status = 200, body = ReferralCodeView),
        (status = 404, description = "no such member", body = Problem)))]
pub(super) async fn referral_code(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ReferralCodeView>, ApiError> {
    let member_id = member_id(&state, &caller, &id).await?;
    let code = state
        .store
        .members()
        .referral_code(caller.org(), &member_id)
        .await?;
    Ok(Json(code.into()))
}

#[utoipa::path(post, path = "/v1/members/{id}/referral", tag = "members", summary = "Sign up with a referral code",
    description = "Makes the member (created without a code) the referee of the code's owner: \
        a member signing up to the programme with a friend's code. The referral converts on \
        the member's first completed earn, or the activity the campaign's rules name \
        (`referral_converts_on`), once.",
    params(("id" = String, Path, description = "The member's id or external id")),
    request_body = ReferralInput,
    responses((status = 201, body = ReferralView),
        (status = 400, description = "`referralCode` missing, or no member holds it", body = Problem),
        (status = 404, description = "no such member", body = Problem),
        (status = 409, description = "`self_referral` (the member's own code), \
            `already_referred`, `already_a_member` (the member has a wallet already) or \
            `referral_cycle` (the code's owner was brought by this member, directly or not)", body = Problem)))]
pub(super) async fn refer(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<ReferralInput>,
) -> Result<(StatusCode, Json<ReferralView>), ApiError> {
    let mut checks = Checks::default();
    let code = checked_code(&mut checks, "referralCode", input.referral_code);
    if code.is_none() && !checks.has("referralCode") {
        checks.fail("referralCode", "missing_field", "is required");
    }
    let code = checks.finish(code.unwrap_or_default())?;
    let member_id = member_id(&state, &caller, &id).await?;
    let referral = state
        .store
        .members()
        .refer(caller.org(), &member_id, &code)
        .await?;
    Ok((StatusCode::CREATED, Json(referral.into())))
}

#[utoipa::path(get, path = "/v1/members/{id}/referrals", tag = "members", summary = "List a member's referrals",
    description = "The members this member brought, and the one that brought it, newest \
        first, each pending or converted (and where and when).",
    params(("id" = String, Path, description = "The member's id or external id"), PagingParams, ReferralQuery),
    responses((status = 200, body = PagedList<ReferralView>),
        (status = 400, body = Problem), (status = 404, description = "no such member", body = Problem)))]
pub(super) async fn list_referrals(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<ReferralQuery>,
) -> Result<Json<PagedList<ReferralView>>, ApiError> {
    let member_id = member_id(&state, &caller, &id).await?;
    let role = query.role.map(|r| match r {
        Role::Referrer => ReferralRole::Referrer,
        Role::Referee => ReferralRole::Referee,
    });
    let found = state
        .store
        .members()
        .list_referrals(caller.org(), &member_id, role, page)
        .await?;
    Ok(Json(PagedList::from_page(found, ReferralView::from)))
}
