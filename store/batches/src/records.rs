//! Batch files: one record per file received, by SFTP or found in an inbox. A file whose content
//! (SHA-256) the organisation already sent, and that did not fail, is recorded as `duplicate`
//! and never processed again. Processing nodes claim waiting batches so that no two take the
//! same one, and a claim whose node died runs out and is taken over.

use crate::OrgScope;
use chrono::{DateTime, Duration, Utc};
use seam::scope::Sealed;
use serde_json::Value;
use sqlx::types::Json;

use crate::backend::{Steps, Tx};
use crate::error::known;
use crate::{Batches, Page, Paged, StoreError};
use events::{EventType, NewEvent};

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum BatchState ("batch state") {
        Received = "received",
        Processing = "processing",
        Completed = "completed",
        Failed = "failed",
        Duplicate = "duplicate",
    }
}

/// A file as received: the caller has already moved it where processing will read it.
#[derive(Debug, Clone)]
pub struct NewBatch {
    /// Chosen by the caller, who names the stored file after it.
    pub id: String,
    pub file_name: String,
    pub size: i64,
    /// Hex SHA-256 of the content.
    pub sha256: String,
    /// `sftp` or `inbox`.
    pub source: String,
    pub username: Option<String>,
}

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Batch {
    pub id: String,
    pub org_id: String,
    pub file_name: String,
    pub size: i64,
    pub sha256: String,
    pub source: String,
    pub username: Option<String>,
    pub state: BatchState,
    /// For a duplicate: the batch that holds this content.
    pub duplicate_of: Option<String>,
    pub rows_total: Option<i64>,
    pub rows_loaded: Option<i64>,
    pub rows_rejected: Option<i64>,
    pub summary: Option<Value>,
    pub error: Option<String>,
    pub received_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    /// How many times it was claimed for processing, the claim that read it included: past 1,
    /// an earlier attempt may have credited some of its rows.
    #[serde(skip)]
    pub attempts: i64,
    #[serde(skip, default = "Sealed::vouched")]
    pub(crate) sealed: Sealed,
}

macro_rules! batch_columns {
    () => {
        "id, org_id, file_name, size, sha256, source, username, state, duplicate_of, rows_total, \
         rows_loaded, rows_rejected, summary, error, received_at, updated_at, attempts"
    };
}

row_struct! {
    /// The columns of `batch_columns!`, in order.
    struct BatchRow {
        id: String,
        org_id: String,
        file_name: String,
        size: i64,
        sha256: String,
        source: String,
        username: Option<String>,
        state: String,
        duplicate_of: Option<String>,
        rows_total: Option<i64>,
        rows_loaded: Option<i64>,
        rows_rejected: Option<i64>,
        summary: Option<Json<Value>>,
        error: Option<String>,
        received_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        attempts: i64,
    }
}

fn batch_from_row(r: BatchRow) -> Result<Batch, StoreError> {
    Ok(Batch {
        state: known(BatchState::parse(&r.state), "batches", "state", &r.state)?,
        id: r.id,
        org_id: r.org_id,
        file_name: r.file_name,
        size: r.size,
        sha256: r.sha256,
        source: r.source,
        username: r.username,
        duplicate_of: r.duplicate_of,
        rows_total: r.rows_total,
        rows_loaded: r.rows_loaded,
        rows_rejected: r.rows_rejected,
        summary: r.summary.map(|j| j.0),
        error: r.error,
        received_at: r.received_at,
        updated_at: r.updated_at,
        attempts: r.attempts,
        sealed: Sealed::vouched(),
    })
}

/// How a processed batch ended.
#[derive(Debug, Clone)]
pub struct BatchFinish {
    pub state: BatchState,
    pub rows: i64,
    pub loaded: i64,
    pub rejected: i64,
    pub summary: Value,
    pub error: Option<String>,
}

/// A batch's end and its event, in one transaction.
struct Finish {
    id: String,
    finish: BatchFinish,
    /// When the batch ends, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Finish {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE batches SET state = $2, rows_total = $3, rows_loaded = $4, \
             rows_rejected = $5, summary = $6, error = $7, claimed_until = NULL, updated_at = $8 \
             WHERE id = $1";
        let (id, finish) = (&self.id, &self.finish);
        let (state, at) = (finish.state.as_str(), self.at);
        let args = params![
            id,
            state,
            finish.rows,
            finish.loaded,
            finish.rejected,
            finish.summary,
            finish.error,
            at
        ];
        tx.execute(SQL, args).await?;
        let kind = match finish.state {
            BatchState::Completed => EventType::BatchCompleted,
            BatchState::Failed => EventType::BatchFailed,
            _ => return Ok(()),
        };
        record_event(tx, id, kind).await
    }
}

/// Records `kind`, carrying batch `id` as the transaction `tx` has left it.
async fn record_event<T: Tx>(tx: &mut T, id: &str, kind: EventType) -> Result<(), StoreError> {
    const READ: &str = concat!("SELECT ", batch_columns!(), " FROM batches WHERE id = $1");
    let Some(row): Option<BatchRow> = tx.row(READ, params![id]).await? else {
        return Ok(());
    };
    let batch = batch_from_row(row)?;
    let org_id = batch.org_id.clone();
    let at = batch.updated_at;
    let event = NewEvent::new(&org_id, None, kind, &batch, at)?;
    events::record(tx, &event).await
}

/// A new batch: id, organisation, file name, size, SHA-256, source, username, state, the batch
/// a duplicate repeats, and when it was received.
const INSERT: &str = "INSERT INTO batches (id, org_id, file_name, size, sha256, source, \
     username, state, duplicate_of, received_at, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $10)";

/// A file whose content a live batch already holds: recorded as `duplicate` naming that batch,
/// with its event (`batch.duplicate`) in the same transaction.
struct Duplicate {
    org_id: String,
    new: NewBatch,
    holder: Option<String>,
    at: DateTime<Utc>,
}

impl Steps for Duplicate {
    type Output = ();

    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let (new, org_id, holder) = (&self.new, &self.org_id, &self.holder);
        let (id, name, sha256, source, user) = (
            &new.id,
            &new.file_name,
            &new.sha256,
            &new.source,
            &new.username,
        );
        let state = BatchState::Duplicate.as_str();
        let args = params![
            id, org_id, name, new.size, sha256, source, user, state, holder, self.at
        ];
        tx.execute(INSERT, args).await?;
        record_event(tx, id, EventType::BatchDuplicate).await
    }
}

/// How long a claimed batch stays with its node before another may take it over; the node
/// renews it after every chunk.
const LEASE: i64 = 60;

/// Batches: received files, their states and the claim of each by one node (scope: `OrgScope`).
impl Batches {
    /// Records a received file: `received`, or `duplicate` when the organisation's live batches
    /// already hold this content (the unique index decides between files arriving together).
    #[tracing::instrument(skip_all)]
    pub async fn record_batch(&self, org: &OrgScope, new: NewBatch) -> Result<Batch, StoreError> {
        const HOLDER: &str = "SELECT id FROM batches WHERE org_id = $1 AND sha256 = $2 \
             AND state IN ('received', 'processing', 'completed')";
        let at = self.now();
        let insert = |state: &'static str, duplicate_of: Option<String>| {
            let new = new.clone();
            async move {
                self.execute(
                    INSERT,
                    params![
                        &new.id,
                        org.id(),
                        &new.file_name,
                        new.size,
                        &new.sha256,
                        &new.source,
                        &new.username,
                        state,
                        &duplicate_of,
                        at
                    ],
                )
                .await
            }
        };
        match insert("received", None).await {
            Ok(_) => {}
            Err(err) if err.is_unique_violation() => {
                let holder: Option<(String,)> = self
                    .read_row(HOLDER, params![org.id(), &new.sha256])
                    .await?;
                let holder = holder.map(|(id,)| id);
                self.write(Duplicate {
                    org_id: org.id().to_string(),
                    new: new.clone(),
                    holder,
                    at,
                })
                .await?;
            }
            Err(err) => return Err(err),
        }
        self.get_batch(org, &new.id).await
    }

    /// The newest batch of the organisation's that was received under `file_name` and has not
    /// ended yet (received or processing), if any.
    #[tracing::instrument(skip_all)]
    pub async fn waiting_batch_named(
        &self,
        org: &OrgScope,
        file_name: &str,
    ) -> Result<Option<Batch>, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            batch_columns!(),
            " FROM batches WHERE state IN ('received', 'processing') AND org_id = $1 \
             AND file_name = $2 ORDER BY received_at DESC LIMIT 1"
        );
        let row: Option<BatchRow> = self.read_row(SQL, params![org.id(), file_name]).await?;
        row.map(batch_from_row).transpose()
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_batch(&self, org: &OrgScope, id: &str) -> Result<Batch, StoreError> {
        let org_id = org.id();
        const SQL: &str = concat!(
            "SELECT ",
            batch_columns!(),
            " FROM batches WHERE org_id = $1 AND id = $2"
        );
        let row: Option<BatchRow> = self.read_row(SQL, params![org_id, id]).await?;
        row.ok_or(StoreError::NotFound { what: "batch" })
            .and_then(batch_from_row)
    }

    /// The organisation's batches, newest first.
    #[tracing::instrument(skip_all)]
    pub async fn list_batches(
        &self,
        org: &OrgScope,
        page: Page,
    ) -> Result<Paged<Batch>, StoreError> {
        let org_id = org.id();
        let rows = self
            .read_page(
                page,
                batch_columns!(),
                "FROM batches WHERE org_id = $1",
                "received_at DESC, id DESC",
                params![org_id],
            )
            .await?;
        Paged::of(rows, page, batch_from_row)
    }

    /// Records how a claimed batch ended: `Completed` or `Failed`, its counts, its summary (the
    /// report's content) and, when it failed, why.
    /// With it, in the same transaction, the file's one event: `batch.completed` or
    /// `batch.failed`, carrying the batch.
    #[tracing::instrument(skip_all)]
    pub async fn finish_batch(&self, id: &str, finish: BatchFinish) -> Result<(), StoreError> {
        self.write(Finish {
            id: id.to_string(),
            finish,
            at: self.now(),
        })
        .await
    }

    /// Keeps a claim alive while its batch is being processed.
    #[tracing::instrument(skip_all)]
    pub async fn renew_batch(&self, id: &str) -> Result<(), StoreError> {
        const RENEW: &str =
            "UPDATE batches SET claimed_until = $2 WHERE id = $1 AND state = 'processing'";
        let until = self.now() + Duration::seconds(LEASE);
        // On SQLite through the writer thread: while a file loads, its transaction is open
        // there, and this write joins it instead of waiting for it to commit.
        self.execute(RENEW, params![id, until]).await?;
        Ok(())
    }

    /// Makes every claimed batch claimable again at once. Only for a database that one process
    /// serves (embedded SQLite): at its start, a batch still claimed was interrupted by a crash.
    /// Shared databases rely on the lease running out instead.
    #[tracing::instrument(skip_all)]
    pub async fn release_batch_claims(&self) -> Result<u64, StoreError> {
        let released = self
            .execute(
                "UPDATE batches SET claimed_until = $1 WHERE state = 'processing'",
                params![self.now() - Duration::seconds(1)],
            )
            .await?;
        Ok(released)
    }

    /// Claims up to `limit` batches waiting to be processed (and any whose node's lease ran
    /// out), oldest first, or only the batch `only`; each goes to one caller only.
    #[tracing::instrument(skip_all)]
    pub async fn claim_batches(
        &self,
        limit: i64,
        only: Option<&str>,
    ) -> Result<Vec<Batch>, StoreError> {
        const SQL: &str = concat!(
            "UPDATE batches SET state = 'processing', attempts = attempts + 1, claimed_until = $1, \
             updated_at = $2 WHERE id IN (SELECT id FROM batches \
             WHERE state IN ('received', 'processing') AND (state = 'received' OR claimed_until < $2) \
             AND id = COALESCE($4, id) ORDER BY received_at LIMIT $3{skip_locked}) RETURNING ",
            batch_columns!()
        );
        let at = self.now();
        let lease = at + Duration::seconds(LEASE);
        let rows: Vec<BatchRow> = self
            .write_rows(&self.claiming(SQL), params![lease, at, limit, only])
            .await?;
        rows.into_iter().map(batch_from_row).collect()
    }
}

impl events::Payload for Batch {
    const RECORD: &'static str = "batch";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

impl Batch {
    /// The scope of the organisation whose file this is.
    pub fn org(&self) -> crate::OrgScope {
        crate::OrgScope::vouched(&self.org_id)
    }
}
