//! Cancelling an order, or one of its lines, while none of its codes is redeemed: in one
//! transaction the lines are marked cancelled, their codes voided (a voided code cannot be
//! redeemed), their stock returned, their bookings going ahead cancelled, and the points paid
//! for them refunded from the order's BURN into the lots they came from (a REFUND naming it);
//! a line paid through a hold has its hold voided, or, once captured, its capture refunded.
//! Cancelling what is already cancelled changes nothing.
//!
//! A redeem racing a cancel: the cancel voids only codes not redeemed, then counts the line's
//! redeemed codes in a statement of its own (on PostgreSQL it waits for a redeem holding a code's
//! row, and sees it once committed); any redeemed refuses the whole cancel. A redeem after the
//! void finds the code voided.

use chrono::{DateTime, Utc};
use rules::Decimal;
use serde_json::json;

use super::OrderScope;
use super::booking::booking_changed;
use super::place::SELLOUT;
use super::read::order_within;
use crate::backend::{Steps, Tx};
use crate::{Campaign, NewCorrection, Order, Orders, StoreError, Tokens};
use events::{EventType, NewEvent};
use ledger::corrections::refund_within;
use ledger::holds::Settle;
use ledger::holds::settle::{HoldRef, Settling};
use ledger::transactions::{SELECT_BY_ID, TransactionRow, transaction_from_row};

const ORDER: &str =
    "SELECT reference, transaction_id FROM orders WHERE id = $1 AND campaign_id = $2";
/// The order's lines: id, variant, units, total, whether cancelled and the hold paying it.
const LINES: &str = "SELECT id, variant_id, quantity, total, cancelled_at IS NOT NULL, hold_id \
     FROM order_lines WHERE order_id = $1 ORDER BY position";
type LineRow = (String, String, i64, i64, bool, Option<String>);
const VOID: &str = "UPDATE redemption_codes SET voided_at = $2 \
     WHERE line_id = $1 AND redeemed_at IS NULL AND voided_at IS NULL";
const REDEEMED: &str =
    "SELECT COUNT(*) FROM redemption_codes WHERE line_id = $1 AND redeemed_at IS NOT NULL";
const RESTOCK: &str = "UPDATE variants SET stock = stock + $3 \
     WHERE campaign_id = $1 AND id = $2 AND stock IS NOT NULL RETURNING stock";
const CANCEL_BOOKING: &str = "UPDATE bookings SET status = 'CANCELLED', updated_at = $2 \
     WHERE line_id = $1 AND status IN ('REQUESTED', 'PENDING', 'CONFIRMED') RETURNING id";
const CANCEL_LINE: &str =
    "UPDATE order_lines SET cancelled_at = $2 WHERE id = $1 AND cancelled_at IS NULL";

/// Orders, cancelled (scope: `&Campaign`).
impl Orders {
    /// Cancels order `order_id` of `campaign` whole, or only its line `line_id`; the order
    /// after. `NotFound` for an order (or line) the campaign does not hold; `Refused`
    /// (`line_redeemed`, naming `lineId`) when a line to cancel has a redeemed code. Whether it
    /// made a sold-out variant available again (the catalogue's search index is then stale) is
    /// the second value.
    #[tracing::instrument(skip_all)]
    pub async fn cancel_order(
        &self,
        campaign: &Campaign,
        order_id: &str,
        line_id: Option<&str>,
    ) -> Result<(Order, bool), StoreError> {
        let cancelling = Cancelling {
            campaign: campaign.clone(),
            order_id: order_id.to_string(),
            line_id: line_id.map(str::to_string),
            at: self.now(),
        };
        let restocked = self.write(cancelling).await?;
        let scope = OrderScope::campaign(campaign);
        Ok((self.get_order(&scope, order_id, None).await?, restocked))
    }
}

struct Cancelling {
    campaign: Campaign,
    order_id: String,
    line_id: Option<String>,
    at: DateTime<Utc>,
}

/// Cancels order `order_id` of `campaign` whole, or only its line `line_id`, at `at` (see the
/// module); whether a variant's stock came back from none.
pub(super) async fn cancel_lines(
    tx: &mut impl Tx,
    c: &Campaign,
    order_id: &str,
    line_id: Option<&str>,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let (reference, burn): (String, Option<String>) = tx
        .row(ORDER, params![order_id, c.id])
        .await?
        .ok_or(StoreError::NotFound { what: "order" })?;
    let lines: Vec<LineRow> = tx.rows(LINES, params![order_id]).await?;
    let chosen: Vec<&LineRow> = match line_id {
        Some(id) => {
            let line = lines.iter().find(|l| l.0 == id);
            vec![line.ok_or(StoreError::NotFound { what: "order line" })?]
        }
        None => lines.iter().collect(),
    };
    let mut open: Vec<&LineRow> = Vec::new();
    let mut restocked = false;
    for l in chosen.into_iter().filter(|l| !l.4) {
        let (line, variant, units, ..) = l;
        // A cancel of this line that came first (it waited for its row) has done the rest.
        if tx.execute(CANCEL_LINE, params![line, at]).await? == 0 {
            continue;
        }
        open.push(l);
        tx.execute(VOID, params![line, at]).await?;
        let (redeemed,): (i64,) = tx.row(REDEEMED, params![line]).await?.unwrap_or_default();
        if redeemed > 0 {
            return Err(StoreError::refused(
                "line_redeemed",
                Some("lineId".into()),
                format!("line {line} has a redeemed code: it cannot be cancelled"),
            ));
        }
        let stock: Option<(i64,)> = tx.row(RESTOCK, params![c.id, variant, units]).await?;
        restocked |= stock.is_some_and(|(left,)| left == *units);
        let bookings: Vec<(String,)> = tx.rows(CANCEL_BOOKING, params![line, at]).await?;
        for (booking,) in bookings {
            booking_changed(tx, c, &booking).await?;
        }
    }
    if restocked {
        tx.execute(SELLOUT, params![c.id]).await?;
    }
    for (line, hold) in open.iter().filter_map(|l| Some((&l.0, l.5.as_ref()?))) {
        release_line_hold(tx, c, &reference, line, hold, at).await?;
    }
    let by_burn: Vec<&&LineRow> = open.iter().filter(|l| l.5.is_none()).collect();
    let paid: i64 = by_burn.iter().map(|l| l.3).sum();
    if let (Some(burn), Some(first)) = (burn.filter(|_| paid > 0), by_burn.first()) {
        let row: TransactionRow = tx
            .row(SELECT_BY_ID, params![burn])
            .await?
            .ok_or(StoreError::NotFound { what: "burn" })?;
        let lines: Vec<&str> = by_burn.iter().map(|l| l.0.as_str()).collect();
        // A line is cancelled once: the first one's id makes the refund's key unique.
        let correction = NewCorrection {
            transaction_id: burn,
            external_id: format!("cancel:{}", first.0),
            amount: Some(Decimal::new(paid, 6)),
            description: Some(format!("Order {reference} cancelled")),
            comment: None,
            meta: Some(json!({"orderId": order_id, "lines": lines})),
        };
        let burn = transaction_from_row(row)?;
        refund_within(tx, c, burn, correction, Tokens::from_micros(paid), at).await?;
    }
    if !open.is_empty() {
        let order = order_within(tx, c, order_id).await?;
        let event = NewEvent::new(
            &c.org_id,
            Some(&c.id),
            EventType::OrderCancelled,
            &order,
            at,
        )?;
        events::record(tx, &event).await?;
    }
    Ok(restocked)
}

/// The hold paying a cancelled line: voided while held; once captured, its capture refunded.
async fn release_line_hold(
    tx: &mut impl Tx,
    c: &Campaign,
    reference: &str,
    line: &str,
    hold: &str,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    const HOLD: &str = "SELECT status, transaction_id, captured FROM holds WHERE id = $1";
    let (status, capture, captured): (String, Option<String>, Option<i64>) = tx
        .row(HOLD, params![hold])
        .await?
        .ok_or(StoreError::NotFound { what: "hold" })?;
    match (status.as_str(), capture, captured) {
        ("held", ..) => {
            let void = Settling {
                hold: HoldRef::Id(hold.to_string()),
                how: Settle::Void,
                at,
            };
            void.run(tx).await??;
        }
        ("captured", Some(capture), Some(captured)) => {
            let row: TransactionRow = tx
                .row(SELECT_BY_ID, params![capture])
                .await?
                .ok_or(StoreError::NotFound { what: "burn" })?;
            let correction = NewCorrection {
                transaction_id: capture,
                external_id: format!("cancel:{line}"),
                amount: Some(Decimal::new(captured, 6)),
                description: Some(format!("Order {reference} cancelled")),
                comment: None,
                meta: Some(json!({"lines": [line]})),
            };
            let burn = transaction_from_row(row)?;
            refund_within(tx, c, burn, correction, Tokens::from_micros(captured), at).await?;
        }
        _ => {}
    }
    Ok(())
}

impl Steps for Cancelling {
    type Output = bool;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        let (c, line) = (&self.campaign, self.line_id.as_deref());
        cancel_lines(tx, c, &self.order_id, line, self.at).await
    }
}
