//! An organisation's front page: for one of its campaigns, its members and wallets, what it
//! owes (the tokens outstanding), the tokens earned, burned, expired and reversed each day over
//! 90 days as a chart, how its wallets spread over the tiers; and what needs an eye: files
//! received in the last day with their outcome, failing webhook endpoints, reviews waiting.

use std::collections::HashMap;

use admin::views_of::{AdminBatchView, DayView, OverviewView, Tokens};
use api::plumbing::PagedList;
use api::views::EndpointView;
use askama::Template;
use axum::extract::{Path, Query};
use axum::response::Response;
use chrono::Duration;

use crate::chart::{Series, lines};
use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render};

#[derive(Template)]
#[template(path = "overview.html")]
struct OverviewPage {
    page: Page,
    campaign: String,
    currency: String,
    members: u64,
    overview: Option<OverviewView>,
    chart: String,
    files: Vec<AdminBatchView>,
    failing: Vec<EndpointView>,
    reviews_waiting: Option<u64>,
}

impl OverviewPage {
    fn tokens(&self, amount: &Tokens) -> String {
        crate::format::tokens(amount, &self.currency)
    }

    /// A tier's share of the wallets, in per cent.
    fn share(&self, wallets: &u64) -> u64 {
        let all = self.overview.as_ref().map_or(0, |o| o.wallets);
        (wallets * 100).checked_div(all).unwrap_or(0)
    }
}

#[derive(serde::Deserialize)]
struct Count {
    total: u64,
}

/// `GET /console/orgs/{org}/?campaign=`.
pub async fn show(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let page = ctx.org_page(&org, "Overview", "overview").await?;
    let (campaign, currency) = page
        .org
        .as_ref()
        .map(|o| o.chosen(query.get("campaign")))
        .unwrap_or_default();
    let base = format!("/admin/v1/orgs/{}", enc(&org));
    let members: Count = ctx.admin.get(&format!("{base}/members?limit=0")).await?;
    let overview: Option<OverviewView> = match campaign.is_empty() {
        true => None,
        false => Some(
            ctx.admin
                .get(&format!(
                    "{base}/campaigns/{}/overview?days=90",
                    enc(&campaign)
                ))
                .await?,
        ),
    };
    let chart = overview.as_ref().map_or_else(String::new, |o| {
        let days: Vec<String> = o
            .days
            .iter()
            .map(|d| d.day.format("%d %b").to_string())
            .collect();
        let values = |pick: fn(&DayView) -> Tokens| -> Vec<f64> {
            o.days
                .iter()
                .map(|d| pick(d).to_string().parse().unwrap_or_default())
                .collect()
        };
        let series = [
            Series {
                name: "earned",
                label: "Earned",
                values: values(|d| d.earned),
            },
            Series {
                name: "burned",
                label: "Burned",
                values: values(|d| d.burned),
            },
            Series {
                name: "expired",
                label: "Expired",
                values: values(|d| d.expired),
            },
            Series {
                name: "reversed",
                label: "Reversed",
                values: values(|d| d.reversed),
            },
        ];
        lines(
            &days,
            &series,
            "Tokens earned, burned, expired and reversed per day over 90 days",
        )
    });
    // Files received in the last day (the newest first: the first page holds them unless a
    // hundred came in a day).
    let since = ctx.now - Duration::days(1);
    let batches: PagedList<AdminBatchView> =
        ctx.admin.get(&format!("{base}/batches?limit=100")).await?;
    let files = batches
        .data
        .into_iter()
        .filter(|b| b.batch.received_at >= since)
        .collect();
    let endpoints: PagedList<EndpointView> =
        ctx.admin.get(&format!("{base}/webhooks?limit=100")).await?;
    let failing = endpoints
        .data
        .into_iter()
        .filter(|e| e.failing_since.is_some() || e.status == "disabled")
        .collect();
    let reviews_waiting = match page.may("list_pending_reviews") {
        true => Some(
            ctx.admin
                .get::<Count>(&format!("{base}/reviews/pending?limit=0"))
                .await?
                .total,
        ),
        false => None,
    };
    Ok(render(&OverviewPage {
        page,
        campaign,
        currency,
        members: members.total,
        overview,
        chart,
        files,
        failing,
        reviews_waiting,
    }))
}
