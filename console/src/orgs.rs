//! The console's front page: the organisations the operator reaches, each with its campaigns.

use admin::views_of::{CampaignView, OrgView};
use api::plumbing::PagedList;
use askama::Template;
use axum::response::Response;

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render};

#[derive(Template)]
#[template(path = "orgs.html")]
struct OrgsPage {
    page: Page,
    orgs: Vec<(OrgView, Vec<CampaignView>)>,
    total: u64,
}

/// `GET /console/`.
pub async fn list(ctx: Ctx) -> Result<Response, Failure> {
    let page = ctx.page("Organisations", "orgs").await?;
    let orgs: PagedList<OrgView> = ctx.admin.get("/admin/v1/orgs?limit=100").await?;
    let mut shown = Vec::with_capacity(orgs.data.len());
    for org in orgs.data {
        let campaigns: PagedList<CampaignView> = ctx
            .admin
            .get(&format!(
                "/admin/v1/orgs/{}/campaigns?limit=100",
                enc(&org.id)
            ))
            .await?;
        shown.push((org, campaigns.data));
    }
    Ok(render(&OrgsPage {
        page,
        orgs: shown,
        total: orgs.total,
    }))
}
