//! Ledger exports to files a data warehouse loads: Parquet (typed: amounts DECIMAL(38,6), times
//! UTC timestamps in microseconds) or CSV (the same columns as text). The store streams the
//! rows a chunk at a time; a blocking task writes each chunk as it comes (a Parquet row group
//! per chunk), so memory holds a few chunks whatever the size. The file appears under its name
//! only once complete: it is written under a hidden temporary name and renamed.

pub mod scheduled;

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use columnar::{ParquetSink, Values};
use store::{ExportFilter, ExportFormat, ExportRow, Store};
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
    ExportFormat::parse(extension)
}

/// Writes the organisation's transactions that `filter` picks to `path` in `format`, telling
/// `progress` the rows written so far after each chunk; how many rows were written. On an
/// error nothing is left at `path` (an earlier file there stays as it was).
pub async fn export(
    store: &Store,
    org_id: &str,
    filter: &ExportFilter,
    path: &Path,
    format: ExportFormat,
    progress: impl FnMut(u64) + Send + 'static,
) -> Result<u64, String> {
    let temporary = hidden_temporary(path)?;
    let (send, chunks) = mpsc::channel::<Vec<ExportRow>>(2);
    let writing = {
        let temporary = temporary.clone();
        tokio::task::spawn_blocking(move || write_chunks(&temporary, format, chunks, progress))
    };
    let read = store.export_transactions(org_id, filter, CHUNK, send).await;
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
    mut chunks: mpsc::Receiver<Vec<ExportRow>>,
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
                sink.write(parquet_columns(Vec::new()))?;
            }
            sink.finish()?;
        }
        ExportFormat::Csv => {
            let file =
                File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
            let mut out = csv::Writer::from_writer(BufWriter::with_capacity(1 << 20, file));
            let failed = |e: csv::Error| format!("writing {}: {e}", path.display());
            out.write_record(COLUMNS).map_err(failed)?;
            while let Some(chunk) = chunks.blocking_recv() {
                written += chunk.len() as u64;
                for row in chunk {
                    out.write_record(csv_record(row)).map_err(failed)?;
                }
                progress(written);
            }
            let mut file = out
                .into_inner()
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
            file.flush()
                .and_then(|_| file.get_ref().sync_all())
                .map_err(|e| format!("writing {}: {e}", path.display()))?;
        }
    }
    Ok(written)
}

/// A time as an export's text holds it: RFC 3339 in UTC (`2026-11-23T08:15:00Z`).
fn time_text(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, true)
}

/// Micro-tokens as exact decimal text, without trailing zeros (`12.5`, `-3`).
pub fn tokens_text(micros: i64) -> String {
    let (sign, magnitude) = if micros < 0 {
        ("-", micros.unsigned_abs())
    } else {
        ("", micros as u64)
    };
    let (whole, fraction) = (magnitude / 1_000_000, magnitude % 1_000_000);
    if fraction == 0 {
        return format!("{sign}{whole}");
    }
    let digits = format!("{fraction:06}");
    format!("{sign}{whole}.{}", digits.trim_end_matches('0'))
}

fn csv_record(row: ExportRow) -> [String; 18] {
    let text = |value: Option<String>| value.unwrap_or_default();
    [
        row.id,
        row.campaign_id,
        row.wallet_id,
        text(row.wallet_reference),
        row.member_id,
        row.kind,
        tokens_text(row.amount),
        row.currency,
        time_text(row.date),
        text(row.external_id),
        text(row.source_amount),
        text(row.description),
        text(row.comment),
        text(row.meta),
        text(row.rules_trace),
        row.rules_version.map(|v| v.to_string()).unwrap_or_default(),
        text(row.batch_id),
        time_text(row.created_at),
    ]
}

/// A chunk as Parquet columns (named as `COLUMNS`), its values moved rather than copied.
fn parquet_columns(chunk: Vec<ExportRow>) -> Vec<(String, Values)> {
    let n = chunk.len();
    let texts = || Vec::with_capacity(n);
    let (mut id, mut campaign, mut wallet, mut reference, mut member, mut kind) =
        (texts(), texts(), texts(), texts(), texts(), texts());
    let (mut currency, mut external, mut source, mut description, mut comment, mut meta) =
        (texts(), texts(), texts(), texts(), texts(), texts());
    let (mut trace, mut batch) = (texts(), texts());
    let (mut amount, mut version) = (Vec::with_capacity(n), Vec::with_capacity(n));
    let (mut date, mut created) = (Vec::with_capacity(n), Vec::with_capacity(n));
    for row in chunk {
        id.push(Some(row.id));
        campaign.push(Some(row.campaign_id));
        wallet.push(Some(row.wallet_id));
        reference.push(row.wallet_reference);
        member.push(Some(row.member_id));
        kind.push(Some(row.kind));
        amount.push(Some(row.amount));
        currency.push(Some(row.currency));
        date.push(Some(row.date.timestamp_micros()));
        external.push(row.external_id);
        source.push(row.source_amount);
        description.push(row.description);
        comment.push(row.comment);
        meta.push(row.meta);
        trace.push(row.rules_trace);
        version.push(row.rules_version);
        batch.push(row.batch_id);
        created.push(Some(row.created_at.timestamp_micros()));
    }
    let timestamp = |micros| Values::Timestamp { micros, utc: true };
    let values = [
        Values::Text(id),
        Values::Text(campaign),
        Values::Text(wallet),
        Values::Text(reference),
        Values::Text(member),
        Values::Text(kind),
        Values::Scaled {
            units: amount,
            precision: 38,
            scale: 6,
        },
        Values::Text(currency),
        timestamp(date),
        Values::Text(external),
        Values::Text(source),
        Values::Text(description),
        Values::Text(comment),
        Values::Text(meta),
        Values::Text(trace),
        Values::Int(version),
        Values::Text(batch),
        timestamp(created),
    ];
    COLUMNS
        .iter()
        .map(|name| name.to_string())
        .zip(values)
        .collect()
}
