//! Daily exports: an organisation's transactions of the previous UTC day written each day into
//! its SFTP `exports/` folder, at a time and in a format it is given. Shown, set, stopped, and
//! listed service-wide. The same store operations as `rewards export schedule`.

use api::plumbing::{ApiError, Checks, JsonBody, PagedList, Paging, PagingParams, Problem};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, NaiveDate, Utc};
use exports::scheduled::{clock, time_of_day};
use serde::{Deserialize, Serialize};
use store::audit::Action;
use store::{ExportFormat, ExportSchedule};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::auth::Principal;
use crate::orgs::{ORG, org_of};
use crate::schemas::not_null;
use crate::state::AdminState;

/// The last file a daily export wrote.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LastExport {
    /// Its name in the organisation's `exports/` folder.
    pub file: String,
    pub rows: u64,
    pub at: DateTime<Utc>,
}

/// An organisation's daily export.
#[derive(Debug, Clone, PartialEq, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScheduleView {
    pub org_id: String,
    /// The time of day (UTC) the previous day is written, `HH:MM`.
    #[schema(example = "02:30")]
    pub at: String,
    /// `parquet` or `csv`.
    pub format: String,
    /// The first day not yet written.
    pub next_day: NaiveDate,
    /// When that day is due.
    pub due_at: DateTime<Utc>,
    pub last: Option<LastExport>,
}

impl From<ExportSchedule> for ScheduleView {
    fn from(s: ExportSchedule) -> ScheduleView {
        ScheduleView {
            at: clock(s.at_minute),
            format: s.format.as_str().to_owned(),
            due_at: s.due_at(s.next_day),
            next_day: s.next_day,
            last: s.last.map(|(file, rows, at)| LastExport { file, rows, at }),
            org_id: s.org_id,
        }
    }
}

/// The format an export writes, `parquet` or `csv`.
pub fn format_schema() -> utoipa::openapi::schema::Object {
    use utoipa::openapi::schema::{ObjectBuilder, Type};
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(ExportFormat::ALL.map(ExportFormat::as_str)))
        .build()
}

/// When and how to write the daily export.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ScheduleInput {
    /// The time of day (UTC), `HH:MM`, when the previous day is written (no earlier than five
    /// minutes past midnight, whatever is set, so that the day's last writes are in).
    #[serde(default, deserialize_with = "not_null")]
    #[schema(value_type = String, pattern = "^([01][0-9]|2[0-3]):[0-5][0-9]$", required = true)]
    at: Option<String>,
    /// `parquet` (the default) or `csv`.
    #[serde(default, deserialize_with = "not_null")]
    #[schema(schema_with = format_schema)]
    format: Option<String>,
}

/// `format` checked as `field`: one of the formats, or `parquet` when absent.
pub fn format_of(checks: &mut Checks, field: &str, format: Option<&str>) -> ExportFormat {
    match format.map(ExportFormat::parse) {
        None => ExportFormat::Parquet,
        Some(Some(format)) => format,
        Some(None) => {
            checks.fail(field, "invalid_value", "parquet or csv");
            ExportFormat::Parquet
        }
    }
}

#[utoipa::path(get, path = "/admin/v1/orgs/{org}/export-schedule", tag = "exports",
    summary = "Get an organisation's daily export",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    responses((status = 200, body = ScheduleView),
        (status = 404, description = "unknown organisation, or it has no daily export", body = Problem)))]
async fn get_export_schedule(
    State(state): State<AdminState>,
    Path(org): Path<String>,
) -> Result<Json<ScheduleView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    match state.store().export_schedule(&scope).await? {
        Some(schedule) => Ok(Json(schedule.into())),
        None => Err(ApiError::NotFound("daily export")),
    }
}

#[utoipa::path(put, path = "/admin/v1/orgs/{org}/export-schedule", tag = "exports",
    summary = "Set an organisation's daily export",
    description = "Every day at `at` (UTC) the previous day's transactions (those the ledger \
        recorded that day) are written to `exports/transactions-<day>.<format>` in the \
        organisation's SFTP tree. Setting it again changes the time or the format; the days \
        already written stay.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    request_body = ScheduleInput,
    responses((status = 200, body = ScheduleView), (status = 400, body = Problem),
        (status = 404, description = "unknown organisation", body = Problem)))]
async fn set_export_schedule(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
    JsonBody(input): JsonBody<ScheduleInput>,
) -> Result<Json<ScheduleView>, ApiError> {
    let scope = org_of(&state, &org).await?;
    let mut checks = Checks::default();
    let at = match input.at.as_deref().map(time_of_day) {
        None => {
            checks.fail("at", "missing_field", "is required");
            0
        }
        Some(Ok(minute)) => minute,
        Some(Err(why)) => {
            checks.fail("at", "invalid_value", why);
            0
        }
    };
    let format = format_of(&mut checks, "format", input.format.as_deref());
    checks.finish(())?;
    let today = state.store().now().date_naive();
    let action = Action::new("export.schedule")
        .org(org)
        .after(serde_json::json!({"at": clock(at), "format": format.as_str()}));
    let schedule = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.set_export_schedule(&scope, at, format, today).await?)
        })
        .await?;
    Ok(Json(schedule.into()))
}

#[utoipa::path(delete, path = "/admin/v1/orgs/{org}/export-schedule", tag = "exports",
    summary = "Stop an organisation's daily export",
    description = "The files already written stay.",
    params(("org" = String, Path, description = ORG, max_length = 64)),
    responses((status = 204, description = "stopped"),
        (status = 404, description = "unknown organisation, or it has no daily export", body = Problem)))]
async fn remove_export_schedule(
    State(state): State<AdminState>,
    principal: Principal,
    Path(org): Path<String>,
) -> Result<StatusCode, ApiError> {
    let scope = org_of(&state, &org).await?;
    let action = Action::new("export.unschedule").org(org);
    let removed = principal
        .acting(state.store(), action, |store| async move {
            Ok(store.remove_export_schedule(&scope).await?)
        })
        .await?;
    match removed {
        true => Ok(StatusCode::NO_CONTENT),
        false => Err(ApiError::NotFound("daily export")),
    }
}

#[utoipa::path(get, path = "/admin/v1/export-schedules", tag = "exports",
    summary = "List every organisation's daily export",
    description = "By organisation id: time, format, the next day due and the last file written.",
    params(PagingParams),
    responses((status = 200, body = PagedList<ScheduleView>), (status = 400, body = Problem)))]
async fn list_export_schedules(
    State(state): State<AdminState>,
    Paging(page): Paging,
) -> Result<Json<PagedList<ScheduleView>>, ApiError> {
    let schedules = state.store().export_schedules().await?;
    Ok(Json(PagedList::of(schedules, page, ScheduleView::from)))
}

pub fn router() -> OpenApiRouter<AdminState> {
    OpenApiRouter::new()
        .routes(routes!(
            get_export_schedule,
            set_export_schedule,
            remove_export_schedule
        ))
        .routes(routes!(list_export_schedules))
}
