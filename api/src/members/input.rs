//! The request bodies of members and how they become store values.

use serde::Deserialize;
use serde_json::Value;
use store::{ApiVersion, CommunicationPreferences, MemberPatch, NewMember, PreferencesPatch};
use utoipa::ToSchema;

use super::Status;
use super::preferences::PreferencesBody;
use crate::checks::{Checks, nullable};
use crate::error::ApiError;

const MAX_NAME: usize = 100;
const MAX_ID: usize = 128;

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

impl From<GuideMemberInput> for MemberInput {
    fn from(guide: GuideMemberInput) -> Self {
        MemberInput {
            first_name: guide.name,
            external_id: guide.external_id,
            last_name: Some(guide.last_name),
            email: Some(guide.email),
            phone: Some(guide.phone),
            status: guide.status,
            idp: guide.idp,
            user_id: guide.user_id,
            meta: Some(guide.meta),
            communication_preferences: guide.communication_preferences,
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

pub fn new_member(
    input: MemberInput,
    version: ApiVersion,
    names: &Names,
) -> Result<NewMember, ApiError> {
    let mut checks = Checks::default();
    let mut communication_preferences = CommunicationPreferences::default();
    if let Some(patch) = preferences(&mut checks, input.communication_preferences, version) {
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

pub fn member_patch(input: MemberInput, version: ApiVersion) -> Result<MemberPatch, ApiError> {
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
        communication_preferences: preferences(
            &mut checks,
            input.communication_preferences,
            version,
        ),
    };
    checks.finish(patch)
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
