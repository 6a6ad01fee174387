//! PostgreSQL: a call's credits in a handful of multi-row statements whatever their number, or,
//! for a batch file's chunk, streamed with `COPY` (`copy.rs`).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use sqlx::{PgConnection, PgPool};

use super::{Crediting, Pending, Settlement, convert_referrals, finished, over_ceiling, sooner};
use crate::backend::{OnPostgres, PgTx};
use crate::common::ids::new_id;
use crate::counters;
use crate::earn::same_earn::{EarlierEarn, earlier_columns};
use crate::earn::{RequestRow, earn_event, request_columns, requests_joined};
use crate::transactions::{entry_columns, unsum};
use crate::{Credit, Credited, Policy, StoreError, Tokens};

mod copy;

impl<F: Future<Output = ()>> OnPostgres for Crediting<F> {
    async fn postgres(self, pool: &PgPool) -> Result<Self::Output, StoreError> {
        let Crediting {
            mut credits,
            policies,
            at,
            turn,
            ..
        } = self;
        // What can be done before the write's turn is: a chunk's rows made into `COPY`'s text.
        let copy = (credits.len() >= copy::COPY_FROM
            && credits
                .iter()
                .all(|c| c.request_id.is_none() && c.limited.is_none()))
        .then(|| copy::CopyRows::new(&credits, &policies, at));
        turn.await;
        if let Some(copy) = copy {
            let outcomes = copy.write(pool, &credits).await?;
            return Ok((outcomes, credits, None));
        }
        let mut outcomes = Vec::with_capacity(credits.len());
        // A transaction row takes 20 parameters; PostgreSQL allows 65,535 a statement.
        for chunk in credits.chunks_mut(1000) {
            outcomes.extend(credit_counted(pool, chunk, &policies, at).await?);
        }
        Ok((outcomes, credits, None))
    }
}

/// How often a call starts again when another transaction took the earn id of a limited credit
/// it had counted as new (see `counters::record`): each attempt finds the ids taken before.
const ATTEMPTS: usize = 4;

/// `credit`, again from the start while it finds a limited credit's earn id taken meanwhile.
async fn credit_counted(
    pool: &PgPool,
    credits: &mut [Credit],
    policies: &HashMap<String, Policy>,
    at: DateTime<Utc>,
) -> Result<Vec<Credited>, StoreError> {
    for _ in 1..ATTEMPTS {
        if let Some(outcomes) = credit(pool, credits, policies, at).await? {
            return Ok(outcomes);
        }
    }
    credit(pool, credits, policies, at).await?.ok_or_else(|| {
        StoreError::NotCommitted("a limited earn's id was taken each time it was counted".into())
    })
}

/// PostgreSQL: a handful of multi-row statements whatever the number of credits (the limited
/// ones evaluated again under their counters first, see `counters`). `None`, writing nothing:
/// another transaction took the earn id of a limited credit counted as new.
async fn credit(
    pool: &PgPool,
    credits: &mut [Credit],
    policies: &HashMap<String, Policy>,
    at: DateTime<Utc>,
) -> Result<Option<Vec<Credited>>, StoreError> {
    let mut tx = pool.begin().await?;
    let counted = counters::count(&mut PgTx(&mut tx), credits, counters::Ids::Asked).await?;
    let credits = &*credits;
    let ids: Vec<String> = credits.iter().map(|_| new_id()).collect();
    let expiries: Vec<Option<DateTime<Utc>>> =
        credits.iter().map(|c| c.expires_at(policies)).collect();
    let pending: Vec<Option<Pending>> = credits.iter().map(|c| c.pending(policies, at)).collect();
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
    let written = Written {
        ids: &ids,
        expiries: &expiries,
        pending: &pending,
        inserted: &inserted,
    };
    settle(&mut tx, credits, &written, at).await?;
    let new = |id: &str| inserted.contains(id);
    if !counters::record(&mut PgTx(&mut tx), credits, &counted, &ids, new).await? {
        return Ok(None);
    }
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
        earn_events(&mut tx, credits).await?;
    }
    convert_referrals(&mut PgTx(&mut tx), credits, &outcomes, at).await?;
    tx.commit().await?;
    Ok(Some(outcomes))
}

/// The events of the API earns among `credits` that ended (`earn.completed`,
/// `earn.rejected`), read back as their requests now stand, in the call's transaction.
async fn earn_events(tx: &mut PgConnection, credits: &[Credit]) -> Result<(), StoreError> {
    const ENDED: &str = concat!(
        "SELECT ",
        request_columns!(),
        requests_joined!(),
        " WHERE r.id = ANY($1) AND r.status IN ('completed', 'rejected')"
    );
    let ids: Vec<&str> = credits
        .iter()
        .filter_map(|c| c.request_id.as_deref())
        .collect();
    let rows: Vec<RequestRow> = sqlx::query_as(ENDED).bind(&ids).fetch_all(&mut *tx).await?;
    let by_request: HashMap<&str, &Credit> = credits
        .iter()
        .filter_map(|c| Some((c.request_id.as_deref()?, c)))
        .collect();
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let Some(credit) = by_request.get(row.id.as_str()) else {
            continue;
        };
        events.extend(earn_event(&credit.org_id, &credit.campaign_id, row)?);
    }
    events::record_all(&mut PgTx(tx), &events).await
}

/// The new earns behind their wallet's spending position, set aside (PostgreSQL).
const SET_ASIDE_ALL: &str = "INSERT INTO lots_aside (transaction_id, wallet_id, earned_at, \
     remaining, expires_at) SELECT * FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TIMESTAMPTZ[], \
     $4::BIGINT[], $5::TIMESTAMPTZ[])";

/// A wallet's balance, lifetime earnings, pending tokens, tier and next expiry after a credit,
/// for many wallets at once: wallet `$1[i]` credited `$2[i]` micro-tokens of which the first
/// expire at `$3[i]`, `$4[i]` to its lifetime earnings and `$5[i]` pending, by earns dated from
/// `$8[i]` on, at `$6`; a wallet that would pass `$7` (`Tokens::MAX`) is left as it was.
const CREDIT_WALLETS: &str = concat!(
    "UPDATE wallets SET balance = wallets.balance + v.sum, \
     earned = wallets.earned + v.earns, pending = wallets.pending + v.waits, updated_at = $6, \
     earned_at = CASE WHEN v.earns > 0 THEN $6 ELSE wallets.earned_at END, expires_next = ",
    sooner!("v.first"),
    ", tier_id = ",
    tier_for!("wallets.earned + v.earns"),
    ", ",
    unsum!("v.dated"),
    " FROM UNNEST($1::TEXT[], $2::BIGINT[], $3::TIMESTAMPTZ[], $4::BIGINT[], $5::BIGINT[], \
     $8::TIMESTAMPTZ[]) AS v (id, sum, first, earns, waits, dated) WHERE wallets.id = v.id \
     AND wallets.balance + wallets.pending <= $7 - v.sum - v.waits \
     AND wallets.earned <= $7 - v.earns"
);

/// The new pending earns (PostgreSQL).
const PENDING_ALL: &str = "INSERT INTO pending_earns (transaction_id, wallet_id, amount, \
     vests_at, counted, status, created_at) SELECT v.*, 'pending', $6 FROM UNNEST($1::TEXT[], \
     $2::TEXT[], $3::BIGINT[], $4::TIMESTAMPTZ[], $5::BOOLEAN[]) AS v";

/// What a call's credits were written with: `ids[i]`, `expiries[i]` and `pending[i]` are
/// `credits[i]`'s, `inserted` the ids that were new.
pub(crate) struct Written<'a> {
    pub ids: &'a [String],
    pub expiries: &'a [Option<DateTime<Utc>>],
    pub pending: &'a [Option<Pending>],
    pub inserted: &'a HashSet<String>,
}

/// PostgreSQL, once a call's EARN transactions are inserted (as `written` says): locks the
/// wallets, sets aside the new earns behind their wallet's position and those pending, and
/// writes each wallet's balance, lifetime total, pending tokens, tier and next expiry, one row
/// a wallet. Statements of arrays: as many credits as a file's chunk holds, without reading back
/// what was inserted.
pub(crate) async fn settle(
    tx: &mut PgConnection,
    credits: &[Credit],
    written: &Written<'_>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    // Locked after the insert, so other writers wait only for the rest: a burn that moved a
    // position meanwhile could not see these earns, and the position read now is its latest.
    let positions = lock_positions(&mut *tx, credits).await?;
    let mut settlement = Settlement::default();
    let each = credits
        .iter()
        .zip(written.ids)
        .zip(written.expiries)
        .zip(written.pending);
    for (((c, id), expires_at), pending) in each {
        if written.inserted.contains(id) {
            settlement.add(c, id, *expires_at, *pending);
        }
    }
    let mut aside = AsideRows::default();
    for (c, id, expires_at) in settlement.behind(&positions) {
        aside.push(c, id, c.tokens.micros(), *expires_at);
    }
    let mut pending = PendingRows::default();
    for (c, id, expires_at, vesting) in &settlement.pending {
        aside.push(c, id, 0, *expires_at);
        pending.ids.push(id);
        pending.wallets.push(&c.wallet_id);
        pending.amounts.push(c.tokens.micros());
        pending.vests_at.push(vesting.vests_at);
        pending.counted.push(vesting.counted);
    }
    if !pending.ids.is_empty() {
        sqlx::query(PENDING_ALL)
            .bind(&pending.ids)
            .bind(&pending.wallets)
            .bind(&pending.amounts)
            .bind(&pending.vests_at)
            .bind(&pending.counted)
            .bind(at)
            .execute(&mut *tx)
            .await?;
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
        let (mut earned, mut pending, mut dated) = (Vec::new(), Vec::new(), Vec::new());
        for (wallet, credit) in &settlement.per_wallet {
            wallets.push(*wallet);
            sums.push(credit.balance);
            firsts.push(credit.first);
            earned.push(credit.earned);
            pending.push(credit.pending);
            dated.push(credit.dated);
        }
        let credited = sqlx::query(CREDIT_WALLETS)
            .bind(&wallets)
            .bind(&sums)
            .bind(&firsts)
            .bind(&earned)
            .bind(&pending)
            .bind(at)
            .bind(Tokens::MAX.micros())
            .bind(&dated)
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

impl<'a> AsideRows<'a> {
    /// `credit`'s lot (transaction `id`) aside, holding `remaining`.
    fn push(
        &mut self,
        credit: &'a Credit,
        id: &'a str,
        remaining: i64,
        expires_at: Option<DateTime<Utc>>,
    ) {
        self.ids.push(id);
        self.wallets.push(&credit.wallet_id);
        self.dates.push(credit.earn.date);
        self.remaining.push(remaining);
        self.expiries.push(expires_at);
    }
}

/// The columns of `PENDING_ALL`.
#[derive(Default)]
struct PendingRows<'a> {
    ids: Vec<&'a str>,
    wallets: Vec<&'a str>,
    amounts: Vec<i64>,
    vests_at: Vec<DateTime<Utc>>,
    counted: Vec<bool>,
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
