//! A burn's debit, inside a transaction its caller holds: the seam through which anything that
//! spends points as a BURN (a burn, an order paid with points) debits a wallet the same way on
//! both backends. Its claim of the `externalId` and its debit are one statement on PostgreSQL
//! and two on SQLite, where writes come one at a time; the rest is the spend kernel's.

use chrono::{DateTime, Utc};

use crate::StoreError;
use crate::backend::{Arg, Steps, Tx};
use crate::common::ids::Fingerprint;
use crate::fifo::Position;
use crate::refusals;
use crate::spend::{position, record_spends, repay, take};
use crate::transactions::{
    self, Entry, SELECT_BY_KEY, TransactionRow, entry_columns, insert_transaction, unsum,
};
use crate::{Campaign, Tokens, Transaction};
use events::{EventType, NewEvent};
use seam::Backend;

/// A burn's result: the transaction, and whether it is the one an earlier identical request made.
#[derive(Debug, Clone, PartialEq)]
pub struct Burned {
    pub transaction: Transaction,
    pub replayed: bool,
}

// Three steps: claim the externalId (the unique index decides between concurrent twins), debit
// only if the balance allows it (the row update is the lock that keeps concurrent burns from
// overdrawing, and expiry and credits take the same lock), and take the tokens from the oldest
// earns first, so the ones spent are those that would expire soonest: the wallet's spending
// position moves along its earns in date order, read through (wallet_id, date) only as far as
// the amount reaches (see `spend`). The first two are `Debit::claim_and_debit`.
const BALANCE: &str = "SELECT balance - held FROM wallets WHERE id = $1";
/// A refused burn's claim of its `externalId`, undone.
const UNCLAIM: &str = "DELETE FROM transactions WHERE id = $1";

/// SQLite: the BURN transaction (`INSERT_TRANSACTION`'s parameters), unless its key (`$20`)
/// holds a burn or a refusal: the writes come one at a time, so this one statement tells both.
const SQLITE_CLAIM: &str = concat!(
    "INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
     $19, $20 WHERE NOT EXISTS (SELECT 1 FROM refusals WHERE idem_key = $20) \
     ON CONFLICT (idem_key) DO NOTHING"
);
/// SQLite: the debit of `$2` from wallet `$1` at `$3` by a burn dated `$5`, if it keeps `$4`
/// beside what holds reserve; its position before, and what it owes.
const SQLITE_DEBIT: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, updated_at = $3, ",
    unsum!("$5"),
    " WHERE id = $1 AND balance - held - $2 >= $4 RETURNING fifo_date, fifo_id, fifo_taken, owed"
);
/// PostgreSQL: the claim and the debit together, in one round trip: the BURN transaction
/// (`INSERT_TRANSACTION`'s parameters) and, when it is new, the debit of its amount (`$6`) from
/// its wallet (`$4`) keeping `$21`, at `$22`. Whether the externalId was claimed, and the
/// position and debt when the wallet was debited. (The reads of what to spend come after, in
/// statements of their own: a statement's snapshot is taken before it waits for the wallet's
/// lock.)
const PG_CLAIM_AND_DEBIT: &str = concat!(
    "WITH claim AS (",
    insert_transaction!(),
    " RETURNING 1), debit AS (UPDATE wallets SET balance = balance - $6, updated_at = $22, ",
    unsum!("$13"),
    " WHERE id = $4 AND balance - held - $6 >= $21 AND EXISTS (SELECT FROM claim) \
       RETURNING fifo_date, fifo_id, fifo_taken, owed) \
     SELECT EXISTS (SELECT FROM claim), debit.fifo_date, debit.fifo_id, debit.fifo_taken, \
       debit.owed \
     FROM (SELECT) AS one LEFT JOIN debit ON true"
);

/// One burn's writes, for either backend, inside a transaction its caller holds: the seam
/// through which anything that spends points (a burn, an order paid with points) debits a
/// wallet the same way on both backends.
pub struct Debit {
    org_id: String,
    campaign_id: String,
    pub(super) transaction: Transaction,
    fingerprint: Fingerprint,
    pub(super) min_balance: i64,
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
    pub(super) fn event(&self) -> Result<NewEvent, StoreError> {
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
    pub(super) fn entry(&self) -> Entry<'_> {
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
enum Claimed {
    /// The `externalId` was claimed before: nothing was written.
    Earlier,
    /// The balance does not cover the amount (the transaction is to be undone).
    Short,
    /// Debited: the wallet's spending position before the burn, and what it owes (see
    /// `repay`).
    Debited(Option<Position<DateTime<Utc>>>, i64),
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
    pub async fn write_in<T: Tx>(&self, tx: &mut T, keep: bool) -> Result<Debited, StoreError> {
        let t = &self.transaction;
        // Hashed only where a burn's path reads by it: not on a claim that debits on SQLite.
        let key = || self.entry().idem_key();
        let claimed = self.claim_and_debit(tx).await?;
        // SQLite's claim fails on a key that holds a refusal as on one that holds a burn.
        let claim_sees_refusals = matches!(T::BACKEND, Backend::Sqlite);
        if !claim_sees_refusals && !matches!(claimed, Claimed::Earlier) {
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

    /// Claims the burn's `externalId` and debits its wallet if the balance allows.
    async fn claim_and_debit<T: Tx>(&self, tx: &mut T) -> Result<Claimed, StoreError> {
        let (entry, t) = (self.entry(), &self.transaction);
        let key = entry.idem_key();
        type DebitRow = (Option<DateTime<Utc>>, Option<String>, i64, i64);
        match T::BACKEND {
            Backend::Sqlite => {
                if tx.execute(SQLITE_CLAIM, &entry.args(&key, None)).await? == 0 {
                    return Ok(Claimed::Earlier);
                }
                let (amount, at) = (t.amount.micros(), t.created_at);
                let args = params![t.wallet_id, amount, at, self.min_balance, t.date];
                let debited: Option<DebitRow> = tx.row(SQLITE_DEBIT, args).await?;
                Ok(match debited {
                    Some((date, id, taken, owed)) => {
                        Claimed::Debited(position((date, id, taken)), owed)
                    }
                    None => Claimed::Short,
                })
            }
            Backend::Postgres => {
                let mut args = entry.args(&key, None).to_vec();
                args.extend([
                    Arg::Int(Some(self.min_balance)),
                    Arg::Time(Some(t.created_at)),
                ]);
                type Row = (
                    bool,
                    Option<DateTime<Utc>>,
                    Option<String>,
                    Option<i64>,
                    Option<i64>,
                );
                let (claimed, date, id, taken, owed): Row =
                    tx.row(PG_CLAIM_AND_DEBIT, &args).await?.ok_or_else(|| {
                        StoreError::NotCommitted("the burn's claim returned no row".into())
                    })?;
                Ok(match (claimed, taken) {
                    (false, _) => Claimed::Earlier,
                    (true, None) => Claimed::Short,
                    (true, Some(taken)) => {
                        Claimed::Debited(position((date, id, taken)), owed.unwrap_or(0))
                    }
                })
            }
        }
    }
}

/// A debit as a burn's own transaction: `Ok(Err(_))` for a refusal kept.
impl Steps for Debit {
    type Output = Result<Option<Burned>, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        Ok(match self.write_in(tx, true).await? {
            Debited::Made => Ok(None),
            Debited::Earlier(burned) => Ok(Some(*burned)),
            Debited::Refused(err) => Err(err),
        })
    }
}

/// An earlier burn with the same `externalId`: the same request again, or a conflicting one.
pub(super) fn replay_or_conflict(
    row: TransactionRow,
    fingerprint: &Fingerprint,
) -> Result<Burned, StoreError> {
    transactions::replay_or_conflict(row, fingerprint).map(|transaction| Burned {
        transaction,
        replayed: true,
    })
}
