//! Batch files sent over the admin API, for an operator without SFTP at hand: received as the
//! SFTP door receives them (spooled, recorded as a batch, a repeat of earlier content recorded
//! as a duplicate, then loaded by the service's pipeline), or run dry: every row checked and
//! evaluated against the organisation's mappings and rules, nothing credited, the reports
//! written as `reports/<file>.dry-run.*` and the summary answered. The same intake and pipeline
//! as SFTP and `rewards ingest [--dry-run]`.

use std::io::Write as _;
use std::path::{Path as FsPath, PathBuf};

use api::plumbing::{ApiError, Problem, QueryParams};
use api::views::BatchView;
use axum::Json;
use axum::body::Body;
use axum::extract::{DefaultBodyLimit, Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt as _;
use ingest::batch::pipeline::{Job, mapping_for, run_file};
use ingest::folders::{Folder, Tree, is_final_name, spool_dir};
use serde::Deserialize;
use serde_json::Value;
use store::audit::Action;
use store::{BatchState, OrgScope, RuleBook};
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, org_of};
use crate::schemas::FileBytes;
use crate::state::AdminState;

/// The largest file the admin API takes (larger ones go over SFTP).
pub const MAX_UPLOAD: u64 = 1 << 30;

/// The longest file name taken, in bytes: the spool and the reports add to it, and a file
/// system takes 255.
const MAX_NAME: usize = 180;

/// Rejected rows a dry run's answer shows (the whole report is in `reports/`).
const SAMPLE: usize = 100;

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct FileName {
    /// The file's name: its extension says the format (`.csv`, `.xlsx`, `.parquet`) and the
    /// organisation's mappings are chosen by it.
    #[param(
        required = true,
        max_length = 255,
        pattern = "^[^/\\\\]+\\.([Cc][Ss][Vv]|[Xx][Ll][Ss][Xx]|[Pp][Aa][Rr][Qq][Uu][Ee][Tt])$"
    )]
    name: Option<String>,
}

impl FileName {
    /// The name, if a batch file may have it.
    fn checked(self) -> Result<String, ApiError> {
        match self.name {
            Some(name)
                if is_final_name(&name)
                    && name.len() <= MAX_NAME
                    && !name.contains(['/', '\\'])
                    && !name.chars().any(char::is_control) =>
            {
                Ok(name)
            }
            Some(_) => {
                let why = "a file name ending .csv, .xlsx or .parquet, of at most 180 bytes";
                Err(ApiError::invalid("name", "invalid_value", why))
            }
            None => Err(ApiError::invalid("name", "missing_field", "is required")),
        }
    }
}

/// A dry run's answer.
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DryRunView {
    /// What `reports/<file>.dry-run.result.json` holds: `state`, `rows`, `loaded` (rows that
    /// would be), `rejected`, `rejectedByReason`, `tokens`, `tokensByRule`, `mapping`, `error`.
    #[schema(value_type = Object)]
    pub summary: Value,
    /// The first rejected rows of `reports/<file>.dry-run.rejected.csv`, header included, as
    /// CSV text.
    pub rejected_sample: String,
}

/// Streams the request's body into a new hidden file in the organisation's spool: its path.
async fn spool_body(org: &OrgScope, data_dir: &FsPath, body: Body) -> Result<PathBuf, ApiError> {
    let spool = spool_dir(data_dir, org.id());
    let failed = |e: std::io::Error| ApiError::Internal(format!("spooling an upload: {e}"));
    std::fs::create_dir_all(&spool).map_err(failed)?;
    let path = spool.join(format!(".upload-{}", store::new_id()));
    let mut file = std::io::BufWriter::new(std::fs::File::create(&path).map_err(failed)?);
    let mut body = body;
    let mut size = 0u64;
    let result = async {
        while let Some(frame) = body.frame().await {
            let frame =
                frame.map_err(|e| ApiError::invalid("body", "invalid_body", e.to_string()))?;
            if let Ok(data) = frame.into_data() {
                size += data.len() as u64;
                if size > MAX_UPLOAD {
                    return Err(ApiError::PayloadTooLarge);
                }
                file.write_all(&data).map_err(failed)?;
            }
        }
        if size == 0 {
            return Err(ApiError::invalid(
                "body",
                "missing_field",
                "the file is empty",
            ));
        }
        file.flush().map_err(failed)
    }
    .await;
    if let Err(err) = result {
        let _ = std::fs::remove_file(&path);
        return Err(err);
    }
    Ok(path)
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/batches", tag = "batches",
    summary = "Send a batch file",
    description = "The body is the file (CSV, XLSX or Parquet, at most 1 GiB; larger files go \
        over SFTP), whatever its `Content-Type`. It is spooled and recorded as a batch from \
        `admin`, then loaded by the service as an SFTP delivery is (202; follow it at \
        `GET .../batches/{id}`); content sent before is recorded as a duplicate and loads \
        nothing (200, `duplicateOf` names the batch).",
    params(("org" = String, Path, description = ORG, max_length = 64), FileName),
    request_body(content((FileBytes = "application/octet-stream"))),
    responses(
        (status = 202, description = "received: the batch, to be loaded", body = BatchView),
        (status = 200, description = "a duplicate: the batch recorded for it", body = BatchView),
        (status = 400, description = "a bad name, or an empty body", body = Problem),
        (status = 404, description = "unknown organisation", body = Problem),
        (status = 413, description = "a file over 1 GiB", body = Problem)))]
async fn send_batch(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    QueryParams(name): QueryParams<FileName>,
    request: Request,
) -> Result<Response, ApiError> {
    let scope = org_of(&state, &org).await?;
    let name = name.checked()?;
    let spooled = spool_body(&scope, &state.data_dir, request.into_body()).await?;
    let answer = receive(&state, &principal, org, &scope, &name, &spooled).await;
    let _ = std::fs::remove_file(&spooled);
    answer
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/batches/dry-run", tag = "batches",
    summary = "Run a batch file dry",
    description = "The body is the file, as for sending one. Every row is checked and evaluated \
        against the organisation's mappings and active rules; nothing is credited or recorded. \
        The answer is the report's summary and its first 100 rejected rows; the reports are \
        written to `reports/<file>.dry-run.*`.",
    params(("org" = String, Path, description = ORG, max_length = 64), FileName),
    request_body(content((FileBytes = "application/octet-stream"))),
    responses(
        (status = 200, description = "the dry run's report", body = DryRunView),
        (status = 400, description = "a bad name, an empty body, or a file the organisation's mappings refuse", body = Problem),
        (status = 404, description = "unknown organisation", body = Problem),
        (status = 413, description = "a file over 1 GiB", body = Problem)))]
async fn dry_run_batch(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    QueryParams(name): QueryParams<FileName>,
    request: Request,
) -> Result<Json<DryRunView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let name = name.checked()?;
    let spooled = spool_body(&scope, &state.data_dir, request.into_body()).await?;
    let answer = dry_run(&state, &scope, &name, &spooled).await;
    let _ = std::fs::remove_file(&spooled);
    answer
}

async fn receive(
    state: &AdminState,
    principal: &Principal,
    org: String,
    scope: &OrgScope,
    name: &str,
    spooled: &FsPath,
) -> Result<Response, ApiError> {
    let action = Action::new("batch.send").org(org).target(name.to_owned());
    let who = principal.actor().name;
    let data_dir = &state.data_dir;
    let batch = principal
        .acting(state.store(), action, |store| async move {
            ingest::intake::receive(&store, data_dir, scope, spooled, name, "admin", Some(&who))
                .await
                .map_err(|e| ApiError::Internal(e.to_string()))
        })
        .await?;
    let status = match batch.state {
        BatchState::Duplicate => StatusCode::OK,
        _ => StatusCode::ACCEPTED,
    };
    Ok((status, Json(BatchView::from(batch))).into_response())
}

async fn dry_run(
    state: &AdminState,
    scope: &OrgScope,
    name: &str,
    spooled: &FsPath,
) -> Result<Json<DryRunView>, ApiError> {
    let store = state.store();
    let mapping = mapping_for(store, scope, name)
        .await?
        .map_err(|e| ApiError::invalid("name", "invalid_value", e.to_string()))?;
    let tree = Tree::open(&state.data_dir, scope.id())
        .map_err(|e| ApiError::Internal(format!("the organisation's SFTP tree: {e}")))?;
    let reports = tree.folder(Folder::Reports);
    let book = RuleBook::new(store.programme().clone());
    let job = Job {
        store,
        book: &book,
        org: scope,
        batch_id: None,
        file_name: name,
        path: spooled,
        mapping: &mapping,
        reports: &reports,
        progress: &|_| {},
        resumed: false,
    };
    let outcome = run_file(&job).await?;
    let report = reports.join(format!("{name}.dry-run.rejected.csv"));
    let text = std::fs::read_to_string(&report).unwrap_or_default();
    let rejected_sample: String = text.split_inclusive('\n').take(SAMPLE + 1).collect();
    let view = DryRunView {
        summary: outcome.summary,
        rejected_sample,
    };
    Ok(Json(view))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(send_batch))
        .routes(routes!(dry_run_batch))
        .layer(DefaultBodyLimit::disable())
}
