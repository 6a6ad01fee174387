//! The reward catalogue over HTTP: its import (`PUT /v1/catalogue`) and the lists of its tiers,
//! categories and tags (`GET /v1/tiers`, `/v1/categories`, `/v1/tags`), each for the key's
//! campaign.

mod import;

pub use import::{MAX_BODY as MAX_IMPORT_BODY, import};
mod products;
mod rendered;

pub use products::{SearchQuery as ProductSearch, search as search_products};
pub use rendered::RenderedJson;
pub(crate) mod similar;
pub(crate) mod views;

use axum::Json;
use axum::extract::State;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::{QueryParams, Whole};
/// Parts of the OpenAPI document that its generator cannot derive.
pub fn document(api: &mut utoipa::openapi::OpenApi) {
    import::document(api);
    similar::document(api);
}

pub use views::{CategoryView, TagView, TierView};

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tiers))
        .routes(routes!(list_categories))
        .routes(routes!(list_tags))
        .merge(import::router())
        .merge(products::router())
        .merge(similar::router())
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct TierQuery {
    /// Only the tier of this name (in any letter case).
    name: Option<String>,
    /// Only tiers of this precedence.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 2147483647)]
    precedence: Whole,
}

#[utoipa::path(get, path = "/v1/tiers", tag = "catalogue", summary = "Find All Tiers",
    description = "The campaign's tiers, highest priority (lowest precedence) first.",
    params(PagingParams, TierQuery),
    responses((status = 200, body = PagedList<TierView>), (status = 400, body = Problem)))]
async fn list_tiers(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<TierQuery>,
) -> Result<Json<PagedList<TierView>>, ApiError> {
    let precedence = query
        .precedence
        .optional(0..=i32::MAX as u32)
        .map_err(|message| ApiError::invalid("precedence", "invalid_value", message))?
        .map(i64::from);
    let tiers = state
        .store
        .programme()
        .tiers_page(
            &caller.context.campaign,
            query.name.as_deref(),
            precedence,
            page,
        )
        .await?;
    Ok(Json(PagedList::from_page(tiers, TierView::from)))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct CategoryQuery {
    /// Only the category with this id.
    category_id: Option<String>,
}

#[utoipa::path(get, path = "/v1/categories", tag = "catalogue", summary = "Find Categories",
    description = "The campaign's categories, in the catalogue's order.",
    params(PagingParams, CategoryQuery),
    responses((status = 200, body = PagedList<CategoryView>), (status = 400, body = Problem)))]
async fn list_categories(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<CategoryQuery>,
) -> Result<Json<PagedList<CategoryView>>, ApiError> {
    let categories = state
        .store
        .catalogue()
        .categories(&caller.context.campaign, query.category_id.as_deref(), page)
        .await?;
    Ok(Json(PagedList::from_page(categories, CategoryView::from)))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct TagQuery {
    /// Only the tag with this id.
    tag_id: Option<String>,
}

#[utoipa::path(get, path = "/v1/tags", tag = "catalogue", summary = "Find Tags",
    description = "The campaign's tags, in the catalogue's order.",
    params(PagingParams, TagQuery),
    responses((status = 200, body = PagedList<TagView>), (status = 400, body = Problem)))]
async fn list_tags(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<TagQuery>,
) -> Result<Json<PagedList<TagView>>, ApiError> {
    let tags = state
        .store
        .catalogue()
        .tags(&caller.context.campaign, query.tag_id.as_deref(), page)
        .await?;
    Ok(Json(PagedList::from_page(tags, TagView::from)))
}
