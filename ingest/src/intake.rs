//! Receiving a complete file. It leaves the inbox for the organisation's spool, so the client can
//! neither change it while it waits nor see it twice, its content is hashed, and a batch is
//! recorded: `received`, or `duplicate` when the organisation already sent this content (which
//! gets its report at once: it is never processed).
//! A file is in the spool before its batch exists; `recover` records any left there by a crash.

use std::io::Read;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};
use store::{Batch, BatchState, NewBatch, OrgScope, Store};

use crate::error::{Context, IngestError};
use folders::write_atomically;
use folders::{Folder, SIDECAR, Tree, spooled};
pub use folders::{sidecar_of, spool_dir};

/// Moves `inbox_file` (complete, named `file_name` by the client) into the spool and records
/// its batch.
pub async fn receive(
    store: &Store,
    data_dir: &Path,
    org: &OrgScope,
    inbox_file: &Path,
    file_name: &str,
    source: &str,
    username: Option<&str>,
) -> Result<Batch, IngestError> {
    let (id, spooled) = spool_path(data_dir, org.id(), source, file_name)?;
    std::fs::rename(inbox_file, &spooled)
        .with_context(|| format!("moving {} to the spool", inbox_file.display()))?;
    let sidecar = inbox_file.with_file_name(format!("{file_name}{SIDECAR}"));
    if sidecar.exists() {
        std::fs::rename(&sidecar, sidecar_of(&spooled, &id))
            .with_context(|| format!("moving {} to the spool", sidecar.display()))?;
    }
    let received = Received {
        file_name,
        source,
        username,
    };
    record(store, data_dir, org, id, &spooled, received).await
}

/// Copies `file` into the spool and records its batch, leaving the original where it is (the
/// operator's `rewards ingest`). The copy gets its spool name only once complete.
pub async fn receive_copy(
    store: &Store,
    data_dir: &Path,
    org: &OrgScope,
    file: &Path,
    file_name: &str,
    source: &str,
) -> Result<Batch, IngestError> {
    let (id, spooled) = spool_path(data_dir, org.id(), source, file_name)?;
    let partial = spooled.with_file_name(format!(".{id}.copying"));
    std::fs::copy(file, &partial).with_context(|| format!("copying {}", file.display()))?;
    let sidecar = file.with_file_name(format!("{file_name}{SIDECAR}"));
    if sidecar.exists() {
        std::fs::copy(&sidecar, sidecar_of(&spooled, &id))
            .with_context(|| format!("copying {}", sidecar.display()))?;
    }
    std::fs::rename(&partial, &spooled).context(spooled.display())?;
    let received = Received {
        file_name,
        source,
        username: None,
    };
    record(store, data_dir, org, id, &spooled, received).await
}

/// A new batch id and the spool path of its file.
fn spool_path(
    data_dir: &Path,
    org_id: &str,
    source: &str,
    file_name: &str,
) -> Result<(String, PathBuf), IngestError> {
    let id = store::new_id();
    let spool = spool_dir(data_dir, org_id);
    std::fs::create_dir_all(&spool).context(spool.display())?;
    Ok((id.clone(), spooled(&spool, &id, source, file_name)))
}

/// Who sent a file, and under which name.
struct Received<'a> {
    file_name: &'a str,
    source: &'a str,
    username: Option<&'a str>,
}

async fn record(
    store: &Store,
    data_dir: &Path,
    org: &OrgScope,
    id: String,
    spooled: &Path,
    received: Received<'_>,
) -> Result<Batch, IngestError> {
    let Received {
        file_name,
        source,
        username,
    } = received;
    let path = spooled.to_owned();
    let (size, sha256) = tokio::task::spawn_blocking(move || digest(&path))
        .await
        .context("hashing")?
        .with_context(|| format!("reading {}", spooled.display()))?;
    let batch = store
        .batches()
        .record_batch(
            org,
            NewBatch {
                id,
                file_name: file_name.to_string(),
                size,
                sha256,
                source: source.to_string(),
                username: username.map(String::from),
            },
        )
        .await
        .with_context(|| format!("recording the batch of {file_name}"))?;
    tracing::info!(
        batch = %batch.id, org = %org, user = username.unwrap_or("-"), file = file_name,
        size, state = batch.state.as_str(), duplicate_of = batch.duplicate_of.as_deref().unwrap_or("-"),
        "file received"
    );
    if batch.state == BatchState::Duplicate {
        duplicate_report(data_dir, &batch)?;
    }
    Ok(batch)
}

/// A duplicate's `reports/<file>.result.json`: processed never, it names the batch that holds
/// the same content, so a client that sent a file again learns why nothing was loaded.
fn duplicate_report(data_dir: &Path, batch: &Batch) -> Result<(), IngestError> {
    let earlier = batch.duplicate_of.as_deref().unwrap_or("an earlier batch");
    let summary = serde_json::json!({
        "batch": batch.id,
        "file": batch.file_name,
        "state": BatchState::Duplicate.as_str(),
        "dryRun": false,
        "duplicateOf": batch.duplicate_of,
        "rows": 0,
        "loaded": 0,
        "rejected": 0,
        "error": null,
        "message": format!(
            "this content was received before (batch {earlier}); nothing was loaded. A file \
             with changed content is processed."
        ),
    });
    let tree = Tree::open(data_dir, &batch.org_id).context("the organisation's folders")?;
    let report = tree.file(Folder::Reports, &format!("{}.result.json", batch.file_name));
    write_atomically(
        &report,
        &serde_json::to_vec_pretty(&summary).unwrap_or_default(),
    )
    .with_context(|| format!("writing {}", report.display()))
}

/// Size and hex SHA-256 of a file, read in pieces.
pub(crate) fn digest(path: &Path) -> std::io::Result<(i64, String)> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 256 * 1024];
    let mut size = 0i64;
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            break;
        }
        size += read as i64;
        hasher.update(&buffer[..read]);
    }
    let hex = hasher
        .finalize()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    Ok((size, hex))
}

/// Records every spooled file that has no batch yet (the process stopped between moving it and
/// recording it). Returns how many were recorded.
pub async fn recover(store: &Store, data_dir: &Path) -> Result<usize, IngestError> {
    let spool = data_dir.join("spool");
    let Ok(orgs) = std::fs::read_dir(&spool) else {
        return Ok(0);
    };
    let mut recovered = 0;
    for org in orgs.flatten() {
        let org_id = org.file_name().to_string_lossy().to_string();
        let Ok(files) = std::fs::read_dir(org.path()) else {
            continue;
        };
        for file in files.flatten() {
            let name = file.file_name().to_string_lossy().to_string();
            let mut parts = name.splitn(3, "__");
            let (Some(id), Some(source), Some(file_name)) =
                (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            // The spool's folders are named by organisations the store knows.
            let Ok(scope) = store
                .tenancy()
                .get_org(&org_id)
                .await
                .map(|org| org.scope())
            else {
                continue;
            };
            match store.batches().get_batch(&scope, id).await {
                Ok(_) => {}
                Err(store::StoreError::NotFound { .. }) => {
                    let id = id.to_string();
                    let received = Received {
                        file_name,
                        source,
                        username: None,
                    };
                    record(store, data_dir, &scope, id, &file.path(), received).await?;
                    recovered += 1;
                }
                Err(err) => {
                    return Err(err)
                        .with_context(|| format!("the batch of {}", file.path().display()));
                }
            }
        }
    }
    Ok(recovered)
}
