//! What the operators' handlers can reach: the client API's state (the store, its caches and
//! keys, the settings), so that both listeners of one node share them, how long sessions last,
//! and the data directory (the SFTP host key, the organisations' folders of files and reports).

use std::path::PathBuf;

use api::AppState;
use axum::extract::FromRef;
use store::SessionLimits;

#[derive(Clone)]
pub struct AdminState {
    pub app: AppState,
    pub sessions: SessionLimits,
    pub data_dir: PathBuf,
    /// The exports this node is writing or has written.
    pub exports: crate::exports::ExportJobs,
}

impl AdminState {
    pub fn new(app: AppState, data_dir: PathBuf) -> AdminState {
        AdminState {
            app,
            sessions: SessionLimits::default(),
            data_dir,
            exports: Default::default(),
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
