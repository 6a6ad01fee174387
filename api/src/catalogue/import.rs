//! `PUT /v1/catalogue`: the catalogue import over HTTP, for keys with the `catalogue-write`
//! permission. The body is the import document (`templates/catalogue.md`), up to 50 MB; it is
//! checked whole and applied in one transaction, or every problem is answered with its path.

use axum::Json;
use axum::extract::{DefaultBodyLimit, State};
use serde::Deserialize;
use store::{ImportOptions, Permission};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use super::views::ImportReportView;
use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBytes;
use crate::http::query::QueryParams;

/// The largest import body.
pub const MAX_BODY: usize = 50 * 1024 * 1024;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(import_catalogue))
        .layer(DefaultBodyLimit::max(MAX_BODY))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ImportQuery {
    /// Check and count only; nothing is written.
    dry_run: Option<bool>,
    /// Also remove the products, categories and tags the document does not hold.
    replace: Option<bool>,
}

#[utoipa::path(put, path = "/v1/catalogue", tag = "catalogue", summary = "Import the catalogue",
    description = "Checks the catalogue document (format: `templates/catalogue.md` in the \
        repository) whole, then applies it in one transaction: records are upserted by their ids, \
        so the same document twice changes nothing. Every problem is answered at once, each with \
        its JSON path as `field`, and then nothing is written. Needs the `catalogue-write` \
        permission. Up to 50 MB.",
    params(ImportQuery),
    request_body(content = Object, content_type = "application/json",
        description = "The catalogue document: `categories`, `tags`, `tiers`, `products`."),
    responses((status = 200, body = ImportReportView), (status = 400, body = Problem),
        (status = 409, description = "a tier of the document would take the name of another of the campaign's tiers", body = Problem)))]
async fn import_catalogue(
    State(state): State<AppState>,
    caller: Caller,
    QueryParams(query): QueryParams<ImportQuery>,
    JsonBytes(body): JsonBytes,
) -> Result<Json<ImportReportView>, ApiError> {
    caller.require(Permission::CatalogueWrite)?;
    let options = ImportOptions {
        dry_run: query.dry_run.unwrap_or(false),
        replace: query.replace.unwrap_or(false),
    };
    let report = import(
        &state,
        &state.store,
        &caller.context.campaign,
        &body,
        options,
    )
    .await?;
    Ok(Json(report))
}

/// Imports the catalogue document `body` into `campaign` through `store` (the state's, or one
/// acting for an operator), and makes this node's searches show it at once (other nodes notice
/// its version).
pub async fn import(
    state: &AppState,
    store: &store::Store,
    campaign: &store::Campaign,
    body: &[u8],
    options: ImportOptions,
) -> Result<ImportReportView, ApiError> {
    let report = store
        .catalogue()
        .import_document(campaign, body, options)
        .await?;
    if !options.dry_run {
        state.catalogues.forget(&campaign.id);
    }
    Ok(report.into())
}

/// Puts the import document's JSON Schema (`templates/catalogue.schema.json`, the one file that
/// describes the format) into the OpenAPI document as the body of `PUT /v1/catalogue`: the
/// document is the component `CatalogueDocument`, and each of its `$defs` (`product`...) the
/// component `CatalogueProduct`...
pub fn document(api: &mut utoipa::openapi::OpenApi) {
    use serde_json::Value;
    use utoipa::openapi::schema::Schema;
    use utoipa::openapi::{Ref, RefOr};
    const SCHEMA: &str = include_str!("../../../templates/catalogue.schema.json");
    let component = |def: &str| {
        let mut chars = def.chars();
        let first = chars.next().map(|c| c.to_ascii_uppercase());
        format!(
            "Catalogue{}{}",
            first.into_iter().collect::<String>(),
            chars.as_str()
        )
    };
    let mut text = SCHEMA.to_string();
    let root: Value = serde_json::from_str(SCHEMA).expect("the catalogue schema is JSON");
    let names: Vec<String> = root["$defs"]
        .as_object()
        .map(|d| d.keys().cloned().collect())
        .unwrap_or_default();
    for def in &names {
        let from = format!("\"#/$defs/{def}\"");
        let to = format!("\"#/components/schemas/{}\"", component(def));
        text = text.replace(&from, &to);
    }
    let Ok(Value::Object(mut root)) = serde_json::from_str::<Value>(&text) else {
        return;
    };
    let defs = root.remove("$defs");
    root.remove("$schema");
    root.remove("$id");
    let mut parts = vec![("document".to_string(), Value::Object(root))];
    if let Some(Value::Object(defs)) = defs {
        parts.extend(defs);
    }
    let components = api.components.get_or_insert_with(Default::default);
    for (def, schema) in parts {
        let schema: RefOr<Schema> = serde_json::from_value(schema)
            .expect("the catalogue schema reads as an OpenAPI schema");
        components.schemas.insert(component(&def), schema);
    }
    let body = api
        .paths
        .paths
        .get_mut("/v1/catalogue")
        .and_then(|item| item.put.as_mut())
        .and_then(|put| put.request_body.as_mut());
    if let Some(RefOr::T(body)) = body
        && let Some(RefOr::T(json)) = body.content.get_mut("application/json")
    {
        json.schema = Some(RefOr::Ref(Ref::from_schema_name("CatalogueDocument")));
    }
}
