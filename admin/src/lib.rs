//! The operators' API, on a listener of its own (`REWARDS_ADMIN_ADDR`): operator accounts and
//! their sessions, second factor and automation tokens, and what operators manage, each
//! operation behind the permission table. It shares the client API's plumbing (errors, bodies,
//! paging, the connection loop) and state. Where things live:
//!
//! - `permissions.rs`: the table of what each operation needs and which roles have it;
//! - `auth.rs`: the gate that enforces it, and the `Principal` a request acts as (its changes
//!   are recorded in the audit trail as that operator's);
//! - one module per resource: `sessions`, `me`, `tokens`, `operators`, `orgs` (with
//!   campaigns), `overview` (a campaign at a glance, its days kept in `recorded_days`), `keys`, `sftp` (the batch door's
//!   users, keys, host key and bans), `mappings`,
//!   `batches` (with their reports), `uploads` (batch files sent or run dry over HTTP),
//!   `rules` (rule sets, tried and backtested), `tiers`, `policies`, `catalogue` (import,
//!   export), `webhooks` (endpoints, delivery logs, redeliveries), `exports` (files written in
//!   the background, downloaded) and `export_schedules` (the daily export), `members` (with
//!   their wallets, for support), `orders` (with bookings, for support), `adjustments` (manual
//!   credits and debits, their approval and bulk files), `reviews` (moderation), `ledger` (its
//!   audit), `audit_log`; `views.rs`: the operator, session and token records;
//! - `docs.rs`: the OpenAPI document and `/docs`; `schemas.rs`: schemas the derive cannot say;
//! - `state.rs`: what handlers reach.

mod adjustments;
mod audit_log;
mod auth;
mod batches;
mod catalogue;
mod docs;
mod export_schedules;
mod exports;
mod keys;
mod ledger;
mod mappings;
mod me;
mod members;
mod operators;
mod orders;
mod orgs;
mod overview;
pub mod permissions;
mod policies;
mod recorded_days;
mod reviews;
mod rules;
mod schemas;
mod sessions;
mod sftp;
mod state;
mod tiers;
mod tokens;
mod uploads;
mod views;
mod webhooks;

use std::future::Future;
use std::sync::Arc;

use api::plumbing::{ApiError, method_not_allowed, not_found, record_metrics, with_request_logs};
use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::get;
use tokio::net::TcpListener;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

pub use state::AdminState;

/// What the admin API answers, as types a Rust client (the tests among them) reads answers into.
pub mod views_of {
    pub use crate::adjustments::LimitsView;
    pub use crate::audit_log::{AuditEntryView, VerdictView};
    pub use crate::batches::{AdminBatchView, ProgressView};
    pub use crate::keys::{IssuedKeyView, KeyView};
    pub use crate::mappings::{MappingCheck, MappingView};
    pub use crate::me::{EnrolmentView, Me, RecoveryCodesView};
    pub use crate::operators::{SettingsView, WithPassword};
    pub use crate::orgs::{CampaignView, OrgView};
    pub use crate::recorded_days::DayView;
    pub use crate::recorded_days::{OverviewView, TierShareView};
    pub use crate::sessions::SignedIn;
    pub use crate::sftp::{BanView, HostKeyView, SftpKeyView, SftpUserView};
    pub use crate::tokens::CreatedToken;
    pub use crate::views::{OperatorView, SessionView, TokenView};
    pub use store::Tokens;
}

fn routes() -> OpenApiRouter<AdminState> {
    OpenApiRouter::with_openapi(docs::base())
        .merge(sessions::router())
        .merge(me::router())
        .merge(tokens::router())
        .merge(operators::router())
        .merge(orgs::router())
        .merge(overview::router())
        .merge(keys::router())
        .merge(members::router())
        .merge(adjustments::router())
        .merge(sftp::router())
        .merge(mappings::router())
        .merge(batches::router())
        .merge(rules::router())
        .merge(tiers::router())
        .merge(policies::router())
        .merge(catalogue::router())
        .merge(webhooks::router())
        .merge(orders::router())
        .merge(uploads::router())
        .merge(exports::router())
        .merge(export_schedules::router())
        .merge(reviews::router())
        .merge(ledger::router())
        .merge(audit_log::router())
}

/// The admin API's OpenAPI document.
pub fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut openapi) = routes().split_for_parts();
    docs::add_shared_parts(&mut openapi);
    openapi
}

/// The document as `/openapi.json` serves it: every answer described (from its status and
/// body where the operation leaves it to that), as OpenAPI requires.
pub fn document() -> String {
    let mut document = serde_json::to_value(openapi()).expect("the document serializes");
    api::plumbing::describe_responses(&mut document);
    document.to_string()
}

/// The operations under `/admin/v1`, each behind the gate, with no fallback and no request
/// logs: what the listener serves, and what the console calls in process.
pub fn operations(state: AdminState) -> Router {
    let (operations, _) = routes().split_for_parts();
    let openapi = openapi();
    let gate = Arc::new(auth::Gate::of(&openapi));
    // The gate first, then the query string against the operation's description.
    operations
        .route_layer(from_fn_with_state(
            api::plumbing::KnownParameters::of(&openapi),
            api::plumbing::refuse_unknown,
        ))
        .route_layer(from_fn_with_state(
            (state.clone(), gate),
            auth::authenticate,
        ))
        .with_state(state)
}

/// The whole admin listener: `/admin/v1` behind the gate, and `/healthz`, `/readyz`,
/// `/openapi.json` and `/docs`.
pub fn app(state: AdminState) -> Router {
    app_with(state, Router::new())
}

/// The admin listener with `more` routes beside its own (the console's), under the same
/// request logs, metrics and fallbacks.
pub fn app_with(state: AdminState, more: Router) -> Router {
    let document = Arc::new(document());
    let routes = Router::new()
        .route("/healthz", get(api::plumbing::healthz))
        .route("/readyz", get(api::plumbing::readyz))
        .route(
            "/openapi.json",
            get(move || {
                let document = document.clone();
                async move {
                    (
                        [(axum::http::header::CONTENT_TYPE, "application/json")],
                        document.as_str().to_owned(),
                    )
                }
            }),
        )
        .with_state(state.clone())
        .merge(operations(state))
        .merge(more)
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(from_fn(record_metrics))
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            axum::response::IntoResponse::into_response(ApiError::Internal(
                "handler panicked".into(),
            ))
        }))
        .merge(SwaggerUi::new("/docs").config(docs::swagger_config()));
    with_request_logs(routes)
}

/// Serves `app(state)` on `listener` until `shutdown` completes, with the client API's
/// connection limits and grace. Starts no task beyond its connections.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.app.settings.http;
    api::plumbing::serve(listener, app(state), limits, shutdown).await
}
