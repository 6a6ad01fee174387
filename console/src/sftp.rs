//! The batch door's users of an organisation: added with a password or a public key (or both),
//! given more keys, disabled, removed; and the server's host key fingerprint, for a client to
//! check on its first connection.

use admin::views_of::{HostKeyView, SftpUserView};
use api::plumbing::PagedList;
use askama::Template;
use axum::Form;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Page, form_problem, render, to};

#[derive(Template)]
#[template(path = "sftp.html")]
struct SftpPage {
    page: Page,
    host_key: HostKeyView,
    users: Vec<SftpUserView>,
    form: UserForm,
    problem: Option<Problem>,
}

#[derive(Deserialize, Default)]
pub struct UserForm {
    #[serde(default)]
    username: String,
    #[serde(default)]
    password: String,
    #[serde(default, rename = "publicKey")]
    public_key: String,
}

async fn sftp_page(
    ctx: &Ctx,
    org: &str,
    form: UserForm,
    problem: Option<Problem>,
) -> Result<SftpPage, Failure> {
    let page = ctx.org_page(org, "SFTP", "sftp").await?;
    let host_key = ctx.admin.get("/admin/v1/sftp/host-key").await?;
    let users: PagedList<SftpUserView> = ctx
        .admin
        .get(&format!("/admin/v1/orgs/{}/sftp-users?limit=100", enc(org)))
        .await?;
    Ok(SftpPage {
        page,
        host_key,
        users: users.data,
        form,
        problem,
    })
}

/// `GET /console/orgs/{org}/sftp`.
pub async fn list(ctx: Ctx, Path(org): Path<String>) -> Result<Response, Failure> {
    Ok(render(
        &sftp_page(&ctx, &org, UserForm::default(), None).await?,
    ))
}

/// `POST /console/orgs/{org}/sftp`: a user added.
pub async fn add(
    ctx: Ctx,
    Path(org): Path<String>,
    Form(form): Form<UserForm>,
) -> Result<Response, Failure> {
    let given = |text: &str| {
        let text = text.trim();
        (!text.is_empty()).then(|| text.to_owned())
    };
    let input = json!({
        "username": form.username.trim(),
        "password": (!form.password.is_empty()).then_some(&form.password),
        "publicKey": given(&form.public_key),
    });
    let path = format!("/admin/v1/orgs/{}/sftp-users", enc(&org));
    match ctx
        .admin
        .send::<serde_json::Value>(Method::POST, &path, &input)
        .await
    {
        Ok(_) => Ok(to(format!("orgs/{}/sftp?done=sftp-user-added", enc(&org))).into_response()),
        Err(problem) if form_problem(&problem) => {
            let form = UserForm {
                password: String::new(),
                ..form
            };
            Ok(render(&sftp_page(&ctx, &org, form, Some(problem)).await?))
        }
        Err(problem) => Err(problem.into()),
    }
}

#[derive(Deserialize)]
pub struct KeyForm {
    #[serde(default, rename = "publicKey")]
    public_key: String,
}

/// `POST /console/orgs/{org}/sftp/{username}/keys`.
pub async fn add_key(
    ctx: Ctx,
    Path((org, username)): Path<(String, String)>,
    Form(form): Form<KeyForm>,
) -> Result<Response, Failure> {
    let path = format!(
        "/admin/v1/orgs/{}/sftp-users/{}/keys",
        enc(&org),
        enc(&username)
    );
    let input = json!({ "publicKey": form.public_key.trim() });
    match ctx
        .admin
        .send::<serde_json::Value>(Method::POST, &path, &input)
        .await
    {
        Ok(_) => Ok(to(format!("orgs/{}/sftp?done=sftp-key-added", enc(&org))).into_response()),
        Err(problem) if form_problem(&problem) => {
            // Shown at the top: the form it concerns is one row's.
            let problem = Problem {
                detail: format!("{username}'s new key: {}", problem.detail),
                field: None,
                errors: Vec::new(),
                ..problem
            };
            Ok(render(
                &sftp_page(&ctx, &org, UserForm::default(), Some(problem)).await?,
            ))
        }
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/orgs/{org}/sftp/{username}/{disable|remove}`.
pub async fn change(
    ctx: Ctx,
    Path((org, username, verb)): Path<(String, String, String)>,
) -> Result<Response, Failure> {
    let user = format!("/admin/v1/orgs/{}/sftp-users/{}", enc(&org), enc(&username));
    let (method, path, done) = match verb.as_str() {
        "disable" => (
            Method::POST,
            format!("{user}/disable"),
            "sftp-user-disabled",
        ),
        "remove" => (Method::DELETE, user, "sftp-user-removed"),
        _ => return Err(crate::page::not_found()),
    };
    ctx.admin.act::<serde_json::Value>(method, &path).await?;
    Ok(to(format!("orgs/{}/sftp?done={done}", enc(&org))).into_response())
}
