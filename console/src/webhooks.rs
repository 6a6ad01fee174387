//! An organisation's webhook endpoints: added (the signing secret shown once), their event
//! types and campaign, disabled and enabled, tested, the secret rotated (shown once), removed;
//! an endpoint's delivery log with the receiver's answers, and events delivered again (one, or
//! a time range).

use std::collections::HashMap;

use api::plumbing::PagedList;
use api::views::{AttemptView, EndpointView, NewEndpointView};
use askama::Template;
use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::NaiveDateTime;
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};
use crate::paging::{PAGE_ROWS, Pager, page_number};

#[derive(Template)]
#[template(path = "webhooks.html")]
struct WebhooksPage {
    page: Page,
    endpoints: Vec<EndpointView>,
    types: Vec<&'static str>,
    /// The endpoint just added, with its secret: shown only on this answer.
    added: Option<NewEndpointView>,
    form: EndpointForm,
    problem: Option<Problem>,
}

impl WebhooksPage {
    fn chosen(&self, kind: &str) -> bool {
        self.form.types.iter().any(|t| t == kind)
    }

    fn campaign_name<'a>(&'a self, id: &'a Option<String>) -> &'a str {
        let Some(id) = id else {
            return "every campaign";
        };
        self.page
            .org
            .as_ref()
            .and_then(|o| o.campaigns.iter().find(|c| &c.id == id))
            .map_or(id.as_str(), |c| c.name.as_str())
    }
}

#[derive(Default)]
struct EndpointForm {
    url: String,
    description: String,
    types: Vec<String>,
    campaign: String,
    version: String,
}

async fn webhooks_page(
    ctx: &Ctx,
    org: &str,
    added: Option<NewEndpointView>,
    form: EndpointForm,
    problem: Option<Problem>,
) -> Result<WebhooksPage, Failure> {
    let page = ctx.org_page(org, "Webhooks", "webhooks").await?;
    let endpoints: PagedList<EndpointView> = ctx
        .admin
        .get(&format!("/admin/v1/orgs/{}/webhooks?limit=100", enc(org)))
        .await?;
    Ok(WebhooksPage {
        page,
        endpoints: endpoints.data,
        types: api::plumbing::event_type_names(),
        added,
        form,
        problem,
    })
}

/// `GET /console/orgs/{org}/webhooks`.
pub async fn list(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    let page = webhooks_page(&ctx, &org, None, EndpointForm::default(), None).await?;
    Ok(render(&page))
}

/// `POST /console/orgs/{org}/webhooks`: the page answered with the new endpoint's secret.
pub async fn add(ctx: Ctx, Path(org): Path<String>, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let form = EndpointForm {
        url: fields.get("url").to_owned(),
        description: fields.get("description").to_owned(),
        types: fields.all("eventTypes"),
        campaign: fields.get("campaign").to_owned(),
        version: fields.get("version").to_owned(),
    };
    let given = |text: &str| (!text.is_empty()).then(|| text.to_owned());
    let input = json!({
        "url": form.url,
        "description": given(&form.description),
        "eventTypes": form.types,
        "campaignId": given(&form.campaign),
        "apiVersion": given(&form.version).unwrap_or_else(|| "1.9.5".into()),
    });
    let path = format!("/admin/v1/orgs/{}/webhooks", enc(&org));
    match ctx
        .admin
        .send::<NewEndpointView>(Method::POST, &path, &input)
        .await
    {
        Ok(added) => {
            let page =
                webhooks_page(&ctx, &org, Some(added), EndpointForm::default(), None).await?;
            Ok(render(&page))
        }
        Err(problem) if form_problem(&problem) => {
            let page = webhooks_page(&ctx, &org, None, form, Some(problem)).await?;
            Ok(render(&page))
        }
        Err(problem) => Err(problem.into()),
    }
}

#[derive(Template)]
#[template(path = "webhook.html")]
struct WebhookPage {
    page: Page,
    endpoint: EndpointView,
    attempts: Vec<AttemptView>,
    pager: Pager,
    /// A new secret after a rotation: shown only on this answer.
    secret: Option<String>,
    problem: Option<Problem>,
    redelivery: HashMap<String, String>,
}

async fn webhook_page(
    ctx: &Ctx,
    (org, id): (&str, &str),
    number: u32,
    secret: Option<String>,
    problem: Option<Problem>,
    redelivery: HashMap<String, String>,
) -> Result<WebhookPage, Failure> {
    let page = ctx.org_page(org, "Webhook endpoint", "webhooks").await?;
    let path = format!("/admin/v1/orgs/{}/webhooks/{}", enc(org), enc(id));
    let endpoint: EndpointView = ctx.admin.get(&path).await?;
    let attempts: PagedList<AttemptView> = ctx
        .admin
        .get(&format!("{path}/attempts?limit={PAGE_ROWS}&page={number}"))
        .await?;
    let link = format!("orgs/{}/webhooks/{}?", enc(org), enc(id));
    Ok(WebhookPage {
        page,
        pager: Pager::of(&attempts, &link),
        endpoint,
        attempts: attempts.data,
        secret,
        problem,
        redelivery,
    })
}

/// `GET /console/orgs/{org}/webhooks/{id}?page=`.
pub async fn show(
    ctx: Ctx,
    Path((org, id)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let number = page_number(query.get("page").map(String::as_str));
    let page = webhook_page(&ctx, (&org, &id), number, None, None, HashMap::new()).await?;
    Ok(render(&page))
}

/// A `datetime-local` value (taken as UTC) as RFC 3339, or the text as it is.
fn instant(text: &str) -> String {
    ["%Y-%m-%dT%H:%M", "%Y-%m-%dT%H:%M:%S"]
        .iter()
        .find_map(|format| NaiveDateTime::parse_from_str(text, format).ok())
        .map_or_else(|| text.to_owned(), |at| at.and_utc().to_rfc3339())
}

/// `POST /console/orgs/{org}/webhooks/{id}/{verb}`: disable, enable, test, rotate, remove or
/// redeliver.
pub async fn act(
    ctx: Ctx,
    Path((org, id, verb)): Path<(String, String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let path = format!("/admin/v1/orgs/{}/webhooks/{}", enc(&org), enc(&id));
    let back = |done: &str| {
        to(format!(
            "orgs/{}/webhooks/{}?done={done}",
            enc(&org),
            enc(&id)
        ))
        .into_response()
    };
    let admin = &ctx.admin;
    match verb.as_str() {
        "disable" | "enable" => {
            let body = json!({ "enabled": verb == "enable" });
            admin
                .send::<EndpointView>(Method::PATCH, &path, &body)
                .await?;
            Ok(back("webhook-changed"))
        }
        "test" => {
            admin
                .send::<serde_json::Value>(Method::POST, &format!("{path}/test"), &json!({}))
                .await?;
            Ok(back("webhook-test-sent"))
        }
        "remove" => {
            admin.act::<()>(Method::DELETE, &path).await?;
            Ok(to(format!("orgs/{}/webhooks?done=webhook-removed", enc(&org))).into_response())
        }
        "rotate" => {
            let rotated: NewEndpointView = admin
                .send(Method::POST, &format!("{path}/rotate-secret"), &json!({}))
                .await?;
            let page = webhook_page(
                &ctx,
                (&org, &id),
                1,
                Some(rotated.secret),
                None,
                HashMap::new(),
            )
            .await?;
            Ok(render(&page))
        }
        "redeliver" => {
            let fields = Fields::of(&body);
            let event = fields.get("eventId");
            let input = if event.is_empty() {
                json!({"from": instant(fields.get("from")), "to": instant(fields.get("to"))})
            } else {
                json!({ "eventId": event })
            };
            let sent = admin
                .send::<serde_json::Value>(Method::POST, &format!("{path}/redeliveries"), &input)
                .await;
            match sent {
                Ok(_) => Ok(back("redelivery-queued")),
                Err(problem) if form_problem(&problem) || problem.code == "not_found" => {
                    let kept = ["eventId", "from", "to"]
                        .map(|f| (f.to_owned(), fields.get(f).to_owned()))
                        .into_iter()
                        .collect();
                    let page =
                        webhook_page(&ctx, (&org, &id), 1, None, Some(problem), kept).await?;
                    Ok(render(&page))
                }
                Err(problem) => Err(problem.into()),
            }
        }
        _ => Err(crate::page::not_found()),
    }
}
