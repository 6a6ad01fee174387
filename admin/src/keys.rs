//! An organisation's API keys: issued for one of its campaigns (the secret shown only then),
//! listed, revoked. The same store operations as `rewards key`.

use api::plumbing::{ApiError, FieldError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{ApiKey, ApiVersion, NewKey, Permission};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, body_campaign, org_of};
use crate::state::AdminState;

/// An API key, with its public handle shown only in part.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct KeyView {
    pub id: String,
    pub org_id: String,
    pub campaign_id: String,
    /// The key with its middle hidden (`rk_3f9a…c1d2`).
    pub api_key: String,
    /// What it may do beyond the ordinary operations.
    pub permissions: Vec<String>,
    /// The interface version a request gets when it sends no `x-api-version`.
    pub version: Option<String>,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

impl From<ApiKey> for KeyView {
    fn from(k: ApiKey) -> KeyView {
        KeyView {
            api_key: k.obfuscated(),
            id: k.id,
            org_id: k.org_id,
            campaign_id: k.campaign_id,
            permissions: k
                .permissions
                .iter()
                .map(|p| p.as_str().to_owned())
                .collect(),
            version: k.version.map(|v| v.as_str().to_owned()),
            read_only: k.read_only,
            created_at: k.created_at,
            revoked_at: k.revoked_at,
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/keys", tag = "keys",
    summary = "List an organisation's API keys", description = "Revoked ones included.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<KeyView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_keys(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<KeyView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let keys = state.store().tenancy().list_keys(&org).await?;
    Ok(Json(PagedList::of(keys, page, KeyView::from)))
}

fn permission() -> utoipa::openapi::schema::ArrayBuilder {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(Permission::ALL.iter().map(|p| p.as_str()))),
        )
        .max_items(Some(Permission::ALL.len()))
}

fn version() -> utoipa::openapi::schema::ObjectBuilder {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
            Type::String,
            Type::Null,
        ]))
        .enum_values(Some([Some("1.9.5"), Some("1.6.2"), None]))
}

/// A key to issue.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeyInput {
    /// The campaign it acts in (an id of the organisation's campaigns).
    #[schema(max_length = 64)]
    campaign_id: String,
    /// What it may do beyond the ordinary operations.
    #[serde(default)]
    #[schema(schema_with = permission)]
    permissions: Vec<String>,
    /// The version a request gets without `x-api-version`; absent: 1.9.5.
    #[schema(schema_with = version)]
    version: Option<String>,
    /// Whether it may only read.
    #[serde(default)]
    read_only: bool,
}

/// A key issued, with its secret: shown only now.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct IssuedKeyView {
    /// The full key, for `x-api-key`.
    pub api_key: String,
    /// The secret, for `x-api-secret`; kept only as a hash.
    pub api_secret: String,
    pub key: KeyView,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/keys", tag = "keys",
    summary = "Issue an API key",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = KeyInput,
    responses((status = 201, body = IssuedKeyView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, or `campaignId` is not one of its \
            campaigns", body = Problem)))]
async fn issue_key(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<KeyInput>,
) -> Result<(StatusCode, Json<IssuedKeyView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let mut errors = Vec::new();
    let mut permissions = Vec::new();
    for (n, name) in input.permissions.iter().enumerate() {
        match Permission::parse(name) {
            Some(permission) => permissions.push(permission),
            None => errors.push(FieldError::new(
                format!("permissions[{n}]"),
                "invalid_value",
                format!("no permission `{name}`"),
            )),
        }
    }
    let version = match input.version.as_deref().map(str::parse::<ApiVersion>) {
        None => None,
        Some(Ok(version)) => Some(version),
        Some(Err(message)) => {
            errors.push(FieldError::new("version", "invalid_value", message));
            None
        }
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let campaign = body_campaign(&state, &scope, &input.campaign_id).await?;
    let new = NewKey {
        campaign_id: campaign.id,
        permissions,
        version,
        read_only: input.read_only,
    };
    let action = Action::new("key.issue").org(org).after(serde_json::json!({
        "campaignId": new.campaign_id,
        "permissions": input.permissions,
        "version": input.version,
        "readOnly": new.read_only,
    }));
    let issued = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().issue_key(&scope, new).await?)
        })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(IssuedKeyView {
            api_key: issued.key.api_key.clone(),
            api_secret: issued.secret,
            key: issued.key.into(),
        }),
    ))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/keys/{id}", tag = "keys",
    summary = "Revoke an API key",
    description = "Requests with it get 401 from then on; one revoked already is answered as \
        it is.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = "the key's id", max_length = 64)),
    responses((status = 200, body = KeyView),
        (status = 404, description = "unknown organisation, or no key of it has this id",
            body = Problem)))]
async fn revoke_key(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<KeyView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let keys = state.store().tenancy().list_keys(&scope).await?;
    if !keys.iter().any(|k| k.id == id) {
        return Err(ApiError::NotFound("API key"));
    }
    let action = Action::new("key.revoke").org(org).target(id.clone());
    let key = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().revoke_key(&id).await?)
        })
        .await?;
    Ok(Json(key.into()))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_keys, issue_key))
        .routes(routes!(revoke_key))
}
