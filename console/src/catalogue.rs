//! A campaign's catalogue: its products (filtered by name, id, category or tag, 25 a page),
//! an import document checked first (what it would create, update and remove, or every problem
//! at its JSON path) and then applied, and the catalogue exported as an import document.

use std::collections::HashMap;

use api::views::ImportReportView;
use askama::Template;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query};
use axum::http::{Method, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render};
use crate::paging::{PAGE_ROWS, Pager, page_number};

#[derive(Deserialize)]
pub struct Document {
    #[serde(default)]
    pub products: Vec<Product>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Product {
    pub id: String,
    pub name: String,
    pub category: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub variants: Vec<Variant>,
}

#[derive(Deserialize)]
pub struct Variant {
    pub name: String,
    pub price: serde_json::Number,
}

#[derive(Template)]
#[template(path = "catalogue.html")]
struct CataloguePage {
    page: Page,
    campaign: String,
    currency: String,
    q: String,
    products: Vec<Product>,
    pager: Pager,
    document: String,
    replace: bool,
    report: Option<ImportReportView>,
    problem: Option<Problem>,
}

fn catalogue_path(org: &str, campaign: &str) -> String {
    format!(
        "/admin/v1/orgs/{}/campaigns/{}/catalogue",
        enc(org),
        enc(campaign)
    )
}

async fn catalogue_page(
    ctx: &Ctx,
    (org, campaign): (&str, &str),
    query: &HashMap<String, String>,
    import: (String, bool, Option<ImportReportView>, Option<Problem>),
) -> Result<CataloguePage, Failure> {
    let page = ctx.org_page(org, "Catalogue", "programme").await?;
    let currency = page
        .org
        .as_ref()
        .map_or("", |o| o.currency(campaign))
        .to_owned();
    let document: Document = ctx.admin.get(&catalogue_path(org, campaign)).await?;
    let q = query.get("q").map_or("", |q| q.trim()).to_owned();
    let needle = q.to_lowercase();
    let matching: Vec<Product> = document
        .products
        .into_iter()
        .filter(|p| {
            needle.is_empty()
                || p.name.to_lowercase().contains(&needle)
                || p.id.to_lowercase() == needle
                || p.category
                    .as_deref()
                    .is_some_and(|c| c.to_lowercase() == needle)
                || p.tags.iter().any(|t| t.to_lowercase() == needle)
        })
        .collect();
    let number = page_number(query.get("page").map(String::as_str));
    let total = matching.len() as u64;
    let pages = total.div_ceil(u64::from(PAGE_ROWS));
    let products: Vec<Product> = matching
        .into_iter()
        .skip(((number - 1) * PAGE_ROWS) as usize)
        .take(PAGE_ROWS as usize)
        .collect();
    let link = format!(
        "orgs/{}/campaigns/{}/catalogue?q={}&",
        enc(org),
        enc(campaign),
        enc(&q)
    );
    let pager = Pager::new(number, pages, total, &link);
    let (document, replace, report, problem) = import;
    Ok(CataloguePage {
        page,
        campaign: campaign.to_owned(),
        currency,
        q,
        products,
        pager,
        document,
        replace,
        report,
        problem,
    })
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/catalogue?q=&page=`.
pub async fn show(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let import = (String::new(), false, None, None);
    Ok(render(
        &catalogue_page(&ctx, (&org, &campaign), &query, import).await?,
    ))
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/catalogue`: the document checked (`check`)
/// or applied (`apply`); the page shows the report, or the problems.
pub async fn import(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let document = fields.get_raw("document").to_owned();
    let replace = fields.ticked("replace");
    let dry_run = fields.get("action") != "apply";
    let path = format!(
        "{}?dryRun={dry_run}&replace={replace}",
        catalogue_path(&org, &campaign)
    );
    let answer = ctx
        .admin
        .call(
            Method::PUT,
            &path,
            Some("application/json"),
            Body::from(document.clone()),
        )
        .await;
    let (report, problem) = match answer {
        Ok(answer) => {
            let report: ImportReportView = serde_json::from_slice(&answer.body)
                .map_err(|e| Problem::internal(format!("the import's report: {e}")))?;
            (Some(report), None)
        }
        Err(problem) if form_problem(&problem) => (None, Some(problem)),
        Err(problem) => return Err(problem.into()),
    };
    let import = (document, replace, report, problem);
    Ok(render(
        &catalogue_page(&ctx, (&org, &campaign), &HashMap::new(), import).await?,
    ))
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/catalogue.json`: the export, downloaded.
pub async fn export(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let answer = ctx
        .admin
        .call(
            Method::GET,
            &catalogue_path(&org, &campaign),
            None,
            Body::empty(),
        )
        .await?;
    Ok((
        [
            (header::CONTENT_TYPE, "application/json"),
            (
                header::CONTENT_DISPOSITION,
                "attachment; filename=\"catalogue.json\"",
            ),
        ],
        answer.body,
    )
        .into_response())
}
