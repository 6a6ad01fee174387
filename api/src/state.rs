//! What every handler and the node's runtime can reach.

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use axum::extract::FromRef;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use store::{Catalogues, CodeKey, Moderation, RuleBook, Store};
use tokio::sync::Notify;

use crate::http::links::PublicUrl;
use crate::inbox::EarnInbox;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub metrics: PrometheusHandle,
    /// Each campaign's active rule set, cached.
    pub rule_book: RuleBook,
    /// Each campaign's catalogue search index, cached.
    pub catalogues: Catalogues,
    /// Each campaign's products as JSON, for the index it last searched.
    pub(crate) rendered: crate::product_json::RenderedProducts,
    /// Woken when an earn is accepted, so this process's worker starts on it at once.
    pub earn_waiting: Arc<Notify>,
    /// Woken when deliveries are made here (dispatched, redelivered, a test) or a sender ends,
    /// so the delivery worker looks for due endpoints at once rather than at its next look.
    pub deliveries_waiting: Arc<Notify>,
    /// Gathers concurrent earn submissions into single writes.
    pub earn_inbox: EarnInbox,
    /// Seals and opens redemption codes. Never logged.
    pub codes: Arc<CodeKey>,
    pub settings: Settings,
}

/// What an operator may tune beyond the store's own configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// How often each campaign's leaderboard snapshot is rebuilt (`leaderboard_refresh_secs`).
    pub leaderboard_refresh: Duration,
    /// When reviews are hidden for an operator to decide (`reviews_profanity_threshold`,
    /// `reviews_report_threshold`).
    pub moderation: Moderation,
    /// The base of the links the service gives (`public_url`, e.g. `https://rewards.example.com`),
    /// when a proxy in front does not say it in `X-Forwarded-Proto`/`X-Forwarded-Host`. `None`:
    /// from the request.
    pub public_url: Option<String>,
    /// The HTTP server's timeouts, connection bound and stop's grace period.
    pub http: crate::http::server::Limits,
    /// Webhook deliveries: the address rules, each attempt's timeout, concurrency.
    pub webhooks: outbound::WebhookSettings,
    /// How long the operators' audit trail is kept (`audit_retention_days`); `None`: for ever.
    pub audit_retention: Option<chrono::Duration>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            leaderboard_refresh: Duration::from_secs(300),
            moderation: Moderation::default(),
            public_url: None,
            http: crate::http::server::Limits::default(),
            webhooks: outbound::WebhookSettings::default(),
            audit_retention: None,
        }
    }
}

/// The authentication middleware reads keys through the store.
impl FromRef<AppState> for Store {
    fn from_ref(state: &AppState) -> Store {
        state.store.clone()
    }
}

/// Links are made under the configured public base URL.
impl FromRef<AppState> for PublicUrl {
    fn from_ref(state: &AppState) -> PublicUrl {
        PublicUrl(state.settings.public_url.clone())
    }
}

impl AppState {
    /// The state handlers share; `codes` must be the same key on every node of one database.
    /// Earns are stored once the node's runtime has started the inbox's writer.
    pub fn new(store: Store, codes: CodeKey) -> Self {
        let earn_waiting = Arc::new(Notify::new());
        AppState {
            rule_book: RuleBook::new(store.programme().clone()),
            catalogues: Catalogues::new(store.catalogue().clone()),
            rendered: Default::default(),
            earn_inbox: EarnInbox::new(),
            store,
            metrics: metrics_handle(),
            earn_waiting,
            deliveries_waiting: Arc::new(Notify::new()),
            codes: Arc::new(codes),
            settings: Settings::default(),
        }
    }

    pub fn with_settings(mut self, settings: Settings) -> Self {
        self.settings = settings;
        self
    }
}

/// The process-wide Prometheus recorder. Installed once, however many servers a process starts
/// (tests start many).
fn metrics_handle() -> PrometheusHandle {
    static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();
    HANDLE
        .get_or_init(|| {
            let recorder = PrometheusBuilder::new()
                .set_buckets_for_metric(
                    Matcher::Full("http_request_duration_seconds".into()),
                    &[
                        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
                    ],
                )
                .expect("bucket list is not empty")
                .build_recorder();
            let handle = recorder.handle();
            // Fails only if another recorder is installed, which this process never does.
            let _ = metrics::set_global_recorder(recorder);
            handle
        })
        .clone()
}
