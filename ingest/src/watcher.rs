//! The inbox watcher: files placed in an organisation's inbox by other means (an operator, or an
//! OpenSSH or SFTPGo server at the edge writing to the same directory) are received once they
//! are complete: a final name (`.csv`, `.xlsx`), no change for a quiet period, and no upload in
//! progress (our SFTP server marks each open upload with a hidden `.NAME.uploading` file).
//! Filesystem events make this prompt; a rescan every few seconds catches what events miss.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use notify::{RecursiveMode, Watcher};
use store::Store;

use crate::error::{Context, IngestError};
use crate::folders::{is_final_name, marker_is_orphaned, upload_marker};
use crate::intake;

/// How long a file must stay unchanged before it counts as complete.
pub const QUIET: Duration = Duration::from_secs(2);
const TICK: Duration = Duration::from_millis(250);
const RESCAN: Duration = Duration::from_secs(5);
/// A marker this old belongs to an upload whose server died: the partial file is deleted.
const STALE_MARKER: Duration = Duration::from_secs(3600);

/// How the watcher runs: `Watching::default()` in the service; tests shorten the quiet period
/// and wait for passes rather than for time.
#[derive(Debug, Clone)]
pub struct Watching {
    /// How long a file must stay unchanged before it counts as complete.
    pub quiet: Duration,
    /// Raised at the end of each pass over the inboxes.
    pub passes: Arc<AtomicU64>,
}

impl Default for Watching {
    fn default() -> Self {
        Watching {
            quiet: QUIET,
            passes: Arc::default(),
        }
    }
}

/// Watches every organisation's inbox under `data_dir/sftp` until `stop` resolves.
pub async fn watch(
    store: Store,
    data_dir: PathBuf,
    watching: Watching,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), IngestError> {
    let root = data_dir.join("sftp");
    std::fs::create_dir_all(&root).context(root.display())?;
    let (events, changed) = mpsc::channel();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(event) = event {
            for path in event.paths {
                let _ = events.send(path);
            }
        }
    })
    .map_err(|e| watch_failed(&root, e))?;
    watcher
        .watch(&root, RecursiveMode::Recursive)
        .map_err(|e| watch_failed(&root, e))?;

    // A file's size and modification time when last looked at, and since when they held (on
    // the store's clock, which tests move instead of waiting).
    let clock = store.clock().clone();
    let mut pending: HashMap<PathBuf, (u64, SystemTime, Instant)> = HashMap::new();
    let mut last_scan: Option<Instant> = None;
    tokio::pin!(stop);
    loop {
        tokio::select! {
            () = &mut stop => return Ok(()),
            () = tokio::time::sleep(TICK) => {}
        }
        let mut candidates: Vec<PathBuf> = changed.try_iter().collect();
        if last_scan.is_none_or(|at| clock.instant() >= at + RESCAN) {
            let files = inbox_files(&root);
            clear_interrupted(&files);
            candidates.extend(files);
            last_scan = Some(clock.instant());
        }
        for path in candidates {
            pending
                .entry(path)
                .or_insert((u64::MAX, SystemTime::UNIX_EPOCH, clock.instant()));
        }
        let mut done = Vec::new();
        for (path, seen) in &mut pending {
            match check(path, seen, watching.quiet, clock.instant()) {
                Check::Wait => {}
                Check::Drop => done.push(path.clone()),
                Check::Ready { org_id, name } => {
                    done.push(path.clone());
                    // An inbox folder is named by its organisation, which the store must know.
                    let received = match store.tenancy().get_org(&org_id).await {
                        Ok(org) => {
                            intake::receive(
                                &store,
                                &data_dir,
                                &org.scope(),
                                path,
                                &name,
                                "inbox",
                                None,
                            )
                            .await
                        }
                        Err(err) => Err(err).context(format_args!("organisation {org_id}")),
                    };
                    if let Err(err) = received {
                        tracing::error!(file = %path.display(), %err, "an inbox file could not be received");
                    }
                }
            }
        }
        for path in done {
            pending.remove(&path);
        }
        watching.passes.fetch_add(1, Ordering::SeqCst);
    }
}

/// A watch that could not be set up, as the file system's error.
fn watch_failed(root: &Path, err: notify::Error) -> IngestError {
    let source = match err.kind {
        notify::ErrorKind::Io(io) => io,
        other => std::io::Error::other(format!("{other:?}")),
    };
    IngestError::Io {
        what: format!("watching {}", root.display()),
        source,
    }
}

enum Check {
    Wait,
    Drop,
    Ready { org_id: String, name: String },
}

/// Whether `path` is a complete inbox file at `now`: `seen` holds its last size and time and
/// since when.
fn check(
    path: &Path,
    seen: &mut (u64, SystemTime, Instant),
    quiet: Duration,
    now: Instant,
) -> Check {
    let Some((org_id, name)) = inbox_file(path) else {
        return Check::Drop;
    };
    if !is_final_name(&name) {
        return Check::Drop;
    }
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return Check::Drop;
    };
    if !meta.file_type().is_file() {
        return Check::Drop;
    }
    if upload_marker(path).exists() {
        return Check::Wait;
    }
    let found = (
        meta.len(),
        meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
    );
    if (seen.0, seen.1) != found {
        *seen = (found.0, found.1, now);
        return Check::Wait;
    }
    if now < seen.2 + quiet {
        return Check::Wait;
    }
    Check::Ready { org_id, name }
}

/// Deletes the uploads among `files` (an inbox's, markers included) that were interrupted: their
/// marker belongs to a process of this host that is gone (a restart after a crash), or is older
/// than `STALE_MARKER` (a node that died). Each is logged and leaves
/// `reports/<name>.interrupted.json` for the client.
fn clear_interrupted(files: &[PathBuf]) {
    for marker in files {
        let Some(name) = marker
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_prefix('.'))
            .and_then(|n| n.strip_suffix(".uploading"))
        else {
            continue;
        };
        let age = std::fs::metadata(marker)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|m| m.elapsed().ok());
        if !marker_is_orphaned(marker) && age.is_none_or(|age| age <= STALE_MARKER) {
            continue;
        }
        let path = marker.with_file_name(name);
        tracing::warn!(file = %path.display(), "an interrupted upload is deleted");
        let _ = std::fs::remove_file(&path);
        let _ = std::fs::remove_file(marker);
        let Some(org) = marker.parent().and_then(Path::parent) else {
            continue;
        };
        let record = serde_json::json!({
            "file": name,
            "state": "interrupted",
            "error": "the upload was interrupted (the connection or the service stopped before \
                      the file was closed); nothing of it was processed: send it again",
        });
        let report = org.join("reports").join(format!("{name}.interrupted.json"));
        let written = folders::write_atomically(
            &report,
            &serde_json::to_vec_pretty(&record).unwrap_or_default(),
        );
        if let Err(err) = written {
            tracing::error!(file = %report.display(), %err, "an interrupted upload's record could not be written");
        }
    }
}

/// `(org_id, name)` when `path` is `…/sftp/<org_id>/inbox/<name>` and not a hidden file.
fn inbox_file(path: &Path) -> Option<(String, String)> {
    let name = path.file_name()?.to_str()?;
    let inbox = path.parent()?;
    if inbox.file_name()? != "inbox" || name.starts_with('.') {
        return None;
    }
    let org = inbox.parent()?.file_name()?.to_str()?;
    Some((org.to_string(), name.to_string()))
}

fn inbox_files(root: &Path) -> Vec<PathBuf> {
    let Ok(orgs) = std::fs::read_dir(root) else {
        return Vec::new();
    };
    orgs.flatten()
        .filter_map(|org| std::fs::read_dir(org.path().join("inbox")).ok())
        .flat_map(|files| files.flatten().map(|f| f.path()))
        .collect()
}
