//! The operators (an owner's page): added with a role and organisations (the one-time password
//! shown once), their role changed, disabled and enabled, their password or second factor
//! reset, removed; and whether a second factor is required of everyone.

use admin::views_of::{OperatorView, OrgView, SettingsView, WithPassword};
use api::plumbing::PagedList;
use askama::Template;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use serde_json::json;

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

/// The roles, as an owner reads them.
pub const ROLES: [(&str, &str); 5] = [
    (
        "owner",
        "Owner: everything, operators and settings included",
    ),
    ("admin", "Admin: every organisation's configuration"),
    (
        "org-admin",
        "Organisation admin: its organisations' configuration",
    ),
    (
        "support",
        "Support: members, wallets, adjustments, orders, reviews",
    ),
    ("viewer", "Viewer: reads records, reports and exports"),
];

#[derive(Template)]
#[template(path = "operators.html")]
struct OperatorsPage {
    page: Page,
    operators: Vec<OperatorView>,
    orgs: Vec<OrgView>,
    settings: SettingsView,
    /// A one-time password just made, and for whom: shown only on this answer.
    password: Option<(String, String)>,
    form: AddForm,
    problem: Option<Problem>,
}

impl OperatorsPage {
    fn org_name<'a>(&'a self, id: &'a str) -> &'a str {
        self.orgs
            .iter()
            .find(|o| o.id == id)
            .map_or(id, |o| o.name.as_str())
    }

    /// The role the add form shows chosen (a viewer at first).
    fn role_chosen(&self, role: &str) -> bool {
        match self.form.role.as_str() {
            "" => role == "viewer",
            chosen => chosen == role,
        }
    }

    fn picked(&self, org: &str) -> bool {
        self.form.orgs.iter().any(|o| o == org)
    }
}

#[derive(Default)]
struct AddForm {
    email: String,
    role: String,
    orgs: Vec<String>,
    addresses: String,
}

async fn operators_page(
    ctx: &Ctx,
    password: Option<(String, String)>,
    form: AddForm,
    problem: Option<Problem>,
) -> Result<OperatorsPage, Failure> {
    let page = ctx.page("Operators", "operators").await?;
    let operators: PagedList<OperatorView> = ctx.admin.get("/admin/v1/operators?limit=100").await?;
    let orgs: PagedList<OrgView> = ctx.admin.get("/admin/v1/orgs?limit=100").await?;
    let settings = ctx.admin.get("/admin/v1/settings").await?;
    Ok(OperatorsPage {
        page,
        operators: operators.data,
        orgs: orgs.data,
        settings,
        password,
        form,
        problem,
    })
}

/// `GET /console/operators`.
pub async fn list(ctx: Ctx) -> Result<Response, Failure> {
    Ok(render(
        &operators_page(&ctx, None, AddForm::default(), None).await?,
    ))
}

/// `POST /console/operators`: the page answered with the new operator's one-time password.
pub async fn add(ctx: Ctx, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let form = AddForm {
        email: fields.get("email").to_owned(),
        role: fields.get("role").to_owned(),
        orgs: fields.all("orgs"),
        addresses: fields.get("addresses").to_owned(),
    };
    let addresses: Vec<&str> = form
        .addresses
        .split([',', '\n', ' '])
        .map(str::trim)
        .filter(|a| !a.is_empty())
        .collect();
    let input = json!({
        "email": form.email,
        "role": form.role,
        "orgs": form.orgs,
        "allowedAddresses": addresses,
    });
    match ctx
        .admin
        .send::<WithPassword>(Method::POST, "/admin/v1/operators", &input)
        .await
    {
        Ok(added) => {
            let shown = Some((added.operator.email, added.password));
            Ok(render(
                &operators_page(&ctx, shown, AddForm::default(), None).await?,
            ))
        }
        Err(problem) if form_problem(&problem) => Ok(render(
            &operators_page(&ctx, None, form, Some(problem)).await?,
        )),
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/operators/{id}/{verb}`: disable, enable, reset-password, reset-two-factor,
/// role or remove.
pub async fn act(
    ctx: Ctx,
    Path((id, verb)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let path = format!("/admin/v1/operators/{}", enc(&id));
    let admin = &ctx.admin;
    let done = match verb.as_str() {
        "disable" | "enable" => {
            admin
                .act::<OperatorView>(Method::POST, &format!("{path}/{verb}"))
                .await?;
            "operator-changed"
        }
        "reset-two-factor" => {
            admin
                .act::<OperatorView>(Method::POST, &format!("{path}/two-factor-reset"))
                .await?;
            "two-factor-reset"
        }
        "remove" => {
            admin.act::<()>(Method::DELETE, &path).await?;
            "operator-removed"
        }
        "role" => {
            let fields = Fields::of(&body);
            let input = json!({"role": fields.get("role"), "orgs": fields.all("orgs")});
            admin
                .send::<OperatorView>(Method::PUT, &format!("{path}/role"), &input)
                .await?;
            "operator-changed"
        }
        "reset-password" => {
            let reset: WithPassword = admin
                .act(Method::POST, &format!("{path}/password-reset"))
                .await?;
            let shown = Some((reset.operator.email, reset.password));
            return Ok(render(
                &operators_page(&ctx, shown, AddForm::default(), None).await?,
            ));
        }
        _ => return Err(crate::page::not_found()),
    };
    Ok(to(format!("operators?done={done}")).into_response())
}

/// `POST /console/operators/settings`: whether a second factor is required of everyone.
pub async fn settings(ctx: Ctx, body: Bytes) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let input = json!({ "twoFactorRequired": fields.ticked("twoFactorRequired") });
    ctx.admin
        .send::<SettingsView>(Method::PUT, "/admin/v1/settings", &input)
        .await?;
    Ok(to("operators?done=settings-saved").into_response())
}
