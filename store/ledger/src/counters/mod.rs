//! Limits and budgets in the ledger: the counters of a limited rule set (`rules::limits`),
//! changed in the same database transaction as the credits that use them.
//!
//! A credit of a limited rule set is evaluated twice: before the write, as every credit is
//! (its tokens then are what it earns with nothing used: an upper bound, which the ledger's
//! ceiling checks), and again in the write's transaction (`count`), once its counters are
//! locked and read, in (date, call order) order, so that the credits of one call see each
//! other's uses. Only a credit that is new uses anything (`record`): a duplicate earn id uses
//! nothing. Reversals give an earn's uses back (`give_back`).
//!
//! Locks: on PostgreSQL a transaction-scoped advisory lock per (campaign, counter, scope),
//! taken in key order before the transactions are inserted, so that writers of one member (or
//! one store, or the campaign's budget) take turns on every node while others do not wait; the
//! counter rows themselves are written last, after the wallets are locked, as a reversal
//! (which locks its wallet first) writes them too. SQLite's one writer holds everything.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap, HashSet};

use chrono::NaiveDate;
use rules::{CounterKey, Counters, Decimal, RuleSet, Tally, Use, Used};

use crate::backend::{PgTx, SqliteTx, Tx, Work};
use crate::earn::evaluate::RulesInput;
use crate::{Credit, Ledger, StoreError, Tokens, Transaction};

mod postgres;
mod read;
mod sqlite;

pub use read::{CounterUse, Left, LimitUse};

/// A counter's buckets one evaluation may read: `key` of `campaign`, buckets `from..=to`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Wanted {
    pub campaign: String,
    pub key: CounterKey,
    pub from: NaiveDate,
    pub to: NaiveDate,
}

/// The steps whose statements differ between the backends.
pub(crate) trait CounterRows: Tx {
    /// Makes other writers of these counters wait until this transaction ends (`keys` sorted,
    /// without repeats).
    async fn lock(&mut self, keys: &[(&str, &CounterKey)]) -> Result<(), StoreError>;
    /// The buckets `wanted` names (one entry a counter), each campaign's in a `Tally`.
    async fn load(&mut self, wanted: &[Wanted]) -> Result<HashMap<String, Tally>, StoreError>;
    /// Of `keys` (idempotency keys), those the journal holds.
    async fn existing(&mut self, keys: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, StoreError>;
}

/// The uses of each credit `count` evaluated as new: its index in the call and its uses.
pub(crate) type Counted = Vec<(usize, Vec<Use>)>;

/// Whether `count` asks the journal which earn ids it holds, or takes every id as new (one
/// look-up less a credit; if one was not new, `record` says so and the caller counts again,
/// asking).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ids {
    Asked,
    TakenAsNew,
}

impl Credit {
    /// What the rules see of this credit, if its rule set is limited.
    fn limited_input(&self) -> Option<(&RuleSet, RulesInput<'_>)> {
        let limited = self.limited.as_deref()?;
        let wallet = &limited.wallet;
        let input = RulesInput {
            earn_id: &self.earn.earn_id,
            amount: &self.earn.amount,
            date: self.earn.date,
            currency: &wallet.currency,
            description: self.earn.description.as_deref(),
            meta: self.earn.meta.as_ref(),
            wallet_tier: wallet.tier.as_deref(),
            wallet_balance: Tokens::from_micros(wallet.balance),
            member_status: &wallet.status,
            wallet_id: &self.wallet_id,
            member_id: Some(&wallet.member_id),
            activity: self.earn.activity.as_deref(),
        };
        Some((&limited.rules, input))
    }
}

/// Evaluates again, under their counters, the credits of `credits` whose rule sets are
/// limited: their counters locked and read, then each credit in date order (then call order)
/// given the tokens, trace and pending days its rules now give, its uses added for the next.
/// A credit whose earn id the journal holds, or an earlier credit of the call holds, is left
/// as it was (it will be a duplicate and uses nothing). Returns the uses of the others, which
/// `record` writes once they are inserted.
pub(crate) async fn count<T: CounterRows>(
    tx: &mut T,
    credits: &mut [Credit],
    ids: Ids,
) -> Result<Counted, StoreError> {
    let limited = limited(credits);
    if limited.is_empty() {
        return Ok(Vec::new());
    }
    let wanted = wanted(credits, &limited);
    let keys: Vec<(&str, &CounterKey)> = wanted
        .iter()
        .map(|w| (w.campaign.as_str(), &w.key))
        .collect();
    tx.lock(&keys).await?;
    let mut loaded = tx.load(&wanted).await?;
    let existing = match ids {
        Ids::Asked => {
            let keys: Vec<Vec<u8>> = limited.iter().map(|&i| credits[i].idem_key()).collect();
            tx.existing(&keys).await?
        }
        Ids::TakenAsNew => HashSet::new(),
    };
    let order = new_in_order(credits, &limited, |key| existing.contains(key));
    evaluate_in_order(credits, &order, &mut loaded, &mut HashMap::new())
}

/// The indexes of the credits of limited rule sets.
fn limited(credits: &[Credit]) -> Vec<usize> {
    (0..credits.len())
        .filter(|&i| credits[i].limited.is_some())
        .collect()
}

/// The counters the credits at `limited` may read, one entry a counter (its buckets spanning
/// every credit's window), in key order.
fn wanted(credits: &[Credit], limited: &[usize]) -> Vec<Wanted> {
    let mut windows: BTreeMap<(&str, CounterKey), (NaiveDate, NaiveDate)> = BTreeMap::new();
    for &i in limited {
        let credit = &credits[i];
        let Some((rules, input)) = credit.limited_input() else {
            continue;
        };
        let Ok((row, ctx)) = input.parts() else {
            continue;
        };
        for (key, from, to) in rules.counter_keys(&row, &ctx) {
            let window = windows
                .entry((&credit.campaign_id, key))
                .or_insert((from, to));
            *window = (window.0.min(from), window.1.max(to));
        }
    }
    windows
        .into_iter()
        .map(|((campaign, key), (from, to))| Wanted {
            campaign: campaign.to_string(),
            key,
            from,
            to,
        })
        .collect()
}

/// Of the credits at `limited`, those that will be new (not `credited` before, and the first
/// of the call with their earn id: the one inserted), in date order, then call order.
fn new_in_order(
    credits: &[Credit],
    limited: &[usize],
    credited: impl Fn(&[u8]) -> bool,
) -> Vec<usize> {
    let mut first = HashSet::new();
    let mut new: Vec<usize> = limited
        .iter()
        .copied()
        .filter(|&i| {
            let key = credits[i].idem_key();
            !credited(&key) && first.insert(key)
        })
        .collect();
    new.sort_by_key(|&i| (credits[i].earn.date, i));
    new
}

/// Evaluates the credits at `order`, one after another, under what `below` (as loaded) and
/// `above` (uses made since, to which theirs are added) say was used, per campaign.
fn evaluate_in_order(
    credits: &mut [Credit],
    order: &[usize],
    below: &mut HashMap<String, Tally>,
    above: &mut HashMap<String, Tally>,
) -> Result<Counted, StoreError> {
    let mut counted = Vec::with_capacity(order.len());
    let (mut steps, mut uses) = (Vec::new(), Vec::new());
    for &i in order {
        let (tokens, trace, pending_days) = {
            let credit = &credits[i];
            let Some((rules, input)) = credit.limited_input() else {
                continue;
            };
            let (row, ctx) = input.parts().map_err(StoreError::NotCommitted)?;
            let campaign = &credit.campaign_id;
            let mut counters = Layered {
                below: tally_of(below, campaign),
                above: tally_of(above, campaign),
            };
            let tokens = rules.evaluate_counted(&row, &ctx, &mut counters, &mut steps, &mut uses);
            counters.above.add(&uses);
            (tokens, rules.compact(&steps), rules.pending_days(&steps))
        };
        let credit = &mut credits[i];
        credit.tokens = Tokens::from_decimal(tokens).map_err(StoreError::NotCommitted)?;
        credit.trace = trace;
        credit.pending_days = pending_days;
        counted.push((i, std::mem::take(&mut uses)));
    }
    Ok(counted)
}

/// The tally of `campaign` in `tallies`, added empty if missing (its id copied only then).
fn tally_of<'t>(tallies: &'t mut HashMap<String, Tally>, campaign: &str) -> &'t mut Tally {
    if !tallies.contains_key(campaign) {
        tallies.insert(campaign.to_string(), Tally::new());
    }
    tallies.get_mut(campaign).expect("inserted above")
}

/// Counters read as two layers: what was loaded, and what was used since.
struct Layered<'a> {
    below: &'a mut Tally,
    above: &'a mut Tally,
}

impl Counters for Layered<'_> {
    fn used(&mut self, key: &CounterKey, from: NaiveDate, to: NaiveDate) -> Used {
        let (below, above) = (
            self.below.used(key, from, to),
            self.above.used(key, from, to),
        );
        Used {
            times: below.times + above.times,
            tokens: below.tokens + above.tokens,
        }
    }
}

/// The counters `wanted` names as committed, read in one snapshot (a dry run's).
struct Load(Vec<Wanted>);

impl Work for Load {
    type Output = HashMap<String, Tally>;
    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        tx.load(&self.0).await
    }
    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        tx.load(&self.0).await
    }
}

/// Dry runs: limits applied as a load would apply them.
impl Ledger {
    /// Evaluates the limited credits among `credits` again, as crediting them would, without
    /// writing: in date order (then order), under the counters as committed plus `file` (the
    /// uses of a file's earlier rows, per campaign, to which theirs are added). A credit whose
    /// idempotency key is `credited` is a duplicate and uses nothing.
    pub async fn count_dry(
        &self,
        credits: &mut [Credit],
        credited: impl Fn(&[u8]) -> bool,
        file: &mut HashMap<String, Tally>,
    ) -> Result<(), StoreError> {
        let limited = limited(credits);
        if limited.is_empty() {
            return Ok(());
        }
        let mut loaded = self.db().read(Load(wanted(credits, &limited))).await?;
        let order = new_in_order(credits, &limited, credited);
        evaluate_in_order(credits, &order, &mut loaded, file)?;
        Ok(())
    }
}

/// One use of a counter as an earn keeps it (`limit_uses.uses`), with what its reversals gave
/// back.
#[derive(Debug, serde::Serialize, serde::Deserialize)]
struct KeptUse<'a> {
    #[serde(borrow)]
    counter: Cow<'a, str>,
    #[serde(borrow)]
    scope: Cow<'a, str>,
    bucket: NaiveDate,
    tokens: i64,
    returned: i64,
    time_returned: bool,
}

/// Micro-tokens recorded for a use's tokens: rounded up, so a counter never reads less than
/// was given.
fn micros(tokens: Decimal) -> i64 {
    let million = Decimal::from(1_000_000);
    let up = (tokens * million).ceil() / million;
    Tokens::from_decimal(up).map_or(i64::MAX, Tokens::micros)
}

/// Writes the uses `count` returned, of the credits inserted as `ids[i]` (`inserted` says
/// which were new), and adds them to the counters. `Ok(false)`, writing nothing: a credit
/// counted as new was not inserted (another transaction took its earn id meanwhile, on
/// another scope's lock): the caller starts again.
pub(crate) async fn record<T: Tx>(
    tx: &mut T,
    credits: &[Credit],
    counted: &Counted,
    ids: &[String],
    inserted: impl Fn(&str) -> bool,
) -> Result<bool, StoreError> {
    if counted.iter().any(|(i, _)| !inserted(&ids[*i])) {
        return Ok(false);
    }
    let mut rows: Vec<(&str, &str, String)> = Vec::with_capacity(counted.len());
    let mut sums: BTreeMap<(&str, &CounterKey, NaiveDate), (i64, i64)> = BTreeMap::new();
    for (i, uses) in counted {
        if uses.is_empty() {
            continue;
        }
        let (id, campaign) = (&ids[*i], credits[*i].campaign_id.as_str());
        let mut kept = Vec::with_capacity(uses.len());
        for u in uses {
            let tokens = micros(u.tokens);
            let sum = sums.entry((campaign, &u.key, u.bucket)).or_default();
            *sum = (sum.0 + 1, sum.1.saturating_add(tokens));
            kept.push(KeptUse {
                counter: Cow::Borrowed(&u.key.counter),
                scope: Cow::Borrowed(&u.key.scope),
                bucket: u.bucket,
                tokens,
                returned: 0,
                time_returned: false,
            });
        }
        let text = serde_json::to_string(&kept)
            .map_err(|e| StoreError::NotCommitted(format!("an earn's uses: {e}")))?;
        rows.push((id.as_str(), campaign, text));
    }
    if rows.is_empty() {
        return Ok(true);
    }
    let mut values = Vec::with_capacity(rows.len() * 3);
    for (id, campaign, uses) in &rows {
        values.extend(params![*id, *campaign, *uses]);
    }
    const USES: &str = "INSERT INTO limit_uses (transaction_id, campaign_id, uses)";
    tx.insert_rows(USES, "", 3, &values).await?;
    let mut values = Vec::with_capacity(sums.len() * 6);
    for ((campaign, key, bucket), (times, tokens)) in &sums {
        values.extend(params![
            *campaign,
            key.counter,
            key.scope,
            *bucket,
            *times,
            *tokens
        ]);
    }
    const COUNTERS: &str = "INSERT INTO limit_counters (campaign_id, counter, scope, bucket, \
         times, tokens)";
    const ADDED: &str = "ON CONFLICT (campaign_id, counter, scope, bucket) DO UPDATE SET \
         times = limit_counters.times + excluded.times, \
         tokens = limit_counters.tokens + excluded.tokens";
    tx.insert_rows(COUNTERS, ADDED, 6, &values).await?;
    Ok(true)
}

/// Gives back what `earn` used of its counters, once its reversals (`reversed`: each one's
/// value and micro-tokens) returned a share of it: the same share of each use's tokens (by
/// the value returned, or by the tokens for an earn without a value), and its one time when it
/// is returned in full. Never below zero.
pub(crate) async fn give_back<T: Tx>(
    tx: &mut T,
    earn: &Transaction,
    reversed: &[(Option<String>, i64)],
) -> Result<(), StoreError> {
    let value = |text: Option<&str>| text.and_then(|t| t.parse::<Decimal>().ok());
    let tokens: i64 = reversed.iter().map(|(_, tokens)| tokens).sum();
    let amount = earn.amount.micros();
    // The share returned, as (part, whole): of the purchase's value, or of the tokens for an
    // earn without a value.
    let (part, whole) = match value(earn.source_amount.as_deref()).filter(|w| *w > Decimal::ZERO) {
        Some(whole) => {
            let part: Decimal = reversed
                .iter()
                .filter_map(|(v, _)| value(v.as_deref()))
                .sum();
            (part, whole)
        }
        None => (Decimal::from(tokens), Decimal::from(amount.max(1))),
    };
    let full = part >= whole || tokens >= amount;
    let earn_id = earn.id.as_str();
    const USES: &str = "SELECT campaign_id, uses FROM limit_uses WHERE transaction_id = $1";
    const RETURNED: &str = "UPDATE limit_uses SET uses = $2 WHERE transaction_id = $1";
    const COUNTER: &str = "UPDATE limit_counters SET \
         times = CASE WHEN times > $5 THEN times - $5 ELSE 0 END, \
         tokens = CASE WHEN tokens > $6 THEN tokens - $6 ELSE 0 END \
         WHERE campaign_id = $1 AND counter = $2 AND scope = $3 AND bucket = $4";
    let Some((campaign, text)): Option<(String, String)> = tx.row(USES, params![earn_id]).await?
    else {
        return Ok(());
    };
    let mut uses: Vec<KeptUse> = serde_json::from_str(&text)
        .map_err(|e| StoreError::NotCommitted(format!("earn {earn_id}'s uses: {e}")))?;
    let mut changed = false;
    for u in &mut uses {
        let target = if full {
            u.tokens
        } else {
            // Multiplied before divided: a third of 3 tokens is exactly 1.
            (Decimal::from(u.tokens) * part / whole)
                .floor()
                .try_into()
                .unwrap_or(u.tokens)
        };
        let tokens_back = (target - u.returned).max(0);
        let times_back = i64::from(full && !u.time_returned);
        if tokens_back == 0 && times_back == 0 {
            continue;
        }
        u.returned += tokens_back;
        u.time_returned |= full;
        changed = true;
        let (counter, scope) = (u.counter.as_ref(), u.scope.as_ref());
        let args = params![campaign, counter, scope, u.bucket, times_back, tokens_back];
        tx.execute(COUNTER, args).await?;
    }
    if changed {
        let text = serde_json::to_string(&uses)
            .map_err(|e| StoreError::NotCommitted(format!("earn {earn_id}'s uses: {e}")))?;
        tx.execute(RETURNED, params![earn_id, text]).await?;
    }
    Ok(())
}
