//! Settling a hold, under its wallet's lock: a capture spends the oldest of its tokens as a
//! BURN and gives the rest back to their lots; a void or a lapse gives back all of them. The
//! hold's status changes once: a request that finds it settled answers with what it came to.

use chrono::{DateTime, Utc};

use super::{
    Hold, HoldRow, HoldSettled, HoldStatus, SELECT_IN_CAMPAIGN, Settle, hold_columns,
    hold_from_row, hold_key,
};
use crate::backend::{Steps, Tx};
use crate::credit::sooner;
use crate::fifo::Earn;
use crate::spend::{TAKEN, Taken, give_back_to_lots, position, record_spends};
use crate::transactions::{
    Entry, INSERT_TRANSACTION, SELECT_BY_ID, TransactionRow, transaction_from_row, unsum,
};
use crate::{StoreError, Tokens, Transaction, TransactionKind};

const HOLD_BY_ID: &str = concat!("SELECT ", hold_columns!(), " FROM holds WHERE id = $1");
/// The wallet's position, and its organisation and campaign, read under its lock.
const WALLET: &str = "SELECT fifo_date, fifo_id, fifo_taken, org_id, campaign_id \
     FROM wallets WHERE id = $1";
type WalletRow = (Option<DateTime<Utc>>, Option<String>, i64, String, String);
/// The wallet after a settlement at `$4` (a capture's BURN is dated then): `$2` spent, `$3`
/// no longer held, its next expiry moved to `$5` if sooner.
const SETTLE_WALLET: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, held = held - $3, updated_at = $4, ",
    unsum!("$4"),
    ", expires_next = ",
    sooner!("$5"),
    " WHERE id = $1"
);
const CLOSE: &str = "UPDATE holds SET status = $2, captured = $3, transaction_id = $4, \
     updated_at = $5 WHERE id = $1 AND status = 'held'";
/// The hold's lots are its own only while it is open.
const UNSPEND: &str = "DELETE FROM spends WHERE transaction_id = $1";
/// A capture of the whole hold: its lots become the BURN's.
const HANDED_OVER: &str = "UPDATE spends SET transaction_id = $2 WHERE transaction_id = $1";

/// What a capture's BURN took from each lot: all the hold's, or these.
enum Spends<'a> {
    Hold,
    These(&'a [(String, i64)]),
}

/// Which hold a settlement is of.
pub enum HoldRef {
    /// By its id (the store's own work).
    Id(String),
    /// By its id or `externalId`, in a campaign (a client's request).
    InCampaign {
        org_id: String,
        campaign_id: String,
        reference: String,
    },
}

pub struct Settling {
    pub hold: HoldRef,
    pub how: Settle,
    /// When it is settled: a hold whose expiry has come by then lapses.
    pub at: DateTime<Utc>,
}

fn closed(hold: &Hold) -> StoreError {
    StoreError::refused(
        "hold_closed",
        Some("id".into()),
        format!("hold {} was {}", hold.id, hold.status),
    )
}

impl Settling {
    /// Settles the hold inside the caller's transaction. `Ok(Err(_))`: refused, with nothing
    /// written but a lapse (when its expiry had come).
    pub async fn run(
        &self,
        tx: &mut impl Tx,
    ) -> Result<Result<HoldSettled, StoreError>, StoreError> {
        // The hold's row first, then its wallet's, as every settlement takes them: a twin
        // waits here and then reads what the first made of it.
        let row: Option<HoldRow> = match &self.hold {
            HoldRef::Id(id) => tx.row_locked(HOLD_BY_ID, params![id]).await?,
            HoldRef::InCampaign {
                org_id,
                campaign_id,
                reference,
            } => {
                let key = hold_key(org_id, reference);
                let args = params![org_id, campaign_id, reference, key];
                tx.row_locked(SELECT_IN_CAMPAIGN, args).await?
            }
        };
        let hold = hold_from_row(row.ok_or(StoreError::NotFound { what: "hold" })?)?;
        // A client settles its own holds; an order line's is settled with its booking.
        if matches!(self.hold, HoldRef::InCampaign { .. })
            && crate::order_keys::paid_order(&hold.external_id).is_some()
        {
            return Ok(Err(StoreError::refused(
                "pays_order",
                Some("id".into()),
                format!(
                    "hold {} pays a line of an order: it is captured when the line's booking is \
                     confirmed and released when the booking or the order is cancelled",
                    hold.id
                ),
            )));
        }
        let (date, id, taken, org_id, campaign_id): WalletRow = tx
            .row_locked(WALLET, params![hold.wallet_id])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        let at_position = position((date, id, taken));
        let answer = |hold: Hold, transaction, settled_now| HoldSettled {
            hold,
            transaction,
            settled_now,
        };
        let release = Release {
            hold: &hold,
            org_id: &org_id,
            campaign_id: &campaign_id,
            at: self.at,
        };
        let lapsing = hold.status == HoldStatus::Held
            && hold.expires_at.is_some_and(|expiry| expiry <= self.at);
        if lapsing {
            let lapsed = release.run(tx, at_position, 0, HoldStatus::Lapsed).await?;
            return Ok(match self.how {
                Settle::Capture(_) => Err(closed(&lapsed.0)),
                Settle::Void | Settle::Lapse => Ok(answer(lapsed.0, None, true)),
            });
        }
        Ok(Ok(match (hold.status, self.how) {
            (HoldStatus::Held, Settle::Capture(amount)) => {
                let amount = amount.unwrap_or(hold.amount);
                if amount > hold.amount {
                    return Ok(Err(StoreError::refused(
                        "capture_exceeds_hold",
                        Some("amount".into()),
                        format!("the hold reserves {} tokens", hold.amount),
                    )));
                }
                let (captured, burn) = release
                    .run(tx, at_position, amount.micros(), HoldStatus::Captured)
                    .await?;
                answer(captured, burn, true)
            }
            (HoldStatus::Held, Settle::Void) => {
                let (voided, _) = release.run(tx, at_position, 0, HoldStatus::Voided).await?;
                answer(voided, None, true)
            }
            (HoldStatus::Captured, Settle::Capture(amount))
                if amount.is_none_or(|a| Some(a) == hold.captured) =>
            {
                let burn = match &hold.transaction_id {
                    Some(id) => tx.row::<TransactionRow>(SELECT_BY_ID, params![id]).await?,
                    None => None,
                };
                let burn = burn.map(transaction_from_row).transpose()?;
                answer(hold, burn, false)
            }
            (HoldStatus::Voided | HoldStatus::Lapsed, Settle::Void) | (_, Settle::Lapse) => {
                answer(hold, None, false)
            }
            _ => return Ok(Err(closed(&hold))),
        }))
    }
}

/// A hold's tokens spent (`capture` micro-tokens, the oldest) and released (the rest).
struct Release<'a> {
    hold: &'a Hold,
    org_id: &'a str,
    campaign_id: &'a str,
    at: DateTime<Utc>,
}

impl Release<'_> {
    /// The hold as `status` leaves it, and the BURN of what was captured.
    async fn run(
        &self,
        tx: &mut impl Tx,
        at_position: Option<crate::fifo::Position<DateTime<Utc>>>,
        capture: i64,
        status: HoldStatus,
    ) -> Result<(Hold, Option<Transaction>), StoreError> {
        let hold = self.hold;
        if capture == hold.amount.micros() {
            // All of it: the hold's lots become the BURN's as they are.
            let burn = self.burn(tx, capture, Spends::Hold).await?;
            return self.close(tx, capture, None, status, Some(burn)).await;
        }
        let mut lots: Vec<Taken> = tx.rows(TAKEN, params![hold.id]).await?;
        lots.sort_by(|a, b| (&a.1, &a.0).cmp(&(&b.1, &b.0)));
        // The oldest lots to the BURN, the rest back where they came from.
        let (mut spent, mut gifts) = (Vec::new(), Vec::new());
        let mut keep = capture;
        for (id, date, amount, expires_at, took) in lots {
            let kept = took.min(keep);
            keep -= kept;
            if kept > 0 {
                spent.push((id.clone(), kept));
            }
            if took > kept {
                gifts.push((Earn::from((id, date, amount, expires_at)), took - kept));
            }
        }
        let given: i64 = gifts.iter().map(|(_, g)| g).sum();
        if keep > 0 || capture + given != hold.amount.micros() {
            return Err(StoreError::NotCommitted(format!(
                "hold {}'s lots do not add up to its amount",
                hold.id
            )));
        }
        let soonest = match gifts.is_empty() {
            true => None,
            false => give_back_to_lots(tx, &hold.wallet_id, at_position, &gifts).await?,
        };
        tx.execute(UNSPEND, params![hold.id]).await?;
        let burn = match capture {
            0 => None,
            _ => Some(self.burn(tx, capture, Spends::These(&spent)).await?),
        };
        self.close(tx, capture, soonest, status, burn).await
    }

    /// The wallet and the hold once `capture` was spent (by `burn`) and the rest given back to
    /// lots the soonest of which expires at `soonest`.
    async fn close(
        &self,
        tx: &mut impl Tx,
        capture: i64,
        soonest: Option<DateTime<Utc>>,
        status: HoldStatus,
        burn: Option<Transaction>,
    ) -> Result<(Hold, Option<Transaction>), StoreError> {
        let hold = self.hold;
        let held = hold.amount.micros();
        let args = params![hold.wallet_id, capture, held, self.at, soonest];
        tx.execute(SETTLE_WALLET, args).await?;
        let captured = (capture > 0).then_some(capture);
        let transaction_id = burn.as_ref().map(|t| t.id.as_str());
        let status_text = status.as_str();
        let args = params![hold.id, status_text, captured, transaction_id, self.at];
        if tx.execute(CLOSE, args).await? != 1 {
            return Err(StoreError::NotCommitted(format!(
                "hold {} was settled meanwhile",
                hold.id
            )));
        }
        let settled = Hold {
            status,
            captured: captured.map(Tokens::from_micros),
            transaction_id: transaction_id.map(String::from),
            updated_at: self.at,
            ..hold.clone()
        };
        Ok((settled, burn))
    }

    /// The capture's BURN of `amount` (`capture_transaction`), with what it took from each lot
    /// (`spent`).
    async fn burn(
        &self,
        tx: &mut impl Tx,
        amount: i64,
        spent: Spends<'_>,
    ) -> Result<Transaction, StoreError> {
        let hold = self.hold;
        let transaction = capture_transaction(hold, amount, self.at);
        let entry: Entry<'_> = transaction.entry(self.org_id, self.campaign_id, "");
        let key = entry.idem_key();
        if tx
            .execute(INSERT_TRANSACTION, &entry.args(&key, None))
            .await?
            != 1
        {
            return Err(StoreError::Conflict {
                field: "externalId",
            });
        }
        match spent {
            Spends::Hold => {
                tx.execute(HANDED_OVER, params![hold.id, transaction.id])
                    .await?;
            }
            Spends::These(spent) => {
                record_spends(tx, &transaction.id, spent).await?;
            }
        }
        crate::transactions::transaction_created(tx, self.org_id, self.campaign_id, &transaction)
            .await?;
        Ok(transaction)
    }
}

/// The BURN of `amount` micro-tokens of `hold` captured at `at`. Its external id is the hold's,
/// prefixed `hold:`, and so unique as the hold's is.
pub(super) fn capture_transaction(hold: &Hold, amount: i64, at: DateTime<Utc>) -> Transaction {
    Transaction::new(
        TransactionKind::Burn,
        hold.wallet_id.clone(),
        Tokens::from_micros(amount),
        format!("hold:{}", hold.external_id),
        hold.currency.clone(),
        at,
    )
    .saying(
        hold.description.clone(),
        hold.comment.clone(),
        hold.meta.clone(),
    )
}

impl Steps for Settling {
    type Output = Result<HoldSettled, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        Settling::run(&self, tx).await
    }
}
