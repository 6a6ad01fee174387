//! PostgreSQL: a hold placed, and a hold captured whole, each in two statements and no explicit
//! transaction, tried before the locked step (`Placing`, `Settling`: seven to nine round trips
//! with `BEGIN` and `COMMIT`), as a burn is (`spend::at_once`).
//!
//! A hold: the snapshot read and the take in memory are the spend kernel's; `PLACE` reserves
//! the amount only if the wallet's row is still the version read and no refusal holds the key,
//! then inserts the hold (a repeated `externalId` fails on the unique key, which undoes the
//! reserve in the same statement) and what it took from each lot.
//!
//! A capture of the whole hold reads the hold, then `CAPTURE` closes it only if it is still
//! open (the row's update waits for a settlement under way and then sees it), writes its BURN,
//! hands the hold's lots to the BURN and moves the wallet's balance and `held` down together:
//! what the wallet may spend does not change, so nothing else of the wallet is read. A capture
//! of part of a hold (lots given back), of an order's hold, or of one closed or lapsing, is the
//! locked step's, as is any write that finds the hold or the wallet moved.

use chrono::{DateTime, Utc};
use sqlx::PgConnection;

use super::place::Placing;
use super::settle::capture_transaction;
use super::{
    Hold, HoldPlaced, HoldRow, HoldSettled, HoldStatus, SELECT_IN_CAMPAIGN, hold_from_row, hold_key,
};
use crate::spend::at_once::{Snapshot, takes};
use crate::transactions::{entry_columns, unsum};
use crate::{Campaign, StoreError};

/// The reserve of `$8` on wallet `$4` keeping `$16`, at `$15`, moving its position to (`$17`,
/// `$18`, `$19`) when given, if its row is still version `$20` and no hold under its key
/// (`$6`) was refused; then the hold (`INSERT`'s parameters, `$1`...`$15`) and what it took
/// from each lot (`$21`, `$22`: earn ids and amounts) if the reserve happened. Whether it did.
const PLACE: &str = "WITH reserve AS (UPDATE wallets SET held = held + $8, updated_at = $15, \
       fifo_date = COALESCE($17, fifo_date), fifo_id = COALESCE($18, fifo_id), \
       fifo_taken = COALESCE($19, fifo_taken) \
     WHERE id = $4 AND xmin::text::bigint = $20 AND balance - held - $8 >= $16 \
       AND NOT EXISTS (SELECT FROM refusals WHERE idem_key = $6) RETURNING 1), \
     claim AS (INSERT INTO holds (id, org_id, campaign_id, wallet_id, external_id, idem_key, \
       fingerprint, amount, currency, description, comment, meta, status, expires_at, \
       created_at, updated_at) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
       $14, $15, $15 WHERE EXISTS (SELECT FROM reserve) RETURNING 1), \
     spent AS (INSERT INTO spends (transaction_id, earn_id, amount) \
       SELECT $1, t.earn, t.amount FROM unnest($21::text[], $22::bigint[]) AS t(earn, amount) \
       WHERE EXISTS (SELECT FROM claim)) \
     SELECT EXISTS (SELECT FROM claim)";

/// The capture of hold `$21` whole by the BURN (`INSERT_TRANSACTION`'s parameters, its amount
/// `$6` from wallet `$4` at `$16`) if the hold is still open: the hold closed, the BURN and its
/// event (`$22`...`$28`), the hold's lots handed to the BURN, the wallet's balance and `held`
/// down by the amount. Whether it was captured.
const CAPTURE: &str = concat!(
    "WITH closed AS (UPDATE holds SET status = 'captured', captured = $6, transaction_id = $1, \
       updated_at = $16 WHERE id = $21 AND status = 'held' RETURNING 1), \
     claim AS (INSERT INTO transactions (",
    entry_columns!(),
    ") SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, \
       $19, $20 WHERE EXISTS (SELECT FROM closed) RETURNING 1), \
     settled AS (UPDATE wallets SET balance = balance - $6, held = held - $6, updated_at = $16, ",
    unsum!("$13"),
    " WHERE id = $4 AND EXISTS (SELECT FROM claim)), \
     handed AS (UPDATE spends SET transaction_id = $1 WHERE transaction_id = $21 \
       AND EXISTS (SELECT FROM claim)), \
     event AS (INSERT INTO events (",
    events::event_columns!(),
    ") SELECT $22, $23, $24, $25, $26, $27, $28 WHERE EXISTS (SELECT FROM claim)) \
     SELECT EXISTS (SELECT FROM claim)"
);

impl Placing {
    /// Places the hold from what `snapshot` read if it can without a lock (see the module):
    /// `None` when the caller must take the locked step, nothing written.
    pub(super) async fn at_once(
        &self,
        conn: &mut PgConnection,
        snapshot: Snapshot,
    ) -> Result<Option<HoldPlaced>, StoreError> {
        let hold = self.hold_row();
        let Some((version, spent)) = snapshot.take(hold.amount.micros(), self.min_balance) else {
            return Ok(None);
        };
        let (earns, amounts) = takes(&spent);
        let to = spent.position;
        let key = hold_key(&self.org_id, &hold.external_id);
        let mut write = sqlx::query_as(PLACE);
        for arg in self.insert_args(&hold, &key) {
            write = write.bind(arg);
        }
        let (written,): (bool,) = write
            .bind(self.min_balance)
            .bind(to.as_ref().map(|p| p.date))
            .bind(to.as_ref().map(|p| p.id.as_str()))
            .bind(to.as_ref().map(|p| p.taken))
            .bind(version)
            .bind(earns)
            .bind(amounts)
            .fetch_one(conn)
            .await?;
        Ok(written.then_some(HoldPlaced {
            hold,
            replayed: false,
        }))
    }
}

/// Captures the campaign's hold `reference` whole at `at` if it can without a lock (see the
/// module): `None` when the caller must take the locked step, nothing written.
pub(super) async fn capture(
    conn: &mut PgConnection,
    campaign: &Campaign,
    reference: &str,
    amount: Option<crate::Tokens>,
    at: DateTime<Utc>,
) -> Result<Option<HoldSettled>, StoreError> {
    let key = hold_key(&campaign.org_id, reference);
    let row: Option<HoldRow> = sqlx::query_as(SELECT_IN_CAMPAIGN)
        .bind(&campaign.org_id)
        .bind(&campaign.id)
        .bind(reference)
        .bind(key)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(hold) = row.map(hold_from_row).transpose()? else {
        return Ok(None);
    };
    let whole = amount.is_none_or(|a| a == hold.amount);
    let lapsing = hold.expires_at.is_some_and(|expiry| expiry <= at);
    let of_order = crate::order_keys::paid_order(&hold.external_id).is_some();
    if hold.status != HoldStatus::Held || !whole || lapsing || of_order {
        return Ok(None);
    }
    let burn = capture_transaction(&hold, hold.amount.micros(), at);
    let entry = burn.entry(&campaign.org_id, &campaign.id, "");
    let key = entry.idem_key();
    let mut write = sqlx::query_as(CAPTURE);
    for arg in entry.args(&key, None) {
        write = write.bind(arg);
    }
    write = write.bind(&hold.id);
    let kind = events::EventType::TransactionCreated;
    let event = events::NewEvent::new(&campaign.org_id, Some(&campaign.id), kind, &burn, at)?;
    for arg in event.args() {
        write = write.bind(arg);
    }
    let (written,): (bool,) = write.fetch_one(conn).await?;
    if !written {
        return Ok(None);
    }
    let captured = Hold {
        status: HoldStatus::Captured,
        captured: Some(hold.amount),
        transaction_id: Some(burn.id.clone()),
        updated_at: at,
        ..hold
    };
    Ok(Some(HoldSettled {
        hold: captured,
        transaction: Some(burn),
        settled_now: true,
    }))
}
