//! What the operators' handlers can reach: the client API's state (the store, its caches and
//! keys, the settings), so that both listeners of one node share them, and how long sessions
//! last.

use api::AppState;
use axum::extract::FromRef;
use store::SessionLimits;

#[derive(Clone)]
pub struct AdminState {
    pub app: AppState,
    pub sessions: SessionLimits,
}

impl AdminState {
    pub fn new(app: AppState) -> AdminState {
        AdminState {
            app,
            sessions: SessionLimits::default(),
        }
    }

    pub fn store(&self) -> &store::Store {
        &self.app.store
    }
}

/// The readiness check is the client API's.
impl FromRef<AdminState> for AppState {
    fn from_ref(state: &AdminState) -> AppState {
        state.app.clone()
    }
}
