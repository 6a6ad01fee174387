//! PostgreSQL, for many credits at once (a batch file's chunk): the rows are streamed with `COPY`
//! into a temporary staging table, then one statement inserts the transactions that are new
//! (skipping earn ids credited before) and, with the wallets locked, another sets aside the
//! backdated ones (see `fifo`) and writes each wallet's new balance, tier and next expiry.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::PgPool;

use crate::common::ids::{hex, new_id};
use crate::ledger::credit::{lock_positions, outcomes, sooner};
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

/// Then, with the wallets locked: the new earns behind their wallet's position set aside, and
/// each wallet's balance, tier and next expiry. (The staging rows inserted are those whose
/// fresh id the journal now holds.)
const CREDIT: &str = concat!(
    "WITH new AS (SELECT s.* FROM earn_staging s JOIN transactions t ON t.id = s.id \
       WHERE s.amount > 0), \
   aside AS (INSERT INTO lots_aside (transaction_id, wallet_id, earned_at, remaining, \
       expires_at) SELECT new.id, new.wallet_id, new.date, new.amount, new.expires_at \
       FROM new JOIN wallets w ON w.id = new.wallet_id \
       WHERE (new.date, new.id) < (w.fifo_date, w.fifo_id)), \
   sums AS (SELECT wallet_id, SUM(amount)::BIGINT AS sum, MIN(expires_at) AS first \
       FROM new GROUP BY wallet_id) \
   UPDATE wallets SET balance = balance + sums.sum, \
       earned = earned + sums.sum, updated_at = $1, earned_at = $1, \
       expires_next = ",
    sooner!("sums.first"),
    ", tier_id = ",
    tier_for!("wallets.earned + sums.sum"),
    " FROM sums WHERE wallets.id = sums.wallet_id"
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
    let mut csv = String::with_capacity(credits.len() * 300);
    for (c, id) in credits.iter().zip(&ids) {
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
            Field::Time(c.expires_at(policies)),
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
    // Locked after the insert, as the API's credits do (see `credit_postgres`).
    lock_positions(&mut tx, credits).await?;
    sqlx::query(CREDIT).bind(at).execute(&mut *tx).await?;
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
