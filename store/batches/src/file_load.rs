//! A batch file being loaded (`Batches::file_load`): the one place that knows how a file's
//! chunks reach the ledger. Its contract:
//!
//! - `credit` starts writing a chunk's evaluated rows and returns at once; chunks are written in
//!   the order they were started, one after another (two at once would lock most of the same
//!   wallets: on PostgreSQL the second waits for the first anyway, after interleaving its row
//!   locks with the first's), so the caller reads and evaluates the next chunk meanwhile.
//! - `outcomes` gives a started chunk's outcomes once it is written. Written is not committed:
//!   on SQLite a file's chunks share one bulk transaction, committed every few seconds (later
//!   writes see the rows, readers not yet); on PostgreSQL each chunk is copied in and committed.
//! - `reverse` commits everything credited before it, then reverses return rows apart from the
//!   bulk writes (a return reads its earn).
//! - `flush` returns once everything credited so far is committed.
//! - `finish` returns once everything credited is committed: only then may the file's counts
//!   be reported. A load dropped unfinished leaves its uncommitted chunks to the writer; if
//!   their transaction fails, none of them are credited and the file is run again.
//! - While it loads, the batch's claim is renewed.

use std::time::{Duration, Instant};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::backend::direct;
use crate::file_earns::{Evaluated, FileOutcome};
use crate::file_returns::{FileReturn, ReturnOutcome};
use crate::{Batches, OrgScope, StoreError};

/// The batch's claim (60 s) is renewed this often while its file loads. Not after every chunk:
/// on SQLite the renewal joins the open bulk transaction, whose commit is what makes it count.
const RENEW_EVERY: Duration = Duration::from_secs(15);

/// A batch file's load, from its first chunk to `finish` (see the module's contract).
#[must_use = "a file's rows count as credited only once `FileLoad::finish` returns"]
pub struct FileLoad {
    batches: Batches,
    org: OrgScope,
    batch_id: String,
    /// Chunks written whose transaction may not have committed yet.
    uncommitted: Vec<direct::Commit>,
    /// Fires once the last chunk started has been written.
    written: Option<oneshot::Receiver<()>>,
    /// When the batch's claim was last renewed.
    renewed: Instant,
    /// The writer's time on the chunks whose outcomes were taken (see `writing`).
    writing: Duration,
}

/// A chunk `FileLoad::credit` started; `FileLoad::outcomes` waits for it.
#[must_use = "a chunk's outcomes are only known through `FileLoad::outcomes`"]
pub struct CreditingChunk(JoinHandle<Result<(Written, Duration), StoreError>>);

/// A chunk written: each row's outcome, and on SQLite the bulk transaction's commit to wait on.
type Written = (Vec<FileOutcome>, Option<direct::Commit>);

impl Batches {
    /// Starts loading the file of batch `batch_id` of organisation `org`.
    pub fn file_load(&self, org: &OrgScope, batch_id: &str) -> FileLoad {
        FileLoad {
            batches: self.clone(),
            org: org.clone(),
            batch_id: batch_id.to_string(),
            uncommitted: Vec::new(),
            written: None,
            renewed: Instant::now(),
            writing: Duration::ZERO,
        }
    }
}

impl FileLoad {
    /// Starts crediting `evaluated` under the batch, after every chunk started before it. What
    /// needs no database is prepared at once.
    #[tracing::instrument(skip_all)]
    pub async fn credit(&mut self, evaluated: Evaluated) -> CreditingChunk {
        let before = self.written.take();
        let (written, wait) = oneshot::channel();
        self.written = Some(wait);
        let (turned, its_turn) = oneshot::channel();
        let turn = async move {
            if let Some(before) = before {
                let _ = before.await;
            }
            let _ = turned.send(Instant::now());
        };
        let (batches, batch_id) = (self.batches.clone(), self.batch_id.clone());
        let crediting = tokio::spawn(async move {
            let credited = batches.credit_evaluated(&batch_id, evaluated, turn).await;
            let _ = written.send(());
            let writing = its_turn.await.map(|at| at.elapsed()).unwrap_or_default();
            credited.map(|written| (written, writing))
        });
        // On a single-threaded runtime, lets the write reach the writer before the caller
        // reads its next chunk.
        tokio::task::yield_now().await;
        CreditingChunk(crediting)
    }

    /// Each row of `chunk`, in order, once it is written (not yet committed: see `finish`).
    #[tracing::instrument(skip_all)]
    pub async fn outcomes(
        &mut self,
        chunk: CreditingChunk,
    ) -> Result<Vec<FileOutcome>, StoreError> {
        let ((outcomes, commit), writing) = chunk
            .0
            .await
            .map_err(|e| StoreError::NotCommitted(format!("crediting a chunk: {e}")))??;
        self.uncommitted.extend(commit);
        self.writing += writing;
        if self.renewed.elapsed() > RENEW_EVERY {
            self.batches.renew_batch(&self.batch_id).await?;
            self.renewed = Instant::now();
        }
        Ok(outcomes)
    }

    /// Reverses `rows` under the batch, once everything credited before them is committed; each
    /// row's outcome, in order.
    #[tracing::instrument(skip_all)]
    pub async fn reverse(
        &mut self,
        rows: Vec<FileReturn>,
    ) -> Result<Vec<ReturnOutcome>, StoreError> {
        self.flush().await?;
        self.batches
            .reverse_file_rows(&self.org, &self.batch_id, rows)
            .await
    }

    /// Records and awards `rows`' activities once everything credited so far is committed.
    pub async fn record_activities(
        &mut self,
        book: &crate::RuleBook,
        rows: &[crate::FileActivity],
    ) -> Result<Vec<crate::ActivityOutcome>, StoreError> {
        self.flush().await?;
        self.batches
            .record_file_activities(book, &self.org, Some(&self.batch_id), rows, false)
            .await
    }

    /// Returns once everything credited so far is committed (durable, seen by readers); an
    /// `Err` if something was not.
    #[tracing::instrument(skip_all)]
    pub async fn flush(&mut self) -> Result<(), StoreError> {
        if self.uncommitted.is_empty() {
            return Ok(());
        }
        self.batches.end_bulk_writes().await?;
        for commit in std::mem::take(&mut self.uncommitted) {
            direct::committed(commit).await?;
        }
        Ok(())
    }

    /// The writer's time so far on the chunks whose outcomes were taken: from each chunk's
    /// turn to its rows written (on SQLite including the periodic commits that fell in it).
    pub fn writing(&self) -> Duration {
        self.writing
    }

    /// Ends the load: returns once every row credited is committed.
    #[tracing::instrument(skip_all)]
    pub async fn finish(mut self) -> Result<(), StoreError> {
        self.flush().await
    }
}
