//! Authentication and version negotiation for `/v1` and `/api`.
//!
//! The middleware checks `x-api-key` and `x-api-secret` against the store, picks the version
//! (`x-api-version`, else the key's pinned default, else 1.9.5) and puts a `Caller` into the
//! request; handlers take `Caller` as an argument. Missing, wrong and revoked credentials get the
//! same 401, so nobody can probe which keys exist.

use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use store::{ApiVersion, KeyContext, Store};

use crate::http::error::ApiError;

pub const API_KEY: &str = "x-api-key";
pub const API_SECRET: &str = "x-api-secret";
pub const API_VERSION: &str = "x-api-version";

/// The authenticated caller of a request: its key (organisation, campaign, permissions) and the
/// interface version the request speaks.
#[derive(Debug, Clone)]
pub struct Caller {
    pub context: KeyContext,
    pub version: ApiVersion,
}

impl Caller {
    /// The organisation the caller's key acts for.
    pub fn org(&self) -> &store::OrgScope {
        &self.context.org
    }

    /// Succeeds when the key holds `permission` (the operator grants it at issue); else 403.
    pub fn require(&self, permission: store::Permission) -> Result<(), ApiError> {
        if self.context.key.permissions.contains(&permission) {
            Ok(())
        } else {
            Err(ApiError::Forbidden {
                code: "permission_required",
                detail: format!(
                    "this key lacks the `{permission}` permission; ask the service operator"
                ),
            })
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parts.extensions.get::<Caller>().cloned().ok_or_else(|| {
            ApiError::Internal("a handler that needs a caller is not behind authenticate".into())
        })
    }
}

fn header<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// Operations sent with POST that change nothing (a vector is too long for a query string).
const READING_POSTS: [&str; 1] = ["/v1/products/vector-search"];

/// Whether the request's operation only reads: what a read-only key may do.
fn only_reads(request: &Request) -> bool {
    match *request.method() {
        Method::GET | Method::HEAD => true,
        Method::POST => READING_POSTS.contains(&request.uri().path()),
        _ => false,
    }
}

/// The version the `x-api-version` header names, if it is sent. Present but blank is not
/// "absent": it names no version this service speaks.
pub(crate) fn asked_version(headers: &HeaderMap) -> Result<Option<ApiVersion>, ApiError> {
    let Some(asked) = headers.get(API_VERSION) else {
        return Ok(None);
    };
    let asked = asked.to_str().unwrap_or_default().trim();
    asked
        .parse::<ApiVersion>()
        .map(Some)
        .map_err(|message| ApiError::BadRequest {
            code: "unsupported_version",
            detail: message.clone(),
            errors: vec![crate::http::error::FieldError::new(
                API_VERSION,
                "invalid_value",
                message,
            )],
        })
}

pub async fn authenticate(
    State(store): State<Store>,
    mut request: Request,
    next: Next,
) -> Result<Response, ApiError> {
    let headers = request.headers();
    let (Some(key), Some(secret)) = (header(headers, API_KEY), header(headers, API_SECRET)) else {
        return Err(ApiError::Unauthorized);
    };
    let context = store
        .tenancy()
        .authenticate(key, secret)
        .await?
        .ok_or(ApiError::Unauthorized)?;
    let version = asked_version(headers)?.unwrap_or(context.key.version.unwrap_or_default());
    if context.key.read_only && !only_reads(&request) {
        return Err(ApiError::Forbidden {
            code: "read_only_key",
            detail: "this API key is read-only: it may only read (GET, and the vector search)"
                .to_string(),
        });
    }
    tracing::Span::current().record("org", context.key.org_id.as_str());
    request.extensions_mut().insert(Caller { context, version });
    let mut response = next.run(request).await;
    response
        .headers_mut()
        .insert(API_VERSION, HeaderValue::from_static(version.as_str()));
    Ok(response)
}
