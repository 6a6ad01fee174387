//! The operator's own account: who it is, its password and second factor, and its sessions,
//! each of which it may end ("sign out elsewhere").

use admin::views_of::{Me, SessionView};
use api::plumbing::PagedList;
use askama::Template;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render, to};

#[derive(Template)]
#[template(path = "account.html")]
struct AccountPage {
    page: Page,
    me: Me,
    sessions: Vec<SessionView>,
}

async fn sessions(ctx: &Ctx) -> Result<Vec<SessionView>, Failure> {
    let list: PagedList<SessionView> = ctx.admin.get("/admin/v1/sessions?limit=100").await?;
    Ok(list.data)
}

/// `GET /console/account`.
pub async fn show(ctx: Ctx) -> Result<Response, Failure> {
    let page = ctx.page("Your account", "account").await?;
    let me: Me = ctx.admin.get("/admin/v1/me").await?;
    Ok(render(&AccountPage {
        page,
        me,
        sessions: sessions(&ctx).await?,
    }))
}

/// `POST /console/account/sessions/{id}/end`.
pub async fn end(ctx: Ctx, Path(id): Path<String>) -> Result<Response, Failure> {
    ctx.admin
        .act::<()>(Method::DELETE, &format!("/admin/v1/sessions/{}", enc(&id)))
        .await?;
    Ok(to("account?done=session-ended").into_response())
}

/// `POST /console/account/sessions/end-others`: every session but this one ends.
pub async fn end_others(ctx: Ctx) -> Result<Response, Failure> {
    for session in sessions(&ctx).await?.into_iter().filter(|s| !s.current) {
        ctx.admin
            .act::<()>(
                Method::DELETE,
                &format!("/admin/v1/sessions/{}", enc(&session.id)),
            )
            .await?;
    }
    Ok(to("account?done=signed-out-elsewhere").into_response())
}
