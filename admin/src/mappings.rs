//! An organisation's batch-file mappings (how its columns become earns): checked with every
//! problem at its path, stored per file-name pattern, shown, removed. A document is JSON, or
//! TOML as the CLI's files are. The same validation and store operations as `rewards mapping`.

use api::plumbing::{ApiError, PagedList, Paging, PagingParams, Problem, body_bytes};
use axum::Json;
use axum::extract::{FromRequest, Path, Request, State};
use axum::http::header;
use chrono::{DateTime, Utc};
use ingest::batch::mapping::{self, Mapping};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::StoredMapping;
use store::audit::Action;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, org_of};
use crate::state::AdminState;

const PATTERN: &str = "the mapping's file-name pattern (`*` for every file), URL-encoded";

/// A stored mapping.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MappingView {
    /// The file names it applies to: a glob of `*` and `?`, matched ignoring letter case.
    pub pattern: String,
    /// The document as stored (templates/README.md describes it).
    #[schema(value_type = Object)]
    pub mapping: Value,
    pub updated_at: DateTime<Utc>,
}

impl From<StoredMapping> for MappingView {
    fn from(m: StoredMapping) -> MappingView {
        MappingView {
            pattern: m.pattern,
            mapping: m.document,
            updated_at: m.updated_at,
        }
    }
}

/// A mapping document in the body: JSON (`application/json`, or no content type) or TOML
/// (`application/toml`).
struct Document(Value);

impl<S: Send + Sync> FromRequest<S> for Document {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let toml = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|ct| ct.contains("toml"));
        let kind = if toml {
            "application/toml"
        } else {
            "application/json"
        };
        let bytes = body_bytes(req, state, kind).await?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| ApiError::invalid("body", "invalid_body", "is not UTF-8 text"))?;
        let document = mapping::read_document(text, !toml)
            .map_err(|why| ApiError::invalid("body", "invalid_body", why))?;
        if !document.is_object() {
            return Err(ApiError::invalid(
                "body",
                "invalid_type",
                "must be a JSON object",
            ));
        }
        Ok(Document(document))
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/mappings", tag = "batches",
    summary = "List an organisation's mappings",
    description = "By pattern. A file takes the mapping whose pattern matches its name with \
        the most characters other than `*` and `?`; with none, the canonical layout \
        (templates/earn.csv).",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<MappingView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_mappings(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<MappingView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let mappings = state.store().batches().mappings(&org).await?;
    Ok(Json(PagedList::of(mappings, page, MappingView::from)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/mappings/{pattern}", tag = "batches",
    summary = "Get a mapping",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("pattern" = String, Path, description = PATTERN, max_length = 256)),
    responses((status = 200, body = MappingView),
        (status = 404, description = "unknown organisation, or no mapping for this pattern",
            body = Problem)))]
async fn get_mapping(
    State(state): State<AdminState>,
    Path((org, pattern)): Path<(String, String)>,
) -> Result<Json<MappingView>, ApiError> {
    let org = org_of(&state, &org).await?;
    let mappings = state.store().batches().mappings(&org).await?;
    let found = mappings.into_iter().find(|m| m.pattern == pattern);
    found
        .map(|m| Json(m.into()))
        .ok_or(ApiError::NotFound("mapping"))
}

/// What checking a mapping found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MappingCheck {
    /// Whether it may be stored as it is.
    pub valid: bool,
    /// The file names it would apply to.
    pub pattern: Option<String>,
    /// Every problem, each at its path (`columns.amount.format`).
    pub problems: Vec<MappingProblem>,
}

/// A problem of a mapping document.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct MappingProblem {
    pub path: String,
    pub message: String,
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/mappings/check", tag = "batches",
    summary = "Check a mapping without storing it",
    description = "Every problem of the document at once, each at its path; nothing is stored.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body(content = Object, content_type = "application/json",
        description = "the mapping document (templates/README.md); the command line's TOML is \
            taken too, sent as `application/toml`"),
    responses((status = 200, body = MappingCheck),
        (status = 400, description = "the body is not a JSON object (or not TOML)", body = Problem),
        (status = 404, description = "unknown organisation", body = Problem),
        (status = 415, description = "another content type", body = Problem)))]
async fn check_mapping(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Document(document): Document,
) -> Result<Json<MappingCheck>, ApiError> {
    org_of(&state, &org).await?;
    let check = match Mapping::parse(&document) {
        Ok(mapping) => MappingCheck {
            valid: true,
            pattern: Some(mapping.pattern),
            problems: Vec::new(),
        },
        Err(problems) => MappingCheck {
            valid: false,
            pattern: None,
            problems: problems
                .into_iter()
                .map(|p| MappingProblem {
                    path: p.path,
                    message: p.message,
                })
                .collect(),
        },
    };
    Ok(Json(check))
}

#[utoipa::path(put, path = "/admin/v1/orgs/{org}/mappings", tag = "batches",
    summary = "Store a mapping",
    description = "Checked first: a document with problems is refused with every one of them \
        (`errors`, each naming its path). Stored for the files its `pattern` matches (every \
        file when it has none), replacing the mapping there was for that pattern; files \
        received from then on use it.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body(content = Object, content_type = "application/json",
        description = "the mapping document (templates/README.md); the command line's TOML is \
            taken too, sent as `application/toml`"),
    responses((status = 200, body = MappingView),
        (status = 400, description = "not JSON or TOML, or a mapping with problems",
            body = Problem),
        (status = 404, description = "unknown organisation", body = Problem),
        (status = 415, description = "another content type", body = Problem)))]
async fn set_mapping(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    Document(document): Document,
) -> Result<Json<MappingView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("mapping.set").org(org).after(document.clone());
    let stored = principal
        .acting(state.store(), action, |store| async move {
            Ok(mapping::set_mapping(&store, &scope, &document).await?)
        })
        .await?;
    Ok(Json(stored.into()))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/mappings/{pattern}", tag = "batches",
    summary = "Remove a mapping",
    description = "Files its pattern matched take the next most specific mapping, or the \
        canonical layout.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("pattern" = String, Path, description = PATTERN, max_length = 256)),
    responses((status = 204, description = "removed"),
        (status = 404, description = "unknown organisation, or no mapping for this pattern",
            body = Problem)))]
async fn remove_mapping(
    State(state): State<AdminState>,
    principal: Principal,
    Path((org, pattern)): Path<(String, String)>,
) -> Result<axum::http::StatusCode, ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("mapping.remove")
        .org(org)
        .target(pattern.clone());
    principal
        .acting(state.store(), action, |store| async move {
            Ok(store.batches().remove_mapping(&scope, &pattern).await?)
        })
        .await?;
    Ok(axum::http::StatusCode::NO_CONTENT)
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_mappings, set_mapping))
        .routes(routes!(get_mapping, remove_mapping))
        .routes(routes!(check_mapping))
}
