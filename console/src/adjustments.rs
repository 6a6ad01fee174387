//! Manual adjustments of a campaign, and the four-eyes queue: those above the owner's
//! threshold wait until another operator approves or rejects them.

use std::collections::HashMap;

use api::plumbing::PagedList;
use askama::Template;
use axum::Form;
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{Number, json};

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render, to};
use crate::paging::{PAGE_ROWS, Pager, page_number};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Adjustment {
    pub id: String,
    pub wallet_id: String,
    pub amount: Number,
    pub reason: String,
    pub comment: String,
    pub status: String,
    pub requested_by: String,
    pub decided_by: Option<String>,
    pub decided_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

#[derive(Template)]
#[template(path = "adjustments.html")]
struct AdjustmentsPage {
    page: Page,
    campaign: String,
    currency: String,
    status: String,
    adjustments: Vec<Adjustment>,
    pager: Pager,
}

/// `GET /console/orgs/{org}/adjustments?campaign=&status=&page=`: pending first of all.
pub async fn list(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let page = ctx.org_page(&org, "Adjustments", "adjustments").await?;
    let (campaign, currency) = page
        .org
        .as_ref()
        .map(|o| o.chosen(query.get("campaign")))
        .unwrap_or_default();
    let status = match query.get("status").map(String::as_str) {
        Some(s @ ("pending" | "applied" | "rejected" | "")) => s.to_owned(),
        _ => "pending".to_owned(),
    };
    let number = page_number(query.get("page").map(String::as_str));
    let (adjustments, pager) = if campaign.is_empty() {
        (Vec::new(), Pager::none())
    } else {
        let mut path = format!(
            "/admin/v1/orgs/{}/campaigns/{}/adjustments?limit={PAGE_ROWS}&page={number}",
            enc(&org),
            enc(&campaign)
        );
        if !status.is_empty() {
            path.push_str(&format!("&status={status}"));
        }
        let list: PagedList<Adjustment> = ctx.admin.get(&path).await?;
        let link = format!(
            "orgs/{}/adjustments?campaign={}&status={status}&",
            enc(&org),
            enc(&campaign)
        );
        let pager = Pager::of(&list, &link);
        (list.data, pager)
    };
    Ok(render(&AdjustmentsPage {
        page,
        campaign,
        currency,
        status,
        adjustments,
        pager,
    }))
}

#[derive(Deserialize)]
pub struct Decision {
    #[serde(default)]
    note: String,
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/adjustments/{id}/{approve|reject}`.
pub async fn decide(
    ctx: Ctx,
    Path((org, campaign, id, verb)): Path<(String, String, String, String)>,
    Form(form): Form<Decision>,
) -> Result<Response, Failure> {
    let done = match verb.as_str() {
        "approve" => "approved",
        "reject" => "rejected",
        _ => return Err(crate::page::not_found()),
    };
    let path = format!(
        "/admin/v1/orgs/{}/campaigns/{}/adjustments/{}/{verb}",
        enc(&org),
        enc(&campaign),
        enc(&id)
    );
    let note = form.note.trim();
    if verb == "reject" {
        let body = json!({ "note": (!note.is_empty()).then_some(note) });
        ctx.admin
            .send::<serde_json::Value>(Method::POST, &path, &body)
            .await?;
    } else {
        ctx.admin
            .act::<serde_json::Value>(Method::POST, &path)
            .await?;
    }
    Ok(to(format!(
        "orgs/{}/adjustments?campaign={}&done={done}",
        enc(&org),
        enc(&campaign)
    ))
    .into_response())
}
