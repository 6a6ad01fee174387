//! Refunds: tokens a burn spent given back, into the lots the burn took them from (each keeps its
//! earn's expiry: a lot already past it expires again at the next sweep), in part or whole, never
//! more in total than the burn. A refund is a transaction of its own (`REFUND`) that names the
//! burn it corrects; the burn is never changed.
//!
//! A partial refund gives back to the burn's newest lots first (those that expire last). The lots
//! come from what the burn recorded in `spends`; a burn made before the ledger recorded them
//! (migration 17) cannot be refunded into its lots and is refused as `lots_unknown`.

use std::collections::HashMap;

use chrono::{DateTime, Utc};

use super::Moved;
use crate::backend::Tx;
use crate::credit::sooner;
use crate::fifo::{Earn, Position};
use crate::spend::{TAKEN, Taken, give_back_to_lots};
use crate::{StoreError, Tokens, Transaction};

/// What earlier refunds of the burn gave back to each earn's lot.
pub(super) const GIVEN: &str = "SELECT s.earn_id, CAST(SUM(s.amount) AS BIGINT) FROM spends s \
     JOIN transactions r ON r.id = s.transaction_id WHERE r.corrects = $1 GROUP BY s.earn_id";
/// The refund's credit; the wallet's next expiry moves to `$3` if that is sooner.
const CREDIT: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, updated_at = $4, expires_next = ",
    sooner!("$3"),
    " WHERE id = $1"
);

/// Gives back `tokens` (`None`: all that is left to refund) of `burn` to its wallet, at
/// `position` under its lock.
pub(super) async fn give_back(
    tx: &mut impl Tx,
    burn: &Transaction,
    position: Option<Position<DateTime<Utc>>>,
    tokens: Option<Tokens>,
    at: DateTime<Utc>,
) -> Result<Moved, StoreError> {
    let wallet = &burn.wallet_id;
    let taken_from: Vec<Taken> = tx.rows(TAKEN, params![burn.id]).await?;
    if taken_from.is_empty() && burn.amount.is_positive() {
        return Err(StoreError::refused(
            "lots_unknown",
            Some("id".into()),
            "the burn was made before the ledger recorded which lots a burn takes from".into(),
        ));
    }
    let given: HashMap<String, i64> = tx
        .rows::<(String, i64)>(GIVEN, params![burn.id])
        .await?
        .into_iter()
        .collect();
    // Newest lots first: what is left to give back to each.
    let mut left: Vec<(Earn<DateTime<Utc>>, i64)> = taken_from
        .into_iter()
        .map(|(id, date, amount, expires_at, took)| {
            let left = took - given.get(&id).copied().unwrap_or(0);
            (Earn::from((id, date, amount, expires_at)), left)
        })
        .filter(|(_, left)| *left > 0)
        .collect();
    left.sort_by(|(a, _), (b, _)| (&b.date, &b.id).cmp(&(&a.date, &a.id)));
    let refundable: i64 = left.iter().map(|(_, l)| l).sum();
    let amount = tokens.map_or(refundable, Tokens::micros);
    if amount > refundable || refundable == 0 {
        return Err(StoreError::refused(
            "refund_exceeds_burn",
            Some("amount".into()),
            format!(
                "{} tokens of the burn are left to refund",
                Tokens::from_micros(refundable)
            ),
        ));
    }
    let mut gifts = Vec::new();
    let mut rest = amount;
    for (earn, left) in left {
        if rest == 0 {
            break;
        }
        let give = left.min(rest);
        rest -= give;
        gifts.push((earn, give));
    }
    let soonest = give_back_to_lots(tx, wallet, position, &gifts).await?;
    tx.execute(CREDIT, params![wallet, amount, soonest, at])
        .await?;
    Ok(Moved {
        amount,
        source_amount: None,
        forgiven: None,
        lots: gifts.into_iter().map(|(e, give)| (e.id, give)).collect(),
    })
}
