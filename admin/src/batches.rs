//! An organisation's batch files: listed newest first with their counts, one shown with its
//! report's summary, and its rejected rows downloaded as the CSV report the SFTP door leaves in
//! `reports/`. The same store reads as `rewards batch` and the client API's `/v1/batches`.

use api::plumbing::{ApiError, PagedList, Paging, PagingParams, Problem};
use api::views::BatchView;
use axum::Json;
use axum::extract::{Path, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use ingest::folders::{Folder, Tree};
use serde::{Deserialize, Serialize};
use store::BatchState;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::orgs::{ORG, org_of};
use crate::state::AdminState;

const BATCH: &str = "the batch's id";

/// A batch file and, while this node loads it, how far it has got.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AdminBatchView {
    #[serde(flatten)]
    pub batch: BatchView,
    /// While this node loads the file (`processing`); absent otherwise, and for a file another
    /// node loads.
    pub progress: Option<ProgressView>,
}

/// How far a loading file has got, after its last chunk.
#[derive(Debug, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProgressView {
    /// Rows read.
    pub rows: u64,
    /// Rows credited and rejected so far.
    pub loaded: u64,
    pub rejected: u64,
    /// How much of the file is read, of how much: bytes (CSV, Parquet) or rows (XLSX).
    pub done: u64,
    pub of: u64,
}

impl AdminBatchView {
    fn of(state: &AdminState, batch: store::Batch) -> AdminBatchView {
        let progress = state.live_batches.get(&batch.id).map(|p| ProgressView {
            rows: p.rows,
            loaded: p.loaded,
            rejected: p.rejected,
            done: p.done,
            of: p.of,
        });
        AdminBatchView {
            batch: batch.into(),
            progress,
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/batches", tag = "batches",
    summary = "List an organisation's batch files",
    description = "Newest first, with their state and counts; duplicates included.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<AdminBatchView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_batches(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<AdminBatchView>>, ApiError> {
    let org = org_of(&state, &org).await?;
    let batches = state.store().batches().list_batches(&org, page).await?;
    Ok(Json(PagedList::from_page(batches, |b| {
        AdminBatchView::of(&state, b)
    })))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/batches/{id}", tag = "batches",
    summary = "Get a batch file",
    description = "How it was received, its state and counts, the batch a duplicate repeats, \
        once processed its report's summary, and while this node loads it, how far it has got \
        (`progress`).",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = BATCH, max_length = 64)),
    responses((status = 200, body = AdminBatchView),
        (status = 404, description = "unknown organisation, or no batch of it has this id",
            body = Problem)))]
async fn get_batch(
    State(state): State<AdminState>,
    Path((org, id)): Path<(String, String)>,
) -> Result<Json<AdminBatchView>, ApiError> {
    let org = org_of(&state, &org).await?;
    let batch = state.store().batches().get_batch(&org, &id).await?;
    Ok(Json(AdminBatchView::of(&state, batch)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/batches/{id}/rejected", tag = "batches",
    summary = "Download a batch's rejected rows",
    description = "The report `reports/<file>.rejected.csv`: each rejected row with its number, \
        reason code, column, value and message, then the row's own fields. A file refused whole, \
        or with no bad row, has the header line only.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("id" = String, Path, description = BATCH, max_length = 64)),
    responses((status = 200, description = "the report", content_type = "text/csv",
            body = String),
        (status = 404, description = "unknown organisation or batch, or a batch with no report \
            (not processed yet, a duplicate, or its report removed: `not_found`; replaced by a \
            later file of the same name: `report_replaced`)", body = Problem)))]
async fn batch_rejected_rows(
    State(state): State<AdminState>,
    Path((org, id)): Path<(String, String)>,
) -> Result<Response, ApiError> {
    let scope = org_of(&state, &org).await?;
    let batch = state.store().batches().get_batch(&scope, &id).await?;
    if batch.state == BatchState::Duplicate {
        return Err(ApiError::NotFound("report"));
    }
    let tree = Tree::open(&state.data_dir, &batch.org_id)
        .map_err(|e| ApiError::Internal(format!("the organisation's folders: {e}")))?;
    let summary =
        std::fs::read(tree.file(Folder::Reports, &format!("{}.result.json", batch.file_name)))
            .ok()
            .and_then(|bytes| serde_json::from_slice::<serde_json::Value>(&bytes).ok());
    let Some(summary) = summary else {
        return Err(ApiError::NotFound("report"));
    };
    if summary["batch"].as_str() != Some(batch.id.as_str()) {
        return Err(ApiError::Absent {
            code: "report_replaced",
            field: None,
            detail: format!(
                "a later file named `{}` has replaced this batch's report",
                batch.file_name
            ),
        });
    }
    let name = format!("{}.rejected.csv", batch.file_name);
    let csv = std::fs::read(tree.file(Folder::Reports, &name))
        .map_err(|_| ApiError::NotFound("report"))?;
    let disposition = format!("attachment; filename=\"{}\"", name.replace('"', "_"));
    Ok((
        [
            (header::CONTENT_TYPE, "text/csv; charset=utf-8".to_owned()),
            (header::CONTENT_DISPOSITION, disposition),
        ],
        csv,
    )
        .into_response())
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_batches))
        .routes(routes!(get_batch))
        .routes(routes!(batch_rejected_rows))
}
