//! What the operators' handlers can reach: the client API's state (the store, its caches and
//! keys, the settings), so that both listeners of one node share them, how long sessions last,
//! and the data directory (the SFTP host key, the organisations' folders of files and reports).

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use api::AppState;
use axum::extract::FromRef;
use chrono::{DateTime, Utc};
use store::SessionLimits;

#[derive(Clone)]
pub struct AdminState {
    pub app: AppState,
    pub sessions: SessionLimits,
    pub data_dir: PathBuf,
    /// The exports this node is writing or has written.
    pub exports: ExportJobs,
    /// The batch files this node's pipeline is loading, and how far each has got.
    pub live_batches: ingest::batch::live::LiveBatches,
    /// The campaigns' recorded days this node has summed.
    pub closed_days: crate::recorded_days::ClosedDays,
    /// The campaigns' overviews this node answered last, while nothing was recorded since.
    pub overviews: crate::recorded_days::Latest,
}

impl AdminState {
    pub fn new(app: AppState, data_dir: PathBuf) -> AdminState {
        AdminState {
            app,
            sessions: SessionLimits::default(),
            data_dir,
            exports: Default::default(),
            live_batches: Default::default(),
            closed_days: Default::default(),
            overviews: Default::default(),
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

/// The exports this node has started, by organisation and file name.
#[derive(Clone, Default)]
pub struct ExportJobs(pub(crate) Arc<Mutex<HashMap<(String, String), ExportJob>>>);

/// An export this node started: how far it is, and how it ended.
#[derive(Debug, Clone)]
pub struct ExportJob {
    pub started_at: DateTime<Utc>,
    pub rows: u64,
    pub of: u64,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

impl ExportJobs {
    pub fn update(&self, org: &str, name: &str, change: impl FnOnce(&mut ExportJob)) {
        let mut jobs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(job) = jobs.get_mut(&(org.to_owned(), name.to_owned())) {
            change(job);
        }
    }

    pub fn of_org(&self, org: &str) -> HashMap<String, ExportJob> {
        let jobs = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        jobs.iter()
            .filter(|((o, _), _)| o == org)
            .map(|((_, name), job)| (name.clone(), job.clone()))
            .collect()
    }
}
