//! An organisation's API keys: listed (their middle hidden), issued with permissions and a
//! version (the secret shown once, with a copy button), revoked.

use api::plumbing::PagedList;
use askama::Template;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

/// What a key may be allowed beyond the ordinary operations, as an operator reads it.
pub const PERMISSIONS: [(&str, &str); 5] = [
    ("vector-search", "Vector product search"),
    (
        "catalogue-write",
        "Import the catalogue over HTTP (PUT /v1/catalogue)",
    ),
    (
        "redeem-codes",
        "Redeem members' codes (for a partner's key)",
    ),
    ("webhooks", "Manage the organisation's webhook endpoints"),
    (
        "member-data",
        "Export a member's own data (GET /v1/members/{id}/data)",
    ),
];

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Key {
    pub id: String,
    pub campaign_id: String,
    pub api_key: String,
    pub permissions: Vec<String>,
    pub version: Option<String>,
    pub read_only: bool,
    pub created_at: DateTime<Utc>,
    pub revoked_at: Option<DateTime<Utc>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Issued {
    api_key: String,
    api_secret: String,
    key: Key,
}

#[derive(Template)]
#[template(path = "keys.html")]
struct KeysPage {
    page: Page,
    keys: Vec<Key>,
    /// The key just issued, with its secret: shown only on this answer.
    issued: Option<(String, String)>,
    /// The form as sent, when it is shown again with what was wrong.
    form: IssueForm,
    problem: Option<Problem>,
}

impl KeysPage {
    fn chosen(&self, permission: &str) -> bool {
        self.form.permissions.iter().any(|p| p == permission)
    }

    fn campaign_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.page
            .org
            .as_ref()
            .and_then(|o| o.campaigns.iter().find(|c| c.id == id))
            .map_or(id, |c| c.name.as_str())
    }
}

#[derive(Default)]
struct IssueForm {
    campaign: String,
    permissions: Vec<String>,
    version: String,
    read_only: bool,
}

async fn keys_page(
    ctx: &Ctx,
    org: &str,
    issued: Option<(String, String)>,
    form: IssueForm,
    problem: Option<Problem>,
) -> Result<KeysPage, Failure> {
    let page = ctx.org_page(org, "API keys", "keys").await?;
    let keys: PagedList<Key> = ctx
        .admin
        .get(&format!("/admin/v1/orgs/{}/keys?limit=100", enc(org)))
        .await?;
    Ok(KeysPage {
        page,
        keys: keys.data,
        issued,
        form,
        problem,
    })
}

/// `GET /console/orgs/{org}/keys`.
pub async fn list(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    Ok(render(
        &keys_page(&ctx, &org, None, IssueForm::default(), None).await?,
    ))
}

/// `POST /console/orgs/{org}/keys`: the page answered with the new key and its secret.
pub async fn issue(ctx: Ctx, Path(org): Path<String>, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let form = IssueForm {
        campaign: fields.get("campaign").to_owned(),
        permissions: fields.all("permissions"),
        version: fields.get("version").to_owned(),
        read_only: fields.ticked("readOnly"),
    };
    let input = json!({
        "campaignId": form.campaign,
        "permissions": form.permissions,
        "version": (!form.version.is_empty()).then_some(&form.version),
        "readOnly": form.read_only,
    });
    let path = format!("/admin/v1/orgs/{}/keys", enc(&org));
    match ctx.admin.send::<Issued>(Method::POST, &path, &input).await {
        Ok(issued) => {
            let shown = Some((issued.api_key, issued.api_secret));
            let _ = issued.key;
            Ok(render(
                &keys_page(&ctx, &org, shown, IssueForm::default(), None).await?,
            ))
        }
        Err(problem) if form_problem(&problem) || problem.status == 404 => {
            // A campaign that is not the organisation's is the form's fault too.
            let problem = match problem.status {
                404 => Problem {
                    field: Some("campaignId".into()),
                    ..problem
                },
                _ => problem,
            };
            Ok(render(
                &keys_page(&ctx, &org, None, form, Some(problem)).await?,
            ))
        }
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/orgs/{org}/keys/{id}/revoke`.
pub async fn revoke(
    ctx: Ctx,
    Path((org, id)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let path = format!("/admin/v1/orgs/{}/keys/{}", enc(&org), enc(&id));
    ctx.admin
        .act::<serde_json::Value>(Method::DELETE, &path)
        .await?;
    Ok(to(format!("orgs/{}/keys?done=key-revoked", enc(&org))).into_response())
}
