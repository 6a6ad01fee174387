//! Products by similarity: the vector search (`POST /v1/products/vector-search`, permission
//! `vector-search`), recommendations (`GET /v1/products/{id}/recommendations`), and the
//! deprecated suggestions (`GET /v1/products/suggestions`).

use std::sync::Arc;

use axum::Json;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, HeaderValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{CatalogueIndex, Permission, VectorProblem};
use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::rendered::RenderedJson;
use super::views::{CategoryView, ProductView, TagView};
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::Checks;
use crate::http::error::{ApiError, Problem};
use crate::http::json::{JsonBytes, parse};
use crate::http::query::{QueryParams, Whole};

/// The most results one call gives.
const MAX_LIMIT: u32 = 100;
/// The longest text a vector search places.
const MAX_TEXT: usize = 2000;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(vector_search))
        .routes(routes!(recommendations))
        .routes(routes!(suggestions))
}

/// The vector search's body: `vector` or `text`, and how many products to answer.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VectorSearchInput {
    /// How many products to answer, 1 to 100.
    #[schema(value_type = i64, required = true, minimum = 1, maximum = 100)]
    limit: Option<f64>,
    /// A vector in the campaign's embedding space: a JSON array of numbers, or a string
    /// holding them: a JSON array (`"[1, 0.5, -2e-3]"`) or the numbers separated by commas.
    /// Its length is the space's dimension.
    #[schema(schema_with = vector_or_null)]
    vector: Option<Value>,
    /// Instead of `vector`: text, placed in the space by the service (only for catalogues
    /// whose vectors the service computes, that is imported without embeddings).
    #[schema(min_length = 1, max_length = 2000)]
    text: Option<String>,
}

/// The largest magnitude a vector's number may have: it must fit an f32.
const MAX_MAGNITUDE: f64 = 1e38;

fn vector_schema() -> Schema {
    Schema::OneOf(vector_kinds().build())
}

/// A vector, or `null` (the same as leaving it out).
fn vector_or_null() -> Schema {
    let null = ObjectBuilder::new().schema_type(Type::Null);
    Schema::OneOf(vector_kinds().item(null).build())
}

/// The two ways to send a vector.
fn vector_kinds() -> OneOfBuilder {
    OneOfBuilder::new()
        .item(
            ArrayBuilder::new()
                .items(
                    ObjectBuilder::new()
                        .schema_type(Type::Number)
                        .minimum(Some(-MAX_MAGNITUDE))
                        .maximum(Some(MAX_MAGNITUDE)),
                )
                .min_items(Some(1))
                .max_items(Some(4096)),
        )
        .item(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .pattern(Some(format!(
                    "^ *(\\[{LIST}\\]|{LIST}) *$",
                    LIST = format!("{NUMBER}(,{NUMBER})*")
                ))),
        )
}

/// One number of a vector sent as text, with spaces around it: at most 20 digits each side of
/// the point, and an exponent that keeps it within an f32 (what `JSON.stringify` and Python's
/// `json.dumps` write for small numbers: `1e-07`).
const NUMBER: &str = " *-?[0-9]{1,20}(\\.[0-9]{1,20})?([eE](-[0-9]{1,3}|\\+?[0-9]))? *";

fn text_number(text: &str) -> Option<f32> {
    let text = text.trim_matches(' ');
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(at) => (&text[..at], Some(&text[at + 1..])),
        None => (text, None),
    };
    let digits = mantissa.strip_prefix('-').unwrap_or(mantissa);
    let (whole, fraction) = digits.split_once('.').unwrap_or((digits, "0"));
    let plain = |part: &str, most: usize| {
        (1..=most).contains(&part.len()) && part.bytes().all(|b| b.is_ascii_digit())
    };
    let exponent_fits = exponent.is_none_or(|e| match e.strip_prefix('-') {
        Some(negative) => plain(negative, 3),
        None => plain(e.strip_prefix('+').unwrap_or(e), 1),
    });
    (plain(whole, 20) && plain(fraction, 20) && exponent_fits)
        .then(|| text.parse().ok())
        .flatten()
}

/// `value` as numbers, or why it cannot be.
fn numbers(value: &Value) -> Result<Vec<f32>, &'static str> {
    let parsed: Option<Vec<f32>> = match value {
        Value::Array(items) => items
            .iter()
            .map(|n| {
                n.as_f64()
                    .filter(|n| n.abs() <= MAX_MAGNITUDE)
                    .map(|n| n as f32)
            })
            .collect(),
        Value::String(text) => {
            let text = text.trim_matches(' ');
            let list = text
                .strip_prefix('[')
                .and_then(|t| t.strip_suffix(']'))
                .unwrap_or(text);
            list.split(',').map(text_number).collect()
        }
        _ => None,
    };
    match parsed {
        Some(v) if !v.is_empty() && v.len() <= 4096 => Ok(v),
        _ => Err(
            "must be 1 to 4096 numbers: a JSON array, or a string holding a JSON array or \
             decimals separated by commas",
        ),
    }
}

/// The vector search's body needs `vector` or `text`, not both (beside its fields' own rules).
pub fn document(api: &mut utoipa::openapi::OpenApi) {
    use utoipa::openapi::RefOr;
    use utoipa::openapi::schema::AllOfBuilder;
    let Some(components) = api.components.as_mut() else {
        return;
    };
    if let Some(fields) = components.schemas.remove("VectorSearchInput") {
        let vector = ObjectBuilder::new()
            .property("vector", vector_schema())
            .required("vector");
        let text = ObjectBuilder::new()
            .property("text", ObjectBuilder::new().schema_type(Type::String))
            .required("text");
        let either = OneOfBuilder::new().item(vector).item(text);
        let schema = AllOfBuilder::new().item(fields).item(either).build();
        components
            .schemas
            .insert("VectorSearchInput".into(), RefOr::T(Schema::AllOf(schema)));
    }
}

#[utoipa::path(post, path = "/v1/products/vector-search", tag = "catalogue",
    summary = "Find Products based on a distance Vector",
    description = "The available products nearest to `vector` (or to `text`), nearest first, each \
        with `distance`: the cosine distance (0 the same direction, 2 the opposite). Needs the \
        `vector-search` permission.",
    request_body = VectorSearchInput,
    responses((status = 200, body = Vec<ProductView>), (status = 400, body = Problem)))]
async fn vector_search(
    State(state): State<AppState>,
    caller: Caller,
    JsonBytes(body): JsonBytes,
) -> Result<RenderedJson, ApiError> {
    // The permission first: a key without it learns nothing about the body's rules.
    caller.require(Permission::VectorSearch)?;
    let input: VectorSearchInput = parse(&body)?;
    let campaign = &caller.context.campaign;
    let index = state.catalogues.get(campaign).await?;
    let mut checks = Checks::default();
    let limit = match input.limit {
        Some(n) if n.fract() == 0.0 && (1.0..=f64::from(MAX_LIMIT)).contains(&n) => n as usize,
        Some(_) => {
            checks.fail("limit", "invalid_value", "must be from 1 to 100");
            0
        }
        None => {
            checks.fail("limit", "missing_field", "is required");
            0
        }
    };
    let vector = match (&input.vector, input.text.as_deref()) {
        (Some(value), None) => numbers(value)
            .map_err(|message| checks.fail("vector", "invalid_value", message))
            .ok(),
        (None, Some(text)) => text_vector(&index, text, &mut checks),
        (Some(_), Some(_)) => {
            checks.fail("text", "not_allowed", "send `vector` or `text`, not both");
            None
        }
        (None, None) => {
            checks.fail("vector", "missing_field", "is required (or `text`)");
            None
        }
    };
    let vector = checks.finish(vector)?.unwrap_or_default();
    let found = index
        .nearest(&vector, limit, None)
        .map_err(|problem| vector_problem("vector", problem))?;
    Ok(with_distances(&state, campaign, &index, found))
}

/// Nearest products as answered: each with its cosine distance.
fn with_distances(
    state: &AppState,
    campaign: &store::Campaign,
    index: &Arc<CatalogueIndex>,
    found: Vec<(&store::Product, f32)>,
) -> RenderedJson {
    let rendered = state.rendered.of(&campaign.id, index, &campaign.currency);
    rendered.list(found, |r, out, (p, d)| {
        r.write_plain(out, index, p, Some(f64::from(d)));
    })
}

fn text_vector(index: &CatalogueIndex, text: &str, checks: &mut Checks) -> Option<Vec<f32>> {
    if text.chars().count() > MAX_TEXT {
        checks.fail(
            "text",
            "too_long",
            format!("must be at most {MAX_TEXT} characters"),
        );
        return None;
    }
    if !index.computes_vectors() {
        checks.fail(
            "text",
            "not_allowed",
            "this campaign's products carry their own embeddings; send `vector` in that space",
        );
        return None;
    }
    let vector = index.embed_text(text);
    if vector.is_none() {
        checks.fail("text", "invalid_value", "must hold at least one word");
    }
    vector
}

fn vector_problem(field: &str, problem: VectorProblem) -> ApiError {
    let message = match problem {
        VectorProblem::Dimensions { expected, given } => format!(
            "has {given} numbers; this campaign's embedding space has {expected} dimensions"
        ),
        VectorProblem::Zero => "must not be all zeros (it has no direction)".to_string(),
    };
    ApiError::invalid(field, "invalid_value", message)
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct LimitQuery {
    /// How many products to answer, 1 to 100.
    #[param(value_type = u32, required = true, minimum = 1, maximum = 100)]
    limit: Whole,
}

#[utoipa::path(get, path = "/v1/products/{id}/recommendations", tag = "catalogue",
    summary = "Find Product Recommendations",
    description = "The available products most like this one (nearest in the embedding space), \
        never the product itself, each with `distance` (cosine).",
    params(("id" = String, Path, description = "the product's id"), LimitQuery),
    responses((status = 200, body = Vec<ProductView>), (status = 400, body = Problem),
        (status = 404, body = Problem)))]
async fn recommendations(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    QueryParams(query): QueryParams<LimitQuery>,
) -> Result<RenderedJson, ApiError> {
    let limit = match query.limit.optional(1..=MAX_LIMIT) {
        Ok(Some(limit)) => limit as usize,
        Ok(None) => return Err(ApiError::invalid("limit", "missing_field", "is required")),
        Err(message) => return Err(ApiError::invalid("limit", "invalid_value", message)),
    };
    let campaign = &caller.context.campaign;
    let index = state.catalogues.get(campaign).await?;
    let vector = index.vector_of(&id).ok_or(ApiError::NotFound("product"))?;
    let found = index
        .nearest(&vector, limit, Some(&id))
        .map_err(|problem| vector_problem("id", problem))?;
    Ok(with_distances(&state, campaign, &index, found))
}

#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
struct SuggestionQuery {
    /// What has been typed so far.
    #[param(
        required = true,
        min_length = 1,
        max_length = 500,
        pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*[^\\u0000-\\u001f\\u007f-\\u009f\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000][^\\u0000-\\u001f\\u007f-\\u009f]*$"
    )]
    q: Option<String>,
}

/// Tags, products and categories that match what has been typed.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Suggestions {
    pub tags: Vec<TagView>,
    pub products: Vec<ProductView>,
    pub categories: Vec<CategoryView>,
}

/// Suggestions of each kind at most.
const SUGGESTIONS: usize = 5;

#[utoipa::path(get, path = "/v1/products/suggestions", tag = "catalogue",
    summary = "Find Product Suggestions (deprecated)",
    description = "Deprecated: use `GET /v1/products?search=` (the `Link` header points to it). \
        Up to five products (by relevance), tags and categories matching `q`.",
    params(SuggestionQuery),
    responses((status = 200, body = Suggestions, headers(
        ("Deprecation" = String, description = "always `true`"),
        ("Link" = String, description = "the search that replaces this operation"))),
        (status = 400, body = Problem)))]
async fn suggestions(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<SuggestionQuery>,
) -> Result<(HeaderMap, Json<Suggestions>), ApiError> {
    let q = query.q.unwrap_or_default();
    if q.trim().is_empty() {
        return Err(ApiError::invalid("q", "missing_field", "is required"));
    }
    if q.chars().count() > 500 {
        return Err(ApiError::invalid(
            "q",
            "too_long",
            "must be at most 500 characters",
        ));
    }
    let campaign = &caller.context.campaign;
    let index = state.catalogues.get(campaign).await?;
    let search = store::ProductQuery {
        search: Some(q.clone()),
        ..Default::default()
    };
    let page = store::Page {
        page: 1,
        limit: SUGGESTIONS as u32,
    };
    let products = index
        .search(&search, page)
        .items
        .iter()
        .map(|f| ProductView::plain(f.product, &campaign.currency, None))
        .collect();
    let matches = |name: &str| search::text::matches_prefix(name, &q);
    let all = store::Page {
        page: 1,
        limit: u32::MAX,
    };
    let tags = state
        .store
        .catalogue()
        .tags(campaign, None, all)
        .await?
        .items;
    let categories = state
        .store
        .catalogue()
        .categories(campaign, None, all)
        .await?
        .items;
    let mut headers = HeaderMap::new();
    headers.insert("deprecation", HeaderValue::from_static("true"));
    let successor = format!(
        "</v1/products?search={}>; rel=\"successor-version\"",
        form_urlencoded::byte_serialize(q.as_bytes()).collect::<String>()
    );
    if let Ok(link) = HeaderValue::from_str(&successor) {
        headers.insert("link", link);
    }
    Ok((
        headers,
        Json(Suggestions {
            tags: tags
                .into_iter()
                .filter(|t| matches(&t.name))
                .take(SUGGESTIONS)
                .map(TagView::from)
                .collect(),
            products,
            categories: categories
                .into_iter()
                .filter(|c| matches(&c.name))
                .take(SUGGESTIONS)
                .map(CategoryView::from)
                .collect(),
        }),
    ))
}
