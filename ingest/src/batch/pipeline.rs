//! Processing a batch file: read as a stream of records (`records`), each mapped and checked in
//! parallel (`rows`, under the organisation's `mapping`), repeated ids in the file rejected, the
//! rest evaluated by the rules and credited in chunks (`FileLoad::credit`), and the two
//! reports written into the organisation's `reports/` (`reports`). The batch record carries the
//! same summary.
//!
//! A mapping whose acceptance policy is all-or-nothing, or has a rejection threshold, checks the
//! whole file first (crediting nothing) and loads it only if it passes. A dry run is that check
//! alone, reported under `<file>.dry-run.*`.
//!
//! An id repeated within a chunk is refused before the chunk is evaluated. One repeated from an
//! earlier chunk is refused as it is written, when it meets that row in the journal: a first
//! load keeps no list of the file's ids (for five million rows it would be 50 MiB). A check,
//! which writes nothing, and a load resumed after a crash, whose earlier attempt's rows the
//! journal cannot tell from repeats, keep one (`Seen`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rayon::prelude::*;
use serde_json::{Value, json};
use store::{
    ActivityOutcome, Batch, BatchFinish, BatchState, CreditingChunk, FileActivity, FileEarn,
    FileLoad, FileOutcome, FileReturn, FileTotals, OrgScope, ReturnOutcome, RuleBook, Store,
    StoreError, Tokens,
};

use crate::batch::live::LiveBatches;
use crate::batch::mapping::{Columns, Mapping};
use crate::batch::records::{Record, Records};
use crate::batch::reports::{Rejected, write_atomically};
use crate::batch::rows::{Layout, Reason, Rejection, Row};
use crate::batch::seen::Seen;
use crate::batch::stages::Stages;
use crate::error::{Context, IngestError};
use crate::folders::{Folder, Tree};

/// Rows read, checked and credited together. Two chunks are in memory at once (one being
/// credited, the next being read). Chunks do not decide how often their writes are made
/// durable (see `FileLoad`), and 5,000 rows load as fast as 10,000 with less peak memory
/// (`docs/performance.md`).
const CHUNK_ROWS: usize = 5_000;

/// `CHUNK_ROWS`; with the `test-hooks` feature, tests may set `REWARDS_TEST_CHUNK_ROWS` to see a
/// small file in several chunks.
fn chunk_rows() -> usize {
    #[cfg(feature = "test-hooks")]
    {
        static ROWS: std::sync::LazyLock<usize> = std::sync::LazyLock::new(|| {
            std::env::var("REWARDS_TEST_CHUNK_ROWS")
                .ok()
                .and_then(|v| v.parse().ok())
                .filter(|rows| *rows > 0)
                .unwrap_or(CHUNK_ROWS)
        });
        *ROWS
    }
    #[cfg(not(feature = "test-hooks"))]
    CHUNK_ROWS
}

pub use crate::batch::live::Progress;

/// A file to run through the pipeline.
pub struct Job<'a> {
    pub store: &'a Store,
    pub book: &'a RuleBook,
    pub org: &'a OrgScope,
    /// The batch the rows are credited under; `None`: a dry run, which credits nothing.
    pub batch_id: Option<&'a str>,
    /// The name the client gave the file (its extension says CSV or XLSX).
    pub file_name: &'a str,
    pub path: &'a Path,
    pub mapping: &'a Mapping,
    /// The folder the reports go to.
    pub reports: &'a Path,
    pub progress: &'a (dyn Fn(Progress) + Sync),
    /// Whether an earlier, interrupted attempt at the batch may have credited some of its rows:
    /// the journal then cannot tell such a row from a repeat of an id earlier in the file.
    pub resumed: bool,
}

/// How a file ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    pub state: BatchState,
    pub rows: u64,
    pub loaded: u64,
    pub rejected: u64,
    /// The content of `<file>.result.json`.
    pub summary: Value,
    pub error: Option<String>,
    /// Where the file's time went.
    pub stages: Stages,
}

/// What reading a file came to.
#[derive(Debug, Default)]
struct Tally {
    rows: u64,
    loaded: u64,
    duplicates: u64,
    /// Rows an interrupted earlier attempt had already credited (their tokens are not in
    /// `tokens`).
    resumed: u64,
    tokens: Tokens,
    /// Return rows reversed, and the tokens they took back.
    returns: u64,
    tokens_reversed: Tokens,
    /// Activity rows recorded (their awards are in `tokens`; in a dry run not evaluated).
    activities: u64,
    /// Tokens per rule, from each credited row's trace.
    by_rule: BTreeMap<String, Tokens>,
    by_reason: BTreeMap<&'static str, u64>,
    /// Why the file could not be read to its end (rows before that point count).
    error: Option<String>,
    stages: Stages,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// Evaluate and report; credit nothing.
    Check,
    Load,
}

/// The organisation's mapping for a file named `file_name` (the canonical layout without one);
/// the inner `Err` refuses the file (a stored mapping is not valid).
pub async fn mapping_for(
    store: &Store,
    org: &OrgScope,
    file_name: &str,
) -> Result<Result<Mapping, IngestError>, StoreError> {
    let mut mappings = Vec::new();
    for stored in store.batches().mappings(org).await? {
        match Mapping::parse(&stored.document) {
            Ok(mapping) => mappings.push(mapping),
            Err(errors) => {
                let errors: Vec<String> = errors.iter().map(ToString::to_string).collect();
                return Ok(Err(IngestError::refused(format!(
                    "the mapping `{}` is not valid: {}",
                    stored.pattern,
                    errors.join("; ")
                ))));
            }
        }
    }
    Ok(Ok(Mapping::choose(mappings, file_name)))
}

/// Runs `job` to its end and writes its reports. An `Err` is a store failure: nothing is
/// reported, and rows credited so far are never credited twice when the file is run again.
pub async fn run_file(job: &Job<'_>) -> Result<Outcome, StoreError> {
    let started = Instant::now();
    let dry_run = job.batch_id.is_none();
    let name = if dry_run {
        format!("{}.dry-run", job.file_name)
    } else {
        job.file_name.to_string()
    };
    let report = |suffix: &str| job.reports.join(format!("{name}.{suffix}"));
    let acceptance = job.mapping.acceptance;
    let first = if dry_run || acceptance.checks_first() {
        Mode::Check
    } else {
        Mode::Load
    };
    let mut rejected = Rejected::create(report("rejected.csv"))?;
    let mut tally = scan(job, first, &mut rejected).await?;
    let refusal = tally
        .error
        .is_none()
        .then(|| acceptance.refusal(tally.rows, rejected.count))
        .flatten();
    if first == Mode::Check && !dry_run {
        if refusal.is_none() && tally.error.is_none() {
            rejected = Rejected::create(report("rejected.csv"))?;
            let checked = tally.stages;
            tally = scan(job, Mode::Load, &mut rejected).await?;
            tally.stages += checked;
        } else {
            // Checked, not loaded: the counts say what was credited, which is nothing.
            tally.loaded = 0;
            tally.tokens = Tokens::ZERO;
            tally.returns = 0;
            tally.activities = 0;
            tally.by_rule.clear();
        }
    }
    let rejected_count = rejected.count;
    let reported = Instant::now();
    rejected.finish()?;
    let error = tally.error.clone().or(refusal);
    let state = if error.is_some() {
        BatchState::Failed
    } else {
        BatchState::Completed
    };
    let seconds = started.elapsed().as_secs_f64();
    let mapping = match job.mapping.columns {
        Columns::Canonical => "canonical".to_string(),
        Columns::Mapped(_) => job.mapping.pattern.clone(),
    };
    let summary = json!({
        "batch": job.batch_id,
        "file": job.file_name,
        "state": state.as_str(),
        "dryRun": dry_run,
        "mapping": mapping,
        "rows": tally.rows,
        "loaded": tally.loaded,
        "rejected": rejected_count,
        "rejectedByReason": tally.by_reason,
        "duplicates": tally.duplicates,
        "loadedBeforeRestart": tally.resumed,
        "tokens": tally.tokens,
        "tokensByRule": tally.by_rule,
        "returns": tally.returns,
        "tokensReversed": tally.tokens_reversed,
        "activities": tally.activities,
        "error": error,
        "seconds": seconds,
        "rowsPerSecond": if seconds > 0.0 { tally.rows as f64 / seconds } else { 0.0 },
        "rejectedReport": format!("{name}.rejected.csv"),
    });
    write_atomically(
        &report("result.json"),
        &serde_json::to_vec_pretty(&summary).unwrap_or_default(),
    )?;
    tally.stages.report += reported.elapsed();
    Ok(Outcome {
        state,
        rows: tally.rows,
        loaded: tally.loaded,
        rejected: rejected_count,
        summary,
        error,
        stages: tally.stages,
    })
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

/// Processes a claimed batch to its end (`completed`, or `failed` with the reason), writes its
/// reports and records the outcome. An `Err` is a store failure: the batch stays claimed and is
/// taken up again when its lease runs out; rows credited meanwhile are never credited twice.
pub async fn process(
    store: &Store,
    book: &RuleBook,
    data_dir: &Path,
    batch: &Batch,
    progress: &(dyn Fn(Progress) + Sync),
) -> Result<Outcome, StoreError> {
    let org = batch.org();
    let tree = Tree::open(data_dir, &batch.org_id)
        .map_err(|e| StoreError::NotCommitted(format!("the organisation's folders: {e}")))?;
    let reports = tree.file(Folder::Reports, "");
    let verifying = Instant::now();
    let found = match spooled(data_dir, batch) {
        None => Err(IngestError::refused(
            "the received file is missing from the spool",
        )),
        Some(path) => match unchanged(&path, batch).await {
            Err(error) => Err(error),
            Ok(()) => mapping_for(store, &org, &batch.file_name)
                .await?
                .map(|mapping| (path, mapping)),
        },
    };
    let verify = verifying.elapsed();
    let mut outcome = match found {
        Ok((path, mapping)) => {
            let job = Job {
                store,
                book,
                org: &org,
                batch_id: Some(&batch.id),
                file_name: &batch.file_name,
                path: &path,
                mapping: &mapping,
                reports: &reports,
                progress,
                resumed: batch.attempts > 1,
            };
            run_file(&job).await?
        }
        Err(error) => refused_whole(&reports, batch, error.to_string())?,
    };
    outcome.stages.verify += verify;
    let recording = Instant::now();
    store
        .batches()
        .finish_batch(
            &batch.id,
            BatchFinish {
                state: outcome.state,
                rows: outcome.rows as i64,
                loaded: outcome.loaded as i64,
                rejected: outcome.rejected as i64,
                summary: outcome.summary.clone(),
                error: outcome.error.clone(),
            },
        )
        .await?;
    outcome.stages.report += recording.elapsed();
    tracing::info!(batch = %batch.id, org = %batch.org_id, file = %batch.file_name,
        state = outcome.state.as_str(), rows = outcome.rows, loaded = outcome.loaded,
        rejected = outcome.rejected, stages = %outcome.stages, "batch processed");
    Ok(outcome)
}

/// Checks that the spooled file still holds the bytes its batch's size and SHA-256 were taken
/// from when it was received, so that the rows read are the bytes recorded, and that they are
/// the bytes its checksum sidecar (if the client sent one) names.
async fn unchanged(path: &Path, batch: &Batch) -> Result<(), IngestError> {
    const UNREAD: &str = "the received file could not be read";
    let sidecar = crate::intake::sidecar_of(path, &batch.id);
    let path = path.to_path_buf();
    let digest = tokio::task::spawn_blocking(move || crate::intake::digest(&path))
        .await
        .map_err(|e| IngestError::refused(format!("{UNREAD}: {e}")))?
        .context(UNREAD)?;
    if digest != (batch.size, batch.sha256.clone()) {
        return Err(IngestError::refused(
            "the file changed after it was received (its size or SHA-256 differs from the \
             batch's); nothing of it was processed: send it again",
        ));
    }
    if let Ok(text) = std::fs::read_to_string(&sidecar) {
        let expected = text.split_whitespace().next().unwrap_or_default();
        if !expected.eq_ignore_ascii_case(&batch.sha256) {
            return Err(IngestError::refused(format!(
                "the file's SHA-256 is {}, not the {expected:?} its {}{} says: it was damaged \
                 on the way; nothing of it was processed",
                batch.sha256,
                batch.file_name,
                crate::folders::SIDECAR
            )));
        }
    }
    Ok(())
}

/// The reports of a file refused before it was read.
fn refused_whole(reports: &Path, batch: &Batch, error: String) -> Result<Outcome, StoreError> {
    Rejected::create(reports.join(format!("{}.rejected.csv", batch.file_name)))?.finish()?;
    let summary = json!({
        "batch": batch.id,
        "file": batch.file_name,
        "state": BatchState::Failed.as_str(),
        "dryRun": false,
        "rows": 0,
        "loaded": 0,
        "rejected": 0,
        "error": error,
    });
    write_atomically(
        &reports.join(format!("{}.result.json", batch.file_name)),
        &serde_json::to_vec_pretty(&summary).unwrap_or_default(),
    )?;
    Ok(Outcome {
        state: BatchState::Failed,
        rows: 0,
        loaded: 0,
        rejected: 0,
        summary,
        error: Some(error),
        stages: Stages::default(),
    })
}

/// Reads the whole file once, checking or loading each chunk. While a chunk is being credited
/// (on the store's writer), the next is read, checked and evaluated: the two overlap.
async fn scan(job: &Job<'_>, mode: Mode, rejected: &mut Rejected) -> Result<Tally, StoreError> {
    let mut tally = Tally::default();
    let (records, header) = match Records::open(job.path, job.file_name, job.mapping) {
        Ok(opened) => opened,
        Err(error) => {
            tally.error = Some(error.to_string());
            return Ok(tally);
        }
    };
    let layout = match Layout::new(job.mapping, header.as_deref()) {
        Ok(layout) => layout,
        Err(errors) => {
            tally.error = Some(errors.join("; "));
            return Ok(tally);
        }
    };
    rejected.header(header.as_deref().unwrap_or_default())?;
    let mut records = if job.book.any_limited(job.org.id()).await? {
        Stages::timed(&mut tally.stages.read, || Source::ordered(records, &layout))
    } else {
        Source::File(records)
    };
    let mut loading = Loading {
        seen: (mode == Mode::Check || job.resumed).then(Seen::default),
        not_credited: Seen::default(),
        returns_seen: Seen::default(),
        activities_seen: Seen::default(),
        totals: FileTotals::default(),
        load: match (mode, job.batch_id) {
            (Mode::Load, Some(batch_id)) => Some(job.store.batches().file_load(job.org, batch_id)),
            _ => None,
        },
    };
    let rows = chunk_rows();
    let mut crediting: Option<Chunk> = None;
    loop {
        let mut chunk = Vec::with_capacity(rows);
        Stages::timed(&mut tally.stages.read, || {
            while chunk.len() < rows && tally.error.is_none() {
                match records.next_record() {
                    Ok(Some(record)) => chunk.push(record),
                    Ok(None) => break,
                    Err(error) => tally.error = Some(error.to_string()),
                }
            }
        });
        if chunk.is_empty() {
            break;
        }
        let last = chunk.len() < rows;
        tally.rows += chunk.len() as u64;
        let (done, of) = records.position();
        if let Some(seen) = loading.seen.as_mut().filter(|_| done > 0)
            && tally.rows == chunk.len() as u64
        {
            // Sized once for the whole file, as the first chunk suggests (see `Seen::reserve`).
            let expected = (tally.rows as f64 * of as f64 / done as f64 * 1.05) as usize;
            seen.reserve(expected.saturating_sub(seen.len()));
        }
        // A return must not find an earn that a later chunk credited: a chunk's returns are
        // reversed before the next chunk is credited.
        if let Some(previous) = crediting.take_if(|c| !c.returns.is_empty()) {
            settle(job, previous, &mut loading, &mut tally, rejected).await?;
        }
        let started = start(job, &layout, chunk, &mut loading, &mut tally.stages).await?;
        if let Some(previous) = crediting.replace(started) {
            settle(job, previous, &mut loading, &mut tally, rejected).await?;
        }
        (job.progress)(Progress {
            rows: tally.rows,
            loaded: tally.loaded,
            rejected: rejected.count,
            done,
            of,
        });
        if last {
            break;
        }
    }
    if let Some(previous) = crediting {
        settle(job, previous, &mut loading, &mut tally, rejected).await?;
    }
    // The counts are reported only once what they count is durable.
    if let Some(load) = loading.load {
        tally.stages.writing += load.writing();
        let committing = Instant::now();
        load.finish().await?;
        tally.stages.commit += committing.elapsed();
    }
    Ok(tally)
}

/// Where a scan's records come from: the file as it is read, or, when a campaign of the
/// organisation has limits, the whole file read first and its rows put in date order (then
/// file order), so that limits count them so whatever the chunks (a file is then held in
/// memory while it loads).
enum Source {
    File(Records),
    Ordered {
        records: std::vec::IntoIter<Record>,
        taken: u64,
        of: u64,
        /// Why the file could not be read to its end, once the rows before are taken.
        error: Option<IngestError>,
    },
}

impl Source {
    fn ordered(mut file: Records, layout: &Layout) -> Source {
        let (mut records, mut error) = (Vec::new(), None);
        loop {
            match file.next_record() {
                Ok(Some(record)) => records.push(record),
                Ok(None) => break,
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        // Rows that are not read come first (they are rejected), returns without a date last.
        let dates: Vec<chrono::DateTime<chrono::Utc>> = records
            .par_iter()
            .map(|record| match layout.row(record.row, &record.fields) {
                Ok(Row::Earn(earn)) => earn.date,
                Ok(Row::Activity(activity)) => activity.date,
                Ok(Row::Return(row)) => {
                    row.date.unwrap_or(chrono::DateTime::<chrono::Utc>::MAX_UTC)
                }
                Err(_) => chrono::DateTime::<chrono::Utc>::MIN_UTC,
            })
            .collect();
        let mut keyed: Vec<_> = dates.into_iter().zip(records).collect();
        keyed.sort_by_key(|(date, record)| (*date, record.row));
        let of = keyed.len() as u64;
        Source::Ordered {
            records: keyed
                .into_iter()
                .map(|(_, record)| record)
                .collect::<Vec<_>>()
                .into_iter(),
            taken: 0,
            of,
            error,
        }
    }

    fn next_record(&mut self) -> Result<Option<Record>, IngestError> {
        match self {
            Source::File(records) => records.next_record(),
            Source::Ordered {
                records,
                taken,
                error,
                ..
            } => match records.next() {
                Some(record) => {
                    *taken += 1;
                    Ok(Some(record))
                }
                None => error.take().map_or(Ok(None), Err),
            },
        }
    }

    /// How far the scan is: done of all (bytes, or rows).
    fn position(&self) -> (u64, u64) {
        match self {
            Source::File(records) => records.position(),
            Source::Ordered { taken, of, .. } => (*taken, *of),
        }
    }
}

/// What a scan keeps from chunk to chunk.
struct Loading {
    /// The earn rows' ids seen so far, for `duplicate_in_file` (and a return's earn earlier in
    /// the file), where the journal cannot tell: in a check, which writes nothing, and in a
    /// resumed load. `None`, a first load: a repeat of an earlier chunk's id meets that row in
    /// the journal (`FileOutcome::CreditedBefore`), and only each chunk's ids are kept.
    seen: Option<Seen>,
    /// Without `seen`: the ids of the file's earn rows that were not credited (refused, or
    /// credited before the file by the API or another file), which a later row must not credit
    /// and whose repeats are `duplicate_in_file`, as a check reports them. As many as such rows.
    not_credited: Seen,
    /// The return rows' ids seen so far (their own idempotency keys, apart from the earns').
    returns_seen: Seen,
    /// The activity rows' ids seen so far (the activities' external ids).
    activities_seen: Seen,
    /// The tokens given to each wallet so far, for `balance_ceiling`.
    totals: FileTotals,
    /// The file's load, when its rows are credited (not in a check).
    load: Option<FileLoad>,
}

impl Loading {
    /// A first load: its repeats are found in the journal, not in `seen`. The only earlier row
    /// of the batch an id can meet there is an earlier row of the file.
    fn first_load(&self) -> bool {
        self.seen.is_none() && self.load.is_some()
    }
}

/// A chunk on its way: read, checked, evaluated, and being credited or checked.
struct Chunk {
    records: Vec<Record>,
    /// Rows refused so far, by their index in `records`.
    rejections: Vec<(usize, Rejection)>,
    /// The index in `records` of each of `earns`.
    at: Vec<usize>,
    earns: Vec<FileEarn>,
    outcomes: Outcomes,
    /// The return rows, reversed once the chunk's earns are credited, and the index in
    /// `records` of each.
    returns: Vec<FileReturn>,
    returns_at: Vec<usize>,
    /// The activity rows, recorded after the returns, and the index in `records` of each.
    activities: Vec<FileActivity>,
    activities_at: Vec<usize>,
}

enum Outcomes {
    Known(Vec<FileOutcome>),
    Crediting(CreditingChunk),
}

/// Checks the rows of `records`, evaluates the good ones, and starts crediting them (or, in a
/// check, looks them up).
async fn start(
    job: &Job<'_>,
    layout: &Layout,
    records: Vec<Record>,
    loading: &mut Loading,
    stages: &mut Stages,
) -> Result<Chunk, StoreError> {
    let checking = Instant::now();
    let mut chunk_ids = Seen::default();
    let seen = match loading.seen.as_mut() {
        Some(seen) => seen,
        None => {
            chunk_ids.reserve(records.len());
            &mut chunk_ids
        }
    };
    let returns_seen = &mut loading.returns_seen;
    let not_credited = &loading.not_credited;
    let activities_seen = &mut loading.activities_seen;
    let encoding = job.mapping.encoding;
    let parsed: Vec<Result<Row, Rejection>> = records
        .par_iter()
        .map(|record| {
            if let Some((reason, message)) = &record.unread {
                return Err(Rejection {
                    row: record.row,
                    column: None,
                    value: None,
                    reason: *reason,
                    message: message.clone(),
                });
            }
            if record.bad_encoding {
                return Err(Rejection {
                    row: record.row,
                    column: None,
                    value: None,
                    reason: Reason::BadEncoding,
                    message: format!("not {} text", encoding.name()),
                });
            }
            layout.row(record.row, &record.fields)
        })
        .collect();
    let mut rejections: Vec<(usize, Rejection)> = Vec::new();
    let (mut earns, mut at) = (
        Vec::with_capacity(records.len()),
        Vec::with_capacity(records.len()),
    );
    let (mut returns, mut returns_at) = (Vec::new(), Vec::new());
    let (mut activities, mut activities_at) = (Vec::new(), Vec::new());
    for (i, result) in parsed.into_iter().enumerate() {
        let result = match result {
            Ok(Row::Return(r)) if !returns_seen.insert(&r.id) => Err(in_file(r.row, r.id)),
            Ok(Row::Return(mut r)) => {
                r.earn_earlier_in_file = seen.contains(&r.reverses);
                returns.push(r);
                returns_at.push(i);
                continue;
            }
            Ok(Row::Activity(a)) if !activities_seen.insert(&a.id) => Err(in_file(a.row, a.id)),
            Ok(Row::Activity(a)) => {
                activities.push(a);
                activities_at.push(i);
                continue;
            }
            Ok(Row::Earn(earn)) => Ok(earn),
            Err(rejection) => Err(rejection),
        };
        match result {
            Err(rejection) => rejections.push((i, rejection)),
            Ok(earn) if !seen.insert(&earn.earn_id) || not_credited.contains(&earn.earn_id) => {
                rejections.push((i, in_file(records[i].row, earn.earn_id)));
            }
            Ok(earn) => {
                at.push(i);
                earns.push(FileEarn {
                    row: records[i].row,
                    earn,
                });
            }
        }
    }
    stages.check += checking.elapsed();
    let evaluating = Instant::now();
    let first_load = loading.first_load();
    let outcomes = match loading.load.as_mut() {
        _ if earns.is_empty() => Outcomes::Known(Vec::new()),
        Some(load) => {
            let evaluated = job
                .store
                .batches()
                .evaluate_file_earns(job.book, job.org, &earns, &mut loading.totals)
                .await?;
            if first_load {
                for i in evaluated.decided() {
                    loading.not_credited.insert(&earns[i].earn.earn_id);
                }
            }
            Outcomes::Crediting(load.credit(evaluated).await)
        }
        None => Outcomes::Known(
            job.store
                .batches()
                .check_file_earns(job.book, job.org, job.batch_id, &earns, &mut loading.totals)
                .await?,
        ),
    };
    stages.evaluate += evaluating.elapsed();
    Ok(Chunk {
        records,
        rejections,
        at,
        earns,
        outcomes,
        returns,
        returns_at,
        activities,
        activities_at,
    })
}

/// Waits for `chunk`'s outcomes, counts them and reports its refused rows.
async fn settle(
    job: &Job<'_>,
    chunk: Chunk,
    loading: &mut Loading,
    tally: &mut Tally,
    rejected: &mut Rejected,
) -> Result<(), StoreError> {
    let Chunk {
        records,
        mut rejections,
        at,
        earns,
        outcomes,
        mut returns,
        returns_at,
        activities,
        activities_at,
    } = chunk;
    let waiting = Instant::now();
    let outcomes = match (outcomes, loading.load.as_mut()) {
        (Outcomes::Known(outcomes), _) => outcomes,
        (Outcomes::Crediting(crediting), Some(load)) => {
            let outcomes = load.outcomes(crediting).await?;
            #[cfg(feature = "test-hooks")]
            crash_point(load).await?;
            outcomes
        }
        (Outcomes::Crediting(_), None) => {
            return Err(StoreError::NotCommitted(
                "a chunk was credited outside its file's load".into(),
            ));
        }
    };
    tally.stages.waiting += waiting.elapsed();
    let counting = Instant::now();
    let first_load = loading.first_load();
    let mut credited_here = Seen::default();
    for ((i, earn), outcome) in at.into_iter().zip(earns).zip(outcomes) {
        let outcome = match outcome {
            FileOutcome::CreditedBefore { .. } if first_load => {
                rejections.push((i, in_file(earn.row, earn.earn.earn_id)));
                continue;
            }
            // Chunks are checked before the one before them is settled: a repeat of an id
            // credited before the file is found here.
            FileOutcome::Duplicate { .. } | FileOutcome::Conflict { .. }
                if first_load && !loading.not_credited.insert(&earn.earn.earn_id) =>
            {
                rejections.push((i, in_file(earn.row, earn.earn.earn_id)));
                continue;
            }
            FileOutcome::Credited { .. } if first_load && !returns.is_empty() => {
                credited_here.insert(&earn.earn.earn_id);
                outcome
            }
            outcome => outcome,
        };
        if let Some(rejection) = count(tally, &earn, outcome) {
            rejections.push((i, rejection));
        }
    }
    if first_load {
        // An earn the journal holds from this file was credited by an earlier chunk (the next
        // is not credited before these returns), or by a row of this chunk: earlier than the
        // return if `start` met its id before the return's row.
        for row in &mut returns {
            row.earn_earlier_in_file |= !credited_here.contains(&row.reverses);
        }
    }
    tally.stages.report += counting.elapsed();
    // Returns and activities are written in their turn, their outcomes counted as they come.
    let waiting = Instant::now();
    if !returns.is_empty() {
        let outcomes = match loading.load.as_mut() {
            Some(load) => load.reverse(returns.clone()).await?,
            None => {
                job.store
                    .batches()
                    .check_file_returns(job.org, job.batch_id, &returns)
                    .await?
            }
        };
        for ((i, row), outcome) in returns_at.into_iter().zip(&returns).zip(outcomes) {
            if let Some(rejection) = count_return(tally, row, outcome) {
                rejections.push((i, rejection));
            }
        }
    }
    if !activities.is_empty() {
        let outcomes = match loading.load.as_mut() {
            Some(load) => load.record_activities(job.book, &activities).await?,
            None => {
                job.store
                    .batches()
                    .record_file_activities(job.book, job.org, job.batch_id, &activities, true)
                    .await?
            }
        };
        for ((i, row), outcome) in activities_at.into_iter().zip(&activities).zip(outcomes) {
            if let Some(rejection) = count_activity(tally, row, outcome) {
                rejections.push((i, rejection));
            }
        }
    }
    tally.stages.waiting += waiting.elapsed();
    let reporting = Instant::now();
    rejections.sort_by_key(|(i, _)| *i);
    for (i, rejection) in rejections {
        *tally.by_reason.entry(rejection.reason.code()).or_default() += 1;
        rejected.row(&rejection, &records[i].fields)?;
    }
    tally.stages.report += reporting.elapsed();
    Ok(())
}

/// The rejection of row `row`, whose `id` an earlier row of the file has.
fn in_file(row: u64, id: String) -> Rejection {
    Rejection {
        row,
        column: Some("id".into()),
        value: Some(id),
        reason: Reason::DuplicateInFile,
        message: "the same id appears earlier in the file".into(),
    }
}

/// Counts a row's outcome; a row that was not credited becomes its rejection.
fn count(tally: &mut Tally, row: &FileEarn, outcome: FileOutcome) -> Option<Rejection> {
    let refusal = |reason: Reason, column: &str, value: &str, message: &str| Rejection {
        row: row.row,
        column: Some(column.into()),
        value: Some(value.into()),
        reason,
        message: message.into(),
    };
    let earn = &row.earn;
    match outcome {
        FileOutcome::Credited { tokens, trace, .. } => {
            tally.loaded += 1;
            // Within `Tokens::MAX`: a row that would take the file's total past it is refused
            // (`FileTotals`).
            tally.tokens = tally.tokens.checked_add(tokens).unwrap_or(Tokens::MAX);
            for (rule, amount) in trace_parts(&trace) {
                let total = tally.by_rule.entry(rule).or_default();
                *total = total.checked_add(amount).unwrap_or(*total);
            }
            None
        }
        // Credited by this batch before the process stopped: loaded, once.
        FileOutcome::CreditedBefore { .. } => {
            tally.loaded += 1;
            tally.resumed += 1;
            None
        }
        FileOutcome::Duplicate { .. } => {
            tally.duplicates += 1;
            let message = "this id was already credited";
            Some(refusal(
                Reason::DuplicateTransaction,
                "id",
                &earn.earn_id,
                message,
            ))
        }
        FileOutcome::Conflict { field, .. } => {
            let value = match field {
                "walletId" => earn.wallet.clone(),
                "amount" => earn.amount.clone(),
                "date" => earn.date.to_rfc3339(),
                "description" => earn.description.clone().unwrap_or_default(),
                "comment" => earn.comment.clone().unwrap_or_default(),
                _ => earn
                    .meta
                    .as_ref()
                    .map(std::string::ToString::to_string)
                    .unwrap_or_default(),
            };
            let message = format!("this id was used for another earn: its {field} differs");
            Some(refusal(Reason::AlreadyExists, field, &value, &message))
        }
        FileOutcome::UnknownWallet => {
            let message = "no wallet has this id or reference";
            Some(refusal(
                Reason::UnknownWallet,
                "walletId",
                &earn.wallet,
                message,
            ))
        }
        FileOutcome::OutOfWindow(reason) => Some(refusal(
            Reason::BadDate,
            "date",
            &earn.date.to_rfc3339(),
            &reason,
        )),
        FileOutcome::Refused(reason) => Some(refusal(
            Reason::RulesRefused,
            "amount",
            &earn.amount,
            &reason,
        )),
        FileOutcome::OverCeiling(reason) => Some(refusal(
            Reason::BalanceCeiling,
            "amount",
            &earn.amount,
            &reason,
        )),
        FileOutcome::Failed(reason) => Some(refusal(
            Reason::InternalError,
            "amount",
            &earn.amount,
            &reason,
        )),
    }
}

/// Counts a return row's outcome; a row not reversed becomes its rejection.
fn count_return(tally: &mut Tally, row: &FileReturn, outcome: ReturnOutcome) -> Option<Rejection> {
    let (reason, field, message) = match outcome {
        ReturnOutcome::Reversed { tokens, .. } => {
            tally.loaded += 1;
            tally.returns += 1;
            tally.tokens_reversed = tally
                .tokens_reversed
                .checked_add(tokens)
                .unwrap_or(Tokens::MAX);
            return None;
        }
        ReturnOutcome::ReversedBefore { .. } => {
            tally.loaded += 1;
            tally.resumed += 1;
            return None;
        }
        ReturnOutcome::Duplicate { .. } => {
            tally.duplicates += 1;
            let message = "this id was already used for this return".to_string();
            (Reason::DuplicateTransaction, Some("id".into()), message)
        }
        ReturnOutcome::Refused {
            code,
            field,
            message,
        } => {
            let reason = match code {
                "earn_not_credited" => Reason::EarnNotCredited,
                "wallet_mismatch" => Reason::WalletMismatch,
                "reversal_exceeds_earn" => Reason::ReversalExceedsEarn,
                "reversal_shortfall" => Reason::ReversalShortfall,
                "already_exists" => Reason::AlreadyExists,
                "not_positive" => Reason::NotPositive,
                _ => Reason::InternalError,
            };
            (reason, field, message)
        }
    };
    let value = match field.as_deref() {
        Some("id") => Some(row.id.clone()),
        Some("reverses") => Some(row.reverses.clone()),
        Some("walletId") => row.wallet.clone(),
        Some("amount") => row.amount.map(|a| a.normalize().to_string()),
        _ => None,
    };
    Some(Rejection {
        row: row.row,
        column: field,
        value,
        reason,
        message,
    })
}

/// Counts an activity row's outcome; a row not recorded becomes its rejection.
fn count_activity(
    tally: &mut Tally,
    row: &FileActivity,
    outcome: ActivityOutcome,
) -> Option<Rejection> {
    let (reason, column, value, message) = match outcome {
        ActivityOutcome::Recorded { tokens, trace } => {
            tally.loaded += 1;
            tally.activities += 1;
            tally.tokens = tally.tokens.checked_add(tokens).unwrap_or(Tokens::MAX);
            for (rule, amount) in trace_parts(&trace) {
                let total = tally.by_rule.entry(rule).or_default();
                *total = total.checked_add(amount).unwrap_or(*total);
            }
            return None;
        }
        ActivityOutcome::RecordedBefore => {
            tally.loaded += 1;
            tally.resumed += 1;
            return None;
        }
        ActivityOutcome::Duplicate => {
            tally.duplicates += 1;
            let message = "this activity was already recorded".to_string();
            (Reason::DuplicateTransaction, "id", row.id.clone(), message)
        }
        ActivityOutcome::UnknownWallet => {
            let message = "no wallet has this id or reference".to_string();
            (
                Reason::UnknownWallet,
                "walletId",
                row.wallet.clone(),
                message,
            )
        }
        ActivityOutcome::Refused {
            code,
            field,
            message,
        } => match (code, field.as_str()) {
            ("already_exists", _) => {
                let message = format!("this id was used for another activity: {message}");
                (Reason::AlreadyExists, "id", row.id.clone(), message)
            }
            (_, "occurredAt") => (Reason::BadDate, "date", row.date.to_rfc3339(), message),
            _ => (
                Reason::BadActivityType,
                "activity",
                row.kind.clone(),
                message,
            ),
        },
    };
    Some(Rejection {
        row: row.row,
        column: Some(column.into()),
        value: Some(value),
        reason,
        message,
    })
}

/// Fault injection for the crash tests (feature `test-hooks` only): with
/// `REWARDS_TEST_CRASH_AFTER_CHUNKS=N` set, the process dies (as by `kill -9`: no cleanup) right
/// after its N-th chunk is credited and flushed (with the chunks credited so far; the next may
/// have shared their transaction).
#[cfg(feature = "test-hooks")]
async fn crash_point(load: &mut FileLoad) -> Result<(), StoreError> {
    static AFTER: std::sync::LazyLock<Option<u64>> = std::sync::LazyLock::new(|| {
        std::env::var("REWARDS_TEST_CRASH_AFTER_CHUNKS")
            .ok()
            .and_then(|v| v.parse().ok())
    });
    static CHUNKS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    if let Some(after) = *AFTER {
        let done = CHUNKS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
        if done >= after {
            load.flush().await?;
            tracing::error!(
                chunks = done,
                "REWARDS_TEST_CRASH_AFTER_CHUNKS reached: aborting"
            );
            std::process::abort();
        }
    }
    Ok(())
}

/// `base:+65;weekend:+65;~:-0.25` → (rule, tokens) pairs.
fn trace_parts(trace: &str) -> impl Iterator<Item = (String, Tokens)> + '_ {
    trace.split(';').filter_map(|part| {
        let (rule, amount) = part.split_once(':')?;
        let amount: rules::Decimal = amount.trim_start_matches('+').parse().ok()?;
        Some((rule.to_string(), Tokens::from_decimal(amount).ok()?))
    })
}

/// How often an idle node looks for received files.
const POLL: Duration = Duration::from_secs(1);

/// Processes received batches, one at a time, until `stop` resolves. Several nodes may run this
/// at once: each batch is claimed by one.
pub async fn run(
    store: Store,
    data_dir: PathBuf,
    live: LiveBatches,
    stop: impl std::future::Future<Output = ()>,
) {
    let book = RuleBook::new(store.programme().clone());
    tokio::pin!(stop);
    loop {
        let claimed = match store.batches().claim_batches(1, None).await {
            Ok(claimed) => claimed,
            Err(err) => {
                tracing::warn!(%err, "could not claim batches");
                Vec::new()
            }
        };
        for batch in &claimed {
            let progress = |at: Progress| live.set(&batch.id, at);
            if let Err(err) = process(&store, &book, &data_dir, batch, &progress).await {
                tracing::warn!(batch = %batch.id, %err, "batch interrupted; it will be taken up again");
            }
            live.end(&batch.id);
        }
        if claimed.is_empty() {
            tokio::select! {
                () = &mut stop => return,
                () = tokio::time::sleep(POLL) => {}
            }
        }
    }
}
