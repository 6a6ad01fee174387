//! An organisation's programme: its campaigns (each with its currency and a way to its rules),
//! and a new campaign added.

use askama::Template;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

#[derive(Template)]
#[template(path = "programme.html")]
struct ProgrammePage {
    page: Page,
    name: String,
    currency: String,
    problem: Option<Problem>,
}

/// `GET /console/orgs/{org}/programme`.
pub async fn show(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    let page = ctx.org_page(&org, "Programme", "programme").await?;
    Ok(render(&ProgrammePage {
        page,
        name: String::new(),
        currency: String::new(),
        problem: None,
    }))
}

/// `POST /console/orgs/{org}/programme`: a campaign added.
pub async fn add_campaign(
    ctx: Ctx,
    Path(org): Path<String>,
    body: Bytes,
) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let (name, currency) = (fields.get("name"), fields.get("currency"));
    let input = json!({"name": name, "currency": currency});
    let path = format!("/admin/v1/orgs/{}/campaigns", enc(&org));
    match ctx
        .admin
        .send::<serde_json::Value>(Method::POST, &path, &input)
        .await
    {
        Ok(_) => {
            Ok(to(format!("orgs/{}/programme?done=campaign-added", enc(&org))).into_response())
        }
        Err(problem) if form_problem(&problem) => {
            let page = ctx.org_page(&org, "Programme", "programme").await?;
            Ok(render(&ProgrammePage {
                page,
                name: name.to_owned(),
                currency: currency.to_owned(),
                problem: Some(problem),
            }))
        }
        Err(problem) => Err(problem.into()),
    }
}
