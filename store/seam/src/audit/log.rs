//! Reading the trail: a page of entries, newest first, filtered by who, which organisation,
//! which operation and when.

use chrono::{DateTime, Utc};

use super::chain::{COLUMNS, Entry};
use crate::backend::Arg;
use crate::{Db, Page, Paged, StoreError};

/// Which entries a reader wants; every field left empty matches all.
#[derive(Debug, Clone, Default)]
pub struct AuditFilter {
    /// The operator's id, or the name an entry records (an e-mail, the OS user of `local`).
    pub actor: Option<String>,
    pub org_id: Option<String>,
    /// An operation (`org.create`), or a family of them ending in `.` (`org.`).
    pub operation: Option<String>,
    pub since: Option<DateTime<Utc>>,
    pub until: Option<DateTime<Utc>>,
}

impl AuditFilter {
    /// `FROM ... WHERE ...` and its arguments.
    fn clause<'a>(&'a self) -> (String, Vec<Arg<'a>>) {
        let mut sql = String::from("FROM audit_log WHERE 1 = 1");
        let mut args: Vec<Arg<'a>> = Vec::new();
        let mut add = |condition: &str, arg: Arg<'a>| {
            args.push(arg);
            sql.push_str(&condition.replace('?', &format!("${}", args.len())));
        };
        if let Some(actor) = &self.actor {
            add(
                " AND (actor_id = ? OR actor_name = ?)",
                Arg::Text(Some(actor)),
            );
        }
        if let Some(org) = &self.org_id {
            add(" AND org_id = ?", Arg::Text(Some(org)));
        }
        match self.operation.as_deref() {
            Some(family) if family.ends_with('.') => {
                add(
                    " AND substr(operation, 1, length(?)) = ?",
                    Arg::Text(Some(family)),
                );
            }
            Some(operation) => add(" AND operation = ?", Arg::Text(Some(operation))),
            None => {}
        }
        if let Some(since) = self.since {
            add(" AND at >= ?", Arg::Time(Some(since)));
        }
        if let Some(until) = self.until {
            add(" AND at < ?", Arg::Time(Some(until)));
        }
        (sql, args)
    }
}

/// A page of the entries `filter` matches, newest first.
pub async fn list(db: &Db, filter: &AuditFilter, page: Page) -> Result<Paged<Entry>, StoreError> {
    let (from, args) = filter.clause();
    let rows = db
        .read_page(page, COLUMNS, &from, "seq DESC", &args)
        .await?;
    Paged::of(rows, page, Ok)
}

/// Sends every entry `filter` matches, oldest first, a thousand at a time, to `chunks` (an
/// export of any length in bounded memory); how many were sent. Stops early, without error,
/// if the receiver has gone.
pub async fn each(
    db: &Db,
    filter: &AuditFilter,
    chunks: tokio::sync::mpsc::Sender<Vec<Entry>>,
) -> Result<u64, StoreError> {
    let (from, args) = filter.clause();
    let mut after = 0_i64;
    let mut sent = 0;
    loop {
        let mut bound = args.clone();
        bound.push(Arg::Int(Some(after)));
        let sql = format!(
            "SELECT {COLUMNS} {from} AND seq > ${} ORDER BY seq LIMIT 1000",
            bound.len()
        );
        let rows: Vec<Entry> = db.read_rows(&sql, &bound).await?;
        let Some(last) = rows.last() else { break };
        after = last.seq;
        sent += rows.len() as u64;
        if chunks.send(rows).await.is_err() {
            break;
        }
    }
    Ok(sent)
}
