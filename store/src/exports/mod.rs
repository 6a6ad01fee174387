//! Ledger exports: an organisation's transactions read out in one pass, a chunk at a time, for
//! files a data warehouse loads (written by `exports`), and the daily export schedules
//! (`schedule`).
//!
//! The rows stream from one query rather than pages: a page after the first would have to find
//! its place again, and millions of rows can share one date (a batch file dated by day). On
//! SQLite the query runs on a reader connection in a blocking task (WAL: writers carry on); on
//! PostgreSQL sqlx streams the result as it is consumed. Memory holds a few chunks either way.

pub mod schedule;

mod postgres;
mod sqlite;

use crate::OrgScope;
use chrono::{DateTime, Utc};
use tokio::sync::mpsc;

use crate::backend::{Forked, OwnedArg, borrowed};
use crate::{Store, StoreError, TransactionKind};

/// Which time the bounds apply to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExportTime {
    /// The transaction's own date (what the API filters by).
    Date,
    /// When the ledger recorded it: a day's exports then hold every transaction once, earns
    /// dated in the past included.
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

impl ExportFilter {
    /// Every transaction of the organisation; narrow it with `..ExportFilter::all()`.
    pub fn all() -> ExportFilter {
        ExportFilter {
            campaign_id: None,
            from: None,
            until: None,
            kinds: Vec::new(),
            by: ExportTime::Date,
        }
    }
}

/// Many texts (or nulls) in one buffer: a chunk of millions of values costs a few
/// allocations, not one each.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Texts {
    bytes: String,
    /// Where each value ends in `bytes`.
    ends: Vec<usize>,
    /// Whether each value is there (false: null).
    present: Vec<bool>,
}

impl Texts {
    fn push(&mut self, value: Option<&str>) {
        if let Some(value) = value {
            self.bytes.push_str(value);
        }
        self.ends.push(self.bytes.len());
        self.present.push(value.is_some());
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    pub fn get(&self, i: usize) -> Option<&str> {
        if !*self.present.get(i)? {
            return None;
        }
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        self.bytes.get(start..self.ends[i])
    }

    /// The buffer, each value's end in it, and whether each is there.
    pub fn into_parts(self) -> (String, Vec<usize>, Vec<bool>) {
        (self.bytes, self.ends, self.present)
    }
}

/// Transactions as exports hold them, column by column: the API's fields and where each
/// belongs. Times are microseconds since 1970 (UTC); amounts micro-tokens.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ExportChunk {
    pub id: Texts,
    pub campaign_id: Texts,
    pub wallet_id: Texts,
    /// The wallet's reference (its external id).
    pub wallet_reference: Texts,
    pub member_id: Texts,
    /// EARN, BURN or EXPIRY.
    pub kind: Texts,
    pub amount: Vec<i64>,
    pub currency: Texts,
    pub date: Vec<i64>,
    pub external_id: Texts,
    /// EARN: the amount the rules were given, exact decimal text.
    pub source_amount: Texts,
    pub description: Texts,
    pub comment: Texts,
    /// JSON text.
    pub meta: Texts,
    pub rules_trace: Texts,
    pub rules_version: Vec<Option<i64>>,
    pub batch_id: Texts,
    pub created_at: Vec<i64>,
}

impl ExportChunk {
    pub fn len(&self) -> usize {
        self.amount.len()
    }

    pub fn is_empty(&self) -> bool {
        self.amount.is_empty()
    }

    fn push(&mut self, r: &Record) {
        self.push_texts([
            Some(r.id.as_str()),
            Some(&r.campaign_id),
            Some(&r.wallet_id),
            r.wallet_reference.as_deref(),
            Some(&r.member_id),
            Some(&r.kind),
            Some(&r.currency),
            r.external_id.as_deref(),
            r.source_amount.as_deref(),
            r.description.as_deref(),
            r.comment.as_deref(),
            r.meta.as_deref(),
            r.rules_trace.as_deref(),
            r.batch_id.as_deref(),
        ]);
        self.amount.push(r.amount);
        self.date.push(r.date.timestamp_micros());
        self.rules_version.push(r.rules_version);
        self.created_at.push(r.created_at.timestamp_micros());
    }

    /// The text columns, in `QUERY_TEXT_COLUMNS` order.
    fn push_texts(&mut self, values: [Option<&str>; 14]) {
        let columns = [
            &mut self.id,
            &mut self.campaign_id,
            &mut self.wallet_id,
            &mut self.wallet_reference,
            &mut self.member_id,
            &mut self.kind,
            &mut self.currency,
            &mut self.external_id,
            &mut self.source_amount,
            &mut self.description,
            &mut self.comment,
            &mut self.meta,
            &mut self.rules_trace,
            &mut self.batch_id,
        ];
        for (column, value) in columns.into_iter().zip(values) {
            column.push(value);
        }
    }
}

row_struct! {
    /// A row of the query, as PostgreSQL's rows are decoded.
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

/// Rows come as the index of their bounds holds them (by campaign and date, or by recording
/// time), or unbounded in the table's own order: a sort of millions of rows would cost more
/// than the export. `scan`: read the whole table page by page (SQLite, where it would otherwise
/// walk the organisation's index and fetch each row from wherever it lies).
fn query(filter: &ExportFilter, scan: bool) -> String {
    let bounded = filter.from.is_some() || filter.until.is_some();
    let order = match (filter.by, filter.campaign_id.is_some(), bounded) {
        (ExportTime::Date, true, true) => " ORDER BY t.campaign_id, t.date",
        (ExportTime::Recorded, _, true) => " ORDER BY t.created_at",
        _ => "",
    };
    let whole = scan && !bounded && filter.campaign_id.is_none();
    format!(
        "SELECT t.id, t.campaign_id, t.wallet_id, w.external_id, w.owner_id, t.kind, t.amount, \
         t.currency, t.date, t.external_id, t.source_amount, t.description, t.comment, \
         CAST(t.meta AS TEXT), t.trace, t.rule_version, t.batch_id, t.created_at \
         FROM transactions t{} JOIN wallets w ON w.id = t.wallet_id WHERE {}{order}",
        if whole { " NOT INDEXED" } else { "" },
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

/// The values for `conditions(filter)`'s parameters, in order.
fn bindings(org_id: &str, filter: &ExportFilter) -> Vec<OwnedArg> {
    let mut bound = vec![OwnedArg::Text(Some(org_id.to_string()))];
    bound.extend(filter.campaign_id.clone().map(|c| OwnedArg::Text(Some(c))));
    bound.extend(
        [filter.from, filter.until]
            .into_iter()
            .flatten()
            .map(|at| OwnedArg::Time(Some(at))),
    );
    bound.extend(
        kinds(filter)
            .into_iter()
            .map(|k| OwnedArg::Text(Some(k.into()))),
    );
    bound
}

/// The rows of an export's query, sent to `out` in chunks of `chunk` (`Store::fork`: read by
/// rusqlite off the async workers on SQLite, streamed by sqlx on PostgreSQL); gives how many
/// there were.
struct Exporting {
    sql: String,
    bound: Vec<OwnedArg>,
    chunk: usize,
    out: mpsc::Sender<ExportChunk>,
}

impl Forked for Exporting {
    type Output = u64;
}

/// Ledger exports: an organisation's transactions streamed in chunks for a file (scope:
/// `OrgScope`).
impl Store {
    /// How many of the organisation's transactions `filter` picks.
    #[tracing::instrument(skip_all)]
    pub async fn count_export(
        &self,
        org: &OrgScope,
        filter: &ExportFilter,
    ) -> Result<u64, StoreError> {
        let org_id = org.id();
        let sql = format!(
            "SELECT COUNT(*) FROM transactions t WHERE {}",
            conditions(filter)
        );
        let bound = bindings(org_id, filter);
        let (count,): (i64,) = self
            .read_row(&sql, &borrowed(&bound))
            .await?
            .unwrap_or((0,));
        Ok(count.max(0) as u64)
    }

    /// Sends the organisation's transactions that `filter` picks to `out`, `chunk` rows at a
    /// time (the last may be shorter); how many there were. Stops early, without error, when
    /// `out` is closed. Without a campaign, bounds by date are read campaign by campaign, each
    /// through its `(campaign_id, date)` index.
    #[tracing::instrument(skip_all)]
    pub async fn export_transactions(
        &self,
        org: &OrgScope,
        filter: &ExportFilter,
        chunk: usize,
        out: mpsc::Sender<ExportChunk>,
    ) -> Result<u64, StoreError> {
        let org_id = org.id();
        let bounded = filter.from.is_some() || filter.until.is_some();
        if filter.campaign_id.is_some() || filter.by != ExportTime::Date || !bounded {
            return self.export_part(org_id, filter, chunk, &out).await;
        }
        let mut count = 0;
        for campaign in self.tenancy().list_campaigns(org).await? {
            let part = ExportFilter {
                campaign_id: Some(campaign.id),
                ..filter.clone()
            };
            count += self.export_part(org_id, &part, chunk, &out).await?;
            if out.is_closed() {
                break;
            }
        }
        Ok(count)
    }

    async fn export_part(
        &self,
        org_id: &str,
        filter: &ExportFilter,
        chunk: usize,
        out: &mpsc::Sender<ExportChunk>,
    ) -> Result<u64, StoreError> {
        self.fork(Exporting {
            sql: query(filter, self.dialect(true, false)),
            bound: bindings(org_id, filter),
            chunk: chunk.max(1),
            out: out.clone(),
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_filter_binds_what_its_query_names() {
        let mut filter = ExportFilter::all();
        assert!(!query(&filter, false).contains("$2"));
        assert!(query(&filter, true).contains("transactions t NOT INDEXED"));
        filter.campaign_id = Some("c".into());
        filter.from = Some(Utc::now());
        filter.kinds = vec![TransactionKind::Earn, TransactionKind::Burn];
        let sql = query(&filter, true);
        assert!(!sql.contains("NOT INDEXED"));
        assert!(sql.contains("t.campaign_id = $2 AND t.date >= $3 AND t.kind IN ($4, $5)"));
        assert_eq!(kinds(&filter), ["EARN", "BURN"]);
        filter.by = ExportTime::Recorded;
        filter.kinds = TransactionKind::ALL.to_vec();
        let sql = query(&filter, false);
        assert!(
            sql.contains("t.created_at >= $3 ORDER BY t.created_at"),
            "{sql}"
        );
        assert!(kinds(&filter).is_empty());
    }
}
