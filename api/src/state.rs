//! What every handler can reach.

use metrics_exporter_prometheus::PrometheusHandle;
use store::Store;

#[derive(Clone)]
pub struct AppState {
    pub store: Store,
    pub metrics: PrometheusHandle,
}

impl AppState {
    pub fn new(store: Store) -> Self {
        AppState {
            store,
            metrics: crate::ops::metrics_handle(),
        }
    }
}
