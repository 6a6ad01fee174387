//! Members (seed #18-23) and the member guide's `POST /api/members`.
//!
//! `communicationPreferences` is stored once and spoken in two shapes: 1.9.5 sends
//! `{"general": {"email": true, "sms": false}, ...}`, 1.6.2 sends
//! `{"general": {"channels": ["email"]}, ...}`. An update changes only the categories (and, in
//! 1.9.5, the channels) it names.

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use store::{
    ApiVersion, ChannelsPatch, CommunicationPreferences, Member, MemberPatch, MemberStatus,
    NewMember, PreferencesPatch,
};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::auth::Caller;
use crate::error::{ApiError, FieldError};
use crate::json::{JsonBody, field_error};
use crate::paging::{PagedList, Paging, PagingParams};

const MAX_NAME: usize = 100;
const MAX_ID: usize = 128;
const MAX_EMAIL: usize = 254;
const MAX_PHONE: usize = 32;
const MAX_META_BYTES: usize = 16 * 1024;

#[derive(Debug, Clone, Copy, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Status {
    Active,
    Inactive,
}

impl From<Status> for MemberStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Active => MemberStatus::Active,
            Status::Inactive => MemberStatus::Inactive,
        }
    }
}

impl From<MemberStatus> for Status {
    fn from(status: MemberStatus) -> Self {
        match status {
            MemberStatus::Active => Status::Active,
            MemberStatus::Inactive => Status::Inactive,
        }
    }
}

/// Channels of one category in version 1.9.5.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ChannelFlags {
    email: Option<bool>,
    sms: Option<bool>,
}

/// Channels of one category in version 1.6.2: the channels the member accepts.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct ChannelList {
    channels: Vec<Channel>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
enum Channel {
    Email,
    Sms,
}

/// Preferences per category; `C` is the version's channel shape.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
struct Preferences<C> {
    general: Option<C>,
    marketing: Option<C>,
    booking: Option<C>,
    earn: Option<C>,
    order: Option<C>,
}

impl<C> Preferences<C> {
    fn into_categories(self) -> [(&'static str, Option<C>); 5] {
        [
            ("general", self.general),
            ("marketing", self.marketing),
            ("booking", self.booking),
            ("earn", self.earn),
            ("order", self.order),
        ]
    }

    fn from_stored(
        stored: &CommunicationPreferences,
        shape: impl Fn(store::Channels) -> C,
    ) -> Self {
        let [general, marketing, booking, earn, order] = stored
            .categories()
            .map(|(_, channels)| Some(shape(channels)));
        Preferences {
            general,
            marketing,
            booking,
            earn,
            order,
        }
    }
}

/// `communicationPreferences` in the request's version: 1.9.5 flags or 1.6.2 channel lists.
#[derive(Debug, Serialize, ToSchema)]
#[serde(untagged)]
enum PreferencesBody {
    Flags(Preferences<ChannelFlags>),
    Lists(Preferences<ChannelList>),
}

impl PreferencesBody {
    fn render(stored: &CommunicationPreferences, version: ApiVersion) -> Self {
        match version {
            ApiVersion::V1_9_5 => {
                PreferencesBody::Flags(Preferences::from_stored(stored, |c| ChannelFlags {
                    email: Some(c.email),
                    sms: Some(c.sms),
                }))
            }
            ApiVersion::V1_6_2 => PreferencesBody::Lists(Preferences::from_stored(stored, |c| {
                let on = [(c.email, Channel::Email), (c.sms, Channel::Sms)];
                ChannelList {
                    channels: on
                        .into_iter()
                        .filter(|(on, _)| *on)
                        .map(|(_, ch)| ch)
                        .collect(),
                }
            })),
        }
    }

    /// Reads the body's preferences in `version`'s shape into a change to the stored ones.
    fn parse(value: Value, version: ApiVersion) -> Result<PreferencesPatch, FieldError> {
        const FIELD: &str = "communicationPreferences";
        // `other_shape` names the keys of the other version's shape, to point a client that
        // mixed them up at the version header.
        let fail = |err: serde_path_to_error::Error<serde_json::Error>,
                    other_shape: &[&str],
                    hint: &str| {
            let path = match err.path().to_string().as_str() {
                "." => FIELD.to_string(),
                inner => format!("{FIELD}.{inner}"),
            };
            let mut error = field_error(&path, &err.into_inner().to_string());
            if other_shape
                .iter()
                .any(|key| error.message.starts_with(&format!("unknown field `{key}`")))
            {
                error.message.push_str(hint);
            }
            error
        };
        let changes = match version {
            ApiVersion::V1_9_5 => {
                let prefs: Preferences<ChannelFlags> = serde_path_to_error::deserialize(value)
                    .map_err(|e| {
                        fail(
                            e,
                            &["channels"],
                            " (`channels` lists are the 1.6.2 shape; send `x-api-version: 1.6.2`)",
                        )
                    })?;
                prefs
                    .into_categories()
                    .into_iter()
                    .filter_map(|(name, c)| {
                        c.map(|c| {
                            (
                                name,
                                ChannelsPatch {
                                    email: c.email,
                                    sms: c.sms,
                                },
                            )
                        })
                    })
                    .collect()
            }
            ApiVersion::V1_6_2 => {
                let prefs: Preferences<ChannelList> = serde_path_to_error::deserialize(value)
                    .map_err(|e| {
                        fail(e, &["email", "sms"], " (`email`/`sms` flags are the 1.9.5 shape; send `x-api-version: 1.9.5`)")
                    })?;
                prefs
                    .into_categories()
                    .into_iter()
                    .filter_map(|(name, c)| {
                        c.map(|c| {
                            let has = |ch| Some(c.channels.contains(&ch));
                            (
                                name,
                                ChannelsPatch {
                                    email: has(Channel::Email),
                                    sms: has(Channel::Sms),
                                },
                            )
                        })
                    })
                    .collect()
            }
        };
        Ok(PreferencesPatch(changes))
    }
}

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberView {
    id: String,
    first_name: String,
    last_name: Option<String>,
    email: Option<String>,
    phone: Option<String>,
    status: Status,
    idp: String,
    user_id: String,
    external_id: String,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    communication_preferences: PreferencesBody,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

impl MemberView {
    fn new(member: Member, version: ApiVersion) -> Self {
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
            created_at: member.created_at,
            updated_at: member.updated_at,
        }
    }
}

/// `null` and absent mean different things in an update: `Some(None)` clears, `None` keeps.
fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// The body of create and update. On create, `firstName`, `userId` and `externalId` are required
/// and `idp` defaults to `reference`; on update every field is optional and `null` clears an
/// optional field. Version 1.9.5 cannot change `externalId`.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberInput {
    first_name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    last_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<String>)]
    phone: Option<Option<String>>,
    status: Option<Status>,
    /// The identity provider; `reference` (the default) when the client keeps its own user ids.
    idp: Option<String>,
    /// The member's id in the client's system (at `idp`).
    user_id: Option<String>,
    /// The client's reference for the member, used by orders and wallets.
    external_id: Option<String>,
    /// Free-form JSON object kept as given (at most 16 KiB).
    #[serde(default, deserialize_with = "nullable")]
    #[schema(value_type = Option<Object>)]
    meta: Option<Option<Value>>,
    #[schema(value_type = Option<PreferencesBody>)]
    communication_preferences: Option<Value>,
}

/// The member guide's body for `POST /api/members`: `name` and `externalID` (the reference's
/// `firstName` and `externalId` are accepted too).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct GuideMemberInput {
    #[serde(alias = "firstName")]
    name: Option<String>,
    #[serde(rename = "externalID", alias = "externalId")]
    external_id: Option<String>,
    last_name: Option<String>,
    email: Option<String>,
    phone: Option<String>,
    status: Option<Status>,
    idp: Option<String>,
    user_id: Option<String>,
    #[schema(value_type = Option<Object>)]
    meta: Option<Value>,
    #[schema(value_type = Option<PreferencesBody>)]
    communication_preferences: Option<Value>,
}

/// The names a body calls its fields by, so errors name what the client sent.
struct Names {
    first_name: &'static str,
    external_id: &'static str,
}

const REFERENCE: Names = Names {
    first_name: "firstName",
    external_id: "externalId",
};
const GUIDE: Names = Names {
    first_name: "name",
    external_id: "externalID",
};

/// Collects every field error of a body before answering, so a client fixes them all at once.
#[derive(Default)]
struct Checks(Vec<FieldError>);

impl Checks {
    fn fail(&mut self, field: &str, code: &'static str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// A text that, when present, is not blank and at most `max` characters.
    fn text(&mut self, field: &str, value: Option<String>, max: usize) -> Option<String> {
        let value = value?;
        if value.trim().is_empty() {
            self.fail(field, "invalid_value", "must not be blank");
        } else if value.chars().count() > max {
            self.fail(
                field,
                "too_long",
                format!("must be at most {max} characters"),
            );
        }
        Some(value)
    }

    fn required(&mut self, field: &str, value: Option<String>, max: usize) -> String {
        let value = self.text(field, value, max);
        if value.is_none() {
            self.fail(field, "missing_field", "is required");
        }
        value.unwrap_or_default()
    }

    fn email(&mut self, value: Option<String>) -> Option<String> {
        let value = self.text("email", value, MAX_EMAIL)?;
        let well_formed = value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }) && !value.chars().any(char::is_whitespace)
            && value.matches('@').count() == 1;
        if !well_formed {
            self.fail(
                "email",
                "invalid_value",
                "must be an email address such as ada@example.com",
            );
        }
        Some(value)
    }

    fn phone(&mut self, value: Option<String>) -> Option<String> {
        let value = self.text("phone", value, MAX_PHONE)?;
        let digits = value.chars().filter(char::is_ascii_digit).count();
        let allowed = value
            .chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || " -().".contains(c) || (c == '+' && i == 0));
        if !allowed || digits < 3 {
            self.fail(
                "phone",
                "invalid_value",
                "must be a phone number: digits, spaces, - ( ) . and a leading +",
            );
        }
        Some(value)
    }

    fn meta(&mut self, value: Option<Value>) -> Option<Value> {
        let value = value?;
        if !value.is_object() {
            self.fail("meta", "invalid_type", "must be a JSON object");
        } else if value.to_string().len() > MAX_META_BYTES {
            self.fail(
                "meta",
                "too_long",
                format!("must be at most {MAX_META_BYTES} bytes of JSON"),
            );
        }
        Some(value)
    }

    fn preferences(
        &mut self,
        value: Option<Value>,
        version: ApiVersion,
    ) -> Option<PreferencesPatch> {
        match PreferencesBody::parse(value?, version) {
            Ok(patch) => Some(patch),
            Err(error) => {
                self.0.push(error);
                None
            }
        }
    }

    fn finish<T>(self, value: T) -> Result<T, ApiError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::validation(self.0))
        }
    }
}

fn new_member(
    input: MemberInput,
    version: ApiVersion,
    names: &Names,
) -> Result<NewMember, ApiError> {
    let mut checks = Checks::default();
    let mut communication_preferences = CommunicationPreferences::default();
    if let Some(patch) = checks.preferences(input.communication_preferences, version) {
        communication_preferences.apply(&patch);
    }
    let member = NewMember {
        first_name: checks.required(names.first_name, input.first_name, MAX_NAME),
        last_name: checks.text("lastName", input.last_name.flatten(), MAX_NAME),
        email: checks.email(input.email.flatten()),
        phone: checks.phone(input.phone.flatten()),
        status: input.status.map(Into::into).unwrap_or_default(),
        idp: checks
            .text("idp", input.idp, MAX_ID)
            .unwrap_or_else(|| "reference".to_string()),
        user_id: checks.required("userId", input.user_id, MAX_ID),
        external_id: checks.required(names.external_id, input.external_id, MAX_ID),
        meta: checks.meta(input.meta.flatten()),
        communication_preferences,
    };
    checks.finish(member)
}

fn member_patch(input: MemberInput, version: ApiVersion) -> Result<MemberPatch, ApiError> {
    let mut checks = Checks::default();
    if version == ApiVersion::V1_9_5 && input.external_id.is_some() {
        checks.fail(
            "externalId",
            "not_allowed",
            "cannot be changed in version 1.9.5 (version 1.6.2 allows it)",
        );
    }
    let patch = MemberPatch {
        first_name: checks.text("firstName", input.first_name, MAX_NAME),
        last_name: input
            .last_name
            .map(|v| checks.text("lastName", v, MAX_NAME)),
        email: input.email.map(|v| checks.email(v)),
        phone: input.phone.map(|v| checks.phone(v)),
        status: input.status.map(Into::into),
        idp: checks.text("idp", input.idp, MAX_ID),
        user_id: checks.text("userId", input.user_id, MAX_ID),
        external_id: checks.text("externalId", input.external_id, MAX_ID),
        meta: input.meta.map(|v| checks.meta(v)),
        communication_preferences: checks.preferences(input.communication_preferences, version),
    };
    checks.finish(patch)
}

#[utoipa::path(get, path = "/v1/members", tag = "members", summary = "Find All Members",
    params(PagingParams),
    responses((status = 200, body = PagedList<MemberView>), (status = 400, body = crate::error::Problem)))]
async fn list_members(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
) -> Result<Json<PagedList<MemberView>>, ApiError> {
    let members = state.store.list_members(caller.org_id(), page).await?;
    Ok(Json(PagedList::from_page(members, |m| {
        MemberView::new(m, caller.version)
    })))
}

#[utoipa::path(post, path = "/v1/members", tag = "members", summary = "Create Member",
    request_body = MemberInput,
    responses((status = 200, body = MemberView), (status = 400, body = crate::error::Problem),
        (status = 409, description = "externalId or (idp, userId) already used", body = crate::error::Problem)))]
async fn create_member(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<MemberInput>,
) -> Result<Json<MemberView>, ApiError> {
    let new = new_member(input, caller.version, &REFERENCE)?;
    let member = state.store.create_member(caller.org_id(), new).await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(get, path = "/v1/members/idp/{idp}/{id}", tag = "members", summary = "Find Member By IDP",
    params(("idp" = String, Path, description = "identity provider"), ("id" = String, Path, description = "user id at that provider")),
    responses((status = 200, body = MemberView), (status = 404, body = crate::error::Problem)))]
async fn find_member_by_idp(
    State(state): State<AppState>,
    caller: Caller,
    Path((idp, user_id)): Path<(String, String)>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state
        .store
        .find_member_by_idp(caller.org_id(), &idp, &user_id)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(get, path = "/v1/members/{id}", tag = "members", summary = "Find Member",
    params(("id" = String, Path)),
    responses((status = 200, body = MemberView), (status = 404, body = crate::error::Problem)))]
async fn get_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state.store.get_member(caller.org_id(), &id).await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(patch, path = "/v1/members/{id}", tag = "members", summary = "Update Member",
    params(("id" = String, Path)), request_body = MemberInput,
    responses((status = 200, body = MemberView), (status = 400, body = crate::error::Problem),
        (status = 404, body = crate::error::Problem), (status = 409, body = crate::error::Problem)))]
async fn update_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<MemberInput>,
) -> Result<Json<MemberView>, ApiError> {
    let patch = member_patch(input, caller.version)?;
    let member = state
        .store
        .update_member(caller.org_id(), &id, patch)
        .await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(delete, path = "/v1/members/{id}", tag = "members", summary = "Delete Member",
    description = "Erases the member's personal data and returns the member as it was. Records the \
        ledger needs (wallets, transactions) stay; the member is not found again.",
    params(("id" = String, Path)),
    responses((status = 200, body = MemberView), (status = 404, body = crate::error::Problem)))]
async fn delete_member(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<MemberView>, ApiError> {
    let member = state.store.delete_member(caller.org_id(), &id).await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

#[utoipa::path(post, path = "/api/members", tag = "member guide", summary = "Create Member (member guide)",
    request_body = GuideMemberInput,
    responses((status = 200, body = MemberView), (status = 400, body = crate::error::Problem),
        (status = 409, body = crate::error::Problem)))]
async fn create_guide_member(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<GuideMemberInput>,
) -> Result<Json<MemberView>, ApiError> {
    let input = MemberInput {
        first_name: input.name,
        external_id: input.external_id,
        last_name: Some(input.last_name),
        email: Some(input.email),
        phone: Some(input.phone),
        status: input.status,
        idp: input.idp,
        user_id: input.user_id,
        meta: Some(input.meta),
        communication_preferences: input.communication_preferences,
    };
    let new = new_member(input, caller.version, &GUIDE)?;
    let member = state.store.create_member(caller.org_id(), new).await?;
    Ok(Json(MemberView::new(member, caller.version)))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_members, create_member))
        .routes(routes!(find_member_by_idp))
        .routes(routes!(get_member, update_member, delete_member))
        .routes(routes!(create_guide_member))
}
