//! The audit trail (owners and admins): entries filtered by who, organisation, operation and
//! period, newest first, each with its fields before and after side by side; the chain's
//! verification on request.

use std::collections::HashMap;

use admin::views_of::{AuditEntryView, VerdictView};
use api::plumbing::PagedList;
use askama::Template;
use axum::extract::Query;
use chrono::{NaiveDate, NaiveDateTime};

use crate::client::enc;
use crate::page::{Ctx, Failure, Page, render};
use crate::paging::{PAGE_ROWS, Pager, page_number};

/// The filters, as the form sent them.
const FILTERS: [&str; 5] = ["actor", "org", "operation", "since", "until"];

/// One field of an entry's record: its name, before and after.
pub struct Change {
    pub field: String,
    pub before: String,
    pub after: String,
}

/// An entry with its changes read out.
pub struct Entry {
    pub entry: AuditEntryView,
    pub changes: Vec<Change>,
}

#[derive(Template)]
#[template(path = "audit.html")]
struct AuditPage {
    page: Page,
    entries: Vec<Entry>,
    pager: Pager,
    filters: HashMap<String, String>,
    verdict: Option<VerdictView>,
    problem: Option<String>,
}

impl AuditPage {
    fn filter(&self, name: &str) -> &str {
        self.filters.get(name).map_or("", String::as_str)
    }
}

/// A JSON value as a person reads it: text without quotes, nothing as a dash.
fn shown(value: Option<&serde_json::Value>) -> String {
    match value {
        None | Some(serde_json::Value::Null) => "—".to_owned(),
        Some(serde_json::Value::String(text)) => text.clone(),
        Some(serde_json::Value::Array(items)) => {
            let items: Vec<String> = items.iter().map(|i| shown(Some(i))).collect();
            items.join(", ")
        }
        Some(other) => other.to_string(),
    }
}

/// The fields an entry's record changed, from its before and after (JSON objects as text).
fn changes(before: Option<&str>, after: Option<&str>) -> Vec<Change> {
    let read = |text: Option<&str>| {
        text.and_then(|t| serde_json::from_str::<serde_json::Value>(t).ok())
            .and_then(|v| v.as_object().cloned())
            .unwrap_or_default()
    };
    let (before, after) = (read(before), read(after));
    let mut fields: Vec<&String> = before.keys().chain(after.keys()).collect();
    fields.sort();
    fields.dedup();
    fields
        .into_iter()
        .map(|field| Change {
            field: field.clone(),
            before: shown(before.get(field)),
            after: shown(after.get(field)),
        })
        .filter(|c| c.before != c.after)
        .collect()
}

/// A date or `datetime-local` value (UTC) as RFC 3339, for the API.
fn instant(text: &str) -> Option<String> {
    let text = text.trim();
    NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M")
        .ok()
        .or_else(|| {
            NaiveDate::parse_from_str(text, "%Y-%m-%d")
                .ok()
                .and_then(|d| d.and_hms_opt(0, 0, 0))
        })
        .map(|at| at.and_utc().to_rfc3339())
}

/// `GET /console/audit?actor=&org=&operation=&since=&until=&page=&verify=1`.
pub async fn trail(
    ctx: Ctx,
    Query(query): Query<HashMap<String, String>>,
) -> Result<axum::response::Response, Failure> {
    let page = ctx.page("Audit trail", "audit").await?;
    let number = page_number(query.get("page").map(String::as_str));
    let mut api = format!("/admin/v1/audit-log?limit={PAGE_ROWS}&page={number}");
    let mut link = String::from("audit?");
    let mut filters = HashMap::new();
    let mut problem = None;
    for name in FILTERS {
        let Some(value) = query.get(name).map(|v| v.trim()).filter(|v| !v.is_empty()) else {
            continue;
        };
        filters.insert(name.to_owned(), value.to_owned());
        link.push_str(&format!("{name}={}&", enc(value)));
        let sent = match name {
            "since" | "until" => match instant(value) {
                Some(at) => at,
                None => {
                    problem = Some(format!("`{name}`: give a date and time"));
                    continue;
                }
            },
            _ => value.to_owned(),
        };
        api.push_str(&format!("&{name}={}", enc(&sent)));
    }
    let list: PagedList<AuditEntryView> = match ctx.admin.get(&api).await {
        Ok(list) => list,
        Err(refused) if refused.status == 400 => {
            problem = Some(refused.detail);
            ctx.admin
                .get(&format!("/admin/v1/audit-log?limit={PAGE_ROWS}"))
                .await?
        }
        Err(refused) => return Err(refused.into()),
    };
    let verdict = match query.contains_key("verify") {
        true => Some(ctx.admin.get("/admin/v1/audit-log/verification").await?),
        false => None,
    };
    let pager = Pager::of(&list, &link);
    let entries = list
        .data
        .into_iter()
        .map(|entry| Entry {
            changes: changes(entry.before.as_deref(), entry.after.as_deref()),
            entry,
        })
        .collect();
    Ok(render(&AuditPage {
        page,
        entries,
        pager,
        filters,
        verdict,
        problem,
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_shows_the_fields_it_changed() {
        let changed = changes(
            Some(r#"{"role":"viewer","email":"a@example.com","orgs":["o1"]}"#),
            Some(r#"{"role":"support","email":"a@example.com","orgs":null}"#),
        );
        let read: Vec<(&str, &str, &str)> = changed
            .iter()
            .map(|c| (c.field.as_str(), c.before.as_str(), c.after.as_str()))
            .collect();
        assert_eq!(read, [("orgs", "o1", "—"), ("role", "viewer", "support")]);
        assert!(changes(None, None).is_empty());
    }
}
