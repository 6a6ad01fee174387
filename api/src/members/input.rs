//! The request bodies of members and how they become store values.

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{
    ApiVersion, CommunicationPreferences, MemberPatch, MemberStatus, NewMember, PreferencesPatch,
};
use utoipa::ToSchema;

use super::preferences::{FlagPreferences, PreferencesBody};
use super::referrals::{checked_code, referral_code_or_null};
use crate::http::checks::{Checks, MAX_NAME, nullable, schema};
use crate::http::error::ApiError;

/// A member's status as the API names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = MemberStatus)]
pub enum Status {
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

/// The body of Create Member: `firstName`, `userId` and `externalId` are required; `idp`
/// defaults to `reference`; `null` is the same as leaving a field out.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberInput {
    #[schema(schema_with = schema::name, required = true)]
    first_name: Option<String>,
    #[schema(schema_with = schema::name_or_null)]
    last_name: Option<String>,
    #[schema(schema_with = schema::email)]
    email: Option<String>,
    #[schema(schema_with = schema::phone)]
    phone: Option<String>,
    status: Option<Status>,
    /// The identity provider; `reference` (the default) when the client keeps its own user ids.
    #[schema(schema_with = schema::id_or_null)]
    idp: Option<String>,
    /// The member's id in the client's system (at `idp`).
    #[schema(schema_with = schema::id, required = true)]
    user_id: Option<String>,
    /// The client's reference for the member, used by orders and wallets.
    #[schema(schema_with = schema::id, required = true)]
    external_id: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
    /// In version 1.6.2, each category holds `channels` (a list) instead of flags.
    #[schema(value_type = Option<FlagPreferences>)]
    communication_preferences: Option<Value>,
    /// From 1900-01-01 to today: the day of the member's `member.birthday` activity.
    #[schema(schema_with = schema::day_or_null)]
    birth_date: Option<String>,
    #[schema(schema_with = referral_code_or_null)]
    referral_code: Option<String>,
}

/// The body of Update Member: every field is optional; `null` clears an optional field
/// (`lastName`, `email`, `phone`, `meta`) and leaves the others as they are. Version 1.6.2 may
/// also change `externalId`; 1.9.5 answers 400 `not_allowed` to it.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MemberUpdate {
    #[schema(schema_with = schema::name_or_null)]
    first_name: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::name_or_null)]
    last_name: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::email)]
    email: Option<Option<String>>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::phone)]
    phone: Option<Option<String>>,
    status: Option<Status>,
    #[schema(schema_with = schema::id_or_null)]
    idp: Option<String>,
    #[schema(schema_with = schema::id_or_null)]
    user_id: Option<String>,
    /// Version 1.6.2 only (see above).
    #[schema(ignore)]
    external_id: Option<String>,
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::meta)]
    meta: Option<Option<Value>>,
    /// In version 1.6.2, each category holds `channels` (a list) instead of flags.
    #[schema(value_type = Option<FlagPreferences>)]
    communication_preferences: Option<Value>,
    /// From 1900-01-01 to today; `null` clears it.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::day_or_null)]
    birth_date: Option<Option<String>>,
}

/// The member guide's body for `POST /api/members`: `name` and `externalID` (the reference's
/// `firstName` and `externalId` are accepted too) and `userId` are required.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GuideMemberInput {
    #[serde(alias = "firstName")]
    #[schema(schema_with = schema::name, required = true)]
    name: Option<String>,
    #[serde(rename = "externalID", alias = "externalId")]
    #[schema(schema_with = schema::id, required = true)]
    external_id: Option<String>,
    #[schema(schema_with = schema::name_or_null)]
    last_name: Option<String>,
    #[schema(schema_with = schema::email)]
    email: Option<String>,
    #[schema(schema_with = schema::phone)]
    phone: Option<String>,
    status: Option<Status>,
    #[schema(schema_with = schema::id_or_null)]
    idp: Option<String>,
    #[schema(schema_with = schema::id, required = true)]
    user_id: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
    /// In version 1.6.2, each category holds `channels` (a list) instead of flags.
    #[schema(value_type = Option<FlagPreferences>)]
    communication_preferences: Option<Value>,
    /// From 1900-01-01 to today: the day of the member's `member.birthday` activity.
    #[schema(schema_with = schema::day_or_null)]
    birth_date: Option<String>,
    #[schema(schema_with = referral_code_or_null)]
    referral_code: Option<String>,
}

impl From<GuideMemberInput> for MemberInput {
    fn from(guide: GuideMemberInput) -> Self {
        MemberInput {
            first_name: guide.name,
            external_id: guide.external_id,
            last_name: guide.last_name,
            email: guide.email,
            phone: guide.phone,
            status: guide.status,
            idp: guide.idp,
            user_id: guide.user_id,
            meta: guide.meta,
            communication_preferences: guide.communication_preferences,
            birth_date: guide.birth_date,
            referral_code: guide.referral_code,
        }
    }
}

/// The names a body calls its fields by, so errors name what the client sent.
pub struct Names {
    first_name: &'static str,
    external_id: &'static str,
}

pub const REFERENCE: Names = Names {
    first_name: "firstName",
    external_id: "externalId",
};
pub const GUIDE: Names = Names {
    first_name: "name",
    external_id: "externalID",
};

/// `today` is the clock's day: a birth date may not be after it.
pub fn new_member(
    input: MemberInput,
    version: ApiVersion,
    names: &Names,
    today: NaiveDate,
) -> Result<NewMember, ApiError> {
    let mut checks = Checks::default();
    let mut communication_preferences = CommunicationPreferences::default();
    if let Some(patch) = preferences(&mut checks, input.communication_preferences, version) {
        communication_preferences.apply(&patch);
    }
    let member = NewMember {
        first_name: checks.required(names.first_name, input.first_name, MAX_NAME),
        last_name: checks.text("lastName", input.last_name, MAX_NAME),
        email: checks.email("email", input.email),
        phone: checks.phone("phone", input.phone),
        status: input.status.map(Into::into).unwrap_or_default(),
        idp: checks
            .id("idp", input.idp)
            .unwrap_or_else(|| "reference".to_string()),
        user_id: checks.required_id("userId", input.user_id),
        external_id: checks.required_id(names.external_id, input.external_id),
        meta: checks.meta(input.meta),
        communication_preferences,
        birth_date: birth_date(&mut checks, input.birth_date, today),
        referral_code: checked_code(&mut checks, "referralCode", input.referral_code),
    };
    checks.finish(member)
}

pub fn member_patch(
    input: MemberUpdate,
    version: ApiVersion,
    today: NaiveDate,
) -> Result<MemberPatch, ApiError> {
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
        email: input.email.map(|v| checks.email("email", v)),
        phone: input.phone.map(|v| checks.phone("phone", v)),
        status: input.status.map(Into::into),
        idp: checks.id("idp", input.idp),
        user_id: checks.id("userId", input.user_id),
        external_id: checks.id("externalId", input.external_id),
        meta: input.meta.map(|v| checks.meta(v)),
        communication_preferences: preferences(
            &mut checks,
            input.communication_preferences,
            version,
        ),
        birth_date: input.birth_date.map(|v| birth_date(&mut checks, v, today)),
    };
    checks.finish(patch)
}

/// A `birthDate`: a day from 1900-01-01 to `today`; `None` when absent or refused (recorded).
fn birth_date(checks: &mut Checks, value: Option<String>, today: NaiveDate) -> Option<NaiveDate> {
    let day = checks.day("birthDate", value)?;
    let first = NaiveDate::from_ymd_opt(1900, 1, 1).expect("a valid date");
    if day < first || day > today {
        let message = format!("must be from 1900-01-01 to today ({today})");
        checks.fail("birthDate", "invalid_value", message);
        return None;
    }
    Some(day)
}

/// Reads `communicationPreferences` in `version`'s shape; an error is recorded in `checks`.
fn preferences(
    checks: &mut Checks,
    value: Option<Value>,
    version: ApiVersion,
) -> Option<PreferencesPatch> {
    PreferencesBody::parse(value?, version)
        .map_err(|error| checks.push(error))
        .ok()
}
