//! Operational endpoints and layers: health, readiness, Prometheus metrics, request ids and
//! request logs.

use std::time::{Duration, Instant};

use axum::extract::{MatchedPath, Request, State};
use axum::http::{HeaderName, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::trace::TraceLayer;

use crate::AppState;
use crate::http::error::ApiError;

pub const REQUEST_ID: HeaderName = HeaderName::from_static("x-request-id");

/// Alive: the process answers.
pub async fn healthz() -> &'static str {
    "ok"
}

/// Ready: the database answers too.
pub async fn readyz(State(state): State<AppState>) -> Response {
    match state.store.ping().await {
        Ok(()) => "ready".into_response(),
        Err(err) => {
            tracing::warn!(%err, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, "database unavailable").into_response()
        }
    }
}

pub async fn metrics(State(state): State<AppState>) -> impl IntoResponse {
    state.metrics.run_upkeep();
    (
        [("content-type", "text/plain; version=0.0.4")],
        state.metrics.render(),
    )
}

/// Counts requests and times them per route template (`/v1/members/{id}`, never the raw path,
/// which would make one series per member).
pub async fn record_metrics(request: Request, next: Next) -> Response {
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("unmatched", |p| p.as_str())
        .to_string();
    let method = request.method().to_string();
    let started = Instant::now();
    let response = next.run(request).await;
    let labels = [
        ("method", method),
        ("route", route),
        ("status", response.status().as_str().to_string()),
    ];
    metrics::counter!("http_requests_total", &labels).increment(1);
    metrics::histogram!("http_request_duration_seconds", &labels)
        .record(started.elapsed().as_secs_f64());
    response
}

pub async fn not_found() -> ApiError {
    ApiError::NotFound("route")
}

pub async fn method_not_allowed() -> ApiError {
    ApiError::MethodNotAllowed
}

/// Every request gets an id (kept from the client's `x-request-id` or made here), echoed in the
/// response and carried by every log line of the request.
pub fn with_request_logs(router: axum::Router) -> axum::Router {
    let trace = TraceLayer::new_for_http()
        .make_span_with(|request: &Request| {
            let id = request
                .headers()
                .get(&REQUEST_ID)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            tracing::info_span!(
                "request",
                method = %request.method(),
                path = %request.uri().path(),
                request_id = %id,
                org = tracing::field::Empty,
            )
        })
        .on_request(())
        .on_response(
            |response: &Response, latency: Duration, _span: &tracing::Span| {
                tracing::info!(
                    status = response.status().as_u16(),
                    latency_ms = latency.as_millis() as u64,
                    "served"
                );
            },
        );
    router
        .layer(PropagateRequestIdLayer::new(REQUEST_ID))
        .layer(trace)
        .layer(SetRequestIdLayer::new(REQUEST_ID, MakeRequestUuid))
}
