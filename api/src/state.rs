//! What every handler and background worker can reach.

use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;
use store::{RuleBook, Store};
use tokio::sync::Notify;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub metrics: PrometheusHandle,
    /// Each campaign's active rule set, cached.
    pub rule_book: RuleBook,
    /// Woken when an earn is accepted, so this process's worker starts on it at once.
    pub earn_waiting: Arc<Notify>,
}

impl AppState {
    pub fn new(store: Store) -> Self {
        AppState {
            rule_book: RuleBook::new(store.clone()),
            store,
            metrics: crate::ops::metrics_handle(),
            earn_waiting: Arc::new(Notify::new()),
        }
    }
}
