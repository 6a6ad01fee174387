//! Absolute links to the service's own resources (`statusCheckUrl`): under the configured public
//! base URL when there is one (`public_url`), else under the address the client used, as the
//! request's `X-Forwarded-Proto`/`X-Forwarded-Host` (set by a proxy in front) or its `Host` say.

use std::convert::Infallible;

use axum::extract::{FromRef, FromRequestParts};
use axum::http::HeaderMap;
use axum::http::request::Parts;

/// The configured public base URL (`public_url`), if any: what a state must offer for links.
#[derive(Debug, Clone)]
pub struct PublicUrl(pub Option<String>);

/// `scheme://host[:port]` (or the configured base, which may carry a path), without a trailing
/// slash; empty when the request names no host (HTTP/1.0 without `Host`), so links stay
/// relative rather than point at a guessed host.
pub struct BaseUrl(String);

impl BaseUrl {
    /// `path` (starting with `/`) under the base.
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.0)
    }
}

impl<S> FromRequestParts<S> for BaseUrl
where
    S: Send + Sync,
    PublicUrl: FromRef<S>,
{
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Infallible> {
        if let PublicUrl(Some(configured)) = PublicUrl::from_ref(state) {
            return Ok(BaseUrl(configured.trim_end_matches('/').to_string()));
        }
        let host = [
            first(&parts.headers, "x-forwarded-host"),
            parts
                .uri
                .authority()
                .map(axum::http::uri::Authority::as_str),
            first(&parts.headers, "host"),
        ]
        .into_iter()
        .flatten()
        .find(|host| is_host(host));
        let scheme = first(&parts.headers, "x-forwarded-proto")
            .filter(|p| p.eq_ignore_ascii_case("https") || p.eq_ignore_ascii_case("http"))
            .map(str::to_ascii_lowercase)
            .or_else(|| parts.uri.scheme_str().map(str::to_string))
            .unwrap_or_else(|| "http".to_string());
        Ok(BaseUrl(
            host.map(|host| format!("{scheme}://{host}"))
                .unwrap_or_default(),
        ))
    }
}

/// The first of a header's comma-separated values (the client's side of a proxy chain).
fn first<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let value = headers.get(name)?.to_str().ok()?;
    value
        .split(',')
        .next()
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// A host name or address with an optional port, nothing that could end the URL's authority.
fn is_host(text: &str) -> bool {
    (1..=255).contains(&text.len())
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-.:[]_".contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_are_names_addresses_and_ports_only() {
        for good in ["api.example.com", "127.0.0.1:8080", "[::1]:443", "rewards"] {
            assert!(is_host(good), "{good}");
        }
        for bad in ["evil.com/x", "a@b", "a b", "host?q", "", "h#f"] {
            assert!(!is_host(bad), "{bad}");
        }
    }
}
