//! A campaign's catalogue: its products found with the client API's search and filters (25 a
//! page), an import document checked first (what it would create, update and remove, or every
//! problem at its JSON path) and then applied, and the catalogue exported as an import document.

use std::collections::HashMap;

use api::plumbing::PagedList;
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

/// A product as the search answers it.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Product {
    pub id: String,
    pub name: String,
    pub category: Option<String>,
    #[serde(default)]
    pub tags: Vec<String>,
    pub book_in_advance: bool,
    #[serde(default)]
    pub variants: Vec<Variant>,
    /// Kilometres to its nearest branch, in a search near a place.
    pub distance: Option<f64>,
}

#[derive(Deserialize)]
pub struct Variant {
    pub name: String,
    pub price: serde_json::Number,
    pub available: bool,
    pub tier: Option<NamedTier>,
}

#[derive(Deserialize)]
pub struct NamedTier {
    pub name: String,
}

/// A tier a product may be filtered by.
#[derive(Deserialize)]
pub struct Tier {
    pub id: String,
    pub name: String,
}

/// The search's filters, as the client API's `GET /v1/products` has them; each sent on as it
/// was typed, so the admin API's checks (and messages) are the client API's.
const FILTERS: [(&str, &str); 11] = [
    ("search", "search"),
    ("category", "category"),
    ("available", "isAvailable"),
    ("booking", "bookingRequired"),
    ("tier", "tierId"),
    ("min", "minCost"),
    ("max", "maxCost"),
    ("sort", "sort"),
    ("latitude", "latitude"),
    ("longitude", "longitude"),
    ("radius", "radius"),
];

/// The filters of a catalogue page, as typed.
#[derive(Default)]
pub struct Filters(HashMap<&'static str, String>);

impl Filters {
    fn of(query: &HashMap<String, String>) -> Filters {
        let typed = FILTERS.iter().filter_map(|(name, _)| {
            let value = query.get(*name).map_or("", |v| v.trim());
            (!value.is_empty()).then(|| (*name, value.to_owned()))
        });
        Filters(typed.collect())
    }

    /// What was typed in the filter `name` ("" when nothing).
    pub fn get(&self, name: &str) -> &str {
        self.0.get(name).map_or("", String::as_str)
    }

    /// `name=value&` for each filter typed, with the page's (`page`) or the API's (`api`)
    /// names.
    fn query(&self, api: bool) -> String {
        FILTERS
            .iter()
            .filter(|(name, _)| !self.get(name).is_empty())
            .map(|(name, param)| {
                let key = if api { param } else { name };
                format!("{key}={}&", enc(self.get(name)))
            })
            .collect()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether a filter of a search near a place was typed (its fields are shown open).
    pub fn near(&self) -> bool {
        ["latitude", "longitude", "radius"]
            .iter()
            .any(|f| !self.get(f).is_empty())
    }
}

/// The page field that the API's parameter `param` is typed in.
fn field_of(param: &str) -> &'static str {
    FILTERS
        .iter()
        .find(|(_, p)| *p == param)
        .map_or("search", |(name, _)| name)
}

/// Each filter's message in a problem the search answered, by the page's field names.
#[derive(Default)]
pub struct FilterErrors(HashMap<&'static str, String>);

impl FilterErrors {
    fn of(problem: &Problem) -> FilterErrors {
        let mut errors = HashMap::new();
        for e in &problem.errors {
            errors.insert(field_of(&e.field), e.message.clone());
        }
        if errors.is_empty() {
            let field = problem.field.as_deref().map_or("search", field_of);
            errors.insert(field, problem.detail.clone());
        }
        FilterErrors(errors)
    }

    pub fn about(&self, name: &str) -> Option<&str> {
        self.0.get(name).map(String::as_str)
    }
}

#[derive(Template)]
#[template(path = "catalogue.html")]
struct CataloguePage {
    page: Page,
    campaign: String,
    currency: String,
    filters: Filters,
    errors: FilterErrors,
    tiers: Vec<Tier>,
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
    let filters = Filters::of(query);
    let number = page_number(query.get("page").map(String::as_str));
    let path = format!(
        "/admin/v1/orgs/{}/campaigns/{}/products?{}limit={PAGE_ROWS}&page={number}",
        enc(org),
        enc(campaign),
        filters.query(true)
    );
    let (products, pager, errors) = match ctx.admin.get::<PagedList<Product>>(&path).await {
        Ok(list) => {
            let link = format!(
                "orgs/{}/campaigns/{}/catalogue?{}",
                enc(org),
                enc(campaign),
                filters.query(false)
            );
            let pager = Pager::of(&list, &link);
            (list.data, pager, FilterErrors::default())
        }
        Err(problem) if form_problem(&problem) => {
            (Vec::new(), Pager::none(), FilterErrors::of(&problem))
        }
        Err(problem) => return Err(problem.into()),
    };
    let tiers: PagedList<Tier> = ctx
        .admin
        .get(&format!(
            "/admin/v1/orgs/{}/campaigns/{}/tiers?limit=100",
            enc(org),
            enc(campaign)
        ))
        .await?;
    let (document, replace, report, problem) = import;
    Ok(CataloguePage {
        page,
        campaign: campaign.to_owned(),
        currency,
        filters,
        errors,
        tiers: tiers.data,
        products,
        pager,
        document,
        replace,
        report,
        problem,
    })
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/catalogue?search=&category=&...&page=`.
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
