//! The audit trail, as operators read it: its entries, filtered and paged (newest first) or
//! exported to a file, and the check of its chain. The same store functions and writer as
//! `rewards audit-log list`, `export` and `verify`.

use api::plumbing::{
    ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem, QueryParams,
};
use axum::Json;
use axum::extract::{Request, State};
use axum::response::Response;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use store::ExportFormat;
use store::audit::chain::{Entry, Verdict, verify};
use store::audit::log::{AuditFilter, list};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::exports::serve_file;
use crate::schemas::FileBytes;
use crate::state::AdminState;

/// One entry of the trail (docs/operators.md describes each field).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditEntryView {
    pub seq: i64,
    pub at: DateTime<Utc>,
    /// `local`, `operator`, `token` or `anonymous`.
    pub actor_kind: String,
    pub actor_id: Option<String>,
    pub actor_name: String,
    pub operation: String,
    pub org_id: Option<String>,
    pub target: Option<String>,
    /// The record's fields before, as JSON text (secrets redacted).
    pub before: Option<String>,
    /// The record's fields after, as JSON text (secrets redacted).
    pub after: Option<String>,
    pub address: Option<String>,
    pub user_agent: Option<String>,
    pub request_id: Option<String>,
    /// `ok`, or `failed: ...` with the error.
    pub outcome: String,
    pub prev_hash: String,
    pub hash: String,
}

impl From<Entry> for AuditEntryView {
    fn from(e: Entry) -> AuditEntryView {
        AuditEntryView {
            seq: e.seq,
            at: e.at,
            actor_kind: e.actor_kind,
            actor_id: e.actor_id,
            actor_name: e.actor_name,
            operation: e.operation,
            org_id: e.org_id,
            target: e.target,
            before: e.before,
            after: e.after,
            address: e.address,
            user_agent: e.user_agent,
            request_id: e.request_id,
            outcome: e.outcome,
            prev_hash: e.prev_hash,
            hash: e.hash,
        }
    }
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct AuditQuery {
    /// Only this operator's entries: its id, or the name an entry records (an e-mail, the OS
    /// user of `local`).
    #[param(max_length = 320)]
    actor: Option<String>,
    /// Only entries about this organisation (its id).
    #[param(max_length = 64)]
    org: Option<String>,
    /// Only this operation (`key.revoke`), or a family of them ending in `.` (`key.`).
    #[param(max_length = 100)]
    operation: Option<String>,
    /// Only entries at or after this instant (RFC 3339).
    #[param(schema_with = api::plumbing::schema::date_time_required)]
    since: Option<String>,
    /// Only entries before this instant (RFC 3339).
    #[param(schema_with = api::plumbing::schema::date_time_required)]
    until: Option<String>,
}

impl AuditQuery {
    fn filter(self) -> Result<AuditFilter, ApiError> {
        for (field, value, most) in [
            ("actor", &self.actor, 320),
            ("org", &self.org, 64),
            ("operation", &self.operation, 100),
        ] {
            if value.as_ref().is_some_and(|v| v.chars().count() > most) {
                return Err(ApiError::invalid(
                    field,
                    "too_long",
                    format!("must be at most {most} characters"),
                ));
            }
        }
        Ok(AuditFilter {
            actor: self.actor,
            org_id: self.org,
            operation: self.operation,
            since: instant("since", self.since)?,
            until: instant("until", self.until)?,
        })
    }
}

fn instant(field: &str, text: Option<String>) -> Result<Option<DateTime<Utc>>, ApiError> {
    text.map(|text| {
        api::plumbing::date_time(&text).ok_or_else(|| {
            ApiError::invalid(field, "invalid_value", "must be an RFC 3339 date-time")
        })
    })
    .transpose()
}

#[utoipa::path(get, path = "/admin/v1/audit-log", tag = "audit",
    summary = "List the audit trail", description = "Newest first.",
    params(PagingParams, AuditQuery),
    responses((status = 200, body = PagedList<AuditEntryView>), (status = 400, body = Problem)))]
async fn list_audit_log(
    State(state): State<AdminState>,
    Paging(page): Paging,
    QueryParams(query): QueryParams<AuditQuery>,
) -> Result<Json<PagedList<AuditEntryView>>, ApiError> {
    let filter = query.filter()?;
    let entries = list(state.store().db(), &filter, page).await?;
    Ok(Json(PagedList::from_page(entries, AuditEntryView::from)))
}

/// One entry the check found wrong.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuditProblemView {
    pub seq: i64,
    /// `edited`, `removed` or `reordered`.
    pub fault: String,
    pub message: String,
}

/// What a walk of the whole chain found.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VerdictView {
    /// Whether no entry was edited, removed or reordered.
    pub intact: bool,
    /// Entries read.
    pub entries: u64,
    pub first_seq: i64,
    pub last_seq: i64,
    /// The head's hash: kept somewhere else, it shows later that the chain up to it was not
    /// rewritten.
    pub head_hash: String,
    /// At most 100.
    pub problems: Vec<AuditProblemView>,
}

impl From<Verdict> for VerdictView {
    fn from(v: Verdict) -> VerdictView {
        VerdictView {
            intact: v.intact(),
            entries: v.entries,
            first_seq: v.first_seq,
            last_seq: v.last_seq,
            head_hash: v.head_hash,
            problems: v
                .problems
                .into_iter()
                .map(|p| AuditProblemView {
                    seq: p.seq,
                    fault: p.fault.as_str().to_owned(),
                    message: p.message,
                })
                .collect(),
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/audit-log/verification", tag = "audit",
    summary = "Verify the audit trail",
    description = "Walks the chain from its start to its head and names each entry that was \
        edited, removed or reordered.",
    responses((status = 200, body = VerdictView)))]
async fn verify_audit_log(State(state): State<AdminState>) -> Result<Json<VerdictView>, ApiError> {
    Ok(Json(verify(state.store().db()).await?.into()))
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct FormatQuery {
    /// `csv` (the default) or `parquet`.
    #[param(schema_with = crate::export_schedules::format_schema)]
    format: Option<String>,
}

#[utoipa::path(get, path = "/admin/v1/audit-log/export", tag = "audit",
    summary = "Export the audit trail",
    description = "The entries the filters pick, oldest first, as a CSV or Parquet file to \
        download: `seq`, `at`, the actor, `operation`, `orgId`, `target`, `before`, `after`, \
        `address`, `userAgent`, `requestId`, `outcome`, `prevHash` and `hash` (the same file \
        as `rewards audit-log export`).",
    params(FormatQuery, AuditQuery),
    responses(
        (status = 200, description = "the file",
            content((String = "text/csv"), (FileBytes = "application/vnd.apache.parquet"))),
        (status = 400, body = Problem)))]
async fn export_audit_log(
    State(state): State<AdminState>,
    QueryParams(query): QueryParams<AuditQuery>,
    QueryParams(format): QueryParams<FormatQuery>,
    request: Request,
) -> Result<Response, ApiError> {
    let format = match format.format.as_deref() {
        None => ExportFormat::Csv,
        Some(text) => ExportFormat::parse(text)
            .ok_or_else(|| ApiError::invalid("format", "invalid_value", "csv or parquet"))?,
    };
    let filter = query.filter()?;
    let dir = state.data_dir.join("tmp");
    let failed = |e: std::io::Error| ApiError::Internal(format!("{}: {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(failed)?;
    let name = format!("audit-log.{}", format.as_str());
    let path = dir.join(format!("{}-{name}", store::new_id()));
    exports::audit_log::export(state.store(), &filter, &path, format)
        .await
        .map_err(ApiError::Internal)?;
    let served = serve_file(&path, &name, format, request).await;
    // The answer holds the file open; its name is not needed any more.
    let _ = std::fs::remove_file(&path);
    served
}

/// How old the entries to remove are.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PruneInput {
    /// Entries dated more than this many days ago are removed (1 to 36,500).
    #[schema(value_type = i64, minimum = 1, maximum = 36500)]
    older_than_days: serde_json::Number,
}

/// What a pruning removed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PrunedView {
    pub removed: u64,
    /// Entries dated before this were removed.
    pub before: DateTime<Utc>,
}

#[utoipa::path(post, path = "/admin/v1/audit-log/prune", tag = "audit",
    summary = "Remove old audit entries",
    description = "The entries older than the retention period given are removed and the \
        chain's start moved past them, with an entry saying so, in one transaction: the chain \
        still verifies from the first entry kept. The same as `rewards audit-log prune`.",
    request_body = PruneInput,
    responses((status = 200, body = PrunedView), (status = 400, body = Problem)))]
async fn prune_audit_log(
    State(state): State<AdminState>,
    principal: Principal,
    JsonBody(input): JsonBody<PruneInput>,
) -> Result<Json<PrunedView>, ApiError> {
    let mut checks = Checks::default();
    let days = checks.whole("olderThanDays", Some(&input.older_than_days), 1..=36_500);
    let days = checks.finish(days)?.unwrap_or(1);
    let store = state.store();
    let before = store.now() - chrono::Duration::days(i64::from(days));
    let removed = store::audit::chain::prune(store.db(), &principal.actor(), before).await?;
    Ok(Json(PrunedView { removed, before }))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(list_audit_log))
        .routes(routes!(prune_audit_log))
        .routes(routes!(export_audit_log))
        .routes(routes!(verify_audit_log))
}
