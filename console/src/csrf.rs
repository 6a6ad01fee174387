//! The CSRF check of every state-changing request: the token of the session (or, before
//! signing in, of the sign-in cookie) in the `X-CSRF-Token` header (htmx) or the form's `csrf`
//! field, and no request from another site.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::client::Problem;
use crate::page::Failure;
use crate::security::{
    CSRF_FIELD, CSRF_HEADER, SESSION_COOKIE, SIGN_IN_COOKIE, cookie, csrf_holds, csrf_of,
};

/// The largest form the console reads (a rule set or mapping pasted into a text area fits).
const FORM_LIMIT: usize = 4 << 20;

/// Refuses a state-changing request without its CSRF token.
pub async fn check_csrf(request: Request, next: Next) -> Response {
    if matches!(*request.method(), Method::GET | Method::HEAD) {
        return next.run(request).await;
    }
    let expected = match cookie(request.headers(), SESSION_COOKIE) {
        Some(session) => csrf_of(session),
        None => cookie(request.headers(), SIGN_IN_COOKIE)
            .unwrap_or_default()
            .to_owned(),
    };
    let form = request
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/x-www-form-urlencoded"));
    let (parts, body) = request.into_parts();
    let (body, sent) = if form && !parts.headers.contains_key(CSRF_HEADER) {
        let Ok(bytes) = axum::body::to_bytes(body, FORM_LIMIT).await else {
            return refused(413, "too_large", "The form is too large.");
        };
        let sent = form_urlencoded::parse(&bytes)
            .find(|(name, _)| name == CSRF_FIELD)
            .map(|(_, value)| value.into_owned());
        (Body::from(bytes), sent)
    } else {
        (body, None)
    };
    if expected.is_empty() || !csrf_holds(&parts.method, &parts.headers, sent.as_deref(), &expected)
    {
        return refused(
            403,
            "csrf",
            "This form has expired or did not come from the console: reload the page and try again.",
        );
    }
    next.run(Request::from_parts(parts, body)).await
}

fn refused(status: u16, code: &str, detail: &str) -> Response {
    Failure::Problem(Problem {
        status,
        code: code.into(),
        detail: detail.into(),
        ..Problem::default()
    })
    .into_response()
}
