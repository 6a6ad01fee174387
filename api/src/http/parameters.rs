//! Strict query strings: each operation takes the query parameters its OpenAPI description
//! lists, and nothing else, so that a typo in a filter (`walletid`) can never widen a result.
//! A parameter it does not know is 400 naming it (with the nearest known name when one is
//! close); a single-valued parameter given twice is 400; `name[]`, the form many HTTP
//! libraries send for arrays, is read as `name`. Which parameters are lists comes from the same
//! description (an array schema), which the handlers' own parameter types generate.
//!
//! No path or query parameter holds a control character (NUL, a line break...), which no id or
//! filter needs and PostgreSQL refuses in text: 400 naming it, whichever database serves. A
//! path parameter that is not UTF-8 once decoded is 400 naming it too.

use std::collections::HashMap;
use std::sync::Arc;

use axum::extract::rejection::RawPathParamsRejection;
use axum::extract::{MatchedPath, RawPathParams, Request, State};
use axum::http::{Method, Uri};
use axum::middleware::Next;
use axum::response::Response;
use utoipa::openapi::path::{Operation, ParameterIn};
use utoipa::openapi::schema::Schema;
use utoipa::openapi::{OpenApi, RefOr};

use crate::http::error::{ApiError, FieldError};

/// One operation's query parameters: each name, and whether it takes a list.
type Parameters = Vec<(String, bool)>;

/// Every operation's query parameters, by path template (`/v1/orders/{id}`) and method.
#[derive(Debug, Default)]
pub struct KnownParameters(HashMap<String, Vec<(Method, Parameters)>>);

impl KnownParameters {
    /// Read from `api`, the description the router was built with.
    pub fn of(api: &OpenApi) -> Arc<Self> {
        let mut known: HashMap<String, Vec<(Method, Parameters)>> = HashMap::new();
        for (path, item) in &api.paths.paths {
            let operations = [
                (Method::GET, &item.get),
                (Method::POST, &item.post),
                (Method::PUT, &item.put),
                (Method::PATCH, &item.patch),
                (Method::DELETE, &item.delete),
            ];
            for (method, operation) in operations {
                if let Some(operation) = operation {
                    known
                        .entry(path.clone())
                        .or_default()
                        .push((method, query_parameters(operation)));
                }
            }
        }
        Arc::new(KnownParameters(known))
    }

    fn of_operation(&self, method: &Method, path: &str) -> Option<&Parameters> {
        let method = if method == Method::HEAD {
            &Method::GET
        } else {
            method
        };
        let operations = self.0.get(path)?;
        operations
            .iter()
            .find(|(m, _)| m == method)
            .map(|(_, parameters)| parameters)
    }
}

fn query_parameters(operation: &Operation) -> Parameters {
    operation
        .parameters
        .iter()
        .flatten()
        .filter_map(|p| match p {
            RefOr::T(p) if p.parameter_in == ParameterIn::Query => Some(p),
            _ => None,
        })
        .map(|p| {
            let list = matches!(&p.schema, Some(RefOr::T(Schema::Array(_))));
            (p.name.clone(), list)
        })
        .collect()
}

/// Middleware: refuses a query string the matched operation does not take (see the module's
/// description), and rewrites `name[]` to `name` for the extractors after it.
pub async fn refuse_unknown(
    State(known): State<Arc<KnownParameters>>,
    path_parameters: Result<RawPathParams, RawPathParamsRejection>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let mut errors = match path_parameters {
        Ok(parameters) => parameters
            .iter()
            .filter(|(_, value)| has_control(value))
            .map(|(name, _)| control_character(name))
            .collect(),
        Err(RawPathParamsRejection::InvalidUtf8InPathParam(invalid)) => {
            let name = invalid.body_text();
            let name = name.split('`').nth(1).unwrap_or("path");
            vec![FieldError::new(
                name,
                "invalid_value",
                "is not UTF-8 once percent-decoded",
            )]
        }
        Err(_) => Vec::new(),
    };
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    let Some(query) = request.uri().query().filter(|q| !q.is_empty()) else {
        return Ok(next.run(request).await);
    };
    let Some(path) = request.extensions().get::<MatchedPath>() else {
        return Ok(next.run(request).await);
    };
    let Some(parameters) = known.of_operation(request.method(), path.as_str()) else {
        return Ok(next.run(request).await);
    };
    let rewritten;
    (rewritten, errors) = check(query, parameters);
    if !errors.is_empty() {
        return Err(ApiError::validation(errors));
    }
    if let Some(query) = rewritten {
        let uri = request.uri();
        let path_and_query = format!("{}?{query}", uri.path());
        let mut parts = uri.clone().into_parts();
        parts.path_and_query = path_and_query.parse().ok();
        if let Ok(uri) = Uri::from_parts(parts) {
            *request.uri_mut() = uri;
        }
    }
    Ok(next.run(request).await)
}

/// The problems of `query` against `parameters`, and the query with `name[]` read as `name`
/// when it had any.
fn check(query: &str, parameters: &Parameters) -> (Option<String>, Vec<FieldError>) {
    let mut errors: Vec<FieldError> = Vec::new();
    let mut seen: Vec<&str> = Vec::new();
    let mut pairs = Vec::new();
    let mut bracketed = false;
    for (given, value) in form_urlencoded::parse(query.as_bytes()) {
        let name = match given.strip_suffix("[]") {
            Some(bare) => {
                bracketed = true;
                bare.to_string()
            }
            None => given.to_string(),
        };
        let already = errors.iter().any(|e| e.field == name);
        if has_control(&value) && !already {
            errors.push(control_character(&name));
        }
        let already = errors.iter().any(|e| e.field == name);
        match parameters.iter().find(|(known, _)| *known == name) {
            None if !already => errors.push(FieldError::new(
                &name,
                "unknown_parameter",
                unknown_message(&name, parameters),
            )),
            Some((known, false)) if seen.contains(&known.as_str()) && !already => {
                errors.push(FieldError::new(
                    &name,
                    "repeated_parameter",
                    "is given more than once; it takes one value",
                ));
            }
            Some((known, _)) => seen.push(known),
            None => {}
        }
        pairs.push((name, value.into_owned()));
    }
    let rewritten = bracketed.then(|| {
        form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&pairs)
            .finish()
    });
    (rewritten, errors)
}

/// Whether `value` holds a control character (C0, DEL or C1).
pub(crate) fn has_control(value: &str) -> bool {
    value.chars().any(char::is_control)
}

fn control_character(name: &str) -> FieldError {
    FieldError::new(
        name,
        "invalid_value",
        "must not contain control characters (NUL, line breaks, tabs...)",
    )
}

fn unknown_message(name: &str, parameters: &Parameters) -> String {
    if parameters.is_empty() {
        return "is not a parameter of this operation, which takes none".to_string();
    }
    if let Some(near) = nearest(name, parameters.iter().map(|(known, _)| known.as_str())) {
        return format!("is not a parameter of this operation; did you mean `{near}`?");
    }
    let names: Vec<&str> = parameters.iter().map(|(known, _)| known.as_str()).collect();
    format!(
        "is not a parameter of this operation, which takes: {}",
        names.join(", ")
    )
}

/// The known name `given` most likely meant: the same in another letter case, else one at most
/// two edits away (one for short names).
fn nearest<'a>(given: &str, known: impl Iterator<Item = &'a str> + Clone) -> Option<&'a str> {
    let lower = given.to_lowercase();
    if let Some(same) = known.clone().find(|k| k.to_lowercase() == lower) {
        return Some(same);
    }
    let most = if given.chars().count() <= 4 { 1 } else { 2 };
    known
        .map(|k| (edits(&lower, &k.to_lowercase()), k))
        .filter(|(d, _)| *d <= most)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// The Levenshtein distance between `a` and `b`, in characters.
fn edits(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substituted = diagonal + usize::from(ca != *cb);
            diagonal = row[j + 1];
            row[j + 1] = substituted.min(row[j] + 1).min(diagonal + 1);
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parameters() -> Parameters {
        [
            ("page", false),
            ("limit", false),
            ("walletId", false),
            ("type", true),
        ]
        .map(|(n, list)| (n.to_string(), list))
        .to_vec()
    }

    fn fields(query: &str) -> Vec<(String, String)> {
        check(query, &parameters())
            .1
            .into_iter()
            .map(|e| (e.field, e.message))
            .collect()
    }

    #[test]
    fn unknown_names_are_refused_with_the_nearest_known_one() {
        let problems = fields("walletid=nope&page=2");
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].0, "walletid");
        assert!(problems[0].1.contains("`walletId`"), "{}", problems[0].1);
        let far = fields("colour=red");
        assert!(far[0].1.contains("takes: page, limit"), "{}", far[0].1);
        assert!(fields("limt=3")[0].1.contains("`limit`"));
        assert_eq!(fields("x=1&x=2").len(), 1, "one problem per name");
    }

    #[test]
    fn control_characters_are_refused_naming_the_parameter() {
        for query in [
            "walletId=%00",
            "walletId=a%0Ab",
            "walletId=%C2%85",
            "type=EARN&type=%7F",
        ] {
            let problems = fields(query);
            assert_eq!(problems.len(), 1, "{query}: {problems:?}");
            assert!(problems[0].1.contains("control characters"), "{query}");
        }
        assert_eq!(fields("walletId=w%C3%A9-1"), Vec::new());
    }

    #[test]
    fn lists_repeat_and_take_brackets_single_values_do_not_repeat() {
        let (rewritten, errors) = check("type[]=BURN&type[]=EARN&page=1", &parameters());
        assert!(errors.is_empty(), "{errors:?}");
        assert_eq!(rewritten.as_deref(), Some("type=BURN&type=EARN&page=1"));
        assert_eq!(
            check("type=BURN&type=EARN", &parameters()),
            (None, Vec::new())
        );
        let repeated = fields("page=1&page=2");
        assert_eq!(repeated[0].0, "page");
        assert!(repeated[0].1.contains("more than once"));
    }

    #[test]
    fn edits_count_characters() {
        assert_eq!(edits("walletid", "walletid"), 0);
        assert_eq!(edits("colour", "color"), 1);
        assert_eq!(edits("", "abc"), 3);
        assert_eq!(edits("café", "cafe"), 1);
    }
}
