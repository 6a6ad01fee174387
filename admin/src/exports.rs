//! On-demand exports: an organisation's transactions (a campaign's, a period's, some types)
//! written in the background to a file in its SFTP `exports/` folder, beside the daily ones;
//! the folder listed with each file's state, and a file downloaded (ranges served, so that a
//! large download resumes). The same writer as `rewards export transactions`.
//!
//! A file is only ever seen complete: it is written under a hidden name and renamed. Which
//! exports are being written, and why one failed, is known to the node that runs them (an
//! export is not resumed after a restart: it is started again); the files are in the folder.

use std::path::PathBuf;
use std::sync::PoisonError;

use api::plumbing::{ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use chrono::{DateTime, NaiveTime, Utc};
use ingest::folders::{Folder, Tree};
use serde::{Deserialize, Serialize};
use store::audit::{Action, Trail};
use store::{ExportFilter, ExportFormat, ExportTime, OrgScope, TransactionKind};
use tower::ServiceExt as _;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::export_schedules::{format_of, format_schema};
use crate::orgs::{ORG, body_campaign, org_of};
use crate::schemas::{FileBytes, not_null};
use crate::state::{AdminState, ExportJob as Job};

/// A file of the organisation's `exports/` folder, or an export on its way there.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ExportFileView {
    pub name: String,
    /// `writing`, `written` or `failed`.
    pub status: &'static str,
    /// Its size, once written.
    pub bytes: Option<u64>,
    /// Rows written so far (an export this node started).
    pub rows: Option<u64>,
    /// Rows it will hold (an export this node started).
    pub total_rows: Option<u64>,
    pub started_at: Option<DateTime<Utc>>,
    /// When it was written (or failed).
    pub finished_at: Option<DateTime<Utc>>,
    /// Why it failed.
    pub error: Option<String>,
}

fn kinds_schema() -> utoipa::openapi::schema::Array {
    use utoipa::openapi::schema::{ArrayBuilder, ObjectBuilder, Type};
    ArrayBuilder::new()
        .items(
            ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(TransactionKind::ALL.map(TransactionKind::as_str))),
        )
        .max_items(Some(TransactionKind::ALL.len()))
        .build()
}

/// What to export.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ExportInput {
    /// `parquet` (the default) or `csv`.
    #[schema(schema_with = format_schema)]
    #[serde(default, deserialize_with = "not_null")]
    format: Option<String>,
    /// Only this campaign's transactions; absent: every campaign's.
    #[schema(max_length = 64)]
    campaign_id: Option<String>,
    /// The first day (UTC) to include.
    #[schema(schema_with = api::plumbing::schema::day)]
    #[serde(default, deserialize_with = "not_null")]
    from: Option<String>,
    /// The last day (UTC) to include, all of it; not before `from`.
    #[schema(schema_with = api::plumbing::schema::day)]
    #[serde(default, deserialize_with = "not_null")]
    to: Option<String>,
    /// The types to include; absent or empty: every type.
    #[schema(schema_with = kinds_schema)]
    #[serde(default, deserialize_with = "not_null")]
    types: Option<Vec<String>>,
    /// Bound the days by the day the ledger recorded each transaction (what the daily export
    /// does) rather than the transaction's own date.
    recorded: Option<bool>,
}

impl ExportInput {
    fn filter(self, checks: &mut Checks) -> (ExportFormat, ExportFilter) {
        let format = format_of(checks, "format", self.format.as_deref());
        let from = checks.day("from", self.from);
        let to = checks.day("to", self.to);
        if let (Some(from), Some(to)) = (from, to)
            && to < from
        {
            checks.fail("to", "invalid_value", "not before `from`");
        }
        let types = self.types.unwrap_or_default();
        if types.len() > TransactionKind::ALL.len() {
            let most = TransactionKind::ALL.len();
            checks.fail("types", "too_long", format!("at most {most} types"));
        }
        let mut kinds = Vec::new();
        for (i, text) in types.iter().enumerate() {
            match TransactionKind::parse(text) {
                Some(kind) => kinds.push(kind),
                None => checks.fail(
                    &format!("types[{i}]"),
                    "invalid_value",
                    format!("`{text}` is not a transaction type"),
                ),
            }
        }
        let start = |day: chrono::NaiveDate| day.and_time(NaiveTime::MIN).and_utc();
        let filter = ExportFilter {
            campaign_id: self.campaign_id,
            from: from.map(start),
            until: to.and_then(|day| day.succ_opt()).map(start),
            kinds,
            by: match self.recorded {
                Some(true) => ExportTime::Recorded,
                _ => ExportTime::Date,
            },
        };
        (format, filter)
    }
}

/// The organisation's `exports/` folder.
fn folder(state: &AdminState, org: &str) -> Result<PathBuf, ApiError> {
    let tree = Tree::open(&state.data_dir, org)
        .map_err(|e| ApiError::Internal(format!("the organisation's SFTP tree: {e}")))?;
    Ok(tree.folder(Folder::Exports))
}

#[utoipa::path(post, path = "/admin/v1/orgs/{org}/exports", tag = "exports",
    summary = "Export transactions to a file",
    description = "Starts writing the organisation's transactions that the body picks to \
        `exports/transactions-<time>-<id>.<format>` in its SFTP tree, and answers at once with \
        the file's name and the rows it will hold; `GET .../exports` shows its progress and \
        `GET .../exports/{name}` downloads it once written. Recorded in the audit trail when \
        it ends.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = ExportInput,
    responses((status = 202, body = ExportFileView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation, or `campaignId` names none of its campaigns", body = Problem)))]
async fn start_export(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<ExportInput>,
) -> Result<(StatusCode, Json<ExportFileView>), ApiError> {
    let scope = org_of(&state, &org).await?;
    let mut checks = Checks::default();
    let (format, filter) = input.filter(&mut checks);
    checks.finish(())?;
    if let Some(campaign) = &filter.campaign_id {
        body_campaign(&state, &scope, campaign).await?;
    }
    let now = state.store().now();
    let id = store::new_id();
    let name = format!(
        "transactions-{}-{}.{}",
        now.format("%Y%m%dT%H%M%SZ"),
        &id[id.len().saturating_sub(8)..],
        format.as_str()
    );
    let path = folder(&state, scope.id())?.join(&name);
    let of = state.store().count_export(&scope, &filter).await?;
    let job = Job {
        started_at: now,
        rows: 0,
        of,
        finished_at: None,
        error: None,
    };
    let key = (scope.id().to_owned(), name.clone());
    state
        .exports
        .0
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(key, job.clone());
    let action = Action::new("export.transactions")
        .org(org)
        .target(name.clone())
        .after(serde_json::json!({
            "format": format.as_str(),
            "campaignId": filter.campaign_id,
            "from": filter.from,
            "until": filter.until,
            "types": filter.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        }));
    let trail = Trail::new(principal.actor(), action);
    tokio::spawn(write(state, scope, filter, path, format, trail));
    let view = view(name, None, Some(&job));
    Ok((StatusCode::ACCEPTED, Json(view)))
}

/// Writes the export, keeping its job up to date, and records its outcome.
async fn write(
    state: AdminState,
    scope: OrgScope,
    filter: ExportFilter,
    path: PathBuf,
    format: ExportFormat,
    trail: std::sync::Arc<Trail>,
) {
    let org = scope.id().to_owned();
    let name = trail.action.target.clone().unwrap_or_default();
    let progress = {
        let (jobs, org, name) = (state.exports.clone(), org.clone(), name.clone());
        move |rows: u64| jobs.update(&org, &name, |job| job.rows = rows)
    };
    let store = state.store();
    let result = exports::export(store, &scope, &filter, &path, format, progress).await;
    if let Err(err) = &result {
        tracing::error!(%err, org, name, "an export failed");
    }
    if let Err(err) = trail.record(store.db(), &result).await {
        tracing::warn!(%err, org, name, "an export's outcome could not be recorded");
    }
    // Last: a file is shown written once everything about it is done.
    let at = store.now();
    state.exports.update(&org, &name, |job| {
        job.finished_at = Some(at);
        job.error = result.as_ref().err().cloned();
    });
}

fn view(name: String, file: Option<&std::fs::Metadata>, job: Option<&Job>) -> ExportFileView {
    let status = match (file, job) {
        (_, Some(job)) if job.finished_at.is_none() => "writing",
        (_, Some(job)) if job.error.is_some() => "failed",
        (Some(_), _) => "written",
        (None, _) => "writing",
    };
    let modified = file
        .and_then(|m| m.modified().ok())
        .map(DateTime::<Utc>::from);
    ExportFileView {
        name,
        status,
        bytes: file.map(std::fs::Metadata::len),
        rows: job.map(|j| j.rows),
        total_rows: job.map(|j| j.of),
        started_at: job.map(|j| j.started_at),
        finished_at: job.and_then(|j| j.finished_at).or(modified),
        error: job.and_then(|j| j.error.clone()),
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/exports", tag = "exports",
    summary = "List an organisation's exports",
    description = "The files of its `exports/` folder (daily and on-demand), newest first, and \
        the exports this node is writing or failed to write.",
    params(("org" = String, Path, description = ORG, max_length = 64), PagingParams),
    responses((status = 200, body = PagedList<ExportFileView>), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn list_exports(
    State(state): State<AdminState>,
    Path(org): Path<String>,
    Paging(page): Paging,
) -> Result<Json<PagedList<ExportFileView>>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let dir = folder(&state, scope.id())?;
    let mut jobs = state.exports.of_org(scope.id());
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| ApiError::Internal(format!("reading {}: {e}", dir.display())))?;
    let mut files = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(meta) = entry.metadata() else { continue };
        if name.starts_with('.') || !meta.is_file() {
            continue;
        }
        let job = jobs.remove(&name);
        files.push(view(name, Some(&meta), job.as_ref()));
    }
    files.extend(
        jobs.into_iter()
            .map(|(name, job)| view(name, None, Some(&job))),
    );
    files.sort_by(|a, b| {
        let when = |f: &ExportFileView| f.started_at.or(f.finished_at);
        when(b).cmp(&when(a)).then_with(|| b.name.cmp(&a.name))
    });
    Ok(Json(PagedList::of(files, page, std::convert::identity)))
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/exports/{name}", tag = "exports",
    summary = "Download an export",
    description = "The file as written, Parquet or CSV. `Range` requests are served, so that a \
        large download can resume.",
    params(("org" = String, Path, description = ORG, max_length = 64),
        ("name" = String, Path, description = "the file's name, as the list gives it",
            max_length = 255, pattern = "^[A-Za-z0-9_-][A-Za-z0-9._-]*\\.(parquet|csv)$")),
    responses(
        (status = 200, description = "the file",
            content((FileBytes = "application/vnd.apache.parquet"), (String = "text/csv"))),
        (status = 206, description = "the part of the file a `Range` asked for"),
        (status = 416, description = "a `Range` outside the file"),
        (status = 404, description = "unknown organisation, or no such file (yet)", body = Problem)))]
async fn download_export(
    State(state): State<AdminState>,
    Path((org, name)): Path<(String, String)>,
    request: Request,
) -> Result<Response, ApiError> {
    let scope = org_of(&state, &org).await?;
    let plain = !name.starts_with('.')
        && name.len() <= 255
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'));
    let format = std::path::Path::new(&name)
        .extension()
        .and_then(|e| e.to_str())
        .and_then(ExportFormat::parse);
    let path = folder(&state, scope.id())?.join(&name);
    let (true, Some(format), true) = (plain, format, path.is_file()) else {
        return Err(ApiError::NotFound("export"));
    };
    serve_file(&path, &name, format, request).await
}

/// The file at `path` as a download named `name` in `format`, `Range` requests served.
pub async fn serve_file(
    path: &std::path::Path,
    name: &str,
    format: ExportFormat,
    request: Request,
) -> Result<Response, ApiError> {
    let served = tower_http::services::ServeFile::new(path)
        .oneshot(request)
        .await
        .map_err(|e| ApiError::Internal(format!("reading {}: {e}", path.display())))?;
    let (mut parts, body) = served.into_parts();
    let kind = match format {
        ExportFormat::Parquet => "application/vnd.apache.parquet",
        ExportFormat::Csv => "text/csv; charset=utf-8",
    };
    parts
        .headers
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(kind));
    if let Ok(disposition) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        parts
            .headers
            .insert(header::CONTENT_DISPOSITION, disposition);
    }
    Ok(Response::from_parts(parts, Body::new(body)))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_exports, start_export))
        .routes(routes!(download_export))
}
