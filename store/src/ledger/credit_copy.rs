//! PostgreSQL, for many credits at once (a batch file's chunk): the rows are streamed with `COPY`
//! into a temporary staging table, then one statement inserts the transactions that are new
//! (skipping earn ids credited before); the wallets are settled as for any credit
//! (`credit::settle_postgres`).

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::PgPool;

use crate::common::ids::{hex, new_id};
use crate::ledger::credit::{outcomes, settle_postgres};
use crate::ledger::transactions::entry_columns;
use crate::{Credit, Credited, Policy, StoreError};

/// From this many credits, a call goes through `COPY` (below, multi-row statements are quicker).
pub(crate) const COPY_FROM: usize = 1_000;

const STAGING: &str = "CREATE TEMP TABLE IF NOT EXISTS earn_staging (id TEXT, \
     org_id TEXT, campaign_id TEXT, wallet_id TEXT, amount BIGINT, external_id TEXT, \
     source_amount TEXT, currency TEXT, description TEXT, comment TEXT, meta JSONB, \
     date TIMESTAMPTZ, trace TEXT, rule_version BIGINT, batch_id TEXT, expires_at TIMESTAMPTZ, \
     idem_key BYTEA) ON COMMIT DELETE ROWS";

const COPY: &str = "COPY earn_staging (id, org_id, campaign_id, wallet_id, amount, \
     external_id, source_amount, currency, description, comment, meta, date, trace, rule_version, \
     batch_id, expires_at, idem_key) FROM STDIN WITH (FORMAT csv)";

/// After the copy: the new transactions (earn ids credited before are skipped). Returns the ids
/// inserted.
const INSERT: &str = concat!(
    "INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT id, org_id, campaign_id, wallet_id, 'EARN', amount, external_id, source_amount, \
       currency, description, comment, meta, date, trace, rule_version, $1, batch_id, NULL, \
       expires_at, idem_key FROM earn_staging ORDER BY id \
     ON CONFLICT (idem_key) DO NOTHING RETURNING id"
);

/// Records `credits` (none of them from API requests) in one transaction; returns each one's
/// outcome, in order.
pub(crate) async fn credit_by_copy(
    pool: &PgPool,
    credits: &[Credit],
    policies: &HashMap<String, Policy>,
    at: DateTime<Utc>,
) -> Result<Vec<Credited>, StoreError> {
    let ids: Vec<String> = credits.iter().map(|_| new_id()).collect();
    let expiries: Vec<Option<DateTime<Utc>>> =
        credits.iter().map(|c| c.expires_at(policies)).collect();
    let mut csv = String::with_capacity(credits.len() * 300);
    for ((c, id), expires_at) in credits.iter().zip(&ids).zip(&expiries) {
        let key = format!("\\x{}", hex(&c.idem_key()));
        let fields: [Field; 17] = [
            Field::Text(id),
            Field::Text(&c.org_id),
            Field::Text(&c.campaign_id),
            Field::Text(&c.wallet_id),
            Field::Number(c.tokens.micros()),
            Field::Text(&c.earn.earn_id),
            Field::Text(&c.earn.amount),
            Field::Text(&c.currency),
            Field::Optional(c.earn.description.as_deref()),
            Field::Optional(c.earn.comment.as_deref()),
            Field::Optional(c.meta_text.as_deref()),
            Field::Time(Some(c.earn.date)),
            Field::Text(&c.trace),
            Field::OptionalNumber(c.rule_version),
            Field::Optional(c.batch_id.as_deref()),
            Field::Time(*expires_at),
            Field::Text(&key),
        ];
        for (i, field) in fields.iter().enumerate() {
            if i > 0 {
                csv.push(',');
            }
            field.write(&mut csv);
        }
        csv.push('\n');
    }

    let mut tx = pool.begin().await?;
    sqlx::query(STAGING).execute(&mut *tx).await?;
    let mut copy = tx.copy_in_raw(COPY).await?;
    copy.send(csv.as_bytes()).await?;
    copy.finish().await?;
    let inserted: HashSet<String> = sqlx::query_as::<_, (String,)>(INSERT)
        .bind(at)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
    settle_postgres(&mut tx, credits, &ids, &expiries, &inserted, at).await?;
    let outcomes = outcomes(&mut tx, credits, &ids, &inserted).await?;
    tx.commit().await?;
    Ok(outcomes)
}

/// One CSV field as `COPY` reads it: an unquoted empty field is NULL, a quoted one text.
enum Field<'a> {
    Text(&'a str),
    Optional(Option<&'a str>),
    Number(i64),
    OptionalNumber(Option<i64>),
    Time(Option<DateTime<Utc>>),
}

impl Field<'_> {
    fn write(&self, out: &mut String) {
        match self {
            Field::Text(text) | Field::Optional(Some(text)) => {
                out.push('"');
                for c in text.chars() {
                    if c == '"' {
                        out.push('"');
                    }
                    out.push(c);
                }
                out.push('"');
            }
            Field::Number(n) | Field::OptionalNumber(Some(n)) => {
                let _ = write!(out, "{n}");
            }
            Field::Time(Some(t)) => out.push_str(&t.to_rfc3339_opts(SecondsFormat::AutoSi, true)),
            Field::Optional(None) | Field::OptionalNumber(None) | Field::Time(None) => {}
        }
    }
}
