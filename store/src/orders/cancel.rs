//! Cancelling an order, or one of its lines, while none of its codes is redeemed: in one
//! transaction the lines are marked cancelled, their codes voided (a voided code cannot be
//! redeemed), their stock returned, their bookings going ahead cancelled, and the points paid
//! for them refunded from the order's BURN into the lots they came from (a REFUND naming it).
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
use super::place::SELLOUT;
use crate::backend::{PgTx, SqliteTx, Work};
use crate::common::ids::now;
use crate::ledger::burn::Debiting;
use crate::ledger::corrections::refund_within;
use crate::ledger::transactions::{SELECT_BY_ID, TransactionRow, transaction_from_row};
use crate::{Campaign, NewCorrection, Order, Store, StoreError, Tokens};

const ORDER: &str =
    "SELECT reference, transaction_id FROM orders WHERE id = $1 AND campaign_id = $2";
/// The order's lines: id, variant, units, total and whether cancelled.
const LINES: &str = "SELECT id, variant_id, quantity, total, cancelled_at IS NOT NULL \
     FROM order_lines WHERE order_id = $1 ORDER BY position";
type LineRow = (String, String, i64, i64, bool);
const VOID: &str = "UPDATE redemption_codes SET voided_at = $2 \
     WHERE line_id = $1 AND redeemed_at IS NULL AND voided_at IS NULL";
const REDEEMED: &str =
    "SELECT COUNT(*) FROM redemption_codes WHERE line_id = $1 AND redeemed_at IS NOT NULL";
const RESTOCK: &str = "UPDATE variants SET stock = stock + $3 \
     WHERE campaign_id = $1 AND id = $2 AND stock IS NOT NULL RETURNING stock";
const CANCEL_BOOKING: &str = "UPDATE bookings SET status = 'CANCELLED', updated_at = $2 \
     WHERE line_id = $1 AND status IN ('REQUESTED', 'PENDING', 'CONFIRMED')";
const CANCEL_LINE: &str =
    "UPDATE order_lines SET cancelled_at = $2 WHERE id = $1 AND cancelled_at IS NULL";

/// Orders, cancelled (scope: `&Campaign`).
impl Store {
    /// Cancels order `order_id` of `campaign` whole, or only its line `line_id`; the order
    /// after. `NotFound` for an order (or line) the campaign does not hold; `Refused`
    /// (`line_redeemed`, naming `lineId`) when a line to cancel has a redeemed code. Whether it
    /// made a sold-out variant available again (the catalogue's search index is then stale) is
    /// the second value.
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
            at: now(),
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

impl Cancelling {
    /// Whether a variant's stock came back from none.
    async fn run(&self, tx: &mut impl Debiting) -> Result<bool, StoreError> {
        let c = &self.campaign;
        let (reference, burn): (String, Option<String>) = tx
            .row(ORDER, params![self.order_id, c.id])
            .await?
            .ok_or(StoreError::NotFound { what: "order" })?;
        let lines: Vec<LineRow> = tx.rows(LINES, params![self.order_id]).await?;
        let chosen: Vec<&LineRow> = match &self.line_id {
            Some(id) => {
                let line = lines.iter().find(|l| &l.0 == id);
                vec![line.ok_or(StoreError::NotFound { what: "order line" })?]
            }
            None => lines.iter().collect(),
        };
        let mut open: Vec<&LineRow> = Vec::new();
        let mut restocked = false;
        for l in chosen.into_iter().filter(|l| !l.4) {
            let (line, variant, units, _, _) = l;
            // A cancel of this line that came first (it waited for its row) has done the rest.
            if tx.execute(CANCEL_LINE, params![line, self.at]).await? == 0 {
                continue;
            }
            open.push(l);
            tx.execute(VOID, params![line, self.at]).await?;
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
            tx.execute(CANCEL_BOOKING, params![line, self.at]).await?;
        }
        if restocked {
            tx.execute(SELLOUT, params![c.id]).await?;
        }
        let paid: i64 = open.iter().map(|l| l.3).sum();
        if let (Some(burn), Some(first)) = (burn.filter(|_| paid > 0), open.first()) {
            let row: TransactionRow = tx
                .row(SELECT_BY_ID, params![burn])
                .await?
                .ok_or(StoreError::NotFound { what: "burn" })?;
            let lines: Vec<&str> = open.iter().map(|l| l.0.as_str()).collect();
            // A line is cancelled once: the first one's id makes the refund's key unique.
            let correction = NewCorrection {
                transaction_id: burn,
                external_id: format!("cancel:{}", first.0),
                amount: Some(Decimal::new(paid, 6)),
                description: Some(format!("Order {reference} cancelled")),
                comment: None,
                meta: Some(json!({"orderId": self.order_id, "lines": lines})),
            };
            let burn = transaction_from_row(row)?;
            refund_within(tx, c, burn, correction, Tokens::from_micros(paid)).await?;
        }
        Ok(restocked)
    }
}

impl Work for Cancelling {
    type Output = bool;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<bool, StoreError> {
        self.run(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<bool, StoreError> {
        self.run(tx).await
    }
}
