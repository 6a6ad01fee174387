//! What every handler and background worker can reach.

use std::sync::Arc;

use metrics_exporter_prometheus::PrometheusHandle;
use store::{Catalogues, CodeKey, RuleBook, Store};
use tokio::sync::Notify;

use crate::jobs::inbox::EarnInbox;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub metrics: PrometheusHandle,
    /// Each campaign's active rule set, cached.
    pub rule_book: RuleBook,
    /// Each campaign's catalogue search index, cached.
    pub catalogues: Catalogues,
    /// Woken when an earn is accepted, so this process's worker starts on it at once.
    pub earn_waiting: Arc<Notify>,
    /// Gathers concurrent earn submissions into single writes.
    pub earn_inbox: EarnInbox,
    /// Seals and opens redemption codes. Never logged.
    pub codes: Arc<CodeKey>,
}

impl AppState {
    /// Must be called inside a Tokio runtime: it starts the earn inbox's task. `codes` must be
    /// the same key on every node of one database.
    pub fn new(store: Store, codes: CodeKey) -> Self {
        let earn_waiting = Arc::new(Notify::new());
        AppState {
            rule_book: RuleBook::new(store.clone()),
            catalogues: Catalogues::new(store.clone()),
            earn_inbox: EarnInbox::start(store.clone(), earn_waiting.clone()),
            store,
            metrics: crate::http::ops::metrics_handle(),
            earn_waiting,
            codes: Arc::new(codes),
        }
    }
}
