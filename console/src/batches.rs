//! An organisation's batch files: received files with their state, counts and timing (the
//! list follows a file that loads without a reload); one file with its live progress while it
//! loads (htmx polls the panel until the file is done), its report (rows rejected by reason,
//! tokens by rule) and its first rejected rows, and the whole rejected-rows report to download.

use std::collections::HashMap;

use admin::views_of::AdminBatchView;
use api::plumbing::PagedList;
use askama::Template;
use axum::body::Body;
use axum::extract::{Path, Query};
use axum::http::{HeaderValue, Method, header};
use axum::response::{IntoResponse, Response};

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, attachment, render};
use crate::paging::{PAGE_ROWS, Pager, page_number};

/// Rejected rows a batch's page shows; the download has them all.
pub const SHOWN_REJECTED: usize = 100;

#[derive(Template)]
#[template(path = "batches.html")]
struct BatchesPage {
    page: Page,
    batches: Vec<AdminBatchView>,
    pager: Pager,
    /// Whether a file is loading: the rows then refresh themselves.
    loading: bool,
    link: String,
}

#[derive(Template)]
#[template(path = "batches_rows.html")]
struct BatchesRows {
    page: Page,
    batches: Vec<AdminBatchView>,
    pager: Pager,
    loading: bool,
    link: String,
}

/// Whether a batch is still to be done.
fn pending(batch: &AdminBatchView) -> bool {
    matches!(batch.batch.state.as_ref(), "received" | "processing")
}

/// `GET /console/orgs/{org}/batches?page=`; htmx asks for the rows alone while a file loads.
pub async fn list(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let number = page_number(query.get("page").map(String::as_str));
    let page = ctx.org_page(&org, "Batch files", "batches").await?;
    let list: PagedList<AdminBatchView> = ctx
        .admin
        .get(&format!(
            "/admin/v1/orgs/{}/batches?limit={PAGE_ROWS}&page={number}",
            enc(&org)
        ))
        .await?;
    let pager = Pager::of(&list, &format!("orgs/{}/batches?", enc(&org)));
    let loading = list.data.iter().any(pending);
    let link = format!("orgs/{}/batches?page={number}", enc(&org));
    if ctx.htmx {
        return Ok(render(&BatchesRows {
            page,
            batches: list.data,
            pager,
            loading,
            link,
        }));
    }
    Ok(render(&BatchesPage {
        page,
        batches: list.data,
        pager,
        loading,
        link,
    }))
}

/// One rejected row of a report: its number, reason, column, value and message.
pub struct RejectedRow {
    pub row: String,
    pub reason: String,
    pub column: String,
    pub value: String,
    pub message: String,
}

#[derive(Template)]
#[template(path = "batch.html")]
struct BatchPage {
    page: Page,
    batch: AdminBatchView,
    rejected: Vec<RejectedRow>,
}

#[derive(Template)]
#[template(path = "batch_progress.html")]
struct ProgressPanel {
    page: Page,
    batch: AdminBatchView,
}

impl BatchPage {
    /// The report's counts by key (`rejectedByReason`, `tokensByRule`), largest first.
    fn counts(&self, key: &str) -> Vec<(String, String)> {
        counts_of(&self.batch, key)
    }
}

fn counts_of(batch: &AdminBatchView, key: &str) -> Vec<(String, String)> {
    let Some(map) = batch
        .batch
        .summary
        .as_ref()
        .and_then(|s| s.get(key))
        .and_then(|v| v.as_object())
    else {
        return Vec::new();
    };
    let mut counts: Vec<(String, String)> = map
        .iter()
        .map(|(k, v)| {
            // The rule engine's name for what rounding took or gave.
            let name = if k == "~" {
                "rounding".to_owned()
            } else {
                k.clone()
            };
            (name, v.to_string().trim_matches('"').to_owned())
        })
        .collect();
    counts.sort_by(|a, b| {
        let n = |t: &str| t.parse::<f64>().unwrap_or_default();
        n(&b.1).total_cmp(&n(&a.1))
    });
    counts
}

/// A number of the report's summary (`seconds`, `rowsPerSecond`), as text.
pub fn summary_number(batch: &AdminBatchView, key: &str) -> Option<String> {
    let value = batch.batch.summary.as_ref()?.get(key)?;
    let number = value.as_f64()?;
    Some(crate::format::number(&format!("{number:.1}")))
}

fn api_path(org: &str, id: &str) -> String {
    format!("/admin/v1/orgs/{}/batches/{}", enc(org), enc(id))
}

/// The first rejected rows of the report, if it has one.
async fn rejected_rows(ctx: &Ctx, org: &str, id: &str) -> Result<Vec<RejectedRow>, Failure> {
    let answer = ctx
        .admin
        .call(
            Method::GET,
            &format!("{}/rejected", api_path(org, id)),
            None,
            Body::empty(),
        )
        .await;
    let body = match answer {
        Ok(answer) => answer.body,
        Err(problem) if problem.status == 404 => return Ok(Vec::new()),
        Err(problem) => return Err(problem.into()),
    };
    Ok(read_rejected(&body, SHOWN_REJECTED))
}

/// The first `limit` rows of a rejected-rows report (CSV with its header).
pub fn read_rejected(csv: &[u8], limit: usize) -> Vec<RejectedRow> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(csv);
    let field = |record: &csv::StringRecord, i: usize| record.get(i).unwrap_or_default().to_owned();
    reader
        .records()
        .take(limit)
        .filter_map(Result::ok)
        .map(|r| RejectedRow {
            row: field(&r, 0),
            reason: field(&r, 1),
            column: field(&r, 2),
            value: field(&r, 3),
            message: field(&r, 4),
        })
        .collect()
}

/// `GET /console/orgs/{org}/batches/{id}`.
pub async fn show(ctx: Ctx, Path((org, id)): Path<(String, String)>) -> Result<Response, Failure> {
    let mut page = ctx.org_page(&org, "Batch file", "batches").await?;
    let batch: AdminBatchView = ctx.admin.get(&api_path(&org, &id)).await?;
    page.title.clone_from(&batch.batch.file_name);
    let rejected = match pending(&batch) {
        true => Vec::new(),
        false => rejected_rows(&ctx, &org, &id).await?,
    };
    Ok(render(&BatchPage {
        page,
        batch,
        rejected,
    }))
}

/// `GET /console/orgs/{org}/batches/{id}/progress`: the progress panel alone, which htmx asks
/// for again while the file loads; once done, the browser is sent to the whole page (with the
/// report).
pub async fn progress(
    ctx: Ctx,
    Path((org, id)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let page = ctx.org_page(&org, "Batch file", "batches").await?;
    let batch: AdminBatchView = ctx.admin.get(&api_path(&org, &id)).await?;
    if !pending(&batch) {
        return Err(crate::page::to(format!(
            "orgs/{}/batches/{}",
            enc(&org),
            enc(&id)
        )));
    }
    Ok(render(&ProgressPanel { page, batch }))
}

/// `GET /console/orgs/{org}/batches/{id}/rejected.csv`: the whole rejected-rows report.
pub async fn download(
    ctx: Ctx,
    Path((org, id)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let batch: AdminBatchView = ctx.admin.get(&api_path(&org, &id)).await?;
    let answer = ctx
        .admin
        .call(
            Method::GET,
            &format!("{}/rejected", api_path(&org, &id)),
            None,
            Body::empty(),
        )
        .await?;
    Ok((
        [
            (
                header::CONTENT_TYPE,
                HeaderValue::from_static("text/csv; charset=utf-8"),
            ),
            (
                header::CONTENT_DISPOSITION,
                attachment(&format!("{}.rejected.csv", batch.batch.file_name)),
            ),
        ],
        answer.body,
    )
        .into_response())
}
