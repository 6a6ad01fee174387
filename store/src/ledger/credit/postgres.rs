//! PostgreSQL: a call's credits in a handful of multi-row statements whatever their number, or,
//! for a batch file's chunk, streamed with `COPY` (`copy.rs`).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::{Crediting, Settlement, finished, over_ceiling, sooner};
use crate::backend::OnPostgres;
use crate::common::ids::new_id;
use crate::ledger::same_earn::{EarlierEarn, earlier_columns};
use crate::ledger::transactions::entry_columns;
use crate::{Credit, Credited, Policy, Store, StoreError, Tokens};

mod copy;

impl<F: Future<Output = ()>> OnPostgres for Crediting<F> {
    async fn postgres(self, _: &Store, pool: &PgPool) -> Result<Self::Output, StoreError> {
        let Crediting {
            credits,
            policies,
            at,
            turn,
            ..
        } = self;
        // What can be done before the write's turn is: a chunk's rows made into `COPY`'s text.
        let copy = (credits.len() >= copy::COPY_FROM
            && credits.iter().all(|c| c.request_id.is_none()))
        .then(|| copy::CopyRows::new(&credits, &policies, at));
        turn.await;
        if let Some(copy) = copy {
            let outcomes = copy.write(pool, &credits).await?;
            return Ok((outcomes, credits, None));
        }
        let mut outcomes = Vec::with_capacity(credits.len());
        // A transaction row takes 20 parameters; PostgreSQL allows 65,535 a statement.
        for chunk in credits.chunks(1000) {
            outcomes.extend(credit(pool, chunk, &policies, at).await?);
        }
        Ok((outcomes, credits, None))
    }
}

/// PostgreSQL: a handful of multi-row statements whatever the number of credits.
async fn credit(
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
    settle(&mut tx, credits, &ids, &expiries, &inserted, at).await?;

    let outcomes = outcomes(&mut tx, credits, &ids, &inserted).await?;
    let finished: Vec<_> = credits
        .iter()
        .zip(&outcomes)
        .filter_map(|(c, outcome)| finished(c, outcome))
        .collect();
    if !finished.is_empty() {
        let mut finish = sqlx::QueryBuilder::new(
            "UPDATE earn_requests SET status = v.column2, transaction_id = v.column3, tokens = v.column4, \
                 reason = v.column5, claimed_until = NULL, updated_at = ",
        );
        finish.push_bind(at).push(" FROM (");
        finish.push_values(&finished, |mut row, f| {
            row.push_bind(f.request)
                .push_bind(f.status)
                .push_bind(f.transaction_id)
                .push_bind(f.tokens)
                .push_bind(&f.reason);
        });
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

/// A wallet's balance, lifetime earnings, tier and next expiry after a credit, for many wallets
/// at once: wallet `$1[i]` credited `$2[i]`
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
pub(crate) async fn settle(
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
    let mut settlement = Settlement::default();
    for ((c, id), expires_at) in credits.iter().zip(ids).zip(expiries) {
        if inserted.contains(id) {
            settlement.add(c, id, *expires_at);
        }
    }
    let mut aside = AsideRows::default();
    for (c, id, expires_at) in settlement.behind(&positions) {
        aside.ids.push(id);
        aside.wallets.push(&c.wallet_id);
        aside.dates.push(c.earn.date);
        aside.remaining.push(c.tokens.micros());
        aside.expiries.push(*expires_at);
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
    if !settlement.per_wallet.is_empty() {
        let (mut wallets, mut sums, mut firsts) = (Vec::new(), Vec::new(), Vec::new());
        for (wallet, (sum, first)) in &settlement.per_wallet {
            wallets.push(*wallet);
            sums.push(*sum);
            firsts.push(*first);
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
    let mut earlier: HashMap<Vec<u8>, EarlierEarn> = HashMap::new();
    if !skipped.is_empty() {
        const EARLIER: &str = concat!(
            "SELECT ",
            earlier_columns!(),
            " FROM transactions WHERE idem_key = ANY($1)"
        );
        let rows: Vec<EarlierEarn> = sqlx::query_as(EARLIER)
            .bind(&skipped)
            .fetch_all(&mut *tx)
            .await?;
        earlier = rows.into_iter().map(|e| (e.idem_key.clone(), e)).collect();
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
                c.duplicate(earlier.get(&c.idem_key()))
            }
        })
        .collect())
}
