//! Ledger exports, their one home: an organisation's transactions to files a data warehouse
//! loads, on demand (`export`, the `rewards export transactions` command) and daily
//! (`scheduled`). The rows come from `store`'s export stream (`store/src/exports`: the one query,
//! and the schedules with the claim of each due day by one node); everything about files is
//! here.
//!
//! Files are Parquet (typed: amounts DECIMAL(38,6), times UTC timestamps in microseconds) or CSV
//! (the same columns as text). The store streams the rows a chunk at a time; a blocking task writes each chunk as it comes (a Parquet row group
//! per chunk), so memory holds a few chunks whatever the size. The file appears under its name
//! only once complete: it is written under a hidden temporary name and renamed. The operators'
//! audit trail goes out the same way (`audit_log`).

pub mod audit_log;
pub mod scheduled;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use columnar::{ParquetSink, Values};
use store::{ExportChunk, ExportFilter, ExportFormat, OrgScope, Store, Texts};
use tokio::sync::mpsc;

/// Rows per chunk, and per Parquet row group.
pub const CHUNK: usize = 100_000;

/// The columns of every export, in order.
pub const COLUMNS: [&str; 18] = [
    "id",
    "campaignId",
    "walletId",
    "walletReference",
    "memberId",
    "type",
    "amount",
    "currency",
    "date",
    "externalId",
    "sourceAmount",
    "description",
    "comment",
    "meta",
    "rulesTrace",
    "rulesVersion",
    "batchId",
    "createdAt",
];

/// The format a file name asks for: `.parquet` or `.csv`.
pub fn format_of(path: &Path) -> Option<ExportFormat> {
    let extension = path.extension()?.to_str()?;
    ExportFormat::parse_any_case(extension)
}

/// Writes the organisation's transactions that `filter` picks to `path` in `format`, telling
/// `progress` the rows written so far after each chunk; how many rows were written. On an
/// error nothing is left at `path` (an earlier file there stays as it was).
pub async fn export(
    store: &Store,
    org: &OrgScope,
    filter: &ExportFilter,
    path: &Path,
    format: ExportFormat,
    progress: impl FnMut(u64) + Send + 'static,
) -> Result<u64, String> {
    let temporary = hidden_temporary(path)?;
    let (send, chunks) = mpsc::channel::<ExportChunk>(2);
    let writing = {
        let temporary = temporary.clone();
        tokio::task::spawn_blocking(move || write_chunks(&temporary, format, chunks, progress))
    };
    let read = store.export_transactions(org, filter, CHUNK, send).await;
    let written = writing
        .await
        .map_err(|e| format!("the export's writer failed: {e}"))
        .and_then(|written| written);
    let finished = match (read, written) {
        (Ok(read), Ok(written)) if read == written => Ok(written),
        (Ok(read), Ok(written)) => Err(format!("{read} rows read but {written} written")),
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

/// `.<name>.tmp` beside `path`: hidden from SFTP listings and the inbox watcher.
fn hidden_temporary(path: &Path) -> Result<PathBuf, String> {
    let name = path
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or_else(|| format!("{} is not a file name", path.display()))?;
    Ok(path.with_file_name(format!(".{name}.tmp")))
}

/// Writes every chunk `chunks` brings to a new file at `path`; the rows written.
fn write_chunks(
    path: &Path,
    format: ExportFormat,
    mut chunks: mpsc::Receiver<ExportChunk>,
    mut progress: impl FnMut(u64),
) -> Result<u64, String> {
    let mut written = 0u64;
    match format {
        ExportFormat::Parquet => {
            let mut sink = ParquetSink::create(path)?;
            let mut empty = true;
            while let Some(chunk) = chunks.blocking_recv() {
                written += chunk.len() as u64;
                sink.write(parquet_columns(chunk))?;
                empty = false;
                progress(written);
            }
            if empty {
                // The schema alone: a reader sees the columns and no rows.
                sink.write(parquet_columns(ExportChunk::default()))?;
            }
            sink.finish()?;
        }
        ExportFormat::Csv => {
            let file =
                File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            let mut out = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
            let failed = |e: csv::Error| format!("writing {}: {e}", path.display());
            out.write_record(COLUMNS).map_err(failed)?;
            let mut text = String::new();
            while let Some(chunk) = chunks.blocking_recv() {
                written += chunk.len() as u64;
                write_csv(&mut out, &chunk, &mut text).map_err(failed)?;
                progress(written);
            }
            out.into_inner()
                .map_err(|e| e.to_string())
                .and_then(|mut file| file.flush().map_err(|e| e.to_string()))
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
    }
    // On disk before it is renamed into place (and, for a daily export, recorded as written).
    File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    Ok(written)
}

/// Micro-tokens as exact decimal text, without trailing zeros (`12.5`, `-3`), into `out`.
pub fn tokens_text(micros: i64, out: &mut String) {
    use std::fmt::Write as _;
    let (sign, magnitude) = if micros < 0 {
        ("-", micros.unsigned_abs())
    } else {
        ("", micros.unsigned_abs())
    };
    let (whole, fraction) = (magnitude / 1_000_000, magnitude % 1_000_000);
    let _ = write!(out, "{sign}{whole}");
    if fraction != 0 {
        let start = out.len();
        let _ = write!(out, ".{fraction:06}");
        let kept = out[start..].trim_end_matches('0').len();
        out.truncate(start + kept);
    }
}

/// Microseconds since 1970 as RFC 3339 in UTC (`2026-11-23T08:15:00Z`), into `out`.
fn time_text(micros: i64, out: &mut String) {
    use std::fmt::Write as _;
    if let Some(at) = DateTime::<Utc>::from_timestamp_micros(micros) {
        let _ = write!(out, "{}", at.format("%Y-%m-%dT%H:%M:%S%.fZ"));
    }
}

/// The chunk's rows as CSV records; `text` is scratch space for numbers and times.
fn field(texts: &Texts, i: usize) -> &[u8] {
    texts.get(i).unwrap_or_default().as_bytes()
}

fn write_csv<W: Write>(
    out: &mut csv::Writer<W>,
    chunk: &ExportChunk,
    text: &mut String,
) -> Result<(), csv::Error> {
    use std::fmt::Write as _;
    let c = chunk;
    for i in 0..c.len() {
        for texts in [
            &c.id,
            &c.campaign_id,
            &c.wallet_id,
            &c.wallet_reference,
            &c.member_id,
        ] {
            out.write_field(field(texts, i))?;
        }
        out.write_field(field(&c.kind, i))?;
        formatted(out, text, |t| tokens_text(c.amount[i], t))?;
        out.write_field(field(&c.currency, i))?;
        formatted(out, text, |t| time_text(c.date[i], t))?;
        for texts in [
            &c.external_id,
            &c.source_amount,
            &c.description,
            &c.comment,
            &c.meta,
        ] {
            out.write_field(field(texts, i))?;
        }
        out.write_field(field(&c.rules_trace, i))?;
        formatted(out, text, |t| {
            if let Some(version) = c.rules_version[i] {
                let _ = write!(t, "{version}");
            }
        })?;
        out.write_field(field(&c.batch_id, i))?;
        formatted(out, text, |t| time_text(c.created_at[i], t))?;
        out.write_record(None::<&[u8]>)?;
    }
    Ok(())
}

/// Writes the field `fill` puts in `text` (scratch space, emptied first).
fn formatted<W: Write>(
    out: &mut csv::Writer<W>,
    text: &mut String,
    fill: impl FnOnce(&mut String),
) -> Result<(), csv::Error> {
    text.clear();
    fill(text);
    out.write_field(text.as_bytes())
}

/// A chunk as Parquet columns (named as `COLUMNS`), its buffers moved rather than copied.
fn parquet_columns(chunk: ExportChunk) -> Vec<(String, Values)> {
    let packed = |texts: Texts| {
        let (bytes, ends, present) = texts.into_parts();
        Values::Packed {
            bytes,
            ends,
            present,
        }
    };
    let timestamp = |micros: Vec<i64>| Values::Timestamp {
        micros: micros.into_iter().map(Some).collect(),
        utc: true,
    };
    let values = [
        packed(chunk.id),
        packed(chunk.campaign_id),
        packed(chunk.wallet_id),
        packed(chunk.wallet_reference),
        packed(chunk.member_id),
        packed(chunk.kind),
        Values::Scaled {
            units: chunk.amount.into_iter().map(Some).collect(),
            precision: 38,
            scale: 6,
        },
        packed(chunk.currency),
        timestamp(chunk.date),
        packed(chunk.external_id),
        packed(chunk.source_amount),
        packed(chunk.description),
        packed(chunk.comment),
        packed(chunk.meta),
        packed(chunk.rules_trace),
        Values::Int(chunk.rules_version),
        packed(chunk.batch_id),
        timestamp(chunk.created_at),
    ];
    COLUMNS
        .iter()
        .map(std::string::ToString::to_string)
        .zip(values)
        .collect()
}
