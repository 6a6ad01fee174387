//! Get Api Key summary (seed #1): what the caller's key is linked to, never the key itself.

use std::borrow::Cow;

use axum::Json;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiKeySummary {
    pub id: String,
    /// The organisation the key is linked to.
    pub org: String,
    /// The key with its middle hidden.
    pub api_key: String,
    pub access: Access,
    pub campaign_id: String,
    pub currency: String,
    pub logo: Option<String>,
    pub favicon: Option<String>,
}

/// What the key may do.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct Access {
    /// Permissions granted by the operator beyond the ordinary operations, e.g. `vector-search`.
    pub permissions: Vec<Cow<'static, str>>,
    /// A read-only key may only call GET operations.
    pub read_only: bool,
    /// The version requests get when they send no `x-api-version`.
    pub default_version: Cow<'static, str>,
    /// The version this request was answered in.
    pub version: Cow<'static, str>,
}

#[utoipa::path(get, path = "/v1/api-key", tag = "api-key",
    summary = "Get Api Key summary",
    responses((status = 200, body = ApiKeySummary)))]
async fn api_key_summary(caller: Caller) -> Json<ApiKeySummary> {
    let key = &caller.context.key;
    let campaign = &caller.context.campaign;
    Json(ApiKeySummary {
        id: key.id.clone(),
        org: key.org_id.clone(),
        api_key: key.obfuscated(),
        access: Access {
            permissions: key.permissions.iter().map(|p| p.as_str().into()).collect(),
            read_only: key.read_only,
            default_version: key.version.unwrap_or_default().as_str().into(),
            version: caller.version.as_str().into(),
        },
        campaign_id: campaign.id.clone(),
        currency: campaign.currency.clone(),
        logo: campaign.logo.clone(),
        favicon: campaign.favicon.clone(),
    })
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(api_key_summary))
}
