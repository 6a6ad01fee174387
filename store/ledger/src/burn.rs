//! Burns: spending tokens, synchronously. A burn never takes a wallet below the programme's
//! minimum balance, even when many arrive at once (the wallet is locked for the burn), and a
//! repeated `externalId` never debits twice.

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::Value;

use crate::backend::{Arg, Forked, PgTx, SqliteTx, ToArg, Tx, Work};
use crate::common::ids::{Fingerprint, as_micros, new_id};
use crate::fifo::{Aside, Earn, LotRow, Position, Spent, Taker};
use crate::refusals;
use crate::transactions::{self, Entry, SELECT_BY_KEY, TransactionRow, idem_key};
use crate::{Campaign, Ledger, StoreError, Tokens, Transaction, TransactionKind};
use events::{EventType, NewEvent};

mod postgres;
mod sqlite;

/// Its serialization is what a repeat must match (`Fingerprint::of_request`): each field under
/// the name a client sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct NewBurn {
    /// The wallet's id or external reference.
    #[serde(rename = "walletId")]
    pub wallet: String,
    /// The client's id for this burn: unique in the organisation.
    #[serde(skip)]
    pub external_id: String,
    #[serde(serialize_with = "as_micros")]
    pub amount: Tokens,
    pub description: String,
    pub comment: Option<String>,
    pub meta: Option<Value>,
    /// When absent, now.
    pub date: Option<DateTime<Utc>>,
}

/// A burn's result: the transaction, and whether it is the one an earlier identical request made.
#[derive(Debug, Clone, PartialEq)]
pub struct Burned {
    pub transaction: Transaction,
    pub replayed: bool,
}

/// Burns: tokens spent from a wallet, oldest lots first (scope: `&Campaign`).
impl Ledger {
    /// Spends `burn.amount` from the wallet. `InsufficientBalance` when the balance less the
    /// campaign's minimum cannot cover it; `Refused` (`already_exists`, naming the first field that differs) when that id was used for
    /// a different burn; the earlier transaction (`replayed`) when it was used for this one.
    #[tracing::instrument(skip_all)]
    pub async fn burn(&self, campaign: &Campaign, burn: NewBurn) -> Result<Burned, StoreError> {
        crate::limits::check_client_key(&burn.external_id)?;
        if let Some(Err(refused)) = burn.date.map(|date| self.date_window(None).check(date)) {
            return Err(StoreError::invalid("date", refused.message()));
        }
        // Before a connection is held: a policy not cached would take another from the pool.
        let min_balance = self.programme().policy(campaign).await?.min_balance;
        let fingerprint = Fingerprint::of_request(&burn);
        let burning = Burning {
            store: self,
            campaign,
            burn,
            fingerprint,
            min_balance,
        };
        self.fork(burning).await
    }
}

/// One burn, for the backend's half (`sqlite.rs`, `postgres.rs`): each finds the wallet, has
/// it debited and answers with `Burning::answer`.
struct Burning<'a> {
    store: &'a Ledger,
    campaign: &'a Campaign,
    burn: NewBurn,
    fingerprint: Fingerprint,
    min_balance: Tokens,
}

impl Forked for Burning<'_> {
    type Output = Burned;
}

impl Burning<'_> {
    /// The BURN transaction from the wallet `wallet_id` and the debit that writes it.
    fn debit(&self, wallet_id: String, currency: String) -> (Transaction, Debit) {
        let burn = &self.burn;
        let at = self.store.now();
        let transaction = Transaction {
            id: new_id(),
            wallet_id,
            kind: crate::TransactionKind::Burn,
            amount: burn.amount,
            external_id: Some(burn.external_id.clone()),
            source_amount: None,
            currency,
            description: Some(burn.description.clone()),
            comment: burn.comment.clone(),
            meta: burn.meta.clone(),
            date: burn.date.unwrap_or(at),
            trace: None,
            rule_version: None,
            created_at: at,
            corrects: None,
            corrected: Tokens::ZERO,
            vests_at: None,
            pending: false,
        };
        let fingerprint = self.fingerprint.clone();
        let debit = Debit::new(
            self.campaign,
            transaction.clone(),
            fingerprint,
            self.min_balance,
        );
        (transaction, debit)
    }

    /// The burn's answer once its debit of `transaction` ended with `result`, or (`None`) once
    /// no wallet was found. A repeat is found by the debit itself (its claim of the
    /// externalId), so a burn costs no lookup before it; only a repeat naming a wallet by a
    /// reference it no longer has, or one that lost a race to its twin, looks it up here.
    async fn answer(
        &self,
        store: &Ledger,
        debited: Option<(Transaction, Result<Option<Burned>, StoreError>)>,
    ) -> Result<Burned, StoreError> {
        let (campaign, burn, fingerprint) = (self.campaign, &self.burn, &self.fingerprint);
        let Some((transaction, result)) = debited else {
            return store
                .earlier_burn(campaign, burn, fingerprint)
                .await?
                .ok_or(StoreError::NotFound { what: "wallet" });
        };
        match result {
            Ok(Some(earlier)) => Ok(earlier),
            Ok(None) => Ok(Burned {
                transaction,
                replayed: false,
            }),
            // Another request with this externalId won the race: answer as if it came first.
            Err(err) if err.is_unique_violation() => store
                .earlier_burn(campaign, burn, fingerprint)
                .await?
                .ok_or(StoreError::Conflict {
                    field: "externalId",
                }),
            Err(err) => Err(err),
        }
    }
}

impl Ledger {
    async fn earlier_burn(
        &self,
        campaign: &Campaign,
        burn: &NewBurn,
        fingerprint: &Fingerprint,
    ) -> Result<Option<Burned>, StoreError> {
        let key = idem_key(&campaign.org_id, TransactionKind::Burn, &burn.external_id);
        let row: Option<TransactionRow> = self.read_row(SELECT_BY_KEY, params![key]).await?;
        row.map(|row| replay_or_conflict(row, fingerprint))
            .transpose()
    }
}

// Three steps: claim the externalId (the unique index decides between concurrent twins), debit
// only if the balance allows it (the row update is the lock that keeps concurrent burns from
// overdrawing, and expiry and credits take the same lock), and take the tokens from the oldest
// earns first, so the ones spent are those that would expire soonest: the wallet's spending
// position moves along its earns in date order, read through (wallet_id, date) only as far as
// the amount reaches (see `fifo`). The first two are `Debiting::claim_and_debit`.
const BALANCE: &str = "SELECT balance - held FROM wallets WHERE id = $1";
/// A refused burn's claim of its `externalId`, undone.
const UNCLAIM: &str = "DELETE FROM transactions WHERE id = $1";
/// The wallet's aside rows.
pub(crate) const ASIDE: &str = "SELECT transaction_id, earned_at, remaining, expires_at \
     FROM lots_aside WHERE wallet_id = $1 ORDER BY earned_at, transaction_id";
/// How many aside rows a spend reads at a time: a wallet can hold many (every partial return
/// of an earn it has not spent yet makes one), and a spend passes few.
pub(crate) const ASIDE_READ: usize = 16;
/// The wallet's first `ASIDE_READ` aside rows, or the next after `($2, $3)`.
macro_rules! aside_from {
    ($from:literal) => {
        concat!(
            "SELECT transaction_id, earned_at, remaining, expires_at FROM lots_aside \
             WHERE wallet_id = $1",
            $from,
            " ORDER BY earned_at, transaction_id LIMIT 16"
        )
    };
}
const ASIDE_FIRST: &str = aside_from!("");
const ASIDE_AFTER: &str = aside_from!(" AND (earned_at, transaction_id) > ($2, $3)");
/// One earn's aside row, if it has one.
pub(crate) const ASIDE_OF: &str = "SELECT transaction_id, earned_at, remaining, expires_at \
     FROM lots_aside WHERE transaction_id = $1";
/// The wallet's lots (earns and transfers in) in spending order: all, or from `($2, $3)` on.
macro_rules! earns {
    ($from:literal) => {
        concat!(
            "SELECT id, date, amount, expires_at FROM transactions WHERE wallet_id = $1 \
             AND kind IN ",
            crate::transactions::lot_kinds!(),
            $from,
            " ORDER BY date, id"
        )
    };
}
pub(crate) const EARNS: &str = earns!("");
pub(crate) const EARNS_FROM: &str = earns!(" AND (date, id) >= ($2, $3)");
/// A burn's reads of the wallet's transactions from its position, at most `$limit` (the
/// dialect's `FIRST_READ` or `NEXT_READ`), every kind (the burns and expiries among the earns
/// are passed over as they come), as `LotRead`s: a burn reads only as far as its amount
/// reaches. With the lot kinds as a filter in the query, PostgreSQL's planner, guessing how few
/// rows match, read every later earn and sorted them on a ledger whose statistics lagged; without it,
/// it walks the index and stops.
macro_rules! from_position {
    ($from:literal, $limit:literal) => {
        concat!(
            "SELECT false, e.* FROM (SELECT id, date, amount, expires_at, kind IN ",
            crate::transactions::lot_kinds!(),
            " FROM transactions WHERE wallet_id = $1",
            $from,
            " ORDER BY date, id LIMIT ",
            $limit,
            ") e"
        )
    };
}
pub(crate) use from_position;
pub(crate) const MOVE: &str =
    "UPDATE wallets SET fifo_date = $2, fifo_id = $3, fifo_taken = $4 WHERE id = $1";
pub(crate) const ASIDE_LEFT: &str =
    "UPDATE lots_aside SET remaining = $2 WHERE transaction_id = $1";
pub(crate) const ASIDE_DONE: &str = "DELETE FROM lots_aside WHERE transaction_id = $1";

/// Writes what `fifo` decided for `wallet`: its new position and aside rows.
pub(crate) async fn apply(
    tx: &mut impl Tx,
    wallet: &str,
    spent: &Spent<DateTime<Utc>>,
) -> Result<(), StoreError> {
    if let Some(p) = &spent.position {
        tx.execute(MOVE, params![wallet, p.date, p.id, p.taken])
            .await?;
    }
    apply_aside(tx, wallet, spent).await
}

/// Writes the aside rows `fifo` decided for `wallet` (its position is the caller's to write).
async fn apply_aside(
    tx: &mut impl Tx,
    wallet: &str,
    spent: &Spent<DateTime<Utc>>,
) -> Result<(), StoreError> {
    for (id, remaining) in &spent.aside_updates {
        tx.execute(ASIDE_LEFT, params![id, remaining]).await?;
    }
    for id in &spent.aside_deletes {
        tx.execute(ASIDE_DONE, params![id]).await?;
    }
    for a in &spent.aside_inserts {
        let args = params![a.id, wallet, a.date, a.remaining, a.expires_at];
        tx.execute(crate::credit::SET_ASIDE, args).await?;
    }
    Ok(())
}

/// What a spending transaction (or a hold) took from each earn's lot, with the earn.
pub(crate) const TAKEN: &str = "SELECT t.id, t.date, t.amount, t.expires_at, s.amount \
     FROM spends s JOIN transactions t ON t.id = s.earn_id WHERE s.transaction_id = $1";
/// A row of `TAKEN`: the earn (id, date, amount, expiry) and what was taken from it.
pub(crate) type Taken = (String, DateTime<Utc>, i64, Option<DateTime<Utc>>, i64);

/// Gives `gifts` (each earn with micro-tokens) back into the lots of `wallet` at `position`
/// (see `fifo::give_back`) and writes where that leaves them; the soonest expiry among them,
/// which the wallet's next expiry is to move to if sooner (a lot past its date expires at the
/// next sweep).
pub(crate) async fn give_back_to_lots(
    tx: &mut impl Tx,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    gifts: &[(Earn<DateTime<Utc>>, i64)],
) -> Result<Option<DateTime<Utc>>, StoreError> {
    // The aside rows of the lots given to, not every one the wallet holds.
    let mut aside: Vec<Aside<_>> = Vec::new();
    for (earn, _) in gifts {
        let row: Option<LotRow<DateTime<Utc>>> = tx.row(ASIDE_OF, params![earn.id]).await?;
        aside.extend(row.map(Aside::from));
    }
    let spent = crate::fifo::give_back(position, &aside, gifts)
        .map_err(|e| StoreError::NotCommitted(format!("the wallet's lots disagree: {e}")))?;
    apply(tx, wallet, &spent).await?;
    Ok(gifts.iter().filter_map(|(e, _)| e.expires_at).min())
}

/// A position as the database holds it: (date, id, taken), the first two NULL before any spend.
pub(crate) fn position<D>(row: (Option<D>, Option<String>, i64)) -> Option<Position<D>> {
    let (date, id, taken) = row;
    Some(Position {
        date: date?,
        id: id?,
        taken,
    })
}

/// One burn's writes, for either backend, inside a transaction its caller holds: the seam
/// through which anything that spends points (a burn, an order paid with points) debits a
/// wallet the same way on both backends.
pub struct Debit {
    org_id: String,
    campaign_id: String,
    transaction: Transaction,
    fingerprint: Fingerprint,
    min_balance: i64,
}

impl Debit {
    /// The debit that writes `transaction` (a BURN with its `external_id`) for a wallet of
    /// `campaign` that must keep `min_balance` micro-tokens; `fingerprint` tells a repeat of
    /// the request that made it from another.
    pub fn new(
        campaign: &Campaign,
        transaction: Transaction,
        fingerprint: Fingerprint,
        min_balance: Tokens,
    ) -> Debit {
        Debit {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            transaction,
            fingerprint,
            min_balance: min_balance.micros(),
        }
    }

    pub fn transaction_id(&self) -> &str {
        &self.transaction.id
    }

    /// The `transaction.created` the debit records with its BURN.
    fn event(&self) -> Result<NewEvent, StoreError> {
        let kind = EventType::TransactionCreated;
        NewEvent::new(
            &self.org_id,
            Some(&self.campaign_id),
            kind,
            &self.transaction,
            self.transaction.created_at,
        )
    }

    /// The BURN transaction to write.
    fn entry(&self) -> Entry<'_> {
        self.transaction
            .entry(&self.org_id, &self.campaign_id, &self.fingerprint.text)
    }

    fn insufficient(&self, balance: i64) -> StoreError {
        StoreError::InsufficientBalance {
            available: Tokens::from_micros((balance - self.min_balance).max(0)),
        }
    }
}

/// What claiming a burn's `externalId` and debiting its wallet found.
pub enum Claimed {
    /// The `externalId` was claimed before: nothing was written.
    Earlier,
    /// The balance does not cover the amount (the transaction is to be undone).
    Short,
    /// Debited: the wallet's spending position before the burn, and what it owes (see
    /// `repay`).
    Debited(Option<Position<DateTime<Utc>>>, i64),
}

/// A wallet's aside rows and transactions from its position, each marked whether it is an
/// earn, both in spending order.
pub(crate) type Lots = (Vec<Aside<DateTime<Utc>>>, Vec<(Earn<DateTime<Utc>>, bool)>);

/// The steps of a debit whose statements differ between the backends (`sqlite.rs`,
/// `postgres.rs`): PostgreSQL does each in one round trip.
pub trait Debiting: Tx {
    /// How many transactions from the position the first read brings, and each read after it:
    /// a burn usually takes one or two earns. (On SQLite a read costs no round trip, and each
    /// row it brings but the burn does not take is a table lookup wasted.)
    const FIRST_READ: usize;
    const NEXT_READ: usize;
    /// Whether the claim fails on a key that holds a refusal, as on one that holds a burn (a
    /// backend whose writes come one at a time sees it there, without a statement of its own).
    const CLAIM_SEES_REFUSALS: bool;
    /// Claims the burn's `externalId` and debits its wallet if the balance allows.
    async fn claim_and_debit(&mut self, debit: &Debit) -> Result<Claimed, StoreError>;
    /// The wallet's first `ASIDE_READ` aside rows and its first `FIRST_READ` transactions from
    /// `from` (its first ones when it has no position).
    async fn first_lots(
        &mut self,
        wallet: &str,
        from: Option<&Position<DateTime<Utc>>>,
    ) -> Result<Lots, StoreError>;
    /// The wallet's next `NEXT_READ` transactions after `(date, id)`, each marked whether it is
    /// an earn.
    async fn lots_after(
        &mut self,
        wallet: &str,
        date: DateTime<Utc>,
        id: &str,
    ) -> Result<Vec<(Earn<DateTime<Utc>>, bool)>, StoreError>;
}

/// What a debit came to, when its transaction is to be committed.
pub enum Debited {
    /// The wallet was debited.
    Made,
    /// An identical request made its burn before: nothing was written.
    Earlier(Box<Burned>),
    /// The balance could not cover it: the refusal, kept (`refusals`), is all that was written.
    Refused(StoreError),
}

impl Debit {
    /// Claims the `externalId`, debits the wallet and takes the tokens from its oldest earns,
    /// inside the caller's transaction. A burn refused before under the `externalId` is refused
    /// again (`Err`: the transaction is to be undone); a new refusal for the balance is kept
    /// when `keep` says so (the claim undone).
    pub async fn run<T: Debiting>(&self, tx: &mut T, keep: bool) -> Result<Debited, StoreError> {
        let t = &self.transaction;
        // Hashed only where a burn's path reads by it: not on a claim that debits on SQLite.
        let key = || self.entry().idem_key();
        let claimed = tx.claim_and_debit(self).await?;
        if !T::CLAIM_SEES_REFUSALS && !matches!(claimed, Claimed::Earlier) {
            // After the claim, in a statement of its own: a twin refused while this request
            // waited for its claim is seen (see `refusals`).
            refusals::answer_earlier(tx, &key(), &self.fingerprint, "externalId").await?;
        }
        let (at_position, owed) = match claimed {
            Claimed::Debited(position, owed) => (position, owed),
            // An identical request finished meanwhile: its replay is answered, never refused
            // for the balance it spent. Without a burn, the key holds a refusal.
            Claimed::Earlier => {
                let key = key();
                let earlier: Option<TransactionRow> = tx.row(SELECT_BY_KEY, params![key]).await?;
                let Some(earlier) = earlier else {
                    refusals::answer_earlier(tx, &key, &self.fingerprint, "externalId").await?;
                    return Err(StoreError::NotFound { what: "burn" });
                };
                let burned = replay_or_conflict(earlier, &self.fingerprint)?;
                return Ok(Debited::Earlier(Box::new(burned)));
            }
            Claimed::Short => {
                let (balance,): (i64,) = tx
                    .row(BALANCE, params![t.wallet_id])
                    .await?
                    .ok_or(StoreError::NotFound { what: "wallet" })?;
                let refused = self.insufficient(balance);
                if !keep {
                    return Err(refused);
                }
                // The claim is all that was written.
                tx.execute(UNCLAIM, params![t.id]).await?;
                let at = self.transaction.created_at;
                refusals::keep(tx, &key(), &self.fingerprint, &refused, at).await?;
                return Ok(Debited::Refused(refused));
            }
        };
        let at_position = match owed {
            0 => at_position,
            owed => repay(tx, &t.wallet_id, at_position, owed).await?,
        };
        let (spent, _) = take(tx, &t.wallet_id, at_position, t.amount.micros(), None).await?;
        record_spends(tx, &t.id, &spent.takes).await?;
        events::record(tx, &self.event()?).await?;
        Ok(Debited::Made)
    }

    /// `run` as a burn's own transaction: `Ok(Err(_))` for a refusal kept.
    async fn burn<T: Debiting>(
        &self,
        tx: &mut T,
    ) -> Result<Result<Option<Burned>, StoreError>, StoreError> {
        Ok(match self.run(tx, true).await? {
            Debited::Made => Ok(None),
            Debited::Earlier(burned) => Ok(Some(*burned)),
            Debited::Refused(err) => Err(err),
        })
    }
}

/// Records what `spending` (a transaction, or an open hold) took from each lot (`takes`): one
/// statement on PostgreSQL.
pub(crate) async fn record_spends(
    tx: &mut impl Tx,
    spending: &str,
    takes: &[(String, i64)],
) -> Result<(), StoreError> {
    if takes.is_empty() {
        return Ok(());
    }
    let values: Vec<Arg<'_>> = takes
        .iter()
        .flat_map(|(earn, took)| [spending.to_arg(), earn.to_arg(), took.to_arg()])
        .collect();
    let head = "INSERT INTO spends (transaction_id, earn_id, amount)";
    tx.insert_rows(head, "", 3, &values).await?;
    Ok(())
}

/// Takes `amount` from the wallet at `position`, oldest lots first (after the lot of `first`,
/// when given: see `Taker::take_first`), and writes where that leaves its lots: what it took
/// from each earn, and what no lot covered. The lots are read in spending order as far as the
/// amount reaches: the aside rows and the first transactions, then more at a time after the
/// last one read.
pub(crate) async fn take<T: Debiting>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    amount: i64,
    first: Option<&Earn<DateTime<Utc>>>,
) -> Result<(Spent<DateTime<Utc>>, i64), StoreError> {
    let (spent, left) = take_moving_later(tx, wallet, position, amount, first).await?;
    if let Some(p) = &spent.position {
        tx.execute(MOVE, params![wallet, p.date, p.id, p.taken])
            .await?;
    }
    Ok((spent, left))
}

/// `take`, but the wallet's new position (`Spent::position`, when it moved) is left for the
/// caller to write with its own UPDATE of the wallet (one statement fewer).
pub(crate) async fn take_moving_later<T: Debiting>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    amount: i64,
    first: Option<&Earn<DateTime<Utc>>>,
) -> Result<(Spent<DateTime<Utc>>, i64), StoreError> {
    if let Some(earn) = first {
        // A return its earn's own lot covers reads nothing else of the wallet: a wallet can
        // hold many aside rows (every return of an earn it has not spent yet makes one), and
        // the other rows are neither taken from nor passed.
        let own: Vec<LotRow<DateTime<Utc>>> = tx.rows(ASIDE_OF, params![earn.id]).await?;
        let own = own.into_iter().map(Aside::from).collect();
        let mut taker = Taker::new(amount, position.clone(), own);
        taker.take_first(earn);
        if taker.left() == 0 {
            let spent = taker.finish();
            apply_aside(tx, wallet, &spent).await?;
            return Ok((spent, 0));
        }
    }
    let (aside, mut read) = tx.first_lots(wallet, position.as_ref()).await?;
    let mut aside_unread = aside.len() == ASIDE_READ;
    let mut limit = T::FIRST_READ;
    let mut taker = Taker::new(amount, position, aside);
    if let Some(earn) = first {
        // Its own aside row may lie anywhere among the wallet's.
        while aside_unread {
            aside_unread = more_aside(tx, wallet, &mut taker).await?;
        }
        taker.take_first(earn);
    }
    'reading: loop {
        let count = read.len();
        let last = read.last().map(|(e, _)| (e.date, e.id.clone()));
        for (e, _) in read.iter().filter(|(_, earn)| *earn) {
            if taker.left() == 0 {
                break 'reading;
            }
            while aside_unread && taker.needs_aside_before(&e.date, &e.id) {
                aside_unread = more_aside(tx, wallet, &mut taker).await?;
            }
            if !taker.earn(e) {
                break 'reading;
            }
        }
        let Some((date, id)) = last.filter(|_| taker.left() > 0 && count == limit) else {
            break;
        };
        limit = T::NEXT_READ;
        read = tx.lots_after(wallet, date, &id).await?;
    }
    while aside_unread && taker.needs_aside() {
        aside_unread = more_aside(tx, wallet, &mut taker).await?;
    }
    let spent = taker.finish();
    apply_aside(tx, wallet, &spent).await?;
    // `finish` takes from the aside rows after the last earn read: count what was taken.
    let left = amount - spent.takes.iter().map(|(_, took)| took).sum::<i64>();
    Ok((spent, left))
}

/// Hands `taker` the wallet's next `ASIDE_READ` aside rows; whether more may follow.
async fn more_aside<T: Debiting>(
    tx: &mut T,
    wallet: &str,
    taker: &mut Taker<DateTime<Utc>>,
) -> Result<bool, StoreError> {
    let (date, id) = taker.last_aside().unzip();
    let rows: Vec<LotRow<DateTime<Utc>>> = match (date, id) {
        (Some(date), Some(id)) => tx.rows(ASIDE_AFTER, params![wallet, date, id]).await?,
        _ => tx.rows(ASIDE_FIRST, params![wallet]).await?,
    };
    let unread = rows.len() == ASIDE_READ;
    taker.more_aside(rows.into_iter().map(Aside::from).collect());
    Ok(unread)
}

/// Reversals with tokens no lot has paid yet, oldest first: each one's id and what it is owed.
const UNPAID: &str = "SELECT r.id, CAST(r.amount - COALESCE((SELECT SUM(s.amount) \
     FROM spends s WHERE s.transaction_id = r.id), 0) AS BIGINT) FROM transactions r \
     WHERE r.wallet_id = $1 AND r.kind = 'REVERSAL' ORDER BY r.date, r.id";
/// What paid a reversal's debt from one earn's lot (the same lot may pay it twice: a refund
/// can give tokens back into a lot the reversal emptied before).
const PAID: &str = "INSERT INTO spends (transaction_id, earn_id, amount) VALUES ($1, $2, $3) \
     ON CONFLICT (transaction_id, earn_id) DO UPDATE SET amount = spends.amount + excluded.amount";
const OWED_LESS: &str = "UPDATE wallets SET owed = owed - $2 WHERE id = $1";

/// Pays what the wallet at `position` owes (`owed`: tokens reversals took back that no lot
/// held then) from its oldest lots, as far as they reach, before anything else may take from
/// them; each payment is recorded as what its reversal took from that lot. The position after.
pub(crate) async fn repay<T: Debiting>(
    tx: &mut T,
    wallet: &str,
    position: Option<Position<DateTime<Utc>>>,
    owed: i64,
) -> Result<Option<Position<DateTime<Utc>>>, StoreError> {
    let (spent, left) = take(tx, wallet, position.clone(), owed, None).await?;
    if left == owed {
        return Ok(position);
    }
    let unpaid: Vec<(String, i64)> = tx.rows(UNPAID, params![wallet]).await?;
    let mut unpaid = unpaid.into_iter().filter(|(_, due)| *due > 0);
    let mut current = unpaid.next();
    for (earn, mut amount) in spent.takes {
        while amount > 0 {
            let Some((reversal, due)) = current.as_mut() else {
                return Err(StoreError::NotCommitted(format!(
                    "wallet {wallet} owes more than its reversals took"
                )));
            };
            let paid = amount.min(*due);
            tx.execute(PAID, params![*reversal, earn, paid]).await?;
            (amount, *due) = (amount - paid, *due - paid);
            if *due == 0 {
                current = unpaid.next();
            }
        }
    }
    tx.execute(OWED_LESS, params![wallet, owed - left]).await?;
    Ok(spent.position.or(position))
}

impl Work for Debit {
    type Output = Result<Option<Burned>, StoreError>;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        self.burn(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        self.burn(tx).await
    }
}

/// A row of a burn's reads: whether an aside row, the lot, whether an earn.
pub(crate) type LotRead = (
    bool,
    String,
    DateTime<Utc>,
    i64,
    Option<DateTime<Utc>>,
    bool,
);

/// A `LotRead` as `in_spending_order` takes it.
pub(crate) fn lot(
    (is_aside, id, date, amount, expires_at, earn): LotRead,
) -> (bool, LotRow<DateTime<Utc>>, bool) {
    (is_aside, (id, date, amount, expires_at), earn)
}

/// A PostgreSQL burn read's rows (whether an aside row, the lot, whether an earn) as the aside
/// rows and the transactions, each marked whether it is an earn, both in spending order.
#[allow(clippy::type_complexity)]
pub(crate) fn in_spending_order(
    rows: impl Iterator<Item = (bool, LotRow<DateTime<Utc>>, bool)>,
) -> Lots {
    let (mut aside, mut read) = (Vec::new(), Vec::new());
    for (is_aside, row, earn) in rows {
        if is_aside {
            aside.push(Aside::from(row));
        } else {
            read.push((Earn::from(row), earn));
        }
    }
    aside.sort_by(|a, b| (&a.date, &a.id).cmp(&(&b.date, &b.id)));
    read.sort_by(|(a, _), (b, _)| (&a.date, &a.id).cmp(&(&b.date, &b.id)));
    (aside, read)
}

/// An earlier burn with the same `externalId`: the same request again, or a conflicting one.
fn replay_or_conflict(
    row: TransactionRow,
    fingerprint: &Fingerprint,
) -> Result<Burned, StoreError> {
    transactions::replay_or_conflict(row, fingerprint).map(|transaction| Burned {
        transaction,
        replayed: true,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A burn's fingerprint, derived from its serialization, is the one earlier releases stored
    /// (six digests in the order of the fields a client sends): a repeat of a burn they made
    /// still replays, and another body names the field that differs.
    #[test]
    fn a_burn_fingerprint_is_what_earlier_releases_stored() {
        let burn = NewBurn {
            wallet: "w-1".into(),
            external_id: "b-1".into(),
            amount: Tokens::from_micros(1_500_000),
            description: "coffee".into(),
            comment: None,
            meta: Some(json!({"store": "s-1"})),
            date: Some("2026-01-02T03:04:05Z".parse().unwrap()),
        };
        let fingerprint = Fingerprint::of_request(&burn);
        assert_eq!(
            fingerprint.text,
            "f:c3b5f4ef15a9.490d7c887c80.0f52baaa23b0.74234e98afe7.c1a31218cabe.4964b29e565b"
        );
        let another = NewBurn {
            wallet: "w-2".into(),
            external_id: "b-2".into(),
            ..burn.clone()
        };
        assert_eq!(
            Fingerprint::of_request(&another).matches(&fingerprint.text),
            Err(Some("walletId"))
        );
        let later = NewBurn { date: None, ..burn };
        assert_eq!(
            Fingerprint::of_request(&later).matches(&fingerprint.text),
            Err(Some("date"))
        );
    }

    /// A burn reads a wallet's earns in spending order straight from the index: a sort would
    /// read every earn of the wallet (or all those of one date) before handing over the first.
    async fn earns_are_read_in_spending_order_without_a_sort(store: Ledger) {
        let reads = store.dialect(super::sqlite::READS, super::postgres::READS);
        let mut statements = vec![EARNS, EARNS_FROM, ASIDE_FIRST, ASIDE_AFTER]
            .into_iter()
            .map(String::from)
            .collect::<Vec<_>>();
        statements.extend(reads.iter().map(|sql| sql.replace("$4", "4")));
        for sql in &statements {
            // A wallet, a position and an earn id, as a burn binds them.
            let at = store.now();
            let args = params![Some("w"), at, Some("x")];
            let plan = store
                .query_plan(sql, args, None, crate::backend::Plan::SortsPricedOut)
                .await;
            assert!(
                !plan.contains("TEMP B-TREE") && !plan.contains("Sort"),
                "{sql}:\n{plan}"
            );
        }
    }

    /// A wallet's unpaid reversals are found through their own index, not its whole history.
    async fn unpaid_reversals_are_read_through_their_index(store: Ledger) {
        let plan = store
            .query_plan(
                UNPAID,
                params![Some("w")],
                None,
                crate::backend::Plan::SortsPricedOut,
            )
            .await;
        assert!(plan.contains("transactions_reversals"), "{plan}");
        assert!(
            !plan.contains("TEMP B-TREE") && !plan.contains("Sort"),
            "{plan}"
        );
    }

    #[test]
    fn aside_rows_are_read_as_many_at_a_time_as_a_spend_counts_on() {
        let limit = format!("LIMIT {ASIDE_READ}");
        for sql in [ASIDE_FIRST, ASIDE_AFTER] {
            assert!(sql.ends_with(&limit), "{sql}");
        }
        assert!(super::postgres::READS[0].contains(&format!("{limit})")));
    }

    crate::testing::ledger_tests!(
        earns_are_read_in_spending_order_without_a_sort,
        unpaid_reversals_are_read_through_their_index
    );
}
