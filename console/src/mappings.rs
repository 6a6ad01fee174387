//! An organisation's mappings (how its files' columns read): listed with their patterns, one
//! shown, a document (JSON, or the command line's TOML) checked with each problem at its path
//! and line, stored, removed; and a file run dry against them (nothing credited) with its
//! report and first rejected rows.

use std::collections::HashMap;

use api::plumbing::PagedList;
use askama::Template;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use crate::batches::RejectedRow;
use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

/// The largest file the console runs dry (it holds it in memory); the admin API takes up to 1 GiB.
pub const MAX_DRY_RUN: usize = 64 << 20;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Mapping {
    pub pattern: String,
    pub mapping: Value,
    pub updated_at: DateTime<Utc>,
}

impl Mapping {
    /// The document, indented, for reading.
    pub fn document(&self) -> String {
        serde_json::to_string_pretty(&self.mapping).unwrap_or_default()
    }
}

#[derive(Deserialize)]
struct Check {
    valid: bool,
    problems: Vec<CheckProblem>,
}

#[derive(Deserialize)]
struct CheckProblem {
    path: String,
    message: String,
}

/// A problem of the document, with the line it is likely on.
pub struct Found {
    pub line: Option<usize>,
    pub path: String,
    pub message: String,
}

#[derive(Template)]
#[template(path = "mappings.html")]
struct MappingsPage {
    page: Page,
    mappings: Vec<Mapping>,
    document: String,
    problems: Vec<Found>,
    checked: bool,
    problem: Option<Problem>,
}

/// The line of `text` where the last key of `path` (`columns.amount.format`) is written.
fn line_of(text: &str, path: &str) -> Option<usize> {
    let key = path
        .rsplit('.')
        .find(|part| !part.is_empty() && !part.starts_with('['))?
        .split('[')
        .next()?;
    text.lines()
        .position(|line| {
            let line = line.trim_start();
            line.starts_with(&format!("\"{key}\""))
                || line.starts_with(&format!("{key} "))
                || line.starts_with(&format!("{key}="))
        })
        .map(|i| i + 1)
}

/// The content type of a document: TOML unless it opens like JSON.
fn content_type(document: &str) -> &'static str {
    match document.trim_start().starts_with('{') {
        true => "application/json",
        false => "application/toml",
    }
}

async fn mappings_page(
    ctx: &Ctx,
    org: &str,
    document: String,
    (problems, checked, problem): (Vec<Found>, bool, Option<Problem>),
) -> Result<MappingsPage, Failure> {
    let page = ctx.org_page(org, "Mappings", "batches").await?;
    let mappings: PagedList<Mapping> = ctx
        .admin
        .get(&format!("/admin/v1/orgs/{}/mappings?limit=100", enc(org)))
        .await?;
    Ok(MappingsPage {
        page,
        mappings: mappings.data,
        document,
        problems,
        checked,
        problem,
    })
}

/// `GET /console/orgs/{org}/mappings`.
pub async fn list(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    let page = mappings_page(&ctx, &org, String::new(), (Vec::new(), false, None)).await?;
    Ok(render(&page))
}

/// `POST /console/orgs/{org}/mappings`: the document checked (`check`), stored (`store`), or
/// the mapping of `pattern` removed (`remove`).
pub async fn act(ctx: Ctx, Path(org): Path<String>, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let document = fields.get_raw("document").replace("\r\n", "\n");
    let base = format!("/admin/v1/orgs/{}/mappings", enc(&org));
    let kind = content_type(&document);
    match fields.get("action") {
        "remove" => {
            let path = format!("{base}/{}", enc(fields.get("pattern")));
            ctx.admin.act::<()>(Method::DELETE, &path).await?;
            Ok(to(format!("orgs/{}/mappings?done=mapping-removed", enc(&org))).into_response())
        }
        "store" => {
            let stored = ctx
                .admin
                .call(Method::PUT, &base, Some(kind), Body::from(document.clone()))
                .await;
            match stored {
                Ok(_) => Ok(
                    to(format!("orgs/{}/mappings?done=mapping-stored", enc(&org))).into_response(),
                ),
                Err(problem) if form_problem(&problem) => {
                    let problems = problem
                        .errors
                        .iter()
                        .map(|e| Found {
                            line: line_of(&document, &e.field),
                            path: e.field.clone(),
                            message: e.message.clone(),
                        })
                        .collect();
                    let page = mappings_page(&ctx, &org, document, (problems, true, Some(problem)))
                        .await?;
                    Ok(render(&page))
                }
                Err(problem) => Err(problem.into()),
            }
        }
        _ => {
            let checked = ctx
                .admin
                .call(
                    Method::POST,
                    &format!("{base}/check"),
                    Some(kind),
                    Body::from(document.clone()),
                )
                .await;
            let (problems, problem) = match checked {
                Ok(answer) => {
                    let check: Check = serde_json::from_slice(&answer.body)
                        .map_err(|e| Problem::internal(format!("the check's answer: {e}")))?;
                    let found = check
                        .problems
                        .into_iter()
                        .map(|p| Found {
                            line: line_of(&document, &p.path),
                            path: p.path,
                            message: p.message,
                        })
                        .collect();
                    let _ = check.valid;
                    (found, None)
                }
                Err(problem) if form_problem(&problem) => (Vec::new(), Some(problem)),
                Err(problem) => return Err(problem.into()),
            };
            let page = mappings_page(&ctx, &org, document, (problems, true, problem)).await?;
            Ok(render(&page))
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DryRun {
    summary: Value,
    rejected_sample: String,
}

#[derive(Template)]
#[template(path = "dry_run.html")]
struct DryRunResult {
    name: String,
    summary: Vec<(String, String)>,
    rejected: Vec<RejectedRow>,
    problem: Option<String>,
}

/// `POST /console/orgs/{org}/mappings/dry-run?name=`: the file in the body (sent by the page's
/// script) run dry; the result as a fragment.
pub async fn dry_run(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
    body: Bytes,
) -> Result<Response, Failure> {
    let name = query.get("name").cloned().unwrap_or_default();
    let path = format!(
        "/admin/v1/orgs/{}/batches/dry-run?name={}",
        enc(&org),
        enc(&name)
    );
    let answer = ctx
        .admin
        .call(
            Method::POST,
            &path,
            Some("application/octet-stream"),
            Body::from(body),
        )
        .await;
    let result = match answer {
        Ok(answer) => {
            let run: DryRun = serde_json::from_slice(&answer.body)
                .map_err(|e| Problem::internal(format!("the dry run's answer: {e}")))?;
            let summary = [
                "state", "rows", "loaded", "rejected", "tokens", "mapping", "error",
            ]
            .iter()
            .filter_map(|key| {
                let value = run.summary.get(*key)?;
                (!value.is_null()).then(|| {
                    (
                        (*key).to_owned(),
                        value.to_string().trim_matches('"').to_owned(),
                    )
                })
            })
            .collect();
            DryRunResult {
                name,
                summary,
                rejected: crate::batches::read_rejected(run.rejected_sample.as_bytes(), 100),
                problem: None,
            }
        }
        Err(problem) if form_problem(&problem) => DryRunResult {
            name,
            summary: Vec::new(),
            rejected: Vec::new(),
            problem: Some(problem.detail),
        },
        Err(problem) => return Err(problem.into()),
    };
    Ok(render(&result))
}
