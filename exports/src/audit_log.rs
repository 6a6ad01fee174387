//! The audit trail to a file: the entries a filter picks, oldest first, as CSV or Parquet (the
//! same columns; `at` a UTC timestamp in Parquet). Written like a ledger export: a chunk at a
//! time by a blocking task, under a hidden name until complete.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

use columnar::{ParquetSink, Values};
use store::audit::chain::Entry;
use store::audit::log::{AuditFilter, each};
use store::{ExportFormat, Store};
use tokio::sync::mpsc;

/// The columns of an audit export, in order.
pub const COLUMNS: [&str; 16] = [
    "seq",
    "at",
    "actorKind",
    "actorId",
    "actorName",
    "operation",
    "orgId",
    "target",
    "before",
    "after",
    "address",
    "userAgent",
    "requestId",
    "outcome",
    "prevHash",
    "hash",
];

/// Writes the entries `filter` picks to `path` in `format`; how many were written. On an error
/// nothing is left at `path`.
pub async fn export(
    store: &Store,
    filter: &AuditFilter,
    path: &Path,
    format: ExportFormat,
) -> Result<u64, String> {
    let temporary = super::hidden_temporary(path)?;
    let (send, chunks) = mpsc::channel::<Vec<Entry>>(2);
    let writing = {
        let temporary = temporary.clone();
        tokio::task::spawn_blocking(move || write(&temporary, format, chunks))
    };
    let read = each(store.db(), filter, send).await;
    let written = writing
        .await
        .map_err(|e| format!("the export's writer failed: {e}"))
        .and_then(|written| written);
    let finished = match (read, written) {
        (Ok(read), Ok(written)) if read == written => Ok(written),
        (Ok(read), Ok(written)) => Err(format!("{read} entries read but {written} written")),
        (Err(err), _) => Err(err.to_string()),
        (_, Err(err)) => Err(err),
    }
    .and_then(|rows| {
        std::fs::rename(&temporary, path)
            .map(|_| rows)
            .map_err(|e| format!("putting {} in place: {e}", path.display()))
    });
    if finished.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    finished
}

/// An entry's fields as text, in `COLUMNS` order.
fn texts(e: &Entry) -> [Option<String>; 16] {
    [
        Some(e.seq.to_string()),
        Some(e.at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)),
        Some(e.actor_kind.clone()),
        e.actor_id.clone(),
        Some(e.actor_name.clone()),
        Some(e.operation.clone()),
        e.org_id.clone(),
        e.target.clone(),
        e.before.clone(),
        e.after.clone(),
        e.address.clone(),
        e.user_agent.clone(),
        e.request_id.clone(),
        Some(e.outcome.clone()),
        Some(e.prev_hash.clone()),
        Some(e.hash.clone()),
    ]
}

fn write(
    path: &Path,
    format: ExportFormat,
    mut chunks: mpsc::Receiver<Vec<Entry>>,
) -> Result<u64, String> {
    let mut written = 0u64;
    let failed = |e: &dyn std::fmt::Display| format!("writing {}: {e}", path.display());
    match format {
        ExportFormat::Parquet => {
            let mut sink = ParquetSink::create(path)?;
            let mut empty = true;
            while let Some(chunk) = chunks.blocking_recv() {
                written += chunk.len() as u64;
                sink.write(parquet_columns(&chunk))?;
                empty = false;
            }
            if empty {
                sink.write(parquet_columns(&[]))?;
            }
            sink.finish()?;
        }
        ExportFormat::Csv => {
            let file = File::create(path).map_err(|e| failed(&e))?;
            let mut out = csv::Writer::from_writer(BufWriter::new(file));
            out.write_record(COLUMNS).map_err(|e| failed(&e))?;
            while let Some(chunk) = chunks.blocking_recv() {
                written += chunk.len() as u64;
                for entry in &chunk {
                    let record = texts(entry).map(Option::unwrap_or_default);
                    out.write_record(&record).map_err(|e| failed(&e))?;
                }
            }
            out.into_inner()
                .map_err(|e| e.to_string())
                .and_then(|mut file| file.flush().map_err(|e| e.to_string()))
                .map_err(|e| failed(&e))?;
        }
    }
    File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|e| failed(&e))?;
    Ok(written)
}

fn parquet_columns(chunk: &[Entry]) -> Vec<(String, Values)> {
    let rows: Vec<[Option<String>; 16]> = chunk.iter().map(texts).collect();
    COLUMNS
        .iter()
        .enumerate()
        .map(|(column, name)| {
            let values = match column {
                0 => Values::Scaled {
                    units: chunk.iter().map(|e| Some(e.seq)).collect(),
                    precision: 19,
                    scale: 0,
                },
                1 => Values::Timestamp {
                    micros: chunk
                        .iter()
                        .map(|e| Some(e.at.timestamp_micros()))
                        .collect(),
                    utc: true,
                },
                _ => Values::Text(rows.iter().map(|row| row[column].clone()).collect()),
            };
            ((*name).to_owned(), values)
        })
        .collect()
}
