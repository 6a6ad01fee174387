//! Ledger exports: an organisation's transactions read out in one pass, a chunk at a time, for
//! files a data warehouse loads (written by `ingest::export`), and the daily export schedules
//! (`schedule`).
//!
//! The rows stream from one query rather than pages: a page after the first would have to find
//! its place again, and millions of rows can share one date (a batch file dated by day). On
//! SQLite the query runs on a reader connection in a blocking task (WAL: writers carry on); on
//! PostgreSQL sqlx streams the result as it is consumed. Memory holds a few chunks either way.

pub mod schedule;

use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use crate::backend::Pool;
use crate::backend::direct::{self, time};
use crate::{Store, StoreError, TransactionKind};

/// Which time the bounds apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportTime {
    /// The transaction's own date (what the API filters by): rows ordered by campaign, then
    /// date.
    Date,
    /// When the ledger recorded it: a day's exports then hold every transaction once, earns
    /// dated in the past included. Rows in the order they were recorded.
    Recorded,
}

#[derive(Debug, Clone)]
pub struct ExportFilter {
    /// `None`: every campaign of the organisation.
    pub campaign_id: Option<String>,
    /// Inclusive.
    pub from: Option<DateTime<Utc>>,
    /// Exclusive.
    pub until: Option<DateTime<Utc>>,
    /// Empty: every kind.
    pub kinds: Vec<TransactionKind>,
    pub by: ExportTime,
}

/// One transaction as exports hold it: the API's fields and where it belongs.
#[derive(Debug, Clone, PartialEq)]
pub struct ExportRow {
    pub id: String,
    pub campaign_id: String,
    pub wallet_id: String,
    /// The wallet's reference (its external id), if it has one.
    pub wallet_reference: Option<String>,
    pub member_id: String,
    /// EARN, BURN or EXPIRY.
    pub kind: String,
    /// Micro-tokens.
    pub amount: i64,
    pub currency: String,
    pub date: DateTime<Utc>,
    pub external_id: Option<String>,
    /// EARN: the amount the rules were given, exact decimal text.
    pub source_amount: Option<String>,
    pub description: Option<String>,
    pub comment: Option<String>,
    /// JSON text.
    pub meta: Option<String>,
    pub rules_trace: Option<String>,
    pub rules_version: Option<i64>,
    pub batch_id: Option<String>,
    pub created_at: DateTime<Utc>,
}

row_struct! {
    /// An `ExportRow` as the query reads it.
    struct Record {
        id: String,
        campaign_id: String,
        wallet_id: String,
        wallet_reference: Option<String>,
        member_id: String,
        kind: String,
        amount: i64,
        currency: String,
        date: DateTime<Utc>,
        external_id: Option<String>,
        source_amount: Option<String>,
        description: Option<String>,
        comment: Option<String>,
        meta: Option<String>,
        rules_trace: Option<String>,
        rules_version: Option<i64>,
        batch_id: Option<String>,
        created_at: DateTime<Utc>,
    }
}

impl From<Record> for ExportRow {
    fn from(r: Record) -> Self {
        ExportRow {
            id: r.id,
            campaign_id: r.campaign_id,
            wallet_id: r.wallet_id,
            wallet_reference: r.wallet_reference,
            member_id: r.member_id,
            kind: r.kind,
            amount: r.amount,
            currency: r.currency,
            date: r.date,
            external_id: r.external_id,
            source_amount: r.source_amount,
            description: r.description,
            comment: r.comment,
            meta: r.meta,
            rules_trace: r.rules_trace,
            rules_version: r.rules_version,
            batch_id: r.batch_id,
            created_at: r.created_at,
        }
    }
}

/// The conditions for `filter`: only those it has, so each shape uses its index
/// (`(org_id, campaign_id, date)` or `(org_id, created_at)`). `$1` is the organisation; the
/// rest are numbered as `bindings` lists them.
fn conditions(filter: &ExportFilter) -> String {
    let column = match filter.by {
        ExportTime::Date => "t.date",
        ExportTime::Recorded => "t.created_at",
    };
    let mut sql = String::from("t.org_id = $1");
    let mut n = 1;
    let mut next = || {
        n += 1;
        n
    };
    if filter.campaign_id.is_some() {
        sql += &format!(" AND t.campaign_id = ${}", next());
    }
    if filter.from.is_some() {
        sql += &format!(" AND {column} >= ${}", next());
    }
    if filter.until.is_some() {
        sql += &format!(" AND {column} < ${}", next());
    }
    let kinds = kinds(filter);
    if !kinds.is_empty() {
        let kinds: Vec<String> = kinds.iter().map(|_| format!("${}", next())).collect();
        sql += &format!(" AND t.kind IN ({})", kinds.join(", "));
    }
    sql
}

fn query(filter: &ExportFilter) -> String {
    let order = match filter.by {
        ExportTime::Date => "t.campaign_id, t.date",
        ExportTime::Recorded => "t.created_at",
    };
    format!(
        "SELECT t.id, t.campaign_id, t.wallet_id, w.external_id, w.owner_id, t.kind, t.amount, \
         t.currency, t.date, t.external_id, t.source_amount, t.description, t.comment, \
         CAST(t.meta AS TEXT), t.trace, t.rule_version, t.batch_id, t.created_at \
         FROM transactions t JOIN wallets w ON w.id = t.wallet_id WHERE {} ORDER BY {order}",
        conditions(filter)
    )
}

/// The kinds the query binds (none when every kind is asked for).
fn kinds(filter: &ExportFilter) -> Vec<&'static str> {
    let asked: Vec<&'static str> = TransactionKind::ALL
        .into_iter()
        .filter(|k| filter.kinds.contains(k))
        .map(TransactionKind::as_str)
        .collect();
    if asked.len() < TransactionKind::ALL.len() {
        asked
    } else {
        Vec::new()
    }
}

/// A value `conditions` compares with.
enum Bound {
    Text(String),
    Time(DateTime<Utc>),
}

/// The values for `conditions(filter)`'s parameters, in order.
fn bindings(org_id: &str, filter: &ExportFilter) -> Vec<Bound> {
    let mut bound = vec![Bound::Text(org_id.to_string())];
    bound.extend(filter.campaign_id.clone().map(Bound::Text));
    bound.extend(
        [filter.from, filter.until]
            .into_iter()
            .flatten()
            .map(Bound::Time),
    );
    bound.extend(kinds(filter).into_iter().map(|k| Bound::Text(k.into())));
    bound
}

/// `bindings` as the rusqlite path binds them (times as the text SQLite stores).
fn sqlite_values(bound: Vec<Bound>) -> Vec<String> {
    bound
        .into_iter()
        .map(|b| match b {
            Bound::Text(text) => text,
            Bound::Time(at) => time(at),
        })
        .collect()
}

/// `$query` with `bindings` bound, for PostgreSQL.
macro_rules! bind_all {
    ($query:expr, $bound:expr) => {{
        let mut query = $query;
        for bound in $bound {
            query = match bound {
                Bound::Text(text) => query.bind(text),
                Bound::Time(at) => query.bind(at),
            };
        }
        query
    }};
}

impl Store {
    /// How many of the organisation's transactions `filter` picks.
    pub async fn count_export(
        &self,
        org_id: &str,
        filter: &ExportFilter,
    ) -> Result<u64, StoreError> {
        let sql = format!(
            "SELECT COUNT(*) FROM transactions t WHERE {}",
            conditions(filter)
        );
        let bound = bindings(org_id, filter);
        let (count,): (i64,) = match &self.pool {
            Pool::Sqlite { direct, .. } => {
                let values = sqlite_values(bound);
                let args: Vec<&dyn rusqlite::ToSql> =
                    values.iter().map(|v| v as &dyn rusqlite::ToSql).collect();
                direct
                    .read(|c| direct::row(c, &sql, &args))?
                    .unwrap_or((0,))
            }
            Pool::Postgres(pool) => {
                bind_all!(sqlx::query_as(sqlx::AssertSqlSafe(sql)), bound)
                    .fetch_one(pool)
                    .await?
            }
        };
        Ok(count.max(0) as u64)
    }

    /// Sends the organisation's transactions that `filter` picks to `out`, `chunk` rows at a
    /// time (the last may be shorter); how many there were. Stops early, without error, when
    /// `out` is closed.
    pub async fn export_transactions(
        &self,
        org_id: &str,
        filter: &ExportFilter,
        chunk: usize,
        out: mpsc::Sender<Vec<ExportRow>>,
    ) -> Result<u64, StoreError> {
        let sql = query(filter);
        let bound = bindings(org_id, filter);
        let chunk = chunk.max(1);
        match &self.pool {
            Pool::Sqlite { direct, .. } => {
                let direct = direct.clone();
                let values = sqlite_values(bound);
                tokio::task::spawn_blocking(move || {
                    let args: Vec<&dyn rusqlite::ToSql> =
                        values.iter().map(|v| v as &dyn rusqlite::ToSql).collect();
                    direct.read(|c| {
                        let (mut rows, mut count) = (Vec::with_capacity(chunk), 0u64);
                        let mut open = true;
                        direct::rows_while(c, &sql, &args, |row: Record| {
                            rows.push(ExportRow::from(row));
                            count += 1;
                            if rows.len() == chunk {
                                let full = std::mem::replace(&mut rows, Vec::with_capacity(chunk));
                                open = out.blocking_send(full).is_ok();
                            }
                            open
                        })?;
                        if open && !rows.is_empty() {
                            let _ = out.blocking_send(rows);
                        }
                        Ok(count)
                    })
                })
                .await
                .map_err(|e| StoreError::NotCommitted(format!("the export's reader failed: {e}")))?
            }
            Pool::Postgres(pool) => {
                let query = sqlx::query_as::<_, Record>(sqlx::AssertSqlSafe(sql));
                let mut stream = bind_all!(query, bound).fetch(pool);
                let (mut rows, mut count) = (Vec::with_capacity(chunk), 0u64);
                while let Some(row) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await
                {
                    rows.push(ExportRow::from(row?));
                    count += 1;
                    if rows.len() == chunk {
                        let full = std::mem::replace(&mut rows, Vec::with_capacity(chunk));
                        if out.send(full).await.is_err() {
                            return Ok(count);
                        }
                    }
                }
                if !rows.is_empty() {
                    let _ = out.send(rows).await;
                }
                Ok(count)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_filter_binds_what_its_query_names() {
        let mut filter = ExportFilter {
            campaign_id: None,
            from: None,
            until: None,
            kinds: Vec::new(),
            by: ExportTime::Date,
        };
        assert!(!query(&filter).contains("$2"));
        filter.campaign_id = Some("c".into());
        filter.from = Some(Utc::now());
        filter.kinds = vec![TransactionKind::Earn, TransactionKind::Burn];
        let sql = query(&filter);
        assert!(sql.contains("t.campaign_id = $2 AND t.date >= $3 AND t.kind IN ($4, $5)"));
        assert_eq!(kinds(&filter), ["EARN", "BURN"]);
        filter.by = ExportTime::Recorded;
        filter.kinds = TransactionKind::ALL.to_vec();
        let sql = query(&filter);
        assert!(
            sql.contains("t.created_at >= $3 ORDER BY t.created_at"),
            "{sql}"
        );
        assert!(kinds(&filter).is_empty());
    }
}
