//! Products (`GET /v1/products`, `/v1/products/{id}`): the search with every filter, and one
//! product; served from the campaign's in-memory index (`store::Catalogues`).

use axum::Json;
use axum::extract::{Path, State};
use serde::Deserialize;
use store::{ApiVersion, Comparison, Near, ProductQuery, Sort, SortField, Tokens};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::rendered::RenderedJson;
use super::views::ProductView;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, FieldError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::{QueryParams, Whole};

/// A geofence's radius when none is given, in km.
const DEFAULT_RADIUS_KM: f64 = 10.0;
/// Half the Earth's circumference: every point is within it.
const MAX_RADIUS_KM: f64 = 20_038.0;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(search_products))
        .routes(routes!(find_product))
}

/// The search's filters. A geofence needs `latitude` and `longitude` together.
#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
pub struct SearchQuery {
    /// Words matched against names, tags, category names and descriptions, ranked by
    /// relevance; typos (one in words of 5+ letters, two in 9+), plurals and a last word being
    /// typed are forgiven.
    #[param(max_length = 500)]
    search: Option<String>,
    /// Only products of this category (id).
    category_id: Option<String>,
    /// Only products of the category with this name (any letter case).
    category: Option<String>,
    /// Only products whose lines need (true) or do not need (false) a booking.
    booking_required: Option<bool>,
    /// Only products with (true) or without (false) a variant that can be ordered now.
    is_available: Option<bool>,
    /// With `latitude`: only products with a branch within `radius` km of the point.
    #[param(minimum = -180, maximum = 180)]
    longitude: Option<f64>,
    #[param(minimum = -90, maximum = 90)]
    latitude: Option<f64>,
    /// Kilometres, default 10.
    #[param(exclusive_minimum = 0, maximum = 20038)]
    radius: Option<f64>,
    /// Only products with a variant that requires this tier: its id, or the id the catalogue
    /// document gave it.
    tier_id: Option<String>,
    /// Only products with a variant whose tier's precedence compares with this number by
    /// `tierPrecedenceOp` (default `eq`).
    #[param(value_type = Option<u32>, minimum = 0, maximum = 2147483647)]
    tier_precedence: Whole,
    #[param(inline)]
    tier_precedence_op: Option<PrecedenceOp>,
    /// Only products with a variant priced at least this (tokens). Version 1.9.5 only.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000000000000i64, multiple_of = 0.000001)]
    min_cost: Option<String>,
    /// Only products with a variant priced at most this (tokens). Version 1.9.5 only.
    #[param(value_type = Option<f64>, minimum = 0, maximum = 1000000000000i64, multiple_of = 0.000001)]
    max_cost: Option<String>,
    /// `name`, `category` or `price` (a product's lowest variant price), then `:asc` or
    /// `:desc`. Without it: relevance when searching, nearest first with a geofence, else name.
    #[param(pattern = "^(name|category|price):(asc|desc)$")]
    sort: Option<String>,
}

#[derive(Debug, Clone, Copy, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PrecedenceOp {
    Gt,
    Lt,
    Gte,
    Lte,
    Eq,
}

impl SearchQuery {
    /// The query the index runs, or every problem with the parameters.
    fn read(self, version: ApiVersion) -> Result<ProductQuery, ApiError> {
        let mut errors = Vec::new();
        let mut fail = |field: &str, message: &str| {
            errors.push(FieldError::new(field, "invalid_value", message));
        };
        let within = |value: Option<f64>, low: f64, high: f64| {
            value.filter(|v| !v.is_finite() || *v < low || *v > high)
        };
        if within(self.latitude, -90.0, 90.0).is_some() {
            fail("latitude", "must be from -90 to 90");
        }
        if within(self.longitude, -180.0, 180.0).is_some() {
            fail("longitude", "must be from -180 to 180");
        }
        if self
            .radius
            .is_some_and(|r| !r.is_finite() || r <= 0.0 || r > MAX_RADIUS_KM)
        {
            fail("radius", "must be more than 0 and at most 20038 (km)");
        }
        let near = match (self.latitude, self.longitude) {
            (Some(latitude), Some(longitude)) => Some(Near {
                latitude,
                longitude,
                radius_km: self.radius.unwrap_or(DEFAULT_RADIUS_KM),
            }),
            (Some(_), None) => {
                fail(
                    "longitude",
                    "is required with latitude (a geofence needs both)",
                );
                None
            }
            (None, Some(_)) => {
                fail(
                    "latitude",
                    "is required with longitude (a geofence needs both)",
                );
                None
            }
            (None, None) => {
                if self.radius.is_some() {
                    fail("radius", "needs latitude and longitude");
                }
                None
            }
        };
        let precedence = match self.tier_precedence.optional(0..=i32::MAX as u32) {
            Ok(None) if self.tier_precedence_op.is_some() => {
                fail("tierPrecedenceOp", "needs tierPrecedence");
                None
            }
            Ok(p) => p.map(i64::from),
            Err(message) => {
                fail("tierPrecedence", &message);
                None
            }
        };
        let op = match self.tier_precedence_op.unwrap_or(PrecedenceOp::Eq) {
            PrecedenceOp::Gt => Comparison::Gt,
            PrecedenceOp::Lt => Comparison::Lt,
            PrecedenceOp::Gte => Comparison::Gte,
            PrecedenceOp::Lte => Comparison::Lte,
            PrecedenceOp::Eq => Comparison::Eq,
        };
        let mut cost = |field: &str, value: Option<&str>| -> Option<Tokens> {
            let value = value?;
            if version == ApiVersion::V1_6_2 {
                fail(
                    field,
                    "is a version 1.9.5 filter; send `x-api-version: 1.9.5`",
                );
                return None;
            }
            match Tokens::from_text(value) {
                Ok(t) if t >= Tokens::ZERO && t <= Tokens::whole(1_000_000_000_000) => Some(t),
                _ => {
                    fail(
                        field,
                        "must be a number of tokens from 0 to 1000000000000, with at most 6 decimals",
                    );
                    None
                }
            }
        };
        let min_cost = cost("minCost", self.min_cost.as_deref());
        let max_cost = cost("maxCost", self.max_cost.as_deref());
        let sort = self.sort.as_deref().map(|s| {
            let parsed = s.split_once(':').and_then(|(field, direction)| {
                let field = match field {
                    "name" => SortField::Name,
                    "category" => SortField::Category,
                    "price" => SortField::Price,
                    _ => return None,
                };
                let descending = match direction {
                    "asc" => false,
                    "desc" => true,
                    _ => return None,
                };
                Some(Sort { field, descending })
            });
            if parsed.is_none() {
                fail(
                    "sort",
                    "must be name, category or price, then :asc or :desc (`price:asc`)",
                );
            }
            parsed
        });
        if self
            .search
            .as_deref()
            .is_some_and(|s| s.chars().count() > 500)
        {
            fail("search", "must be at most 500 characters");
        }
        if !errors.is_empty() {
            return Err(ApiError::validation(errors));
        }
        Ok(ProductQuery {
            search: self.search,
            category_id: self.category_id,
            category: self.category,
            booking_required: self.booking_required,
            is_available: self.is_available,
            near,
            tier_id: self.tier_id,
            tier_precedence: precedence.map(|p| (op, p)),
            min_cost,
            max_cost,
            sort: sort.flatten(),
        })
    }
}

#[utoipa::path(get, path = "/v1/products", tag = "catalogue", summary = "Search Products",
    description = "The campaign's products, filtered and ordered. Half a geofence, \
        `tierPrecedenceOp` without `tierPrecedence`, or `minCost`/`maxCost` in version 1.6.2: 400 \
        naming the parameter. Reflects an import at once on the node that took it and within \
        about a second on every other.",
    params(PagingParams, SearchQuery),
    responses((status = 200, body = PagedList<ProductView>), (status = 400, body = Problem)))]
async fn search_products(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<SearchQuery>,
) -> Result<RenderedJson, ApiError> {
    search(
        &state,
        &caller.context.campaign,
        query,
        caller.version,
        page,
    )
    .await
}

/// One page of the campaign's products found by `query` read in `version`'s terms: the client
/// API's search, and the admin API's.
pub async fn search(
    state: &AppState,
    campaign: &store::Campaign,
    query: SearchQuery,
    version: ApiVersion,
    page: store::Page,
) -> Result<RenderedJson, ApiError> {
    let query = query.read(version)?;
    let index = state.catalogues.get(campaign).await?;
    let found = index.search(&query, page);
    let rendered = state.rendered.of(&campaign.id, &index, &campaign.currency);
    Ok(rendered.page(found, |r, out, f| {
        r.write(out, &index, f.product, &f.branches, f.distance_km);
    }))
}

#[utoipa::path(get, path = "/v1/products/{id}", tag = "catalogue", summary = "Find Product",
    params(("id" = String, Path, description = "the product's id (the client's own)")),
    responses((status = 200, body = ProductView), (status = 404, body = Problem)))]
async fn find_product(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ProductView>, ApiError> {
    let campaign = &caller.context.campaign;
    let index = state.catalogues.get(campaign).await?;
    let product = index.product(&id).ok_or(ApiError::NotFound("product"))?;
    Ok(Json(ProductView::plain(product, &campaign.currency, None)))
}
