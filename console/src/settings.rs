//! A campaign's settings: its policy (minimum balance, expiry, what a reversal does with spent
//! tokens, transfers and their cap, pending days, expiry notices, how old an earn may be) and
//! its tiers (added with a threshold and benefits, removed).

use admin::views_of::Tokens;
use askama::Template;
use axum::body::Bytes;
use axum::extract::Path;
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Map, Number, Value, json};

use crate::client::{Problem, enc};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Policy {
    pub min_balance: Tokens,
    pub expiry: String,
    pub shortfall: String,
    pub transfers: String,
    pub transfer_daily_cap: Option<Tokens>,
    pub transfers_move_earned: bool,
    pub pending_days: u32,
    pub pending_counts_tier: bool,
    pub expiry_from: String,
    pub expiry_notice_days: u32,
    pub earn_max_age_days: Option<u32>,
}

impl Policy {
    /// The expiry's kind (`never`, `end-of-month`, `end-of-year`, `days`) and its days.
    pub fn expiry_kind(&self) -> (&str, &str) {
        match self.expiry.split_once(':') {
            Some((kind, days)) => (kind, days),
            None => (self.expiry.as_str(), ""),
        }
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Tier {
    pub id: String,
    pub name: String,
    pub precedence: i64,
    pub threshold: Tokens,
    pub benefits: Vec<String>,
    pub image_url: Option<String>,
}

#[derive(Template)]
#[template(path = "settings.html")]
struct SettingsPage {
    page: Page,
    campaign: String,
    currency: String,
    policy: Policy,
    tiers: Vec<Tier>,
    policy_problem: Option<Problem>,
    tier_problem: Option<Problem>,
    tier_form: TierForm,
}

impl SettingsPage {
    fn tokens(&self, amount: &Tokens) -> String {
        crate::format::tokens(amount, &self.currency)
    }
}

#[derive(Default)]
struct TierForm {
    name: String,
    precedence: String,
    threshold: String,
    benefits: String,
    image_url: String,
}

fn campaign_path(org: &str, campaign: &str) -> String {
    format!("/admin/v1/orgs/{}/campaigns/{}", enc(org), enc(campaign))
}

async fn settings_page(
    ctx: &Ctx,
    (org, campaign): (&str, &str),
    policy_problem: Option<Problem>,
    tier_problem: Option<Problem>,
    tier_form: TierForm,
) -> Result<SettingsPage, Failure> {
    let page = ctx.org_page(org, "Campaign settings", "programme").await?;
    let currency = page
        .org
        .as_ref()
        .map_or("", |o| o.currency(campaign))
        .to_owned();
    let path = campaign_path(org, campaign);
    let policy = ctx.admin.get(&format!("{path}/policy")).await?;
    let tiers: api::plumbing::PagedList<Tier> =
        ctx.admin.get(&format!("{path}/tiers?limit=100")).await?;
    Ok(SettingsPage {
        page,
        campaign: campaign.to_owned(),
        currency,
        policy,
        tiers: tiers.data,
        policy_problem,
        tier_problem,
        tier_form,
    })
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/settings`.
pub async fn show(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
) -> Result<Response, Failure> {
    let page = settings_page(&ctx, (&org, &campaign), None, None, TierForm::default()).await?;
    Ok(render(&page))
}

/// A number field: its number, `null` when empty and `nullable`, else the text (which the API
/// then refuses, naming the field).
fn number(text: &str, nullable: bool) -> Option<Value> {
    let text = text.trim().replace(',', "");
    if text.is_empty() {
        return nullable.then_some(Value::Null);
    }
    Some(match text.parse::<Number>() {
        Ok(n) => Value::Number(n),
        Err(_) => Value::String(text),
    })
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/settings/policy`.
pub async fn set_policy(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let expiry = match fields.get("expiry") {
        "days" => format!("days:{}", fields.get("expiryDays")),
        other => other.to_owned(),
    };
    let mut input = Map::new();
    let mut put = |name: &str, value: Option<Value>| {
        if let Some(value) = value {
            input.insert(name.to_owned(), value);
        }
    };
    put("minBalance", number(fields.get("minBalance"), false));
    put("expiry", Some(json!(expiry)));
    put("shortfall", Some(json!(fields.get("shortfall"))));
    put("transfers", Some(json!(fields.get("transfers"))));
    put(
        "transferDailyCap",
        number(fields.get("transferDailyCap"), true),
    );
    put(
        "transfersMoveEarned",
        Some(json!(fields.ticked("transfersMoveEarned"))),
    );
    put("pendingDays", number(fields.get("pendingDays"), false));
    put(
        "pendingCountsTier",
        Some(json!(fields.ticked("pendingCountsTier"))),
    );
    put("expiryFrom", Some(json!(fields.get("expiryFrom"))));
    put(
        "expiryNoticeDays",
        number(fields.get("expiryNoticeDays"), false),
    );
    put("earnMaxAgeDays", number(fields.get("earnMaxAgeDays"), true));
    let path = format!("{}/policy", campaign_path(&org, &campaign));
    match ctx.admin.send::<Value>(Method::PATCH, &path, &input).await {
        Ok(_) => Ok(to(format!(
            "orgs/{}/campaigns/{}/settings?done=policy-saved",
            enc(&org),
            enc(&campaign)
        ))
        .into_response()),
        Err(problem) if form_problem(&problem) => {
            let page = settings_page(
                &ctx,
                (&org, &campaign),
                Some(problem),
                None,
                TierForm::default(),
            )
            .await?;
            Ok(render(&page))
        }
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/settings/tiers`: a tier added.
pub async fn add_tier(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let form = TierForm {
        name: fields.get("name").to_owned(),
        precedence: fields.get("precedence").to_owned(),
        threshold: fields.get("threshold").to_owned(),
        benefits: fields.get_raw("benefits").to_owned(),
        image_url: fields.get("imageUrl").to_owned(),
    };
    let benefits: Vec<&str> = form
        .benefits
        .lines()
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .collect();
    let mut input = Map::new();
    input.insert("name".into(), json!(form.name));
    for (name, text) in [
        ("precedence", &form.precedence),
        ("threshold", &form.threshold),
    ] {
        if let Some(value) = number(text, false) {
            input.insert(name.into(), value);
        }
    }
    input.insert("benefits".into(), json!(benefits));
    if !form.image_url.is_empty() {
        input.insert("imageUrl".into(), json!(form.image_url));
    }
    let path = format!("{}/tiers", campaign_path(&org, &campaign));
    match ctx.admin.send::<Value>(Method::POST, &path, &input).await {
        Ok(_) => Ok(to(format!(
            "orgs/{}/campaigns/{}/settings?done=tier-added",
            enc(&org),
            enc(&campaign)
        ))
        .into_response()),
        Err(problem) if form_problem(&problem) => {
            let page = settings_page(&ctx, (&org, &campaign), None, Some(problem), form).await?;
            Ok(render(&page))
        }
        Err(problem) => Err(problem.into()),
    }
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/settings/tiers/{tier}/remove`.
pub async fn remove_tier(
    ctx: Ctx,
    Path((org, campaign, tier)): Path<(String, String, String)>,
) -> Result<Response, Failure> {
    let path = format!("{}/tiers/{}", campaign_path(&org, &campaign), enc(&tier));
    ctx.admin.act::<()>(Method::DELETE, &path).await?;
    Ok(to(format!(
        "orgs/{}/campaigns/{}/settings?done=tier-removed",
        enc(&org),
        enc(&campaign)
    ))
    .into_response())
}
