//! Processing a received CSV file in the canonical layout: streamed in chunks, each row mapped and
//! checked (`rows`), repeated ids in the file rejected, the rest evaluated and credited
//! (`Store::credit_file_earns`), and two reports written into the organisation's `reports/`:
//! `<file>.result.json` (counts, tokens, timings) and `<file>.rejected.csv` (each rejected row
//! with its number, reason code, column, value, message and original fields). The batch record
//! carries the same summary.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde_json::json;
use store::{
    Batch, BatchFinish, BatchState, FileEarn, FileOutcome, RuleBook, Store, StoreError, Tokens,
};

use crate::rows::{Layout, Reason, Rejection};
use crate::sftp::tree::{Folder, Tree};

/// Rows credited per database transaction.
const CHUNK: usize = 5_000;

/// What processing a file came to.
#[derive(Debug, Default)]
struct Tally {
    rows: i64,
    loaded: i64,
    duplicates: i64,
    /// Rows an interrupted earlier attempt had already credited (their tokens are not in
    /// `tokens`).
    resumed: i64,
    tokens: Tokens,
    /// Tokens per rule, from each credited row's trace.
    by_rule: BTreeMap<String, Tokens>,
}

/// The spooled file of `batch`.
pub fn spooled(data_dir: &Path, batch: &Batch) -> Option<PathBuf> {
    let spool = crate::intake::spool_dir(data_dir, &batch.org_id);
    let prefix = format!("{}__", batch.id);
    std::fs::read_dir(spool)
        .ok()?
        .flatten()
        .find(|f| f.file_name().to_string_lossy().starts_with(&prefix))
        .map(|f| f.path())
}

/// Processes a claimed batch to its end (`completed`, or `failed` with the reason) and writes
/// its reports. An `Err` is a store failure: the batch stays claimed and is taken up again when
/// its lease runs out; rows credited meanwhile are never credited twice.
pub async fn process(
    store: &Store,
    book: &RuleBook,
    data_dir: &Path,
    batch: &Batch,
) -> Result<BatchState, StoreError> {
    let started = Instant::now();
    let tree = Tree::open(data_dir, &batch.org_id)
        .map_err(|e| StoreError::NotCommitted(format!("the organisation's folders: {e}")))?;
    let mut rejected = Rejected::open(&tree, &batch.file_name)?;
    let outcome = match spooled(data_dir, batch) {
        None => Err("the received file is missing from the spool".to_string()),
        Some(path) => read(store, book, batch, &path, &mut rejected).await?,
    };
    let rejected_count = rejected.count;
    rejected.finish()?;
    let seconds = started.elapsed().as_secs_f64();
    let (state, tally, error) = match outcome {
        Ok(tally) => (BatchState::Completed, tally, None),
        Err(error) => (BatchState::Failed, Tally::default(), Some(error)),
    };
    let summary = json!({
        "batch": batch.id,
        "file": batch.file_name,
        "state": state.as_str(),
        "rows": tally.rows,
        "loaded": tally.loaded,
        "rejected": rejected_count,
        "duplicates": tally.duplicates,
        "loadedBeforeRestart": tally.resumed,
        "tokens": tally.tokens,
        "tokensByRule": tally.by_rule,
        "error": error,
        "seconds": seconds,
        "rowsPerSecond": if seconds > 0.0 { tally.rows as f64 / seconds } else { 0.0 },
        "rejectedReport": format!("{}.rejected.csv", batch.file_name),
    });
    let report = tree.file(Folder::Reports, &format!("{}.result.json", batch.file_name));
    write_atomically(
        &report,
        &serde_json::to_vec_pretty(&summary).unwrap_or_default(),
    )?;
    store
        .finish_batch(
            &batch.id,
            BatchFinish {
                state,
                rows: tally.rows,
                loaded: tally.loaded,
                rejected: rejected_count,
                summary,
                error,
            },
        )
        .await?;
    tracing::info!(batch = %batch.id, org = %batch.org_id, file = %batch.file_name,
        state = state.as_str(), rows = tally.rows, loaded = tally.loaded, rejected = rejected_count,
        seconds, "batch processed");
    Ok(state)
}

/// Reads and loads the file; the inner `Err` is why the whole file was refused.
async fn read(
    store: &Store,
    book: &RuleBook,
    batch: &Batch,
    path: &Path,
    rejected: &mut Rejected,
) -> Result<Result<Tally, String>, StoreError> {
    let file = match std::fs::File::open(path) {
        Ok(file) => file,
        Err(err) => return Ok(Err(format!("the received file cannot be read: {err}"))),
    };
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(file);
    let header: Vec<String> = match reader.headers() {
        Ok(header) => header.iter().map(String::from).collect(),
        Err(err) => return Ok(Err(format!("the header row cannot be read: {err}"))),
    };
    let layout = match Layout::from_header(&header) {
        Ok(layout) => layout,
        Err(errors) => return Ok(Err(errors.join("; "))),
    };
    rejected.header(&header)?;
    let mut tally = Tally::default();
    let mut seen: HashSet<String> = HashSet::new();
    let mut chunk = Chunk::default();
    let mut record = csv::ByteRecord::new();
    let mut row: u64 = 1;
    loop {
        match reader.read_byte_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(err) => {
                return Ok(Err(format!(
                    "the file cannot be read past row {row}: {err}"
                )));
            }
        }
        row += 1;
        tally.rows += 1;
        let fields: Vec<String> = record
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        if std::str::from_utf8(record.as_slice()).is_err() {
            let rejection = Rejection {
                row,
                column: None,
                value: None,
                reason: Reason::BadEncoding,
                message: "not UTF-8 text".into(),
            };
            rejected.row(&rejection, &fields)?;
            continue;
        }
        match layout.earn(row, &fields) {
            Err(rejection) => rejected.row(&rejection, &fields)?,
            Ok(earn) if !seen.insert(earn.earn_id.clone()) => {
                let rejection = Rejection {
                    row,
                    column: Some("id".into()),
                    value: Some(earn.earn_id),
                    reason: Reason::DuplicateInFile,
                    message: "the same id appears earlier in the file".into(),
                };
                rejected.row(&rejection, &fields)?;
            }
            Ok(earn) => {
                chunk.earns.push(FileEarn { row, earn });
                chunk.fields.push(fields);
                if chunk.earns.len() == CHUNK {
                    load(store, book, batch, &mut chunk, &mut tally, rejected).await?;
                }
            }
        }
    }
    load(store, book, batch, &mut chunk, &mut tally, rejected).await?;
    Ok(Ok(tally))
}

/// Checked rows waiting to be credited, with their original fields for the report.
#[derive(Default)]
struct Chunk {
    earns: Vec<FileEarn>,
    fields: Vec<Vec<String>>,
}

async fn load(
    store: &Store,
    book: &RuleBook,
    batch: &Batch,
    chunk: &mut Chunk,
    tally: &mut Tally,
    rejected: &mut Rejected,
) -> Result<(), StoreError> {
    if chunk.earns.is_empty() {
        return Ok(());
    }
    let outcomes = store
        .credit_file_earns(book, &batch.org_id, &batch.id, &chunk.earns)
        .await?;
    crash_point();
    store.renew_batch(&batch.id).await?;
    let rows = chunk.earns.drain(..).zip(chunk.fields.drain(..));
    for ((earn, fields), outcome) in rows.zip(outcomes) {
        let refusal = |reason: Reason, column: &str, value: &str, message: String| Rejection {
            row: earn.row,
            column: Some(column.into()),
            value: Some(value.into()),
            reason,
            message,
        };
        match outcome {
            FileOutcome::Credited { tokens, trace, .. } => {
                tally.loaded += 1;
                tally.tokens = tally.tokens.checked_add(tokens).unwrap_or(tally.tokens);
                for (rule, amount) in trace_parts(&trace) {
                    let total = tally.by_rule.entry(rule).or_default();
                    *total = total.checked_add(amount).unwrap_or(*total);
                }
            }
            // Credited by this batch before the process stopped: loaded, once.
            FileOutcome::CreditedBefore { .. } => {
                tally.loaded += 1;
                tally.resumed += 1;
            }
            FileOutcome::Duplicate { .. } => {
                tally.duplicates += 1;
                let message = "this id was already credited".to_string();
                let rejection = refusal(
                    Reason::DuplicateTransaction,
                    "id",
                    &earn.earn.earn_id,
                    message,
                );
                rejected.row(&rejection, &fields)?;
            }
            FileOutcome::UnknownWallet => {
                let message = "no wallet has this id or reference".to_string();
                let rejection = refusal(
                    Reason::UnknownWallet,
                    "walletId",
                    &earn.earn.wallet,
                    message,
                );
                rejected.row(&rejection, &fields)?;
            }
            FileOutcome::Refused(reason) => {
                let rejection = refusal(Reason::RulesRefused, "amount", &earn.earn.amount, reason);
                rejected.row(&rejection, &fields)?;
            }
        }
    }
    Ok(())
}

/// Fault injection for the crash tests: with `REWARDS_TEST_CRASH_AFTER_CHUNKS=N` set, the
/// process dies (as by `kill -9`: no cleanup) right after its N-th chunk is committed.
fn crash_point() {
    static AFTER: std::sync::LazyLock<Option<u64>> = std::sync::LazyLock::new(|| {
        std::env::var("REWARDS_TEST_CRASH_AFTER_CHUNKS")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    static CHUNKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(after) = *AFTER {
        let done = CHUNKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if done >= after {
            tracing::error!(
                chunks = done,
                "REWARDS_TEST_CRASH_AFTER_CHUNKS reached: aborting"
            );
            std::process::abort();
        }
    }
}

/// `base:+65;weekend:+65;~:-0.25` → (rule, tokens) pairs.
fn trace_parts(trace: &str) -> impl Iterator<Item = (String, Tokens)> + '_ {
    trace.split(';').filter_map(|part| {
        let (rule, amount) = part.split_once(':')?;
        let amount: rules::Decimal = amount.trim_start_matches('+').parse().ok()?;
        Some((rule.to_string(), Tokens::from_decimal(amount).ok()?))
    })
}

/// The rejected-rows report, written beside the file's result as it goes.
struct Rejected {
    writer: csv::Writer<std::fs::File>,
    temporary: PathBuf,
    path: PathBuf,
    count: i64,
    header_written: bool,
}

fn io(err: impl std::fmt::Display) -> StoreError {
    StoreError::NotCommitted(format!("writing the report: {err}"))
}

impl Rejected {
    fn open(tree: &Tree, file_name: &str) -> Result<Rejected, StoreError> {
        let path = tree.file(Folder::Reports, &format!("{file_name}.rejected.csv"));
        let temporary = path.with_extension("csv.tmp");
        // Rejected rows keep their own number of fields (a ragged row stays ragged).
        let writer = csv::WriterBuilder::new()
            .flexible(true)
            .from_path(&temporary)
            .map_err(io)?;
        Ok(Rejected {
            writer,
            temporary,
            path,
            count: 0,
            header_written: false,
        })
    }

    fn header(&mut self, original: &[String]) -> Result<(), StoreError> {
        let mut header = vec!["row", "code", "column", "value", "message"];
        header.extend(original.iter().map(String::as_str));
        self.writer.write_record(&header).map_err(io)?;
        self.header_written = true;
        Ok(())
    }

    fn row(&mut self, rejection: &Rejection, fields: &[String]) -> Result<(), StoreError> {
        let mut record = vec![
            rejection.row.to_string(),
            rejection.reason.code().to_string(),
            rejection.column.clone().unwrap_or_default(),
            rejection.value.clone().unwrap_or_default(),
            rejection.message.clone(),
        ];
        record.extend(fields.iter().cloned());
        self.writer.write_record(&record).map_err(io)?;
        self.count += 1;
        Ok(())
    }

    /// Puts the report in place (a file refused whole has only the header line, or nothing).
    fn finish(mut self) -> Result<(), StoreError> {
        if !self.header_written {
            self.writer
                .write_record(["row", "code", "column", "value", "message"])
                .map_err(io)?;
        }
        self.writer.flush().map_err(io)?;
        drop(self.writer);
        std::fs::rename(&self.temporary, &self.path).map_err(io)
    }
}

fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    let temporary = path.with_extension("json.tmp");
    std::fs::write(&temporary, bytes).map_err(io)?;
    std::fs::rename(&temporary, path).map_err(io)
}

/// How often an idle node looks for received files.
const POLL: std::time::Duration = std::time::Duration::from_secs(1);

/// Processes received CSV batches, one at a time, until `stop` resolves. Several nodes may run
/// this at once: each batch is claimed by one. (XLSX batches wait for their reader.)
pub async fn run(store: Store, data_dir: PathBuf, stop: impl std::future::Future<Output = ()>) {
    let book = RuleBook::new(store.clone());
    tokio::pin!(stop);
    loop {
        let claimed = match store.claim_batches(1, ".csv").await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(%err, "could not claim batches");
                Vec::new()
            }
        };
        for batch in &claimed {
            if let Err(err) = process(&store, &book, &data_dir, batch).await {
                tracing::warn!(batch = %batch.id, %err, "batch interrupted; it will be taken up again");
            }
        }
        if claimed.is_empty() {
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}
