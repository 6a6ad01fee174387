//! The operators' console: the admin API's operations as pages, served by the binary at
//! `/console` on the admin listener. Pages are rendered on the server from templates checked
//! when compiled (askama), with htmx (a pinned copy, inside the binary) for the parts that
//! update in place. Every action is an admin API operation called in process with the
//! operator's session, so the gate and the permission table decide what it may do; a page
//! shows only the buttons the operator's role may use. Where things live:
//!
//! - `security.rs`: the headers (a Content-Security-Policy with no inline script), the
//!   session cookie, the CSRF token (`csrf.rs` checks it); `assets.rs`: the scripts, styles and
//!   icon, under hashed names;
//! - `client.rs`: the admin API called in process; `page.rs`: a request's context, the frame
//!   of every page, failures shown as pages; `format.rs`: numbers and dates as people read
//!   them; `paging.rs`: a list's pages; `chart.rs`: charts drawn as SVG; `diff.rs`: two texts
//!   side by side;
//! - one module per part: `sign_in` (with the password and second factor a first sign-in
//!   demands), `account` (the operator's sessions), `orgs` (the front page), `overview` (an
//!   organisation's), `members` (with their wallets, history, orders, bookings, adjustments by
//!   hand and erasure), `adjustments` (the four-eyes queue), `programme` (campaigns),
//!   `settings` (a campaign's policy and tiers), `rules` (versions compared, tried,
//!   backtested, activated), `catalogue` (products, an import checked then applied, the
//!   export), `batches` (received files, live progress, reports), `mappings` (checked, stored,
//!   a file run dry), `reviews` (moderation),
//!   `exports` (files, run now, the daily schedule), `keys`, `sftp` and `webhooks` (access:
//!   API keys, the batch door's users, webhook endpoints with their delivery logs),
//!   `operators` (an owner's) and `audit` (the trail and its verification).

mod account;
mod adjustments;
mod assets;
mod audit;
mod batches;
mod catalogue;
mod chart;
mod client;
mod csrf;
mod diff;
mod exports;
mod format;
mod keys;
mod mappings;
mod members;
mod operators;
mod orgs;
mod overview;
mod page;
mod paging;
mod programme;
mod reviews;
mod rules;
mod security;
mod settings;
mod sftp;
mod sign_in;
mod webhooks;

use std::future::Future;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use admin::AdminState;
use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::middleware::from_fn;
use axum::response::{IntoResponse, Redirect};
use axum::routing::{get, post};
use tokio::net::TcpListener;

/// What the console's handlers reach: the admin API's operations, called in process.
#[derive(Clone)]
pub struct ConsoleState {
    operations: Router,
    /// The store's clock (a test's, when it sets one).
    clock: Arc<dyn Fn() -> DateTime<Utc> + Send + Sync>,
}

/// The console's routes, under `/console`.
pub fn router(state: AdminState) -> Router {
    let console = ConsoleState {
        clock: {
            let state = state.clone();
            Arc::new(move || state.store().now())
        },
        operations: admin::operations(state),
    };
    let pages = Router::new()
        .route("/console/", get(orgs::list))
        .route(
            "/console/sign-in",
            get(sign_in::form).post(sign_in::sign_in),
        )
        .route("/console/sign-out", post(sign_in::sign_out))
        .route("/console/account", get(account::show))
        .route("/console/audit", get(audit::trail))
        .route(
            "/console/operators",
            get(operators::list).post(operators::add),
        )
        .route("/console/operators/settings", post(operators::settings))
        .route("/console/operators/{id}/{verb}", post(operators::act))
        .route("/console/orgs/{org}/", get(overview::show))
        .route("/console/orgs/{org}/members", get(members::find))
        .route("/console/orgs/{org}/adjustments", get(adjustments::list))
        .route("/console/orgs/{org}/batches", get(batches::list))
        .route(
            "/console/orgs/{org}/mappings",
            get(mappings::list).post(mappings::act),
        )
        .route(
            "/console/orgs/{org}/mappings/dry-run",
            post(mappings::dry_run).layer(DefaultBodyLimit::max(mappings::MAX_DRY_RUN)),
        )
        .route("/console/orgs/{org}/batches/{id}", get(batches::show))
        .route(
            "/console/orgs/{org}/batches/{id}/progress",
            get(batches::progress),
        )
        .route(
            "/console/orgs/{org}/batches/{id}/rejected.csv",
            get(batches::download),
        )
        .route(
            "/console/orgs/{org}/programme",
            get(programme::show).post(programme::add_campaign),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/rules",
            get(rules::show).post(rules::act),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/settings",
            get(settings::show),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/settings/policy",
            post(settings::set_policy),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/settings/tiers",
            post(settings::add_tier),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/settings/tiers/{tier}/remove",
            post(settings::remove_tier),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/catalogue",
            get(catalogue::show).post(catalogue::import),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/catalogue.json",
            get(catalogue::export),
        )
        .route("/console/orgs/{org}/reviews", get(reviews::queue))
        .route(
            "/console/orgs/{org}/exports",
            get(exports::list).post(exports::run),
        )
        .route(
            "/console/orgs/{org}/exports/schedule",
            post(exports::schedule),
        )
        .route("/console/orgs/{org}/exports/{name}", get(exports::download))
        .route(
            "/console/orgs/{org}/reviews/{id}/{verb}",
            post(reviews::decide),
        )
        .route(
            "/console/orgs/{org}/keys",
            get(keys::list).post(keys::issue),
        )
        .route("/console/orgs/{org}/keys/{id}/revoke", post(keys::revoke))
        .route("/console/orgs/{org}/sftp", get(sftp::list).post(sftp::add))
        .route(
            "/console/orgs/{org}/sftp/{username}/keys",
            post(sftp::add_key),
        )
        .route(
            "/console/orgs/{org}/sftp/{username}/{verb}",
            post(sftp::change),
        )
        .route(
            "/console/orgs/{org}/webhooks",
            get(webhooks::list).post(webhooks::add),
        )
        .route("/console/orgs/{org}/webhooks/{id}", get(webhooks::show))
        .route(
            "/console/orgs/{org}/webhooks/{id}/{verb}",
            post(webhooks::act),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/adjustments/{id}/{verb}",
            post(adjustments::decide),
        )
        .route("/console/orgs/{org}/members/{id}", get(members::show))
        .route(
            "/console/orgs/{org}/members/{id}/erase",
            post(members::erase),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/wallets/{wallet}",
            get(members::wallet),
        )
        .route(
            "/console/orgs/{org}/campaigns/{campaign}/wallets/{wallet}/adjust",
            post(members::adjust),
        )
        .route(
            "/console/account/password",
            get(sign_in::password_form).post(sign_in::change_password),
        )
        .route(
            "/console/account/two-factor",
            get(sign_in::two_factor).post(sign_in::begin_two_factor),
        )
        .route(
            "/console/account/two-factor/confirm",
            post(sign_in::confirm_two_factor),
        )
        .route("/console/account/sessions/{id}/end", post(account::end))
        .route(
            "/console/account/sessions/end-others",
            post(account::end_others),
        )
        .with_state(console)
        .layer(from_fn(csrf::check_csrf))
        .layer(from_fn(page::show_failures));
    Router::new()
        .route(
            "/console",
            get(|| async { Redirect::to("console/").into_response() }),
        )
        .route("/console/assets/{name}", get(assets::serve))
        .merge(pages)
        .layer(from_fn(security::headers))
}

/// The admin listener with the console beside the admin API.
pub fn app(state: AdminState) -> Router {
    admin::app_with(state.clone(), router(state))
}

/// Serves `app(state)` on `listener` until `shutdown` completes.
pub async fn serve(
    listener: TcpListener,
    state: AdminState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.app.settings.http;
    api::plumbing::serve(listener, app(state), limits, shutdown).await
}
