//! Pending points: an earn credited pending (its campaign's policy or a rule keeps its tokens
//! for a return window) is in the journal at once, its tokens in the wallet's `pending` and its
//! lot set aside holding nothing (see `credit`), so no spend, hold, transfer or expiry can take
//! them. On its day the sweep vests it: the tokens go into its lot and from `pending` to the
//! balance (and to lifetime earnings, unless they counted when credited), once, under the
//! wallet's lock. A reversal meanwhile takes them off what is pending (`corrections`).

use chrono::{DateTime, Utc};

use crate::backend::{Steps, Tx};
use crate::credit::sooner;
use crate::fifo::{Earn, LotRow};
use crate::spend::{give_back_to_lots, position};
use crate::{Ledger, StoreError};

/// The earns whose day has come by `$1`, soonest first, at most `$2`.
const DUE: &str = "SELECT transaction_id FROM pending_earns WHERE status = 'pending' \
     AND vests_at <= $1 ORDER BY vests_at LIMIT $2";
/// How many pending earns a vesting sweep reads at a time.
const VEST_BATCH: i64 = 500;

/// An earn still pending: the micro-tokens pending and whether they counted toward lifetime
/// earnings when credited.
pub(crate) const STILL_PENDING: &str = "SELECT amount, counted FROM pending_earns \
     WHERE transaction_id = $1 AND status = 'pending'";
const WALLET_OF: &str = "SELECT wallet_id FROM pending_earns WHERE transaction_id = $1";
const POSITION: &str = "SELECT fifo_date, fifo_id, fifo_taken FROM wallets WHERE id = $1";
const EARN: &str = "SELECT id, date, amount, expires_at FROM transactions WHERE id = $1";
/// The wallet once `$2` micro-tokens vested, `$3` of them new to its lifetime earnings, at
/// `$4`; its next expiry moved to `$5` if sooner.
const VEST_WALLET: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, pending = pending - $2, earned = earned + $3, \
     updated_at = $4, earned_at = CASE WHEN $3 > 0 THEN $4 ELSE earned_at END, expires_next = ",
    sooner!("$5"),
    ", tier_id = ",
    tier_for!("wallets.earned + $3"),
    " WHERE id = $1"
);
const VESTED: &str = "UPDATE pending_earns SET status = 'vested', settled_at = $2 \
     WHERE transaction_id = $1 AND status = 'pending'";

/// Vesting (operator-wide: the background sweep).
impl Ledger {
    /// Vests every pending earn whose day has come by `at`; how many this call vested. Each
    /// in a transaction of its own under its wallet's lock, so however many nodes sweep at
    /// once an earn vests once, and one a node was vesting when it died (its transaction
    /// undone) is vested by the next sweep.
    #[tracing::instrument(skip_all)]
    pub async fn vest_pending(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut vested = 0;
        loop {
            let due: Vec<(String,)> = self.read_rows(DUE, params![at, VEST_BATCH]).await?;
            let mut now_vested = 0;
            for (id,) in &due {
                let vesting = Vesting {
                    earn_id: id.clone(),
                    at,
                };
                match self.write(vesting).await {
                    Ok(true) => now_vested += 1,
                    Ok(false) => {}
                    Err(err) => tracing::warn!(earn = %id, %err, "vesting an earn failed"),
                }
            }
            vested += now_vested;
            // A batch that vested none (each failed, or another node got there) ends the
            // sweep: the next one tries again.
            if (due.len() as i64) < VEST_BATCH || now_vested == 0 {
                return Ok(vested);
            }
        }
    }
}

/// Vests one earn, if it is pending still: true when this call vested it.
struct Vesting {
    earn_id: String,
    at: DateTime<Utc>,
}

impl Steps for Vesting {
    type Output = bool;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<bool, StoreError> {
        let id = &self.earn_id;
        let Some((wallet,)) = tx.row::<(String,)>(WALLET_OF, params![id]).await? else {
            return Ok(false);
        };
        // The wallet's lock first, as every writer of its lots takes it; then whether the earn
        // is pending still (a reversal or another node may have settled it meanwhile).
        let at_position = tx
            .row_locked::<(Option<DateTime<Utc>>, Option<String>, i64)>(POSITION, params![wallet])
            .await?
            .map(position)
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        let Some((amount, counted)) = tx.row::<(i64, bool)>(STILL_PENDING, params![id]).await?
        else {
            return Ok(false);
        };
        let mut soonest = None;
        if amount > 0 {
            let row: Option<LotRow<DateTime<Utc>>> = tx.row(EARN, params![id]).await?;
            let earn: Earn<DateTime<Utc>> = row
                .ok_or(StoreError::NotFound {
                    what: "transaction",
                })?
                .into();
            soonest = give_back_to_lots(tx, &wallet, at_position, &[(earn, amount)]).await?;
        }
        let earned = if counted { 0 } else { amount };
        let args = params![wallet, amount, earned, self.at, soonest];
        tx.execute(VEST_WALLET, args).await?;
        if tx.execute(VESTED, params![id, self.at]).await? != 1 {
            return Err(StoreError::NotCommitted(format!(
                "earn {id} was settled meanwhile"
            )));
        }
        Ok(true)
    }
}
