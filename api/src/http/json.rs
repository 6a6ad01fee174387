//! The JSON body extractor: like `axum::Json`, but every rejection is a problem that names the
//! field (`communicationPreferences.general.email: invalid type: string, expected a boolean`).

use axum::body::Bytes;
use axum::extract::{FromRequest, Request};
use axum::http::header;
use serde::de::DeserializeOwned;

use crate::http::error::{ApiError, FieldError};

pub struct JsonBody<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for JsonBody<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let JsonBytes(bytes) = JsonBytes::from_request(req, state).await?;
        parse(&bytes).map(JsonBody)
    }
}

/// A JSON body's bytes, not yet read (for handlers that check something first, or read the
/// JSON their own way): the content type is checked and the size limit applied.
pub struct JsonBytes(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for JsonBytes {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        body_bytes(req, state, "application/json")
            .await
            .map(JsonBytes)
    }
}

/// A body's bytes within the size limit, when its `Content-Type` names the subtype of the media
/// type `expected` (`json` for `application/json`, so `application/merge-patch+json` too) or is
/// missing (hand-written curl calls are forgiven); another type is 415 naming `expected`.
pub async fn body_bytes<S: Send + Sync>(
    req: Request,
    state: &S,
    expected: &'static str,
) -> Result<Bytes, ApiError> {
    let content_type = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    let subtype = expected.rsplit('/').next().unwrap_or(expected);
    if content_type.is_some_and(|ct| !ct.to_ascii_lowercase().contains(subtype)) {
        return Err(ApiError::UnsupportedMediaType(expected));
    }
    Bytes::from_request(req, state).await.map_err(|rejection| {
        if rejection.status() == axum::http::StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::PayloadTooLarge
        } else {
            ApiError::invalid("body", "invalid_body", rejection.body_text())
        }
    })
}

/// Parses `bytes` as JSON into `T`, turning a failure into a 400 naming the field.
/// Every body of this API is a JSON object; serde would otherwise read a struct from an array.
pub fn parse<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, ApiError> {
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(ApiError::invalid(
            "body",
            "invalid_type",
            "must be a JSON object",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut de).map_err(|err| {
        let path = err.path().to_string();
        let inner = err.into_inner();
        if inner.is_syntax() || inner.is_eof() {
            return ApiError::BadRequest {
                code: "invalid_json",
                detail: format!("the body is not valid JSON: {inner}"),
                errors: Vec::new(),
            };
        }
        ApiError::validation(vec![field_error(&path, &inner.to_string())])
    })?;
    de.end().map_err(|e| ApiError::BadRequest {
        code: "invalid_json",
        detail: format!("the body is not valid JSON: {e}"),
        errors: Vec::new(),
    })?;
    Ok(value)
}

/// Reads a deserialisation message into a field error. serde reports a missing field at its
/// parent's path with the name in the message, so it is appended to the path here.
pub fn field_error(path: &str, message: &str) -> FieldError {
    let message = message.split(" at line ").next().unwrap_or(message);
    let join = |name: &str| match path {
        "." | "" => name.to_string(),
        parent => format!("{parent}.{name}"),
    };
    if let Some(name) = backticked(message, "missing field `") {
        return FieldError::new(join(name), "missing_field", "is required");
    }
    let field = match path {
        "." | "" => "body".to_string(),
        path => path.to_string(),
    };
    if message.starts_with("unknown field `") {
        // Here serde's path already ends with the unknown key.
        return FieldError::new(field, "not_allowed", message);
    }
    let code = if message.starts_with("invalid type") {
        "invalid_type"
    } else {
        "invalid_value"
    };
    FieldError::new(field, code, message)
}

fn backticked<'a>(message: &'a str, prefix: &str) -> Option<&'a str> {
    message.strip_prefix(prefix)?.split('`').next()
}
