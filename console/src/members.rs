//! Members and their wallets, as support works with them: a member found by reference, id,
//! e-mail or user id among any number; its wallets; a wallet's balance (now or at a chosen
//! date), history with reasons and links, and holds; its orders and bookings; a manual
//! adjustment with its reason; its personal data erased.

use std::collections::HashMap;

use api::plumbing::PagedList;
use askama::Template;
use axum::Form;
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::{DateTime, NaiveDate, Utc};
use serde::Deserialize;
use serde_json::{Number, json};

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Page, form_problem, render, to};
use crate::paging::{PAGE_ROWS, Pager, page_number};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Member {
    pub id: String,
    pub first_name: String,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub status: String,
    pub user_id: String,
    pub external_id: String,
    pub created_at: DateTime<Utc>,
}

impl Member {
    pub fn name(&self) -> String {
        match &self.last_name {
            Some(last) => format!("{} {last}", self.first_name),
            None => self.first_name.clone(),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Wallet {
    pub id: String,
    pub currency: String,
    pub name: Option<String>,
    pub balance: Number,
    pub held: Number,
    pub available: Number,
    pub pending: Number,
    pub tier: Option<Tier>,
    pub external_id: Option<String>,
    pub owner_id: String,
    pub created_at: DateTime<Utc>,
}

#[derive(Deserialize)]
pub struct Tier {
    pub name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transaction {
    pub id: String,
    pub date: DateTime<Utc>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub external_id: Option<String>,
    #[serde(rename = "type")]
    pub kind: String,
    pub amount: Number,
    pub reversal_of: Option<String>,
    pub reversed: Option<Number>,
    pub rules_trace: Option<String>,
    pub rules_version: Option<i64>,
    pub pending: Option<bool>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Balance {
    pub balance: Number,
    pub held: Number,
    pub pending: Number,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Hold {
    pub external_id: String,
    pub amount: Number,
    pub description: Option<String>,
    pub status: String,
    pub expires_at: Option<DateTime<Utc>>,
    pub captured: Option<Number>,
    pub created_at: DateTime<Utc>,
}

#[derive(Template)]
#[template(path = "members.html")]
struct MembersPage {
    page: Page,
    q: String,
    members: Vec<Member>,
    pager: Pager,
}

#[derive(Template)]
#[template(path = "members_rows.html")]
struct MembersRows {
    page: Page,
    q: String,
    members: Vec<Member>,
    pager: Pager,
}

/// `GET /console/orgs/{org}/members?q=&page=`; htmx asks for the rows alone as one types.
pub async fn find(
    ctx: Ctx,
    Path(org): Path<String>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let q = query.get("q").map_or("", |q| q.trim()).to_owned();
    let number = page_number(query.get("page").map(String::as_str));
    let page = ctx.org_page(&org, "Members", "members").await?;
    let mut path = format!(
        "/admin/v1/orgs/{}/members?limit={PAGE_ROWS}&page={number}",
        enc(&org)
    );
    if !q.is_empty() {
        path.push_str(&format!("&q={}", enc(&q)));
    }
    let list: PagedList<Member> = ctx.admin.get(&path).await?;
    let link = match q.is_empty() {
        true => format!("orgs/{}/members?", enc(&org)),
        false => format!("orgs/{}/members?q={}&", enc(&org), enc(&q)),
    };
    let pager = Pager::of(&list, &link);
    if ctx.htmx {
        return Ok(render(&MembersRows {
            page,
            q,
            members: list.data,
            pager,
        }));
    }
    Ok(render(&MembersPage {
        page,
        q,
        members: list.data,
        pager,
    }))
}

/// A member's order, as its page lists it.
#[derive(Deserialize)]
pub struct Order {
    pub id: String,
    pub date: DateTime<Utc>,
    pub total: Number,
    pub reference: String,
}

/// A member's booking, as its page lists it.
#[derive(Deserialize)]
pub struct Booking {
    pub id: String,
    pub status: String,
    pub date: DateTime<Utc>,
    pub branch: Option<String>,
    pub pax: u32,
}

/// What a member has in one campaign.
pub struct InCampaign {
    pub id: String,
    pub name: String,
    pub currency: String,
    pub wallets: Vec<Wallet>,
    pub orders: Vec<Order>,
    pub bookings: Vec<Booking>,
}

#[derive(Template)]
#[template(path = "member.html")]
struct MemberPage {
    page: Page,
    member: Member,
    /// The campaigns where the member has a wallet, an order or a booking.
    campaigns: Vec<InCampaign>,
}

/// `GET /console/orgs/{org}/members/{id}`.
pub async fn show(ctx: Ctx, Path((org, id)): Path<(String, String)>) -> Result<Response, Failure> {
    let mut page = ctx.org_page(&org, "Member", "members").await?;
    let base = format!("/admin/v1/orgs/{}", enc(&org));
    let member: Member = ctx
        .admin
        .get(&format!("{base}/members/{}", enc(&id)))
        .await?;
    page.title = member.name();
    let campaigns_of_org = page
        .org
        .as_ref()
        .map_or(&[][..], |o| &o.campaigns[..])
        .to_vec();
    let mut campaigns = Vec::new();
    for campaign in &campaigns_of_org {
        let path = format!("{base}/campaigns/{}", enc(&campaign.id));
        let owner = enc(&member.id);
        let wallets: PagedList<Wallet> = ctx
            .admin
            .get(&format!("{path}/wallets?owner={owner}&limit=100"))
            .await?;
        let orders: PagedList<Order> = ctx
            .admin
            .get(&format!("{path}/orders?ownerId={owner}&limit=10"))
            .await?;
        let bookings: PagedList<Booking> = ctx
            .admin
            .get(&format!("{path}/bookings?ownerId={owner}&limit=10"))
            .await?;
        if !(wallets.data.is_empty() && orders.data.is_empty() && bookings.data.is_empty()) {
            campaigns.push(InCampaign {
                id: campaign.id.clone(),
                name: campaign.name.clone(),
                currency: campaign.currency.clone(),
                wallets: wallets.data,
                orders: orders.data,
                bookings: bookings.data,
            });
        }
    }
    Ok(render(&MemberPage {
        page,
        member,
        campaigns,
    }))
}

#[derive(Template)]
#[template(path = "wallet.html")]
struct WalletPage {
    page: Page,
    campaign: String,
    currency: String,
    wallet: Wallet,
    owner: Option<Member>,
    history: Vec<Transaction>,
    pager: Pager,
    holds: Vec<Hold>,
    /// The balance at the date asked for (`?at=YYYY-MM-DD`, the end of that day in UTC).
    at: Option<(String, Balance)>,
    at_problem: Option<String>,
    /// The adjustment form's values and what was wrong with them.
    adjustment: AdjustForm,
    problem: Option<Problem>,
}

impl WalletPage {
    fn tokens(&self, amount: &Number) -> String {
        crate::format::tokens(amount, &self.currency)
    }
}

#[derive(Deserialize, Default)]
pub struct AdjustForm {
    #[serde(default)]
    amount: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    comment: String,
}

/// The wallet's API path.
fn wallet_path(org: &str, campaign: &str, wallet: &str) -> String {
    format!(
        "/admin/v1/orgs/{}/campaigns/{}/wallets/{}",
        enc(org),
        enc(campaign),
        enc(wallet)
    )
}

async fn wallet_page(
    ctx: &Ctx,
    (org, campaign, wallet): (&str, &str, &str),
    query: &HashMap<String, String>,
    adjustment: AdjustForm,
    problem: Option<Problem>,
) -> Result<WalletPage, Failure> {
    let page = ctx.org_page(org, "Wallet", "members").await?;
    let path = wallet_path(org, campaign, wallet);
    let wallet: Wallet = ctx.admin.get(&path).await?;
    let currency = page
        .org
        .as_ref()
        .map_or("", |o| o.currency(campaign))
        .to_owned();
    let owner = ctx
        .admin
        .get(&format!(
            "/admin/v1/orgs/{}/members/{}",
            enc(org),
            enc(&wallet.owner_id)
        ))
        .await
        .ok();
    let number = page_number(query.get("page").map(String::as_str));
    let history: PagedList<Transaction> = ctx
        .admin
        .get(&format!(
            "{path}/transactions?limit={PAGE_ROWS}&page={number}"
        ))
        .await?;
    let link = format!(
        "orgs/{}/campaigns/{}/wallets/{}?",
        enc(org),
        enc(campaign),
        enc(&wallet.id)
    );
    let pager = Pager::of(&history, &link);
    let holds: PagedList<Hold> = ctx.admin.get(&format!("{path}/holds?limit=10")).await?;
    let (mut at, mut at_problem) = (None, None);
    if let Some(day) = query.get("at").map(|d| d.trim()).filter(|d| !d.is_empty()) {
        match NaiveDate::parse_from_str(day, "%Y-%m-%d") {
            Ok(date) => {
                let end = date.and_hms_opt(23, 59, 59).map(|t| t.and_utc());
                let instant = end.map(|e| e.to_rfc3339()).unwrap_or_default();
                match ctx
                    .admin
                    .get::<Balance>(&format!("{path}/balance?at={}", enc(&instant)))
                    .await
                {
                    Ok(balance) => at = Some((day.to_owned(), balance)),
                    Err(problem) if problem.status == 400 => at_problem = Some(problem.detail),
                    Err(problem) => return Err(problem.into()),
                }
            }
            Err(_) => at_problem = Some("give a date as YYYY-MM-DD".into()),
        }
    }
    Ok(WalletPage {
        page,
        campaign: campaign.to_owned(),
        currency,
        wallet,
        owner,
        history: history.data,
        pager,
        holds: holds.data,
        at,
        at_problem,
        adjustment,
        problem,
    })
}

/// `POST /console/orgs/{org}/members/{id}/erase`: the member's personal data erased.
pub async fn erase(ctx: Ctx, Path((org, id)): Path<(String, String)>) -> Result<Response, Failure> {
    let path = format!("/admin/v1/orgs/{}/members/{}", enc(&org), enc(&id));
    ctx.admin
        .act::<serde_json::Value>(Method::DELETE, &path)
        .await?;
    Ok(to(format!("orgs/{}/members?done=member-erased", enc(&org))).into_response())
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/wallets/{wallet}?page=&at=`.
pub async fn wallet(
    ctx: Ctx,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    let page = wallet_page(
        &ctx,
        (&org, &campaign, &wallet),
        &query,
        AdjustForm::default(),
        None,
    )
    .await?;
    Ok(render(&page))
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Adjustment {
    status: String,
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/wallets/{wallet}/adjust`.
pub async fn adjust(
    ctx: Ctx,
    Path((org, campaign, wallet)): Path<(String, String, String)>,
    Form(form): Form<AdjustForm>,
) -> Result<Response, Failure> {
    let amount: Result<Number, _> = form.amount.trim().replace(',', "").parse();
    let problem = match amount {
        Ok(amount) => {
            let body = json!({
                "walletId": wallet,
                "amount": amount,
                "reason": form.reason,
                "comment": form.comment.trim(),
            });
            let path = format!(
                "/admin/v1/orgs/{}/campaigns/{}/adjustments",
                enc(&org),
                enc(&campaign)
            );
            match ctx
                .admin
                .send::<Adjustment>(Method::POST, &path, &body)
                .await
            {
                Ok(made) => {
                    let done = match made.status.as_str() {
                        "pending" => "adjustment-pending",
                        _ => "adjusted",
                    };
                    return Ok(to(format!(
                        "orgs/{}/campaigns/{}/wallets/{}?done={done}",
                        enc(&org),
                        enc(&campaign),
                        enc(&wallet)
                    ))
                    .into_response());
                }
                Err(problem) if form_problem(&problem) => problem,
                Err(problem) => return Err(problem.into()),
            }
        }
        Err(_) => Problem {
            status: 400,
            code: "invalid_value".into(),
            field: Some("amount".into()),
            detail: "give a number of tokens: more than 0 to credit, less than 0 to debit".into(),
            ..Problem::default()
        },
    };
    let page = wallet_page(
        &ctx,
        (&org, &campaign, &wallet),
        &HashMap::new(),
        form,
        Some(problem),
    )
    .await?;
    Ok(render(&page))
}
