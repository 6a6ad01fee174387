//! Organisations and their campaigns: listed (a per-organisation role sees its own), made, and
//! shown. The same store operations and checks as `rewards org` and `rewards campaign`.

use api::plumbing::{ApiError, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{Campaign, NewCampaign, OrgScope, Organisation};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::state::AdminState;

/// An organisation (a tenant).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrgView {
    pub id: String,
    pub name: String,
    pub created_at: DateTime<Utc>,
}

impl From<Organisation> for OrgView {
    fn from(o: Organisation) -> OrgView {
        OrgView {
            id: o.id,
            name: o.name,
            created_at: o.created_at,
        }
    }
}

/// A campaign: a programme with its own currency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CampaignView {
    pub id: String,
    pub org_id: String,
    pub name: String,
    pub currency: String,
    pub logo: Option<String>,
    pub favicon: Option<String>,
    pub created_at: DateTime<Utc>,
}

impl From<Campaign> for CampaignView {
    fn from(c: Campaign) -> CampaignView {
        CampaignView {
            id: c.id,
            org_id: c.org_id,
            name: c.name,
            currency: c.currency,
            logo: c.logo,
            favicon: c.favicon,
            created_at: c.created_at,
        }
    }
}

/// The organisation a path names, once the gate has let the principal reach it.
pub async fn org_of(state: &AdminState, id: &str) -> Result<OrgScope, ApiError> {
    Ok(state.store().tenancy().get_org(id).await?.scope())
}

/// The campaign a path names, if it is one of the organisation's (an unknown organisation has
/// none: 404 alike).
pub async fn campaign_of(state: &AdminState, org: &str, id: &str) -> Result<Campaign, ApiError> {
    Ok(state.store().tenancy().campaign_in(org, id).await?)
}

/// The campaign a body's `campaignId` names, if it is one of the organisation's (404 naming
/// `campaignId` if not).
pub async fn body_campaign(
    state: &AdminState,
    org: &OrgScope,
    id: &str,
) -> Result<Campaign, ApiError> {
    state
        .store()
        .tenancy()
        .get_campaign(org, id)
        .await
        .map_err(|err| match err {
            store::StoreError::NotFound { .. } => ApiError::UnknownReference {
                field: "campaignId",
                detail: "no campaign of this organisation has this id".into(),
            },
            other => other.into(),
        })
}

/// The path parameter naming an organisation.
pub const ORG: &str = "the organisation's id";

/// The path parameter naming a campaign.
pub const CAMPAIGN: &str = "the campaign's id";

#[utoipa::path(get, path = "/admin/v1/orgs", tag = "organisations",
    summary = "List organisations",
    description = "Every organisation for `owner` and `admin`; the ones it is given for the \
        other roles. In the order they were made.",
    params(PagingParams),
    responses((status = 200, body = PagedList<OrgView>), (status = 400, body = Problem)))]
async fn list_orgs(
    State(state): State<AdminState>,
    principal: Principal,
    Paging(page): Paging,
) -> Result<Json<PagedList<OrgView>>, ApiError> {
    let mut orgs = state.store().tenancy().list_orgs().await?;
    orgs.retain(|org| principal.reaches(&org.id));
    Ok(Json(PagedList::of(orgs, page, OrgView::from)))
}

/// An organisation to make.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrgInput {
    /// Not blank, no NUL character.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000]*[^\\s\\u0000\\u0085][^\\u0000]*$"
    )]
    name: String,
}

#[utoipa::path(post, path = "/admin/v1/orgs", tag = "organisations",
    summary = "Make an organisation",
    request_body = OrgInput,
    responses((status = 201, body = OrgView), (status = 400, body = Problem)))]
async fn create_org(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<OrgInput>,
) -> Result<(StatusCode, Json<OrgView>), ApiError> {
    let action = Action::new("org.create")
        .target(input.name.clone())
        .after(serde_json::json!({ "name": input.name }));
    let org = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().create_org(&input.name).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(org.into())))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}", tag = "organisations",
    summary = "Get an organisation",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    responses((status = 200, body = OrgView),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn get_org(
    State(state): State<AdminState>,
    Path(org): Path<String>,
) -> Result<Json<OrgView>, ApiError> {
    Ok(Json(state.store().tenancy().get_org(&org).await?.into()))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns", tag = "organisations",
    summary = "List an organisation's campaigns",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<CampaignView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_campaigns(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<CampaignView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let campaigns = state.store().tenancy().list_campaigns(&org).await?;
    Ok(Json(PagedList::of(campaigns, page, CampaignView::from)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}", tag = "organisations",
    summary = "Get a campaign",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    responses((status = 200, body = CampaignView),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn get_campaign(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
) -> Result<Json<CampaignView>, ApiError> {
    Ok(Json(campaign_of(&state, &org, &campaign).await?.into()))
}

/// A campaign to make.
#[derive(Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CampaignInput {
    /// Not blank, no NUL character.
    #[schema(
        min_length = 1,
        max_length = 100,
        pattern = "^[^\\u0000]*[^\\s\\u0000\\u0085][^\\u0000]*$"
    )]
    name: String,
    /// 2 to 16 letters, digits or `_` (`EUR`, `POINTS`), kept in upper case.
    #[schema(pattern = "^[A-Za-z0-9_]{2,16}$")]
    currency: String,
    /// An http:// or https:// URL with a host (no space, control character or bracket in it).
    #[schema(
        max_length = 2048,
        pattern = "^https?://[^\\u0000-\\u0020\\u007f/?#\\[\\]]+([/?#][^\\u0000]*)?$"
    )]
    logo: Option<String>,
    /// An http:// or https:// URL with a host (no space, control character or bracket in it).
    #[schema(
        max_length = 2048,
        pattern = "^https?://[^\\u0000-\\u0020\\u007f/?#\\[\\]]+([/?#][^\\u0000]*)?$"
    )]
    favicon: Option<String>,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/campaigns", tag = "organisations",
    summary = "Make a campaign",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = CampaignInput,
    responses((status = 201, body = CampaignView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn create_campaign(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<CampaignInput>,
) -> Result<(StatusCode, Json<CampaignView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("campaign.create")
        .org(org)
        .target(input.name.clone())
        .after(
            serde_json::json!({"name": input.name, "currency": input.currency,
            "logo": input.logo, "favicon": input.favicon}),
        );
    let new = NewCampaign {
        name: input.name,
        currency: input.currency,
        logo: input.logo,
        favicon: input.favicon,
    };
    let campaign = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.tenancy().create_campaign(&scope, new).await?)
        })
        .await?;
    Ok((StatusCode::CREATED, Json(campaign.into())))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_orgs, create_org))
        .routes(routes!(get_org))
        .routes(routes!(list_campaigns, create_campaign))
        .routes(routes!(get_campaign))
}
