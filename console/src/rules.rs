//! A campaign's rule sets: its versions (the active one first), one shown with its rules and
//! source, two compared side by side; a rule set edited and tried on pasted or uploaded rows
//! (each row's tokens and trace), backtested over a period of recorded earns (totals, per rule,
//! the wallets that change most), and activated as a new version.

use std::collections::HashMap;

use api::plumbing::PagedList;
use askama::Template;
use axum::body::{Body, Bytes};
use axum::extract::{Path, Query};
use axum::http::Method;
use axum::response::{IntoResponse, Response};
use chrono::NaiveDate;
use serde::Deserialize;
use serde_json::json;

use crate::client::{Problem, enc};
use crate::diff::{Row, side_by_side};
use crate::page::{Ctx, Failure, Fields, Page, form_problem, render, to};

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Version {
    pub version: i64,
    pub active: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RuleSet {
    pub version: i64,
    pub active: bool,
    pub rules: Vec<Rule>,
    pub source: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub id: String,
    pub priority: i64,
    pub effect: String,
    pub stop: bool,
    pub pending_days: Option<u32>,
    pub description: Option<String>,
}

#[derive(Deserialize)]
pub struct Trial {
    pub rows: Vec<RowTrial>,
    pub unreadable: usize,
}

#[derive(Deserialize)]
pub struct RowTrial {
    pub line: usize,
    pub id: Option<String>,
    pub amount: Option<String>,
    pub tokens: Option<String>,
    pub trace: Vec<String>,
    pub error: Option<String>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Backtest {
    pub transactions: u64,
    pub unreadable: u64,
    pub current_tokens: String,
    pub candidate_tokens: String,
    pub difference: String,
    pub per_rule: Vec<RuleTotals>,
    pub top_wallets: Vec<WalletChange>,
    pub limits: Vec<LimitCuts>,
}

#[derive(Deserialize)]
pub struct LimitCuts {
    /// Absent: the campaign's budget.
    pub rule: Option<String>,
    pub limit: String,
    pub cuts: u64,
}

#[derive(Deserialize)]
pub struct RuleTotals {
    pub rule: String,
    pub current: String,
    pub candidate: String,
    pub fired: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct WalletChange {
    pub wallet_id: String,
    pub current: String,
    pub candidate: String,
}

/// What the editor holds and what was done with it.
#[derive(Default)]
pub struct Editor {
    pub source: String,
    pub rows: String,
    pub from: String,
    pub to: String,
    pub trial: Option<Trial>,
    pub backtest: Option<Backtest>,
    pub problem: Option<Problem>,
}

#[derive(Template)]
#[template(path = "rules.html")]
struct RulesPage {
    page: Page,
    campaign: String,
    currency: String,
    versions: Vec<Version>,
    shown: Option<RuleSet>,
    /// The version compared with the one shown, side by side.
    compared: Option<(i64, Vec<Row>)>,
    editor: Editor,
}

impl RulesPage {
    fn tokens(&self, amount: &str) -> String {
        crate::format::tokens(amount, &self.currency)
    }

    /// The rule set's problems, each a line of its own.
    fn source_problems(&self) -> Vec<&str> {
        self.editor.problem.as_ref().map_or_else(Vec::new, |p| {
            p.errors
                .iter()
                .filter(|e| e.field == "rules")
                .map(|e| e.message.as_str())
                .collect()
        })
    }
}

fn rules_path(org: &str, campaign: &str) -> String {
    format!(
        "/admin/v1/orgs/{}/campaigns/{}/rules",
        enc(org),
        enc(campaign)
    )
}

async fn rules_page(
    ctx: &Ctx,
    (org, campaign): (&str, &str),
    query: &HashMap<String, String>,
    editor: Option<Editor>,
) -> Result<RulesPage, Failure> {
    let page = ctx.org_page(org, "Rules", "programme").await?;
    let currency = page
        .org
        .as_ref()
        .map_or("", |o| o.currency(campaign))
        .to_owned();
    let path = rules_path(org, campaign);
    let versions: PagedList<Version> = ctx.admin.get(&format!("{path}?limit=100")).await?;
    let version = |key: &str| query.get(key).and_then(|v| v.parse::<i64>().ok());
    let wanted = version("version").map_or_else(|| "active".to_owned(), |v| v.to_string());
    let shown: Option<RuleSet> = match versions.data.is_empty() {
        true => None,
        false => Some(ctx.admin.get(&format!("{path}/{wanted}")).await?),
    };
    let compared = match (version("compare"), &shown) {
        (Some(other), Some(shown)) => {
            let other: RuleSet = ctx.admin.get(&format!("{path}/{other}")).await?;
            Some((other.version, side_by_side(&other.source, &shown.source)))
        }
        _ => None,
    };
    let editor = editor.unwrap_or_else(|| Editor {
        source: shown.as_ref().map(|s| s.source.clone()).unwrap_or_default(),
        rows: "id,amount,date\nt-1,42.50,2026-11-20T10:00:00Z\n".into(),
        ..Editor::default()
    });
    Ok(RulesPage {
        page,
        campaign: campaign.to_owned(),
        currency,
        versions: versions.data,
        shown,
        compared,
        editor,
    })
}

/// `GET /console/orgs/{org}/campaigns/{campaign}/rules?version=&compare=`.
pub async fn show(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    Query(query): Query<HashMap<String, String>>,
) -> Result<Response, Failure> {
    Ok(render(
        &rules_page(&ctx, (&org, &campaign), &query, None).await?,
    ))
}

/// A day (`YYYY-MM-DD`) as the instant it starts, or ends (`end`), in UTC.
fn instant(day: &str, end: bool) -> String {
    NaiveDate::parse_from_str(day.trim(), "%Y-%m-%d")
        .ok()
        .and_then(|d| match end {
            true => d.and_hms_opt(23, 59, 59),
            false => d.and_hms_opt(0, 0, 0),
        })
        .map_or_else(|| day.to_owned(), |at| at.and_utc().to_rfc3339())
}

/// `POST /console/orgs/{org}/campaigns/{campaign}/rules`: the editor's rule set tried
/// (`test`), backtested (`backtest`) or activated (`activate`).
pub async fn act(
    ctx: Ctx,
    Path((org, campaign)): Path<(String, String)>,
    body: Bytes,
) -> Result<Response, Failure> {
    let fields = Fields::of(&body);
    let mut editor = Editor {
        source: fields.get_raw("source").replace("\r\n", "\n"),
        rows: fields.get_raw("rows").replace("\r\n", "\n"),
        from: fields.get("from").to_owned(),
        to: fields.get("to").to_owned(),
        ..Editor::default()
    };
    let path = rules_path(&org, &campaign);
    let source = (!editor.source.trim().is_empty()).then(|| editor.source.clone());
    let outcome = match fields.get("action") {
        "test" => {
            let input = json!({"rules": source, "rows": editor.rows});
            ctx.admin
                .send::<Trial>(Method::POST, &format!("{path}/test"), &input)
                .await
                .map(|trial| editor.trial = Some(trial))
        }
        "backtest" => {
            let input = json!({
                "rules": source,
                "from": instant(&editor.from, false),
                "to": instant(&editor.to, true),
            });
            ctx.admin
                .send::<Backtest>(Method::POST, &format!("{path}/backtest"), &input)
                .await
                .map(|test| editor.backtest = Some(test))
        }
        "activate" => {
            let sent = ctx
                .admin
                .call(
                    Method::PUT,
                    &path,
                    Some("text/plain"),
                    Body::from(editor.source.clone()),
                )
                .await;
            if sent.is_ok() {
                return Ok(to(format!(
                    "orgs/{}/campaigns/{}/rules?done=rules-activated",
                    enc(&org),
                    enc(&campaign)
                ))
                .into_response());
            }
            sent.map(|_| ())
        }
        _ => return Err(crate::page::not_found()),
    };
    match outcome {
        Ok(()) => {}
        Err(problem) if form_problem(&problem) => editor.problem = Some(problem),
        Err(problem) => return Err(problem.into()),
    }
    let page = rules_page(&ctx, (&org, &campaign), &HashMap::new(), Some(editor)).await?;
    Ok(render(&page))
}
