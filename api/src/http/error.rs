//! The one error type of the API and its RFC 9457 problem-details body.
//!
//! Every failure a client sees is `application/problem+json` with a stable snake_case `code`;
//! validation failures list each offending field. Internal causes are logged, never sent.

use std::borrow::Cow;

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::{Deserialize, Serialize};
use store::StoreError;
use utoipa::ToSchema;

/// An RFC 9457 problem: `type`, `title`, `status`, `detail`, plus `code` and the fields at fault.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Problem {
    /// A URI naming the kind of problem: `urn:problem-type:rewards:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    pub title: String,
    pub status: u16,
    pub detail: String,
    /// Stable, snake_case: what a client program matches on.
    pub code: String,
    /// The first offending field, when the problem is about one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// Every offending field, for validation problems.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldError>,
}

/// One field at fault: its JSON path (`communicationPreferences.general.email`), a stable
/// code (`missing_field`, `invalid_type`, `invalid_value`, `too_long`, `not_allowed`) and a message.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema, PartialEq, Eq)]
pub struct FieldError {
    pub field: String,
    pub code: Cow<'static, str>,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, code: &'static str, message: impl Into<String>) -> Self {
        FieldError {
            field: field.into(),
            code: Cow::Borrowed(code),
            message: message.into(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ApiError {
    /// 400: the request is malformed; `code` says how, `errors` which fields.
    #[error("{detail}")]
    BadRequest {
        code: &'static str,
        detail: String,
        errors: Vec<FieldError>,
    },
    #[error("missing or invalid API credentials")]
    Unauthorized,
    /// 401 for credentials given in a body that are wrong (a sign-in's): `code` says which.
    #[error("{detail}")]
    Denied {
        code: &'static str,
        field: Option<String>,
        detail: String,
    },
    /// 401 where the credentials are not an API key's: the detail says what to send.
    #[error("{0}")]
    Unauthenticated(&'static str),
    /// 403: the key is valid but may not do this (`read_only_key`, `permission_required`).
    #[error("{detail}")]
    Forbidden { code: &'static str, detail: String },
    #[error("{0} not found")]
    NotFound(&'static str),
    /// 404 for a record that a field of the request names.
    #[error("{field}: {detail}")]
    UnknownReference { field: &'static str, detail: String },
    /// 404 with a code of its own: what the request names exists, but not what it asks about
    /// (`not_ranked`: a member with no place on the leaderboard).
    #[error("{detail}")]
    Absent {
        code: &'static str,
        field: Option<String>,
        detail: String,
    },
    #[error("method not allowed")]
    MethodNotAllowed,
    #[error("{0} is already in use")]
    Conflict(&'static str),
    /// 409: the state of what the request names refuses it; `code` says how (`out_of_stock`,
    /// `already_redeemed`, `illegal_transition`...).
    #[error("{detail}")]
    Refused {
        code: &'static str,
        field: Option<String>,
        detail: String,
    },
    /// 402: the wallet cannot cover a burn.
    #[error("{0}")]
    InsufficientBalance(String),
    #[error("request body too large")]
    PayloadTooLarge,
    /// 415: the body's `Content-Type` is not one the operation reads; it names those it does.
    #[error("send the body with `Content-Type: {0}`")]
    UnsupportedMediaType(&'static str),
    /// 503: the answer is not ready yet (`leaderboard_pending`); `Retry-After` says when to
    /// ask again, in seconds.
    #[error("{detail}")]
    NotReady {
        code: &'static str,
        detail: String,
        retry_after: u64,
    },
    /// 429: too many of something in a period (`redelivery_limit`); `Retry-After` says when to
    /// ask again, in seconds.
    #[error("{detail}")]
    Throttled {
        code: &'static str,
        detail: String,
        retry_after: u64,
    },
    #[error("internal error")]
    Internal(String),
}

impl ApiError {
    /// 400 for fields that failed validation (at least one).
    pub fn validation(errors: Vec<FieldError>) -> Self {
        let detail = match errors.as_slice() {
            [one] => format!("{}: {}", one.field, one.message),
            many => format!("{} fields are invalid; see `errors`", many.len()),
        };
        ApiError::BadRequest {
            code: "validation_failed",
            detail,
            errors,
        }
    }

    pub fn invalid(field: &str, code: &'static str, message: impl Into<String>) -> Self {
        Self::validation(vec![FieldError::new(field, code, message)])
    }

    fn status_and_code(&self) -> (StatusCode, &'static str) {
        match self {
            ApiError::BadRequest { code, .. } => (StatusCode::BAD_REQUEST, code),
            ApiError::Unauthorized | ApiError::Unauthenticated(_) => {
                (StatusCode::UNAUTHORIZED, "unauthorized")
            }
            ApiError::Denied { code, .. } => (StatusCode::UNAUTHORIZED, code),
            ApiError::Forbidden { code, .. } => (StatusCode::FORBIDDEN, code),
            ApiError::NotFound(_) | ApiError::UnknownReference { .. } => {
                (StatusCode::NOT_FOUND, "not_found")
            }
            ApiError::Absent { code, .. } => (StatusCode::NOT_FOUND, code),
            ApiError::MethodNotAllowed => (StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed"),
            ApiError::Conflict(_) => (StatusCode::CONFLICT, "already_exists"),
            ApiError::Refused { code, .. } => (StatusCode::CONFLICT, code),
            ApiError::InsufficientBalance(_) => {
                (StatusCode::PAYMENT_REQUIRED, "insufficient_balance")
            }
            ApiError::PayloadTooLarge => (StatusCode::PAYLOAD_TOO_LARGE, "payload_too_large"),
            ApiError::UnsupportedMediaType(_) => {
                (StatusCode::UNSUPPORTED_MEDIA_TYPE, "unsupported_media_type")
            }
            ApiError::NotReady { code, .. } => (StatusCode::SERVICE_UNAVAILABLE, code),
            ApiError::Throttled { code, .. } => (StatusCode::TOO_MANY_REQUESTS, code),
            ApiError::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal_error"),
        }
    }

    pub fn to_problem(&self) -> Problem {
        let (status, code) = self.status_and_code();
        let (field, errors) = match self {
            ApiError::BadRequest { errors, .. } => {
                (errors.first().map(|e| e.field.clone()), errors.clone())
            }
            ApiError::Conflict(field) => (Some(field.to_string()), Vec::new()),
            ApiError::Refused { field, .. }
            | ApiError::Absent { field, .. }
            | ApiError::Denied { field, .. } => (field.clone(), Vec::new()),
            ApiError::UnknownReference { field, detail } => (
                Some(field.to_string()),
                vec![FieldError::new(*field, "not_found", detail.clone())],
            ),
            _ => (None, Vec::new()),
        };
        let detail = match self {
            ApiError::Internal(_) => "the server failed to handle the request".to_string(),
            ApiError::Unauthorized => {
                "send a valid, unrevoked key in `x-api-key` and its secret in `x-api-secret`"
                    .to_string()
            }
            other => other.to_string(),
        };
        Problem {
            kind: format!("urn:problem-type:rewards:{code}"),
            title: status.canonical_reason().unwrap_or("Error").to_string(),
            status: status.as_u16(),
            detail,
            code: code.to_string(),
            field,
            errors,
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(err: StoreError) -> Self {
        match err {
            StoreError::Invalid { field, message } => {
                ApiError::invalid(field, "invalid_value", message)
            }
            StoreError::Conflict { field } => ApiError::Conflict(field),
            StoreError::NotFound { what } => ApiError::NotFound(what),
            StoreError::UnknownReference { field, message } => ApiError::UnknownReference {
                field,
                detail: message,
            },
            StoreError::InsufficientBalance { available } => {
                ApiError::InsufficientBalance(format!(
                    "the wallet can spend {available} tokens (its balance less the programme's minimum balance)"
                ))
            }
            StoreError::InvalidRules(errors) => ApiError::validation(
                errors
                    .0
                    .iter()
                    .map(|e| FieldError::new("rules", "invalid_value", e.to_string()))
                    .collect(),
            ),
            StoreError::InvalidCatalogue(problems) | StoreError::Rejected(problems) => {
                ApiError::validation(
                    problems
                        .iter()
                        .map(|p| FieldError::new(&p.path, "invalid_value", p.message.clone()))
                        .collect(),
                )
            }
            StoreError::Refused {
                code,
                field,
                message,
            } => ApiError::Refused {
                code,
                field,
                detail: message,
            },
            StoreError::Throttled {
                code,
                message,
                retry_after,
            } => ApiError::Throttled {
                code,
                detail: message,
                retry_after,
            },
            // Ours or the database's: logged, never shown in detail.
            internal @ (StoreError::UnknownStored { .. }
            | StoreError::Database(_)
            | StoreError::Sqlite(_)
            | StoreError::NotCommitted(_)
            | StoreError::Panicked(_)
            | StoreError::Migration(_)) => ApiError::Internal(internal.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Internal(cause) = &self {
            tracing::error!(%cause, "request failed");
        }
        let problem = self.to_problem();
        let status =
            StatusCode::from_u16(problem.status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, axum::Json(problem)).into_response();
        let headers = response.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/problem+json"),
        );
        if let ApiError::NotReady { retry_after, .. } | ApiError::Throttled { retry_after, .. } =
            self
        {
            headers.insert(header::RETRY_AFTER, HeaderValue::from(retry_after));
        }
        response
    }
}
