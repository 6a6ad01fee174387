//! Recording evaluated earns in the ledger, for the API's workers and for batch files alike: the
//! EARN transactions (an earn id credited before, or twice in one call, is `Duplicate` and
//! credits nothing), their expiry lots, each wallet's balance and tier (once per wallet), and,
//! for API earns, the requests' outcomes. One database transaction per call: a crash leaves all
//! of it or none.

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use rusqlite::Connection;
use sqlx::{PgConnection, PgPool};

use crate::backend::Pool;
use crate::backend::direct;
use crate::common::ids::{new_id, now};
use crate::ledger::credit_copy;
use crate::ledger::transactions::{Entry, EntryText, INSERT_TRANSACTION, entry_columns, idem_key};
use crate::{Credit, Credited, Policy, Store, StoreError, Tokens, TransactionKind};

/// `expires_next`, moved earlier to `$at` if that is sooner (NULL: nothing new expires).
macro_rules! sooner {
    ($at:literal) => {
        concat!(
            "CASE WHEN ",
            $at,
            " IS NOT NULL AND (wallets.expires_next IS NULL OR ",
            $at,
            " < wallets.expires_next) THEN ",
            $at,
            " ELSE wallets.expires_next END"
        )
    };
}

/// A wallet's balance, lifetime earnings (and when they last grew), tier and next expiry after
/// crediting it `$2` micro-tokens of which the first expire at `$4` (the tier follows the new
/// lifetime total; SET expressions read the row as it was), unless its balance or lifetime total
/// would pass `$5` (`Tokens::MAX`). Returns its spending position; no row when refused.
const CREDIT_WALLET: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, earned = earned + $2, updated_at = $3, \
     earned_at = $3, expires_next = ",
    sooner!("$4"),
    ", tier_id = ",
    tier_for!("wallets.earned + $2"),
    " WHERE id = $1 AND balance <= $5 - $2 AND earned <= $5 - $2 RETURNING fifo_date, fifo_id"
);

/// An earn set aside: recorded behind its wallet's spending position (see `fifo`).
pub(crate) const SET_ASIDE: &str = "INSERT INTO lots_aside (transaction_id, wallet_id, \
     earned_at, remaining, expires_at) VALUES ($1, $2, $3, $4, $5)";

impl Store {
    /// Records `credits` (see the module's description) and returns each one's outcome, in order.
    pub async fn credit_all(&self, credits: &[Credit]) -> Result<Vec<Credited>, StoreError> {
        let credits = credits.to_vec();
        Ok(self
            .credit_owned(credits, false, std::future::ready(()))
            .await?
            .0)
    }

    /// `credit_all`, taking the credits and handing them back (a batch file's chunk is large:
    /// neither copied for the writer thread nor dropped on it). `bulk` (a batch file's chunk):
    /// on SQLite the call returns before its transaction commits, with the `Commit` to wait on
    /// (see `direct::Direct::write_bulk`); PostgreSQL commits before returning. Nothing is
    /// written before `turn` completes (a file's chunks are written in order); what can be
    /// prepared without the database is prepared before.
    pub(crate) async fn credit_owned(
        &self,
        credits: Vec<Credit>,
        bulk: bool,
        turn: impl Future<Output = ()>,
    ) -> Result<(Vec<Credited>, Vec<Credit>, Option<direct::Commit>), StoreError> {
        if credits.is_empty() {
            turn.await;
            return Ok((Vec::new(), credits, None));
        }
        let mut policies = HashMap::new();
        for credit in &credits {
            if !policies.contains_key(&credit.campaign_id) {
                let policy = self.policy(&credit.campaign_id).await?;
                policies.insert(credit.campaign_id.clone(), policy);
            }
        }
        let at = now();
        // What can be done before the write's turn is: a chunk's rows made into `COPY`'s text.
        let copy = match &self.pool {
            Pool::Postgres(_)
                if credits.len() >= credit_copy::COPY_FROM
                    && credits.iter().all(|c| c.request_id.is_none()) =>
            {
                Some(credit_copy::CopyRows::new(&credits, &policies, at))
            }
            _ => None,
        };
        turn.await;
        match (&self.pool, copy) {
            (Pool::Sqlite { direct, .. }, _) => {
                let write = move |tx: &Connection| {
                    let outcomes = credit_sqlite(tx, &credits, &policies, at)?;
                    Ok((outcomes, credits))
                };
                if bulk {
                    let ((outcomes, credits), commit) = direct.write_bulk(write).await?;
                    Ok((outcomes, credits, Some(commit)))
                } else {
                    let (outcomes, credits) = direct.write(write).await?;
                    Ok((outcomes, credits, None))
                }
            }
            (Pool::Postgres(pool), Some(copy)) => {
                let outcomes = copy.write(pool, &credits).await?;
                Ok((outcomes, credits, None))
            }
            (Pool::Postgres(pool), None) => {
                let mut outcomes = Vec::with_capacity(credits.len());
                // A transaction row takes 18 parameters; PostgreSQL allows 65,535 a statement.
                for chunk in credits.chunks(1000) {
                    outcomes.extend(credit_postgres(pool, chunk, &policies, at).await?);
                }
                Ok((outcomes, credits, None))
            }
        }
    }
}

impl Credit {
    /// When this credit's tokens expire under `policies`.
    pub(crate) fn expires_at(&self, policies: &HashMap<String, Policy>) -> Option<DateTime<Utc>> {
        let expiry = policies
            .get(&self.campaign_id)
            .map(|p| p.expiry)
            .unwrap_or_default();
        expiry.expires_at(self.earn.date)
    }

    /// The idempotency key of the EARN transaction this credit writes.
    pub(crate) fn idem_key(&self) -> Vec<u8> {
        idem_key(&self.org_id, TransactionKind::Earn, &self.earn.earn_id)
    }

    /// The EARN transaction this credit writes, as `id`, created at `created_at`.
    pub(crate) fn entry<'a>(
        &'a self,
        id: &'a str,
        created_at: DateTime<Utc>,
        expires_at: Option<DateTime<Utc>>,
    ) -> Entry<'a> {
        #[cfg(test)]
        crate::testing::fault(&self.earn, "credit");
        Entry {
            id,
            org_id: &self.org_id,
            campaign_id: &self.campaign_id,
            wallet_id: &self.wallet_id,
            kind: TransactionKind::Earn,
            amount: self.tokens.micros(),
            external_id: &self.earn.earn_id,
            source_amount: Some(&self.earn.amount),
            currency: &self.currency,
            description: self.earn.description.as_deref(),
            comment: self.earn.comment.as_deref(),
            meta: self.earn.meta.as_ref(),
            date: self.earn.date,
            trace: Some(&self.trace),
            rule_version: self.rule_version,
            created_at,
            batch_id: self.batch_id.as_deref(),
            fingerprint: None,
            expires_at,
        }
    }
}

/// SQLite: one statement per row, on the calling thread (see `direct`).
fn credit_sqlite(
    tx: &Connection,
    credits: &[Credit],
    policies: &HashMap<String, Policy>,
    at: DateTime<Utc>,
) -> Result<Vec<Credited>, StoreError> {
    const EARLIER: &str = "SELECT id, batch_id FROM transactions WHERE idem_key = $1";
    const FINISH: &str = "UPDATE earn_requests SET status = $2, transaction_id = $3, tokens = $4, \
         claimed_until = NULL, updated_at = $5 WHERE id = $1";
    let (created_at, at) = (at, direct::time(at));
    let mut outcomes = Vec::with_capacity(credits.len());
    // Per wallet: the tokens credited and the earliest time they expire.
    let mut per_wallet: HashMap<&str, (i64, Option<String>)> = HashMap::new();
    // The new lots (credit, transaction id, date, expiry), to set aside the backdated ones.
    let mut lots: Vec<(&Credit, String, String, Option<String>)> = Vec::new();
    // Prepared once for all rows. (One statement per row beat multi-row statements here: SQLite
    // runs a many-row VALUES list as a co-routine, which cost more than it saved.)
    let mut insert = tx.prepare_cached(INSERT_TRANSACTION)?;
    for c in credits {
        let id = new_id();
        let tokens = c.tokens.micros();
        let date = direct::time(c.earn.date);
        let expires_at = c.expires_at(policies);
        let expires_text = expires_at.map(direct::time);
        let entry = c.entry(&id, created_at, expires_at);
        let text = EntryText {
            meta: c.meta_text.as_deref(),
            date: &date,
            created_at: &at,
            expires_at: expires_text.as_deref(),
        };
        let outcome = if entry.write_direct(&mut insert, &text)? {
            if c.tokens.is_positive() {
                let (sum, first) = per_wallet.entry(&c.wallet_id).or_default();
                *sum = sum.saturating_add(tokens);
                if let Some(e) = &expires_text
                    && first.as_ref().is_none_or(|f| e < f)
                {
                    *first = Some(e.clone());
                }
                lots.push((c, id.clone(), date, expires_text));
            }
            Credited::New { transaction_id: id }
        } else {
            let earlier: Option<(String, Option<String>)> =
                direct::row(tx, EARLIER, args![entry.idem_key()])?;
            let (transaction_id, batch_id) = earlier.unzip();
            Credited::Duplicate {
                transaction_id,
                batch_id: batch_id.flatten(),
            }
        };
        if let Some(request) = &c.request_id {
            let (status, transaction, tokens) = match &outcome {
                Credited::New { transaction_id } => {
                    ("completed", Some(transaction_id), Some(tokens))
                }
                Credited::Duplicate { transaction_id, .. } => {
                    ("duplicate", transaction_id.as_ref(), None)
                }
            };
            direct::execute(tx, FINISH, args![*request, status, transaction, tokens, at])?;
        }
        outcomes.push(outcome);
    }
    let mut positions = HashMap::new();
    for (wallet, (sum, first)) in per_wallet {
        let max = Tokens::MAX.micros();
        let position: Option<(Option<String>, Option<String>)> =
            direct::row(tx, CREDIT_WALLET, args![wallet, sum, at, first, max])?;
        match position {
            Some((Some(date), Some(id))) => {
                positions.insert(wallet, (date, id));
            }
            Some(_) => {}
            None => return Err(over_ceiling()),
        }
    }
    for (c, id, date, expires_at) in &lots {
        if let Some((at_date, at_id)) = positions.get(c.wallet_id.as_str())
            && (date, id) < (at_date, at_id)
        {
            let tokens = c.tokens.micros();
            direct::execute(
                tx,
                SET_ASIDE,
                args![id, c.wallet_id, date, tokens, expires_at],
            )?;
        }
    }
    Ok(outcomes)
}

/// PostgreSQL: a handful of multi-row statements whatever the number of credits.
async fn credit_postgres(
    pool: &PgPool,
    credits: &[Credit],
    policies: &HashMap<String, Policy>,
    at: DateTime<Utc>,
) -> Result<Vec<Credited>, StoreError> {
    let ids: Vec<String> = credits.iter().map(|_| new_id()).collect();
    let expiries: Vec<Option<DateTime<Utc>>> =
        credits.iter().map(|c| c.expires_at(policies)).collect();
    let mut tx = pool.begin().await?;
    let mut insert = sqlx::QueryBuilder::new(concat!(
        "INSERT INTO transactions (",
        entry_columns!(),
        ") "
    ));
    insert.push_values(
        credits.iter().zip(&ids).zip(&expiries),
        |mut row, ((c, id), e)| {
            let entry = c.entry(id, at, *e);
            let key = entry.idem_key();
            for arg in entry.args(&key, None) {
                row.push_bind(arg);
            }
        },
    );
    insert.push(" ON CONFLICT (idem_key) DO NOTHING RETURNING id");
    let inserted: HashSet<String> = insert
        .build_query_as::<(String,)>()
        .fetch_all(&mut *tx)
        .await?
        .into_iter()
        .map(|(id,)| id)
        .collect();
    settle_postgres(&mut tx, credits, &ids, &expiries, &inserted, at).await?;

    let outcomes = outcomes(&mut tx, credits, &ids, &inserted).await?;
    let finished: Vec<(&str, &str, Option<&String>, Option<i64>)> = credits
        .iter()
        .zip(&outcomes)
        .filter_map(|(c, outcome)| {
            let request = c.request_id.as_deref()?;
            Some(match outcome {
                Credited::New { transaction_id } => (
                    request,
                    "completed",
                    Some(transaction_id),
                    Some(c.tokens.micros()),
                ),
                Credited::Duplicate { transaction_id, .. } => {
                    (request, "duplicate", transaction_id.as_ref(), None)
                }
            })
        })
        .collect();
    if !finished.is_empty() {
        let mut finish = sqlx::QueryBuilder::new(
            "UPDATE earn_requests SET status = v.column2, transaction_id = v.column3, tokens = v.column4, \
                 claimed_until = NULL, updated_at = ",
        );
        finish.push_bind(at).push(" FROM (");
        finish.push_values(
            &finished,
            |mut row, (request, status, transaction, tokens)| {
                row.push_bind(*request)
                    .push_bind(*status)
                    .push_bind(*transaction)
                    .push_bind(*tokens);
            },
        );
        finish.push(") AS v WHERE earn_requests.id = v.column1");
        finish.build().execute(&mut *tx).await?;
    }
    tx.commit().await?;
    Ok(outcomes)
}

/// The new earns behind their wallet's spending position, set aside (PostgreSQL).
const SET_ASIDE_ALL: &str = "INSERT INTO lots_aside (transaction_id, wallet_id, earned_at, \
     remaining, expires_at) SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TIMESTAMPTZ[], \
     $4::BIGINT[], $5::TIMESTAMPTZ[])";

/// `CREDIT_WALLET` for many wallets at once (PostgreSQL): wallet `$1[i]` credited `$2[i]`
/// micro-tokens of which the first expire at `$3[i]`, at `$4`; a wallet that would pass `$5`
/// (`Tokens::MAX`) is left as it was.
const CREDIT_WALLETS: &str = concat!(
    "UPDATE wallets SET balance = balance + v.sum, earned = earned + v.sum, updated_at = $4, \
     earned_at = $4, expires_next = ",
    sooner!("v.first"),
    ", tier_id = ",
    tier_for!("wallets.earned + v.sum"),
    " FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::TIMESTAMPTZ[]) AS v (id, sum, first) \
     WHERE wallets.id = v.id AND wallets.balance <= $5 - v.sum AND wallets.earned <= $5 - v.sum"
);

/// PostgreSQL, once a call's EARN transactions are inserted (`ids[i]` and `expiries[i]` are
/// what `credits[i]` was written with, `inserted` the ids that were new): locks the wallets,
/// sets aside the new earns behind their wallet's position and writes each wallet's balance,
/// lifetime total, tier and next expiry, one row a wallet. Statements of arrays: as many
/// credits as a file's chunk holds, without reading back what was inserted.
pub(crate) async fn settle_postgres(
    tx: &mut PgConnection,
    credits: &[Credit],
    ids: &[String],
    expiries: &[Option<DateTime<Utc>>],
    inserted: &HashSet<String>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    // Locked after the insert, so other writers wait only for the rest: a burn that moved a
    // position meanwhile could not see these earns, and the position read now is its latest.
    let positions = lock_positions(&mut *tx, credits).await?;
    let mut aside = AsideRows::default();
    let mut per_wallet: HashMap<&str, (i64, Option<DateTime<Utc>>)> = HashMap::new();
    for ((c, id), expires_at) in credits.iter().zip(ids).zip(expiries) {
        if !inserted.contains(id) || !c.tokens.is_positive() {
            continue;
        }
        let (sum, first) = per_wallet.entry(&c.wallet_id).or_default();
        *sum = sum.saturating_add(c.tokens.micros());
        *first = match (*first, *expires_at) {
            (Some(f), Some(e)) => Some(f.min(e)),
            (f, e) => f.or(e),
        };
        if let Some((date, at_id)) = positions.get(&c.wallet_id)
            && (&c.earn.date, id.as_str()) < (date, at_id.as_str())
        {
            aside.ids.push(id);
            aside.wallets.push(&c.wallet_id);
            aside.dates.push(c.earn.date);
            aside.remaining.push(c.tokens.micros());
            aside.expiries.push(*expires_at);
        }
    }
    if !aside.ids.is_empty() {
        sqlx::query(SET_ASIDE_ALL)
            .bind(&aside.ids)
            .bind(&aside.wallets)
            .bind(&aside.dates)
            .bind(&aside.remaining)
            .bind(&aside.expiries)
            .execute(&mut *tx)
            .await?;
    }
    if !per_wallet.is_empty() {
        let (mut wallets, mut sums, mut firsts) = (Vec::new(), Vec::new(), Vec::new());
        for (wallet, (sum, first)) in per_wallet {
            wallets.push(wallet);
            sums.push(sum);
            firsts.push(first);
        }
        let credited = sqlx::query(CREDIT_WALLETS)
            .bind(&wallets)
            .bind(&sums)
            .bind(&firsts)
            .bind(at)
            .bind(Tokens::MAX.micros())
            .execute(&mut *tx)
            .await?;
        if credited.rows_affected() < wallets.len() as u64 {
            return Err(over_ceiling());
        }
    }
    Ok(())
}

/// The columns of `SET_ASIDE_ALL`.
#[derive(Default)]
struct AsideRows<'a> {
    ids: Vec<&'a str>,
    wallets: Vec<&'a str>,
    dates: Vec<DateTime<Utc>>,
    remaining: Vec<i64>,
    expiries: Vec<Option<DateTime<Utc>>>,
}

/// PostgreSQL: locks the wallets `credits` go to, in id order (as every writer that locks
/// several does), and returns the spending position of those that have one. Held until the
/// transaction ends, so no burn moves a position past an earn this transaction is recording.
/// Credits take it after inserting their transactions, never before: a writer that held wallets
/// while it waited on another's uncommitted earn id could close a circle with it. The lock is
/// the one a burn's debit takes (`NO KEY UPDATE`): it waits for debits, not for the key-share
/// locks that inserting transactions of the wallet takes (two credits of one wallet would each
/// hold one and wait for the other's).
async fn lock_positions(
    tx: &mut PgConnection,
    credits: &[Credit],
) -> Result<HashMap<String, (DateTime<Utc>, String)>, StoreError> {
    let mut wallets: Vec<&str> = credits.iter().map(|c| c.wallet_id.as_str()).collect();
    wallets.sort_unstable();
    wallets.dedup();
    let rows: Vec<(String, Option<DateTime<Utc>>, Option<String>)> = sqlx::query_as(
        "SELECT id, fifo_date, fifo_id FROM wallets WHERE id = ANY($1) ORDER BY id \
         FOR NO KEY UPDATE",
    )
    .bind(&wallets)
    .fetch_all(&mut *tx)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(id, date, at)| Some((id, (date?, at?))))
        .collect())
}

/// PostgreSQL: each credit's outcome once the transactions are inserted (`inserted` holds the
/// ids of those that were new; `ids[i]` is the id `credits[i]` was offered): new, or a
/// duplicate with the earlier transaction that holds its earn id.
pub(crate) async fn outcomes(
    tx: &mut PgConnection,
    credits: &[Credit],
    ids: &[String],
    inserted: &HashSet<String>,
) -> Result<Vec<Credited>, StoreError> {
    let skipped: Vec<Vec<u8>> = credits
        .iter()
        .zip(ids)
        .filter(|(_, id)| !inserted.contains(*id))
        .map(|(c, _)| c.idem_key())
        .collect();
    let mut earlier: HashMap<Vec<u8>, (String, Option<String>)> = HashMap::new();
    if !skipped.is_empty() {
        let rows: Vec<(Vec<u8>, String, Option<String>)> = sqlx::query_as(
            "SELECT idem_key, id, batch_id FROM transactions WHERE idem_key = ANY($1)",
        )
        .bind(&skipped)
        .fetch_all(&mut *tx)
        .await?;
        earlier = rows
            .into_iter()
            .map(|(key, id, batch)| (key, (id, batch)))
            .collect();
    }
    Ok(credits
        .iter()
        .zip(ids)
        .map(|(c, id)| {
            if inserted.contains(id) {
                Credited::New {
                    transaction_id: id.clone(),
                }
            } else {
                let (transaction_id, batch_id) = earlier.get(&c.idem_key()).cloned().unzip();
                Credited::Duplicate {
                    transaction_id,
                    batch_id: batch_id.flatten(),
                }
            }
        })
        .collect())
}

/// A credit the ledger's ceiling refuses: the whole write is undone (the earn worker then credits
/// the earns one by one, and the one that passes the ceiling is rejected with this reason).
fn over_ceiling() -> StoreError {
    StoreError::refused(
        "balance_ceiling",
        Some("amount".into()),
        format!(
            "the wallet's balance or lifetime earnings would pass the ledger's {} tokens",
            Tokens::MAX
        ),
    )
}
