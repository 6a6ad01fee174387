//! What keeps the console's pages safe in a browser: the headers every answer carries (a strict
//! Content-Security-Policy with no inline script), the session cookie, and the CSRF token every
//! form and htmx request sends back.
//!
//! The session cookie holds the admin API's session token, `HttpOnly` and `SameSite=Strict`
//! (and `Secure` when the request came over TLS through a proxy that says so with
//! `X-Forwarded-Proto: https`). It is set without a `Path`: a browser then scopes it to the
//! console's folder, wherever a proxy mounts it. The CSRF token of a session is derived from
//! its token, so it needs no storage; before signing in, a random one is kept in a cookie of its
//! own and the sign-in form must send it back (a double submit).

use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::Response;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};

pub const SESSION_COOKIE: &str = "rewards_console";
pub const SIGN_IN_COOKIE: &str = "rewards_console_csrf";
/// The form field and the header (htmx's) that carry the CSRF token.
pub const CSRF_FIELD: &str = "csrf";
pub const CSRF_HEADER: &str = "x-csrf-token";

const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; form-action 'self'; base-uri 'self'; frame-ancestors 'none'";

/// Adds the console's security headers to every answer of its own.
pub async fn headers(request: Request, next: Next) -> Response {
    let mut response = next.run(request).await;
    let headers = response.headers_mut();
    let set = [
        (header::CONTENT_SECURITY_POLICY, POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "same-origin"),
    ];
    for (name, value) in set {
        headers.insert(name, HeaderValue::from_static(value));
    }
    // Pages name the operator and its data: never kept by a browser or a proxy.
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

/// The value of cookie `name` in the request's `Cookie` headers.
pub fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value.trim())
        .filter(|value| !value.is_empty())
}

fn over_tls(headers: &HeaderMap) -> bool {
    headers
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("https"))
}

/// A `Set-Cookie` value for `name`; `None` clears it.
pub fn set_cookie(request: &HeaderMap, name: &str, value: Option<&str>) -> HeaderValue {
    let secure = if over_tls(request) { "; Secure" } else { "" };
    let text = match value {
        Some(value) => format!("{name}={value}; HttpOnly; SameSite=Strict{secure}"),
        None => format!("{name}=; Max-Age=0; HttpOnly; SameSite=Strict{secure}"),
    };
    HeaderValue::from_str(&text).expect("cookie values are URL-safe")
}

/// The CSRF token of the session whose token is `session`.
pub fn csrf_of(session: &str) -> String {
    let digest = Sha256::digest(format!("rewards-console-csrf\0{session}"));
    URL_SAFE_NO_PAD.encode(&digest[..24])
}

/// A new random token (the pre-sign-in CSRF cookie).
pub fn random_token() -> String {
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).expect("the OS has randomness");
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Whether a state-changing request carries `expected` (in its header or form field `sent`) and
/// does not come from another site.
pub fn csrf_holds(
    method: &Method,
    headers: &HeaderMap,
    sent: Option<&str>,
    expected: &str,
) -> bool {
    if matches!(*method, Method::GET | Method::HEAD) {
        return true;
    }
    let cross_site = headers
        .get("sec-fetch-site")
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v == "cross-site");
    let header = headers.get(CSRF_HEADER).and_then(|v| v.to_str().ok());
    let given = header.or(sent).unwrap_or_default();
    !cross_site && same(given.as_bytes(), expected.as_bytes())
}

/// Compares in time independent of where the two differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The relative URL of the console's root from a page at `path` (`/console/...`): what the
/// page's `<base href>` says, so every link is relative and works under any proxy prefix.
pub fn base_of(path: &str) -> String {
    let rest = path.split_once("/console/").map_or("", |(_, rest)| rest);
    let depth = rest.matches('/').count();
    if depth == 0 {
        "./".to_owned()
    } else {
        "../".repeat(depth)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_base_leads_back_to_the_console_root() {
        assert_eq!(base_of("/console/"), "./");
        assert_eq!(base_of("/console/sign-in"), "./");
        assert_eq!(base_of("/console/orgs/o1/members"), "../../");
        assert_eq!(base_of("/console/orgs/o1/"), "../../");
        assert_eq!(base_of("/ops/console/orgs/o1/members/m"), "../../../");
    }

    #[test]
    fn cookies_are_read_by_name_among_many() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::COOKIE,
            "a=1; rewards_console=rwo_x; b=".parse().unwrap(),
        );
        assert_eq!(cookie(&headers, SESSION_COOKIE), Some("rwo_x"));
        assert_eq!(cookie(&headers, "b"), None);
        assert_eq!(cookie(&headers, "c"), None);
    }

    #[test]
    fn a_state_change_needs_the_token_and_the_same_site() {
        let expected = csrf_of("rwo_secret");
        let mut headers = HeaderMap::new();
        assert!(csrf_holds(&Method::GET, &headers, None, &expected));
        assert!(!csrf_holds(&Method::POST, &headers, None, &expected));
        assert!(!csrf_holds(
            &Method::POST,
            &headers,
            Some("nope"),
            &expected
        ));
        assert!(csrf_holds(
            &Method::POST,
            &headers,
            Some(&expected),
            &expected
        ));
        headers.insert(CSRF_HEADER, expected.parse().unwrap());
        assert!(csrf_holds(&Method::DELETE, &headers, None, &expected));
        headers.insert("sec-fetch-site", "cross-site".parse().unwrap());
        assert!(!csrf_holds(
            &Method::POST,
            &headers,
            Some(&expected),
            &expected
        ));
    }
}
