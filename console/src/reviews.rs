//! Review moderation: the reviews hidden because of their language or their reports, oldest
//! first, each with its profanity score and reports; approved (listed again) or removed.

use std::collections::HashMap;

use api::plumbing::PagedList;
use api::views::ReviewView;
use askama::Template;
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render, to};
use crate::paging::{PAGE_ROWS, Pager, page_number};

#[derive(Template)]
#[template(path = "reviews.html")]
struct ReviewsPage {
    page: Page,
    reviews: Vec<ReviewView>,
    pager: Pager,
}

/// A profanity score as people read it.
pub fn language(score: &f64) -> &'static str {
    match *score {
        s if s >= 1.0 => "severe",
        s if s >= 0.6 => "moderate",
        s if s > 0.0 => "mild",
        _ => "clean",
    }
}

/// `GET /console/orgs/{org}/reviews?page=`: the moderation queue.
pub async fn queue(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let number = page_number(query.get("page").map(String::as_str));
    let page = ctx.org_page(&org, "Reviews", "reviews").await?;
    let list: PagedList<ReviewView> = ctx
        .admin
        .get(&format!(
            "/admin/v1/orgs/{}/reviews/pending?limit={PAGE_ROWS}&page={number}",
            enc(&org)
        ))
        .await?;
    let pager = Pager::of(&list, &format!("orgs/{}/reviews?", enc(&org)));
    Ok(render(&ReviewsPage {
        page,
        reviews: list.data,
        pager,
    }))
}

/// `POST /console/orgs/{org}/reviews/{id}/{approve|remove}`.
pub async fn decide(
    ctx: Ctx,
    Path((org, id, verb)): Path<(String, String, String)>,
) -> Result<Response, Failure> {
    let done = match verb.as_str() {
        "approve" => "review-approved",
        "remove" => "review-removed",
        _ => return Err(crate::page::not_found()),
    };
    let path = format!("/admin/v1/orgs/{}/reviews/{}/{verb}", enc(&org), enc(&id));
    ctx.admin
        .act::<serde_json::Value>(Method::POST, &path)
        .await?;
    Ok(to(format!("orgs/{}/reviews?done={done}", enc(&org))).into_response())
}
