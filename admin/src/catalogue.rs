//! A campaign's reward catalogue: imported from the document `templates/catalogue.md` describes
//! (a dry run unless `dryRun=false`, so the report comes before anything is applied), and
//! exported as that document. The same store operations as `rewards catalogue` and the client
//! API's `PUT /v1/catalogue`; its products searched as the client API searches them.

use api::plumbing::{
    ApiError, JsonBytes, MAX_IMPORT_BODY, PagedList, Paging, PagingParams, Problem, ProductSearch,
    QueryParams, RenderedJson, import_catalogue, search_products,
};
use api::views::ImportReportView;
use api::views::ProductView;
use axum::Json;
use axum::extract::{DefaultBodyLimit, Path, State};
use serde::Deserialize;
use store::audit::Action;
use store::{ApiVersion, ImportOptions};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{CAMPAIGN, ORG, campaign_of};
use crate::state::AdminState;

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ImportQuery {
    /// `false` to apply the document; by default it is only checked and counted.
    dry_run: Option<bool>,
    /// Also remove the products, categories and tags the document does not hold.
    replace: Option<bool>,
}

#[utoipa::path(put, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/catalogue",
    tag = "catalogue", summary = "Import a campaign's catalogue",
    description = "Checks the catalogue document (`templates/catalogue.md`) whole: every \
        problem is answered at once, each with its JSON path as `field`. By default a dry run: \
        the report counts what would be created, updated and removed, and nothing is written. \
        With `dryRun=false` it is applied in one transaction (records upserted by their ids, so \
        the same document twice changes nothing). Up to 50 MB.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64), ImportQuery),
    request_body(content = Object, content_type = "application/json",
        description = "The catalogue document: `categories`, `tags`, `tiers`, `products`."),
    responses((status = 200, body = ImportReportView),
        (status = 400, description = "a document with problems", body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem),
        (status = 409, description = "a tier of the document would take the name of another of \
            the campaign's tiers", body = Problem),
        (status = 413, description = "larger than 50 MB", body = Problem),
        (status = 415, description = "another content type", body = Problem)))]
async fn import_campaign_catalogue(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, campaign)): Path<(String, String)>,
    QueryParams(query): QueryParams<ImportQuery>,
    JsonBytes(body): JsonBytes,
) -> Result<Json<ImportReportView>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let options = ImportOptions {
        dry_run: query.dry_run.unwrap_or(true),
        replace: query.replace.unwrap_or(false),
    };
    if options.dry_run {
        // A dry run writes nothing: no entry in the audit trail.
        let store = state.store().clone();
        let report = import_catalogue(&state.app, &store, &campaign, &body, options).await?;
        return Ok(Json(report));
    }
    let action = Action::new("catalogue.import")
        .org(org)
        .target(campaign.id.clone())
        .after(serde_json::json!({"replace": options.replace, "bytes": body.len()}));
    let app = state.app.clone();
    let report = principal
        .acting(state.store(), action, |store| async move {
            import_catalogue(&app, &store, &campaign, &body, options).await
        })
        .await?;
    Ok(Json(report))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/catalogue",
    tag = "catalogue", summary = "Export a campaign's catalogue",
    description = "The catalogue as an import document (`templates/catalogue.md`): importing it \
        again changes nothing.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64)),
    responses((status = 200, description = "the catalogue document", body = Object),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn export_campaign_catalogue(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
) -> Result<Json<serde_json::Value>, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    let catalogue = state
        .store()
        .catalogue()
        .export_catalogue(&campaign)
        .await?;
    let document = serde_json::to_value(&catalogue)
        .map_err(|e| ApiError::Internal(format!("the catalogue as JSON: {e}")))?;
    Ok(Json(document))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/campaigns/{campaign}/products",
    tag = "catalogue", summary = "Search a campaign's products",
    description = "The client API's product search (`GET /v1/products`) with every filter of \
        version 1.9.5, answered in its shape: what a member's app would find.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("campaign" = String, Path, description = CAMPAIGN, max_length = 64),
        PagingParams, ProductSearch),
    responses((status = 200, body = PagedList<ProductView>),
        (status = 400, description = "a filter out of bounds, or half a geofence", body = Problem),
        (status = 404, description = "unknown organisation or campaign", body = Problem)))]
async fn search_campaign_products(
    State(state): State<AdminState>,
    Path((org, campaign)): Path<(String, String)>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<ProductSearch>,
) -> Result<RenderedJson, ApiError> {
    let campaign = campaign_of(&state, &org, &campaign).await?;
    search_products(&state.app, &campaign, query, ApiVersion::V1_9_5, page).await
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(search_campaign_products))
        .routes(routes!(
            import_campaign_catalogue,
            export_campaign_catalogue
        ))
        .layer(DefaultBodyLimit::max(MAX_IMPORT_BODY))
}
