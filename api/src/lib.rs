//! The HTTP API: one router per resource, each behind the same authentication, versioning,
//! error and paging conventions, plus health, metrics and the OpenAPI description. Where things
//! live:
//!
//! - one module per resource, each with its `router()`, request and response types:
//!   `api_key`, `members/`, `member_data` (a member's own data, for a right of access),
//!   `wallets`, `transactions`, `holds`, `transfers`, `batches`, `catalogue/`, `orders/`,
//!   `bookings`, `leaderboard`, `reviews`, `events` (the feed and how an event is shown) and
//!   `webhooks/` (endpoints; deliveries are sent by the `runtime` crate through the `outbound`
//!   client);
//! - `inbox.rs`: the earn inbox, where handlers leave earns for one writer to store together
//!   (the writer is a task of the node's runtime);
//! - `http/`: what they share (authentication and versions, the error type and problem body,
//!   the body and query extractors, field checks, paging, the document's versions);
//! - `spends.rs`: the body every spend request shares (a burn, a hold) and its one check;
//! - `docs.rs`: the OpenAPI document of each version, gathered from the resources;
//! - `ops.rs`: the operational routes (health, readiness, metrics) and the request middleware;
//! - `state.rs`: what handlers and jobs can reach, with `product_json.rs`, the cache of
//!   products' rendered JSON it holds.

mod api_key;
mod batches;
mod bookings;
mod catalogue;
mod docs;
mod events;
mod holds;
mod http;
mod inbox;
mod leaderboard;
mod member_data;
mod members;
mod ops;
pub mod orders;
mod product_json;
mod reviews;
mod spends;
mod state;
mod transactions;
mod transfers;
mod wallets;
pub mod webhooks;

use std::future::Future;

use axum::Router;
use axum::middleware::{from_fn, from_fn_with_state};
use axum::routing::get;
use tokio::net::TcpListener;
use tower_http::catch_panic::CatchPanicLayer;
use utoipa_axum::router::OpenApiRouter;
use utoipa_swagger_ui::SwaggerUi;

pub use http::error::{ApiError, FieldError, Problem};

/// What the API answers, as types a Rust client (the tests among them) reads answers into: the
/// same types the handlers write, so a client cannot drift from the server.
pub mod views {
    pub use crate::api_key::{Access, ApiKeySummary};
    pub use crate::batches::BatchView;
    pub use crate::catalogue::similar::Suggestions;
    pub use crate::catalogue::views::{
        BranchView, CategoryView, CountsView, ImportReportView, ProductView, TagView, TierView,
        VariantView, WeekdaysView,
    };
    pub use crate::events::{EventView, PointsExpiringView, TierChangedView, TierNameView};
    pub use crate::holds::HoldView;
    pub use crate::http::error::{FieldError, Problem};
    pub use crate::http::paging::PagedList;
    pub use crate::leaderboard::{LeaderboardEntry, MemberRank};
    pub use crate::member_data::{LimitCountView, MemberDataView, ReportView};
    pub use crate::members::activities::{ActivityView, AwardView, Source as ActivitySource};
    pub use crate::members::preferences::{
        Channel, ChannelFlags, ChannelList, FlagPreferences, ListPreferences, PreferencesBody,
    };
    pub use crate::members::referrals::{
        ReferralCodeView, ReferralView, Role as ReferralRole, Status as ReferralStatus,
    };
    pub use crate::members::{MemberView, Status as MemberStatus};
    pub use crate::orders::views::{
        BookingView, CodeView, LineView, OrderView, ProductSummaryView, RedeemedView,
    };
    pub use crate::reviews::{ReviewPage, ReviewView, Status as ReviewStatus};
    pub use crate::transactions::{EarnAccepted, EarnStatusView, ExactNumber, TransactionView};
    pub use crate::transfers::{ReceivedView, TransferView};
    pub use crate::wallets::{
        BalanceQuery, BalanceView, ExpiringDayView, ExpiringView, WalletList, WalletView,
    };
    pub use crate::webhooks::{AttemptView, EndpointView, NewEndpointView, Queued};
}
pub use http::server::Limits as HttpLimits;

/// The HTTP plumbing the operators' API (the `admin` crate) shares with this one: the error
/// type and its problem body, the body, query and paging extractors, the connection loop with
/// its limits, and the operational routes and layers.
pub mod plumbing {
    pub use crate::catalogue::{
        MAX_IMPORT_BODY, ProductSearch, RenderedJson, import as import_catalogue, search_products,
    };
    pub use crate::docs::{add_problem_answers, no_control_characters, problem};
    pub use crate::events::listed_type_names as event_type_names;
    pub use crate::http::checks::{Checks, Sign, date_time, schema};
    pub use crate::http::error::{ApiError, FieldError, Problem};
    pub use crate::http::json::{JsonBody, JsonBytes, body_bytes};
    pub use crate::http::paging::{PagedList, Paging, PagingParams};
    pub use crate::http::parameters::{KnownParameters, refuse_unknown};
    pub use crate::http::query::{QueryParams, Whole};
    pub use crate::http::server::{Peer, serve};
    pub use crate::http::shapes::describe_responses;
    pub use crate::ops::{
        REQUEST_ID, healthz, method_not_allowed, not_found, readyz, record_metrics,
        with_request_logs,
    };
}
pub use state::{AppState, Settings};

/// Every authenticated route, each with its description.
fn routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::with_openapi(docs::base())
        .merge(api_key::router())
        .merge(members::router())
        .merge(member_data::router())
        .merge(wallets::router())
        .merge(transactions::router())
        .merge(holds::router())
        .merge(transfers::router())
        .merge(batches::router())
        .merge(catalogue::router())
        .merge(orders::router())
        .merge(bookings::router())
        .merge(leaderboard::router())
        .merge(reviews::router())
        .merge(events::router())
        .merge(webhooks::router())
}

/// The OpenAPI description of every route, in both versions' shapes, before it is cut into
/// each version's document (`http::versions`).
pub(crate) fn openapi() -> utoipa::openapi::OpenApi {
    let (_, mut openapi) = routes().split_for_parts();
    docs::add_shared_parts(&mut openapi);
    openapi
}

/// The whole application: `/v1` and `/api` behind authentication, and the open operational
/// routes (`/healthz`, `/readyz`, `/metrics`, `/openapi.json`, `/docs`).
pub fn app(state: AppState) -> Router {
    let (authenticated, _) = routes().split_for_parts();
    let openapi = openapi();
    // Credentials first, then the query string against the operation's description.
    let authenticated = authenticated
        .layer(from_fn_with_state(
            http::parameters::KnownParameters::of(&openapi),
            http::parameters::refuse_unknown,
        ))
        .layer(from_fn_with_state(state.clone(), http::auth::authenticate));
    let documents = std::sync::Arc::new(http::versions::Documents::of(&openapi));

    let routes = Router::new()
        .merge(authenticated)
        .route("/healthz", get(ops::healthz))
        .route("/readyz", get(ops::readyz))
        .route("/metrics", get(ops::metrics))
        .route(
            "/openapi.json",
            get(move |headers, query| docs::serve_document(documents.clone(), headers, query)),
        )
        .fallback(ops::not_found)
        .method_not_allowed_fallback(ops::method_not_allowed)
        .layer(from_fn(ops::record_metrics))
        .layer(CatchPanicLayer::custom(|_| {
            axum::response::IntoResponse::into_response(ApiError::Internal(
                "handler panicked".into(),
            ))
        }))
        .with_state(state)
        .merge(SwaggerUi::new("/docs").config(docs::swagger_config()));
    ops::with_request_logs(routes)
}

/// Serves `app(state)` on `listener` until `shutdown` completes; then lets requests in flight
/// finish within the grace (`http_shutdown_grace_secs`). Starts no task beyond its connections:
/// what a node runs beside it (the earn inbox's writer among them) is the `runtime` crate's.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let limits = state.settings.http;
    http::server::serve(listener, app(state), limits, shutdown).await
}
