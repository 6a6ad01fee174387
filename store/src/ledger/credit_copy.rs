//! PostgreSQL, for many credits at once (a batch file's chunk): the rows are streamed with `COPY`
//! into a temporary staging table, then one statement inserts the transactions that are new
//! (skipping earn ids credited before), their lots and each wallet's new balance and tier.

use std::collections::{HashMap, HashSet};
use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};
use sqlx::PgPool;

use crate::common::ids::new_id;
use crate::ledger::credit::outcomes;
use crate::ledger::transactions::entry_columns;
use crate::{Credit, Credited, Policy, StoreError};

/// From this many credits, a call goes through `COPY` (below, multi-row statements are quicker).
pub(crate) const COPY_FROM: usize = 1_000;

const STAGING: &str = "CREATE TEMP TABLE IF NOT EXISTS earn_staging (id TEXT, lot_id TEXT, \
     org_id TEXT, campaign_id TEXT, wallet_id TEXT, amount BIGINT, external_id TEXT, \
     source_amount TEXT, currency TEXT, description TEXT, comment TEXT, meta JSONB, \
     date TIMESTAMPTZ, trace TEXT, rule_version BIGINT, batch_id TEXT, expires_at TIMESTAMPTZ) \
     ON COMMIT DELETE ROWS";

const COPY: &str = "COPY earn_staging (id, lot_id, org_id, campaign_id, wallet_id, amount, \
     external_id, source_amount, currency, description, comment, meta, date, trace, rule_version, \
     batch_id, expires_at) FROM STDIN WITH (FORMAT csv)";

/// Everything after the copy, in one statement: the new transactions, their lots, the wallets.
/// Returns the ids inserted.
const LOAD: &str = concat!(
    "WITH inserted AS (INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT id, org_id, campaign_id, wallet_id, 'EARN', amount, external_id, source_amount, \
       currency, description, comment, meta, date, trace, rule_version, $1, batch_id, NULL \
     FROM earn_staging ORDER BY id \
     ON CONFLICT (org_id, kind, external_id) DO NOTHING RETURNING id), \
   new AS (SELECT s.* FROM earn_staging s JOIN inserted USING (id) WHERE s.amount > 0), \
   lots AS (INSERT INTO lots (id, wallet_id, transaction_id, amount, remaining, earned_at, \
       expires_at) SELECT lot_id, wallet_id, id, amount, amount, date, expires_at FROM new), \
   sums AS (SELECT wallet_id, SUM(amount)::BIGINT AS sum FROM new GROUP BY wallet_id), \
   wallets_credited AS (UPDATE wallets SET balance = balance + sums.sum, \
       earned = earned + sums.sum, updated_at = $1, earned_at = $1, \
       tier_id = ",
    tier_for!("wallets.earned + sums.sum"),
    " FROM sums WHERE wallets.id = sums.wallet_id) \
   SELECT id FROM inserted"
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
        let expiry = policies
            .get(&c.campaign_id)
            .map(|p| p.expiry)
            .unwrap_or_default();
        let lot_id = new_id();
        let fields: [Field; 17] = [
            Field::Text(id),
            Field::Text(&lot_id),
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
            Field::Time(expiry.expires_at(c.earn.date)),
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
    let inserted: HashSet<String> = sqlx::query_as::<_, (String,)>(LOAD)
        .bind(at)
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
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
