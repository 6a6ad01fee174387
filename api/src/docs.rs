//! The OpenAPI 3.1 description, generated from the handlers, and the `/docs` page. Swagger UI's
//! files are compiled into the binary (the `vendored` feature), so the page works offline.

use utoipa::openapi::path::{Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, SecurityRequirement, SecurityScheme};
use utoipa::openapi::{ContentBuilder, OpenApi, RefOr, ResponseBuilder, schema};
use utoipa::{Modify, OpenApi as _};

use std::sync::Arc;

use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use store::ApiVersion;

use crate::http::auth::{API_KEY, API_SECRET, API_VERSION, asked_version};
use crate::http::error::ApiError;
use crate::http::error::Problem;
use crate::http::query::QueryParams;
use crate::http::versions::Documents;
use crate::members::ListPreferences;

#[derive(utoipa::OpenApi)]
#[openapi(
    info(
        title = "Rewards",
        description = "Rewards and loyalty platform. Every `/v1` and `/api` operation needs the \
            headers `x-api-key` and `x-api-secret`; `x-api-version` (1.9.5 or 1.6.2) selects the \
            version, else the key's default. Errors are RFC 9457 problem details with a stable \
            `code`."
    ),
    // 1.6.2's preference shape, which no handler's type names (they speak 1.9.5's in the
    // description): `versions` swaps it in for that version's document.
    components(schemas(Problem, ListPreferences)),
    modifiers(&Conventions)
)]
struct ApiDoc;

pub fn base() -> OpenApi {
    ApiDoc::openapi()
}

/// The `/docs` page: a document per version, chosen from its top bar (1.9.5 first). The page
/// (`/docs/`) finds each by a relative address, so it works behind a proxy that serves the
/// service under a path of its own, and asks no other host for anything: Swagger UI would
/// otherwise send the document's address to validator.swagger.io.
pub fn swagger_config() -> utoipa_swagger_ui::Config<'static> {
    use utoipa_swagger_ui::Url;
    utoipa_swagger_ui::Config::new([
        Url::with_primary("1.9.5", "../openapi.json?version=1.9.5", true),
        Url::new("1.6.2", "../openapi.json?version=1.6.2"),
    ])
    .validator_url("none")
}

#[derive(serde::Deserialize)]
pub struct DocumentQuery {
    version: Option<String>,
}

/// `GET /openapi.json[?version=1.9.5|1.6.2]`: that version's document; without `version`, the
/// one the `x-api-version` header names, else 1.9.5's.
pub async fn serve_document(
    documents: Arc<Documents>,
    headers: HeaderMap,
    QueryParams(query): QueryParams<DocumentQuery>,
) -> Result<Response, ApiError> {
    let version = match query.version {
        Some(asked) => asked
            .parse::<ApiVersion>()
            .map_err(|message| ApiError::invalid("version", "invalid_value", message))?,
        None => asked_version(&headers)?.unwrap_or_default(),
    };
    let mut response = documents.get(version).to_string().into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    Ok(response)
}

/// Adds what every authenticated operation shares: the credentials, the version header and the
/// 401/403 answers.
struct Conventions;

impl Modify for Conventions {
    fn modify(&self, api: &mut OpenApi) {
        let components = api.components.get_or_insert_with(Default::default);
        for (name, header) in [("apiKey", API_KEY), ("apiSecret", API_SECRET)] {
            components.add_security_scheme(
                name,
                SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new(header))),
            );
        }
        api.security = Some(vec![
            SecurityRequirement::new("apiKey", Vec::<String>::new())
                .add("apiSecret", Vec::<String>::new()),
        ]);
    }
}

/// Applied after the routes are collected (modifiers run before): the version parameter and the
/// answers every `/v1` and `/api` operation shares, and every error answer spoken as
/// `application/problem+json`.
pub fn add_shared_parts(api: &mut OpenApi) {
    crate::wallets::document(api);
    crate::catalogue::document(api);
    let shared = [
        (
            "400",
            "a parameter or the body is invalid, or `x-api-version` is unknown",
        ),
        ("401", "missing, wrong or revoked credentials"),
        (
            "403",
            "the key may not do this (read-only key, missing permission)",
        ),
    ];
    let client = |path: &str| path.starts_with("/v1") || path.starts_with("/api");
    add_problem_answers(api, client, &shared, |operation| {
        no_control_characters(operation);
        let parameters = operation.parameters.get_or_insert_with(Vec::new);
        parameters.push(RefOr::T(version_parameter()));
    });
}

/// States on each path and query parameter of `operation` that it holds no control character,
/// as `parameters::refuse_unknown` enforces. A parameter's own pattern spells out every
/// character it admits, none of them a control character (see
/// `own_patterns_admit_no_control_character`).
pub fn no_control_characters(operation: &mut utoipa::openapi::path::Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if let RefOr::T(parameter) = parameter
            && matches!(
                parameter.parameter_in,
                ParameterIn::Path | ParameterIn::Query
            )
            && let Some(schema) = &mut parameter.schema
        {
            without_control_characters(schema);
        }
    }
}

/// For each operation under a path that `applies`: `each`, then every error answer spoken as
/// `application/problem+json`, and the `shared` answers (status, description) it does not
/// state itself, with 413 and 415 for an operation that takes a body.
pub fn add_problem_answers(
    api: &mut OpenApi,
    applies: impl Fn(&str) -> bool,
    shared: &[(&str, &str)],
    mut each: impl FnMut(&mut utoipa::openapi::path::Operation),
) {
    let answer = |description: &str| {
        RefOr::T(
            ResponseBuilder::new()
                .description(description)
                .content("application/problem+json", problem())
                .build(),
        )
    };
    for (path, item) in &mut api.paths.paths {
        if !applies(path) {
            continue;
        }
        let operations = [
            &mut item.get,
            &mut item.post,
            &mut item.patch,
            &mut item.put,
            &mut item.delete,
        ];
        for operation in operations.into_iter().flatten() {
            each(operation);
            let has_body = operation.request_body.is_some();
            let responses = &mut operation.responses.responses;
            for (status, response) in responses.iter_mut() {
                if !status.starts_with('2')
                    && let RefOr::T(response) = response
                    && let Some(json) = response.content.shift_remove("application/json")
                {
                    response
                        .content
                        .insert("application/problem+json".into(), json);
                }
            }
            let mut shared = shared.to_vec();
            if has_body {
                shared.push(("413", "the body is larger than the service accepts"));
                shared.push(("415", "the body is not sent as JSON"));
            }
            for (status, description) in shared {
                responses
                    .entry(status.into())
                    .or_insert_with(|| answer(description));
            }
        }
    }
}

/// States on a parameter's text (or on each text of a list) that it holds no control character,
/// as `parameters::refuse_unknown` enforces, unless its own pattern already says what it admits.
fn without_control_characters(schema: &mut RefOr<schema::Schema>) {
    match schema {
        RefOr::T(schema::Schema::Object(text))
            if text.enum_values.is_none()
                && text.pattern.is_none()
                && match &text.schema_type {
                    schema::SchemaType::Type(kind) => *kind == schema::Type::String,
                    schema::SchemaType::Array(kinds) => kinds.contains(&schema::Type::String),
                    schema::SchemaType::AnyValue => false,
                } =>
        {
            text.pattern = Some(NO_CONTROL.into());
        }
        RefOr::T(schema::Schema::Array(list)) => {
            if let schema::ArrayItems::RefOrSchema(items) = &mut list.items {
                without_control_characters(items);
            }
        }
        _ => {}
    }
}

const NO_CONTROL: &str = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$";

/// A problem-details body, as an answer's content.
pub fn problem() -> utoipa::openapi::Content {
    ContentBuilder::new()
        .schema(Some(RefOr::Ref(utoipa::openapi::Ref::from_schema_name(
            "Problem",
        ))))
        .build()
}

fn version_parameter() -> Parameter {
    ParameterBuilder::new()
        .name(API_VERSION)
        .parameter_in(ParameterIn::Header)
        .description(Some(
            "Interface version: 1.9.5 (default) or 1.6.2; the key may pin its own default.",
        ))
        .schema(Some(
            schema::ObjectBuilder::new()
                .schema_type(schema::Type::String)
                .enum_values(Some(["1.9.5", "1.6.2"])),
        ))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value each parameter with a pattern of its own admits.
    const SAMPLES: [(&str, &str); 7] = [
        ("sort", "price:asc"),
        ("at", "2026-01-01T00:00:00Z"),
        ("from", "2026-01-01T00:00:00+01:00"),
        ("to", "2026-01-01T00:00:00.5Z"),
        ("within", "P30D"),
        ("q", "ball"),
        ("after", "01JABC"),
    ];

    /// Such a pattern replaces the one refusing control characters, so it must refuse them
    /// itself: a sample it admits, with a control character put anywhere in it, is not admitted.
    #[test]
    fn own_patterns_admit_no_control_character() {
        let full = serde_json::to_value(crate::openapi()).unwrap();
        let mut seen = 0;
        for item in full["paths"].as_object().unwrap().values() {
            for operation in item.as_object().unwrap().values() {
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    let Some(pattern) = parameter["schema"]["pattern"].as_str() else {
                        continue;
                    };
                    if pattern == NO_CONTROL {
                        continue;
                    }
                    let name = parameter["name"].as_str().unwrap();
                    let sample = SAMPLES.iter().find(|(n, _)| *n == name).map_or_else(
                        || panic!("a sample value for `{name}`"),
                        |(_, sample)| *sample,
                    );
                    let regex = regex::Regex::new(pattern).unwrap();
                    assert!(regex.is_match(sample), "{name}: {sample}");
                    for at in 0..=sample.len() {
                        for control in ['\u{0}', '\u{1f}', '\u{7f}', '\u{85}'] {
                            let bad = format!("{}{control}{}", &sample[..at], &sample[at..]);
                            assert!(!regex.is_match(&bad), "{name} admits {bad:?}");
                        }
                    }
                    seen += 1;
                }
            }
        }
        assert!(seen >= 7, "{seen} parameters with patterns of their own");
    }
}
