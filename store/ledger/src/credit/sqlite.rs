//! SQLite: a call's credits on the writer thread, one prepared statement per row (one statement
//! per row beat multi-row statements here: SQLite runs a many-row VALUES list as a co-routine,
//! which cost more than it saved).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use rusqlite::Connection;

use super::{
    Crediting, PENDING, SET_ASIDE, Settlement, convert_referrals, finished, over_ceiling, sooner,
};
use crate::backend::{OnSqlite, SqliteTx, direct, ready};
use crate::common::ids::new_id;
use crate::counters::{self, Ids};
use crate::earn::record_earn_event;
use crate::earn::same_earn::{EarlierEarn, earlier_columns};
use crate::transactions::{Entry, EntryText, INSERT_TRANSACTION, unsum};
use crate::{Credit, Credited, Policy, StoreError, Tokens};

/// A wallet's balance, lifetime earnings (and when they last grew), pending tokens, tier and
/// next expiry after crediting it `$2` micro-tokens of which the first expire at `$4`, `$6` to
/// its lifetime earnings and `$7` pending, by earns dated from `$8` on (the tier follows the
/// new lifetime total; SET expressions read the row as it was), unless its balance and
/// pending or its lifetime total would pass `$5` (`Tokens::MAX`). Returns its spending
/// position; no row when refused.
const CREDIT_WALLET: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, earned = earned + $6, pending = pending + $7, \
     updated_at = $3, earned_at = CASE WHEN $6 > 0 THEN $3 ELSE earned_at END, expires_next = ",
    sooner!("$4"),
    ", tier_id = ",
    tier_for!("wallets.earned + $6"),
    ", ",
    unsum!("$8"),
    " WHERE id = $1 AND balance + pending <= $5 - $2 - $7 AND earned <= $5 - $6 \
     RETURNING fifo_date, fifo_id"
);

impl<F: Future<Output = ()>> OnSqlite for Crediting<F> {
    async fn sqlite(self, direct: &direct::Direct) -> Result<Self::Output, StoreError> {
        let Crediting {
            mut credits,
            policies,
            at,
            bulk,
            turn,
        } = self;
        let rows = Rows::new(&credits);
        turn.await;
        let write = move |tx: &Connection| {
            let outcomes = credit(tx, &mut credits, &rows, &policies, at)?;
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
}

/// What a call's rows are written with that needs no database and that counting a limited
/// credit again cannot change: made before the call's turn, off the writer's time (as
/// `CopyRows` is on PostgreSQL). A credit's expiry is not among them: it follows the pending
/// days its rules give, which its counters may change.
struct Rows {
    ids: Vec<String>,
    keys: Vec<Vec<u8>>,
    dates: Vec<String>,
}

impl Rows {
    fn new(credits: &[Credit]) -> Rows {
        Rows {
            ids: credits.iter().map(|_| new_id()).collect(),
            keys: credits.iter().map(Credit::idem_key).collect(),
            dates: credits.iter().map(|c| direct::time(c.earn.date)).collect(),
        }
    }
}

/// Writes `credits` in the writer thread's transaction `tx` (those of limited rule sets
/// evaluated again under their counters first); each one's outcome, in order.
///
/// Limited credits are counted taking every earn id as new, one look-up less a credit: a
/// file's own repeats are set aside before it is written and an API earn's at its request, so
/// an id the journal holds is rare here. When one is found, what was written since the
/// savepoint is undone and the call counted again, asking the journal.
fn credit(
    tx: &Connection,
    credits: &mut [Credit],
    rows: &Rows,
    policies: &HashMap<String, Policy>,
    created_at: DateTime<Utc>,
) -> Result<Vec<Credited>, StoreError> {
    if credits.iter().all(|c| c.limited.is_none()) {
        return write_credits(tx, credits, rows, policies, created_at, Ids::TakenAsNew)?
            .ok_or_else(taken);
    }
    tx.execute_batch("SAVEPOINT counted")?;
    match write_credits(tx, credits, rows, policies, created_at, Ids::TakenAsNew)? {
        Some(outcomes) => {
            tx.execute_batch("RELEASE counted")?;
            Ok(outcomes)
        }
        None => {
            tx.execute_batch("ROLLBACK TO counted; RELEASE counted")?;
            write_credits(tx, credits, rows, policies, created_at, Ids::Asked)?.ok_or_else(taken)
        }
    }
}

/// Asked, the journal named every earn id it holds, and the writer holds the database: none
/// can have been taken since.
fn taken() -> StoreError {
    StoreError::NotCommitted("a limited earn's id was taken while it was counted".into())
}

/// `credit`'s work, counting limited credits with `ids`; `None` (the savepoint to be undone):
/// an earn id counted as new was not.
fn write_credits(
    tx: &Connection,
    credits: &mut [Credit],
    rows: &Rows,
    policies: &HashMap<String, Policy>,
    created_at: DateTime<Utc>,
    ids: Ids,
) -> Result<Option<Vec<Credited>>, StoreError> {
    const EARLIER: &str = concat!(
        "SELECT ",
        earlier_columns!(),
        " FROM transactions WHERE idem_key = $1"
    );
    const FINISH: &str = "UPDATE earn_requests SET status = $2, transaction_id = $3, tokens = $4, \
         reason = $5, claimed_until = NULL, updated_at = $6 WHERE id = $1";
    let at = direct::time(created_at);
    let counted = ready(counters::count(&mut SqliteTx(tx), credits, ids))?;
    let credits = &*credits;
    let new_ids = &rows.ids;
    let mut inserted = HashSet::new();
    let mut outcomes = Vec::with_capacity(credits.len());
    let mut settlement = Settlement::default();
    let mut insert = tx.prepare_cached(INSERT_TRANSACTION)?;
    for (i, (c, id)) in credits.iter().zip(new_ids).enumerate() {
        let expires_at = c.expires_at(policies);
        let expires_text = expires_at.map(direct::time);
        let entry = c.entry(id, created_at, expires_at);
        let text = EntryText {
            meta: c.meta_text.as_deref(),
            date: &rows.dates[i],
            created_at: &at,
            expires_at: expires_text.as_deref(),
        };
        let outcome = if write(&entry, &rows.keys[i], &mut insert, &text)? {
            inserted.insert(id.as_str());
            settlement.add(c, id, expires_at, c.pending(policies, created_at));
            Credited::New {
                transaction_id: id.clone(),
            }
        } else {
            let earlier: Option<EarlierEarn> = direct::row(tx, EARLIER, args![entry.idem_key()])?;
            c.duplicate(earlier.as_ref())
        };
        if let Some(f) = finished(c, &outcome) {
            let args = args![
                f.request,
                f.status,
                f.transaction_id,
                f.tokens,
                f.reason,
                at
            ];
            direct::execute(tx, FINISH, args)?;
            let mut on = SqliteTx(tx);
            ready(record_earn_event(
                &mut on,
                &c.org_id,
                &c.campaign_id,
                f.request,
            ))?;
        }
        outcomes.push(outcome);
    }
    let new = |id: &str| inserted.contains(id);
    if !ready(counters::record(
        &mut SqliteTx(tx),
        credits,
        &counted,
        new_ids,
        new,
    ))? {
        return Ok(None);
    }
    let mut positions = HashMap::new();
    for (wallet, credit) in &settlement.per_wallet {
        let (max, first) = (Tokens::MAX.micros(), credit.first.map(direct::time));
        let (balance, earned, pending) = (credit.balance, credit.earned, credit.pending);
        let dated = credit.dated.map(direct::time);
        let args = args![wallet, balance, at, first, max, earned, pending, dated];
        let position: Option<(Option<DateTime<Utc>>, Option<String>)> =
            direct::row(tx, CREDIT_WALLET, args)?;
        match position {
            Some((Some(date), Some(id))) => {
                positions.insert(wallet.to_string(), (date, id));
            }
            Some(_) => {}
            None => return Err(over_ceiling()),
        }
    }
    for (c, id, expires_at) in settlement.behind(&positions) {
        let (date, tokens) = (direct::time(c.earn.date), c.tokens.micros());
        let expires_at = expires_at.map(direct::time);
        let args = args![id, c.wallet_id, date, tokens, expires_at];
        direct::execute(tx, SET_ASIDE, args)?;
    }
    for (c, id, expires_at, pending) in &settlement.pending {
        let (date, expires_at) = (direct::time(c.earn.date), expires_at.map(direct::time));
        let args = args![id, c.wallet_id, date, 0_i64, expires_at];
        direct::execute(tx, SET_ASIDE, args)?;
        let (tokens, vests_at) = (c.tokens.micros(), direct::time(pending.vests_at));
        let args = args![id, c.wallet_id, tokens, vests_at, pending.counted, at];
        direct::execute(tx, PENDING, args)?;
    }
    ready(convert_referrals(
        &mut SqliteTx(tx),
        credits,
        &outcomes,
        created_at,
    ))?;
    Ok(Some(outcomes))
}

/// Writes `entry` under its idempotency key `key` with `statement`, prepared from
/// `INSERT_TRANSACTION`; true when it is new.
fn write(
    entry: &Entry,
    key: &[u8],
    statement: &mut rusqlite::CachedStatement,
    text: &EntryText,
) -> Result<bool, StoreError> {
    let args = entry.args(key, Some(text));
    let args = args.each_ref().map(|a| a as &dyn rusqlite::ToSql);
    Ok(direct::run(statement, &args)? == 1)
}
