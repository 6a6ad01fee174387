//! PostgreSQL, for many credits at once (a batch file's chunk): the rows are streamed with `COPY`
//! straight into the journal when none of their earn ids was credited before (a file's usual
//! case); otherwise into a temporary staging table, from which one statement inserts the
//! transactions that are new (skipping the others). The wallets are settled as for any credit
//! (`postgres::settle`).
//!
//! `COPY` into the journal spares the staging table's copy and the insert's speculative
//! insertion (`ON CONFLICT` checks each unique key before and after writing); it cannot skip a
//! row, so it is used only when a probe of the chunk's keys finds none credited, and a row
//! credited meanwhile by another writer (its unique key then fails the `COPY`) sends the chunk,
//! rolled back, through the staging table.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::{PgConnection, PgPool};

use super::{Written, outcomes, settle};
use crate::backend::PgTx;
use crate::backend::{Arg, direct};
use crate::common::ids::{hex, new_id};
use crate::credit::Pending;
use crate::credit::convert_referrals;
use crate::transactions::{EntryText, entry_columns};
use crate::{Credit, Credited, Policy, StoreError};

/// From this many credits, a call goes through `COPY` (below, multi-row statements are quicker).
pub(crate) const COPY_FROM: usize = 1_000;

/// Whether any of the keys `$1` is in the journal.
const ANY_CREDITED: &str = "SELECT EXISTS (SELECT FROM transactions WHERE idem_key = ANY($1))";

/// `COPY` of a chunk's rows (`CopyRows`' text) into `$table`.
macro_rules! copy_into {
    ($table:literal) => {
        concat!(
            "COPY ",
            $table,
            " (",
            entry_columns!(),
            ") FROM STDIN WITH (FORMAT csv)"
        )
    };
}

const COPY_JOURNAL: &str = copy_into!("transactions");

const STAGING: &str = "CREATE TEMP TABLE IF NOT EXISTS earn_staging (LIKE transactions) \
     ON COMMIT DELETE ROWS";

const COPY_STAGING: &str = copy_into!("earn_staging");

/// After the staging copy: the new transactions (earn ids credited before are skipped). Returns
/// the ids inserted.
const INSERT: &str = concat!(
    "INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT ",
    entry_columns!(),
    " FROM earn_staging ORDER BY id ON CONFLICT (idem_key) DO NOTHING RETURNING id"
);

/// A chunk's credits (none of them from API requests) made into `COPY`'s text, with the ids,
/// expiries and keys they are written with: all that needs no database, prepared while the
/// chunk before is being written.
pub(crate) struct CopyRows {
    ids: Vec<String>,
    expiries: Vec<Option<DateTime<Utc>>>,
    pending: Vec<Option<Pending>>,
    keys: Vec<Vec<u8>>,
    csv: String,
    at: DateTime<Utc>,
}

impl CopyRows {
    pub(crate) fn new(
        credits: &[Credit],
        policies: &HashMap<String, Policy>,
        at: DateTime<Utc>,
    ) -> CopyRows {
        let ids: Vec<String> = credits.iter().map(|_| new_id()).collect();
        let expiries: Vec<Option<DateTime<Utc>>> =
            credits.iter().map(|c| c.expires_at(policies)).collect();
        let pending = credits.iter().map(|c| c.pending(policies, at)).collect();
        let keys: Vec<Vec<u8>> = credits.iter().map(Credit::idem_key).collect();
        let mut csv = String::with_capacity(credits.len() * 320);
        let created_at = direct::time(at);
        for (((c, id), expires_at), key) in credits.iter().zip(&ids).zip(&expiries).zip(&keys) {
            let (date, expiry) = (direct::time(c.earn.date), expires_at.map(direct::time));
            let text = EntryText {
                meta: c.meta_text.as_deref(),
                date: &date,
                created_at: &created_at,
                expires_at: expiry.as_deref(),
            };
            let entry = c.entry(id, at, *expires_at);
            for (i, arg) in entry.args(key, Some(&text)).into_iter().enumerate() {
                if i > 0 {
                    csv.push(',');
                }
                copy_field(&mut csv, arg);
            }
            csv.push('\n');
        }
        CopyRows {
            ids,
            expiries,
            pending,
            keys,
            csv,
            at,
        }
    }

    /// Records `credits` (those the rows were made from) in one transaction; returns each one's
    /// outcome, in order.
    pub(crate) async fn write(
        self,
        pool: &PgPool,
        credits: &[Credit],
    ) -> Result<Vec<Credited>, StoreError> {
        let CopyRows {
            ids,
            expiries,
            pending,
            keys,
            csv,
            at,
        } = self;
        let mut tx = pool.begin().await?;
        let (seen,): (bool,) = sqlx::query_as(ANY_CREDITED)
            .bind(&keys)
            .fetch_one(&mut *tx)
            .await?;
        let inserted = if seen {
            staged(&mut tx, &csv).await?
        } else {
            match copy(&mut tx, COPY_JOURNAL, &csv).await {
                Ok(()) => ids.iter().cloned().collect(),
                Err(err) if err.is_unique_violation() => {
                    tx.rollback().await?;
                    tx = pool.begin().await?;
                    staged(&mut tx, &csv).await?
                }
                Err(err) => return Err(err),
            }
        };
        let written = Written {
            ids: &ids,
            expiries: &expiries,
            pending: &pending,
            inserted: &inserted,
        };
        settle(&mut tx, credits, &written, at).await?;
        let outcomes = outcomes(&mut tx, credits, &ids, &inserted).await?;
        convert_referrals(&mut PgTx(&mut tx), credits, &outcomes, at).await?;
        tx.commit().await?;
        Ok(outcomes)
    }
}

/// Streams `csv` into the table of `sql` (a `COPY ... FROM STDIN`).
async fn copy(tx: &mut PgConnection, sql: &str, csv: &str) -> Result<(), StoreError> {
    let mut copy = tx.copy_in_raw(sql).await?;
    copy.send(csv.as_bytes()).await?;
    copy.finish().await?;
    Ok(())
}

/// The rows of `csv` through the staging table; the ids of those inserted.
async fn staged(tx: &mut PgConnection, csv: &str) -> Result<HashSet<String>, StoreError> {
    sqlx::query(STAGING).execute(&mut *tx).await?;
    copy(tx, COPY_STAGING, csv).await?;
    Ok(sqlx::query_as::<_, (String,)>(INSERT)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect())
}

/// Writes `arg` as one CSV field as `COPY` reads it: an unquoted empty field is NULL, a quoted
/// one text.
fn copy_field(out: &mut String, arg: Arg<'_>) {
    let quoted = |out: &mut String, text: &str| {
        out.push('"');
        for (i, part) in text.split('"').enumerate() {
            if i > 0 {
                out.push_str("\"\"");
            }
            out.push_str(part);
        }
        out.push('"');
    };
    match arg {
        Arg::Text(Some(text)) | Arg::JsonText(Some(text)) | Arg::TimeText(Some(text)) => {
            quoted(out, text);
        }
        Arg::Int(Some(n)) => {
            let _ = write!(out, "{n}");
        }
        Arg::Real(Some(n)) => {
            let _ = write!(out, "{n}");
        }
        Arg::Date(Some(d)) => {
            let _ = write!(out, "{d}");
        }
        Arg::Bool(Some(b)) => out.push(if b { 't' } else { 'f' }),
        Arg::Bytes(Some(bytes)) => {
            out.push_str("\\x");
            out.push_str(&hex(bytes));
        }
        Arg::Time(Some(t)) => out.push_str(&t.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
        Arg::Json(Some(value)) => quoted(out, &direct::json(value)),
        Arg::Int(None)
        | Arg::Real(None)
        | Arg::Date(None)
        | Arg::Bool(None)
        | Arg::Text(None)
        | Arg::Bytes(None)
        | Arg::Time(None)
        | Arg::Json(None)
        | Arg::JsonText(None)
        | Arg::TimeText(None) => {}
    }
}
