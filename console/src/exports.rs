//! An organisation's exports: the files of its `exports/` folder (the daily export's and those
//! run by hand) with their progress while written, downloaded; an export run now (period,
//! campaign, types, format); the daily export's schedule set or removed.

use admin::views_of::CampaignView;
use askama::Template;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, attachment, form_problem, render, to};

/// The transaction types an export may be limited to.
pub const TYPES: [&str; 7] = [
    "EARN",
    "BURN",
    "EXPIRY",
    "REFUND",
    "REVERSAL",
    "TRANSFER_OUT",
    "TRANSFER_IN",
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExportFile {
    pub name: String,
    pub status: String,
    pub bytes: Option<u64>,
    pub rows: Option<u64>,
    pub total_rows: Option<u64>,
    pub finished_at: Option<DateTime<Utc>>,
    pub error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Schedule {
    pub at: String,
    pub format: String,
    pub next_day: NaiveDate,
    pub due_at: DateTime<Utc>,
    pub last: Option<LastExport>,
}

#[derive(Deserialize)]
pub struct LastExport {
    pub file: String,
    pub rows: u64,
    pub at: DateTime<Utc>,
}

#[derive(Template)]
#[template(path = "exports.html")]
struct ExportsPage {
    page: Page,
    files: Vec<ExportFile>,
    schedule: Option<Schedule>,
    writing: bool,
    form: RunForm,
    problem: Option<Problem>,
    schedule_problem: Option<Problem>,
}

impl ExportsPage {
    fn campaigns(&self) -> &[CampaignView] {
        self.page
            .org
            .as_ref()
            .map_or(&[], |o| o.campaigns.as_slice())
    }

    fn chosen(&self, kind: &str) -> bool {
        self.form.types.iter().any(|t| t == kind)
    }
}

#[derive(Default)]
struct RunForm {
    format: String,
    campaign: String,
    from: String,
    to: String,
    types: Vec<String>,
    recorded: bool,
}

async fn exports_page(
    ctx: &Ctx,
    org: &str,
    form: RunForm,
    problem: Option<Problem>,
    schedule_problem: Option<Problem>,
) -> Result<ExportsPage, Failure> {
    let page = ctx.org_page(org, "Exports", "exports").await?;
    let base = format!("/admin/v1/orgs/{}", enc(org));
    let files: api::plumbing::PagedList<ExportFile> =
        ctx.admin.get(&format!("{base}/exports?limit=100")).await?;
    let schedule = match ctx.admin.get(&format!("{base}/export-schedule")).await {
        Ok(schedule) => Some(schedule),
        Err(refused) if refused.status == 404 => None,
        Err(refused) => return Err(refused.into()),
    };
    Ok(ExportsPage {
        page,
        writing: files.data.iter().any(|f| f.status == "writing"),
        files: files.data,
        schedule,
        form,
        problem,
        schedule_problem,
    })
}

/// `GET /console/orgs/{org}/exports`.
pub async fn list(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    Ok(render(
        &exports_page(&ctx, &org, RunForm::default(), None, None).await?,
    ))
}

/// `POST /console/orgs/{org}/exports`: an export run now.
pub async fn run(ctx: Ctx, Path(org): Path<String>, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let form = RunForm {
        format: fields.get("format").to_owned(),
        campaign: fields.get("campaign").to_owned(),
        from: fields.get("from").to_owned(),
        to: fields.get("to").to_owned(),
        types: fields.all("types"),
        recorded: fields.ticked("recorded"),
    };
    let given = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    let input = json!({
        "format": given(&form.format).unwrap_or_else(|| "csv".into()),
        "campaignId": given(&form.campaign),
        "from": given(&form.from),
        "to": given(&form.to),
        "types": form.types,
        "recorded": form.recorded,
    });
    // A field left empty is absent, not null.
    let input: serde_json::Map<String, serde_json::Value> = input
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let path = format!("/admin/v1/orgs/{}/exports", enc(&org));
    match ctx
        .admin
        .send::<ExportFile>(Method::POST, &path, &input)
        .await
    {
        Ok(_) => Ok(to(format!("orgs/{}/exports?done=export-started", enc(&org))).into_response()),
        Err(problem) if form_problem(&problem) || problem.status == 404 => Ok(render(
            &exports_page(&ctx, &org, form, Some(problem), None).await?,
        )),
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/orgs/{org}/exports/schedule`: the daily export set, or removed.
pub async fn schedule(ctx: Ctx, Path(org): Path<String>, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let path = format!("/admin/v1/orgs/{}/export-schedule", enc(&org));
    if fields.ticked("remove") {
        ctx.admin.act::<()>(Method::DELETE, &path).await?;
        return Ok(to(format!("orgs/{}/exports?done=schedule-removed", enc(&org))).into_response());
    }
    let input = json!({"at": fields.get("at"), "format": fields.get("format")});
    match ctx.admin.send::<Schedule>(Method::PUT, &path, &input).await {
        Ok(_) => Ok(to(format!("orgs/{}/exports?done=schedule-saved", enc(&org))).into_response()),
        Err(problem) if form_problem(&problem) => Ok(render(
            &exports_page(&ctx, &org, RunForm::default(), None, Some(problem)).await?,
        )),
        Err(problem) => Err(problem.into()),
    }
}

/// `GET /console/orgs/{org}/exports/{name}`: the file, streamed (ranges honoured).
pub async fn download(
    ctx: Ctx,
    Path((org, name)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let path = format!("/admin/v1/orgs/{}/exports/{}", enc(&org), enc(&name));
    let mut response = ctx.admin.pass_through(&path, &ctx.browser).await?;
    response
        .headers_mut()
        .insert(header::CONTENT_DISPOSITION, attachment(&name));
    Ok(response)
}
