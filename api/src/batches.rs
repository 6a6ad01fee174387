//! Batch files (`GET /v1/batches`, `GET /v1/batches/{id}`): what became of each file the key's
//! organisation delivered by SFTP or into its inbox.

use std::borrow::Cow;

use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::Batch;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::error::{ApiError, Problem};
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::shapes::named_enum;

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BatchView {
    pub id: String,
    /// The name the file was delivered with.
    pub file_name: String,
    /// Bytes.
    pub size: i64,
    /// Hex SHA-256 of the content: the same content is processed once.
    pub sha256: String,
    /// `sftp`, `inbox` for a file placed in the inbox by other means, `cli` for one an
    /// operator ran with `rewards ingest`, or `admin` for one sent over the admin API.
    pub source: String,
    /// The SFTP user who uploaded it.
    pub username: Option<String>,
    #[schema(value_type = BatchStateName)]
    pub state: Cow<'static, str>,
    /// For a duplicate: the batch that already holds this content.
    pub duplicate_of: Option<String>,
    /// Rows read, loaded and rejected, once processed.
    pub rows: Option<i64>,
    pub loaded: Option<i64>,
    pub rejected: Option<i64>,
    /// Once processed, the content of `reports/<file>.result.json`: `state`, `rows`, `loaded`,
    /// `rejected`, `rejectedByReason` (reason code: rows), `duplicates`, `loadedBeforeRestart`,
    /// `tokens`, `tokensByRule`, `mapping` (`canonical` or the mapping's pattern), `error`,
    /// `seconds`, `rowsPerSecond` and `rejectedReport`.
    #[schema(value_type = Option<Object>)]
    pub summary: Option<Value>,
    /// Why the batch failed.
    pub error: Option<String>,
    pub received_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

named_enum!(
    BatchStateName,
    "BatchState",
    "Where a batch file stands: received, processing, completed (its report written), failed \
     (see `error`) or duplicate (its content was delivered before: see `duplicateOf`).",
    store::BatchState::ALL.map(store::BatchState::as_str)
);

impl From<Batch> for BatchView {
    fn from(b: Batch) -> Self {
        BatchView {
            id: b.id,
            file_name: b.file_name,
            size: b.size,
            sha256: b.sha256,
            source: b.source,
            username: b.username,
            state: b.state.as_str().into(),
            duplicate_of: b.duplicate_of,
            rows: b.rows_total,
            loaded: b.rows_loaded,
            rejected: b.rows_rejected,
            summary: b.summary,
            error: b.error,
            received_at: b.received_at,
            updated_at: b.updated_at,
        }
    }
}

#[utoipa::path(get, path = "/v1/batches", tag = "batches", summary = "List batch files",
    description = "The organisation's batch files, newest first.",
    params(PagingParams),
    responses((status = 200, body = PagedList<BatchView>), (status = 400, body = Problem)))]
async fn list_batches(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
) -> Result<Json<PagedList<BatchView>>, ApiError> {
    let batches = state
        .store
        .batches()
        .list_batches(caller.org(), page)
        .await?;
    Ok(Json(PagedList::from_page(batches, BatchView::from)))
}

#[utoipa::path(get, path = "/v1/batches/{id}", tag = "batches", summary = "Get a batch file",
    params(("id" = String, Path)),
    responses((status = 200, body = BatchView), (status = 404, body = Problem)))]
async fn get_batch(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<BatchView>, ApiError> {
    let batch = state.store.batches().get_batch(caller.org(), &id).await?;
    Ok(Json(batch.into()))
}

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_batches))
        .routes(routes!(get_batch))
}
