//! Placing an order: one transaction that reads the catalogue rows of its lines, takes the
//! stock of limited variants (a conditional decrement: concurrent orders for the last units
//! never oversell), debits the paying wallet through the ledger's own `Debit`, and writes the
//! order, its lines, a sealed code per unit and any inline booking. Any failure leaves nothing.
//! The reference makes it idempotent: the same request again finds the order it made.

use std::sync::Arc;

use chrono::{DateTime, Utc};
use serde::Serialize;
use serde_json::json;

use super::booking::{INSERT_BOOKING, booking_event};
use super::plan::{
    BRANCHES, LineSource, PRODUCT, Plan, PlannedLine, TIER_REACHED, VARIANT, VARIANTS_OF,
    out_of_stock, plan,
};
use super::{Booking, Code, NewLine, NewOrder, Order, OrderLine};
use crate::backend::{Steps, Tx};
use crate::common::codes::{CodeKey, masked, new_code, tail};
use crate::common::ids::{Fingerprint, new_id};
use crate::{Campaign, NewHold, Orders, StoreError, Tokens, Transaction, TransactionKind};
use events::{EventType, NewEvent};
use ledger::burn::{Debit, Debited};
use ledger::holds::place::Placing as HoldPlacing;
use ledger::refusals;
use ledger::spend::Spend;
use ledger::transactions::idem_key_of;
use members::activities;

/// A placed order, whether this request made it (or an identical one before: `replayed`), and
/// whether it sold a variant out (the catalogue's search index is then stale).
#[derive(Debug, Clone)]
pub struct Placed {
    pub order: Order,
    pub replayed: bool,
    pub sold_out: bool,
}

/// A line serializes as an array of its fields, as orders' fingerprints have always kept it (a
/// change of form would make every earlier order's repeat a conflict).
impl Serialize for NewLine {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let booking = self.booking.as_ref().map(|b| {
            json!([
                b.first_name,
                b.last_name,
                b.email,
                b.phone,
                b.branch,
                b.date.to_rfc3339(),
                b.pax,
                b.notes,
                b.meta
            ])
        });
        json!([
            self.product_id,
            self.variant_id,
            self.quantity,
            self.reference,
            booking,
            self.meta
        ])
        .serialize(s)
    }
}

impl NewOrder {
    /// The request as sent (a random order's lines were drawn, not asked for): another under
    /// the same reference is a conflict naming the first field that differs.
    fn fingerprint(&self) -> Fingerprint {
        if self.random_cost.is_some() {
            let drawn = NewOrder {
                lines: Vec::new(),
                ..self.clone()
            };
            return Fingerprint::of_request(&drawn);
        }
        Fingerprint::of_request(self)
    }
}

const EARLIER: &str =
    "SELECT id, fingerprint FROM orders WHERE campaign_id = $1 AND reference = $2";
const TAKE_STOCK: &str = "UPDATE variants SET stock = stock - $3 \
     WHERE campaign_id = $1 AND id = $2 AND stock >= $3 RETURNING stock";
const STOCK: &str = "SELECT stock FROM variants WHERE campaign_id = $1 AND id = $2";
pub(super) const SELLOUT: &str = "INSERT INTO catalogue_sellouts (campaign_id, sellouts) VALUES ($1, 1) \
     ON CONFLICT (campaign_id) DO UPDATE SET sellouts = catalogue_sellouts.sellouts + 1";
const INSERT_ORDER: &str = "INSERT INTO orders (id, org_id, campaign_id, reference, owner_id, \
     total, meta, wallet_id, transaction_id, random, fingerprint, created_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)";
const INSERT_LINE: &str = "INSERT INTO order_lines (id, order_id, org_id, campaign_id, position, \
     product_id, variant_id, reference, quantity, cost, total, requires_booking, product, meta, \
     hold_id) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";
const INSERT_CODE: &str = "INSERT INTO redemption_codes (id, org_id, line_id, position, sealed, \
     lookup, tail) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (org_id, lookup) DO NOTHING";

/// The wallet paying for an order.
struct Payment {
    wallet_id: String,
    currency: String,
    min_balance: Tokens,
}

/// One order's transaction, for either backend.
struct Placing {
    campaign: Campaign,
    order_id: String,
    reference: String,
    owner_id: String,
    owner: String,
    fingerprint: Fingerprint,
    order: NewOrder,
    payment: Option<Payment>,
    codes: Arc<CodeKey>,
    at: DateTime<Utc>,
}

enum Outcome {
    Placed {
        order: Box<Order>,
        sold_out: bool,
    },
    /// An order with this reference exists: nothing was written.
    Earlier,
}

/// A code made for a unit: its id, what is stored, and what the order shows.
struct NewCode {
    id: String,
    sealed: Vec<u8>,
    lookup: Vec<u8>,
    tail: String,
    masked: String,
}

impl Placing {
    fn new_code(&self) -> NewCode {
        let code = new_code();
        let org = &self.campaign.org_id;
        NewCode {
            id: new_id(),
            sealed: self.codes.seal(org, &code),
            lookup: self.codes.lookup(org, &code),
            tail: tail(&code).to_string(),
            masked: masked(&code),
        }
    }

    /// The debit of `total` (what the lines that need no booking cost) from the paying wallet,
    /// if it pays with points.
    fn debit(&self, total: Tokens) -> Option<Debit> {
        let payment = self.payment.as_ref().filter(|_| total.is_positive())?;
        let transaction = Transaction::new(
            TransactionKind::Burn,
            payment.wallet_id.clone(),
            total,
            ledger::order_keys::payment_key(&self.order_id),
            payment.currency.clone(),
            self.at,
        )
        .saying(
            Some(format!("Order {}", self.reference)),
            None,
            Some(json!({"orderId": self.order_id, "reference": self.reference})),
        );
        let digest = Fingerprint::of(&["order"], vec![json!(self.order_id)]);
        Some(Debit::new(
            &self.campaign,
            transaction,
            digest,
            payment.min_balance,
        ))
    }

    /// The hold of what `line` (one that requires a booking) costs on the paying wallet, if the
    /// order pays with points: captured when its booking is confirmed, voided when it is
    /// cancelled or unsuccessful, so the member does not pay for a booking the partner could
    /// not honour.
    fn hold(&self, line: &PlannedLine) -> Option<HoldPlacing> {
        let payment = self.payment.as_ref().filter(|_| line.total.is_positive())?;
        let hold = NewHold {
            spend: Spend {
                wallet: payment.wallet_id.clone(),
                external_id: ledger::order_keys::line_hold_key(&self.order_id, &line.id),
                amount: line.total,
                description: format!("Order {}", self.reference),
                comment: None,
                meta: Some(json!({"orderId": self.order_id, "lineId": line.id})),
            },
            expires_at: None,
        };
        let (wallet, currency) = (payment.wallet_id.clone(), payment.currency.clone());
        Some(HoldPlacing::new(
            &self.campaign,
            hold,
            wallet,
            currency,
            payment.min_balance,
            self.at,
        ))
    }

    /// The inline bookings of the planned lines.
    fn bookings(&self, plan: &Plan) -> Vec<Option<Booking>> {
        plan.lines
            .iter()
            .map(|line| {
                let (new, branch) = line.booking.clone()?;
                let (order, owner) = (&self.order_id, &self.owner_id);
                Some(Booking::new(new, branch, &line.id, order, owner, self.at))
            })
            .collect()
    }

    /// The order as written, its codes masked.
    fn order(
        &self,
        plan: Plan,
        transaction_id: Option<String>,
        codes: Vec<Vec<NewCode>>,
        bookings: Vec<Option<Booking>>,
        holds: Vec<Option<String>>,
    ) -> Order {
        let paid_from = self.paid_from(transaction_id.as_deref(), &holds);
        let lines = plan
            .lines
            .into_iter()
            .zip(codes)
            .zip(bookings)
            .zip(holds)
            .zip(&self.order.lines)
            .map(|((((line, codes), booking), hold_id), asked)| OrderLine {
                id: line.id,
                order_id: self.order_id.clone(),
                product_id: line.product_id,
                variant_id: line.variant_id,
                reference: asked.reference.clone(),
                quantity: line.quantity,
                cost: line.cost,
                total: line.total,
                requires_booking: line.requires_booking,
                product: line.product,
                meta: asked.meta.clone(),
                codes: codes
                    .into_iter()
                    .map(|c| Code {
                        code: c.masked,
                        redeemed_at: None,
                        voided_at: None,
                    })
                    .collect(),
                booking,
                cancelled_at: None,
                hold_id,
            })
            .collect();
        Order {
            id: self.order_id.clone(),
            campaign_id: self.campaign.id.clone(),
            reference: self.reference.clone(),
            owner_id: self.owner_id.clone(),
            owner: self.owner.clone(),
            total: plan.total,
            meta: self.order.meta.clone(),
            wallet_id: paid_from.map(String::from),
            transaction_id,
            random: self.order.random_cost.is_some(),
            date: self.at,
            lines,
        }
    }

    fn wallet_id(&self) -> Option<&str> {
        self.payment.as_ref().map(|p| p.wallet_id.as_str())
    }

    /// The wallet that paid, if any points were spent or held (`burn`, `holds`).
    fn paid_from(&self, burn: Option<&str>, holds: &[Option<String>]) -> Option<&str> {
        let paid = burn.is_some() || holds.iter().any(Option::is_some);
        self.wallet_id().filter(|_| paid)
    }
}

impl Placing {
    /// The key an order's refusal is kept under: its client's reference, when it has one (a
    /// request without one cannot come again).
    fn refusal_key(&self) -> Option<Vec<u8>> {
        let (c, reference) = (&self.campaign, self.order.reference.as_ref()?);
        Some(idem_key_of(
            &c.org_id,
            "ORDER",
            &format!("{}:{reference}", c.id),
        ))
    }

    /// `place`, keeping a refusal `refusals` keeps (`Ok(Err(_))`): what the order wrote before it
    /// was refused (stock taken) is undone to a savepoint.
    async fn run_keeping<T: Tx>(
        self,
        tx: &mut T,
    ) -> Result<Result<Outcome, StoreError>, StoreError> {
        let Some(key) = self.refusal_key() else {
            return self.place(tx).await.map(Ok);
        };
        let (fingerprint, at) = (self.fingerprint.clone(), self.at);
        tx.execute("SAVEPOINT new_order", &[]).await?;
        let result = self.place(tx).await;
        if result.is_err() {
            tx.execute("ROLLBACK TO SAVEPOINT new_order", &[]).await?;
        }
        tx.execute("RELEASE SAVEPOINT new_order", &[]).await?;
        match result {
            Err(err) if refusals::is_kept(&err) => {
                refusals::keep(tx, &key, &fingerprint, &err, at).await?;
                Ok(Err(err))
            }
            other => Ok(other),
        }
    }

    /// Reads the lines' catalogue rows, takes the stock, debits the wallet and writes the order.
    async fn place<T: Tx>(self, tx: &mut T) -> Result<Outcome, StoreError> {
        let c = &self.campaign;
        let earlier: Option<(String, String)> =
            tx.row(EARLIER, params![c.id, self.reference]).await?;
        if earlier.is_some() {
            return Ok(Outcome::Earlier);
        }
        if let Some(key) = self.refusal_key() {
            refusals::answer_earlier(tx, &key, &self.fingerprint, "reference").await?;
        }
        let mut sources = Vec::with_capacity(self.order.lines.len());
        for line in &self.order.lines {
            let mut source = LineSource {
                product: tx.row(PRODUCT, params![c.id, line.product_id]).await?,
                ..LineSource::default()
            };
            let (sql, key) = match &line.variant_id {
                Some(id) => (VARIANT, id),
                None => (VARIANTS_OF, &line.product_id),
            };
            source.variants = tx.rows(sql, params![c.id, key]).await?;
            if line.booking.is_some() {
                let rows: Vec<(String,)> =
                    tx.rows(BRANCHES, params![c.id, line.product_id]).await?;
                source.branches = rows.into_iter().map(|(b,)| b).collect();
            }
            source.tier_reached = match source.variant().and_then(|v| v.tier_threshold) {
                None => true,
                Some(threshold) => {
                    let (owner, wallet) = (&self.owner_id, self.wallet_id());
                    let args = params![c.id, owner, threshold, wallet];
                    let found: Option<(String,)> = tx.row(TIER_REACHED, args).await?;
                    found.is_some()
                }
            };
            sources.push(source);
        }
        let plan = plan(&self.order.lines, sources, self.order.random_cost, self.at)?;
        let mut sold_out = false;
        // In variant id order: concurrent orders lock the rows in the same order.
        for (variant, units, line) in &plan.takes {
            let left: Option<(i64,)> = tx.row(TAKE_STOCK, params![c.id, variant, units]).await?;
            match left {
                Some((0,)) => sold_out = true,
                Some(_) => {}
                None => {
                    let stock: Option<(Option<i64>,)> =
                        tx.row(STOCK, params![c.id, variant]).await?;
                    let left = stock.and_then(|(s,)| s).unwrap_or(0);
                    return Err(out_of_stock(*line, variant, left));
                }
            }
        }
        if sold_out {
            tx.execute(SELLOUT, params![c.id]).await?;
        }
        let booked: i64 = plan
            .lines
            .iter()
            .filter(|l| l.requires_booking)
            .map(|l| l.total.micros())
            .sum();
        let unbooked = Tokens::from_micros(plan.total.micros() - booked);
        let transaction_id = match self.debit(unbooked) {
            Some(debit) => {
                match debit.write_in(tx, false).await? {
                    Debited::Made => {}
                    Debited::Earlier(_) => {
                        return Err(StoreError::Conflict { field: "reference" });
                    }
                    Debited::Refused(err) => return Err(err),
                }
                Some(debit.transaction_id().to_string())
            }
            None => None,
        };
        let mut holds = Vec::with_capacity(plan.lines.len());
        for line in &plan.lines {
            let placing = line.requires_booking.then(|| self.hold(line)).flatten();
            holds.push(match placing {
                Some(placing) => Some(placing.place(tx).await?.hold.id),
                None => None,
            });
        }
        let total = plan.total.micros();
        let paid_from = self.paid_from(transaction_id.as_deref(), &holds);
        let random = self.order.random_cost.is_some();
        let order_args = params![
            self.order_id,
            c.org_id,
            c.id,
            self.reference,
            self.owner_id,
            total,
            self.order.meta,
            paid_from,
            transaction_id,
            random,
            self.fingerprint.text,
            self.at
        ];
        tx.execute(INSERT_ORDER, order_args).await?;
        let bookings = self.bookings(&plan);
        let mut codes = Vec::with_capacity(plan.lines.len());
        for (position, (line, asked)) in plan.lines.iter().zip(&self.order.lines).enumerate() {
            let (cost, total) = (line.cost.micros(), line.total.micros());
            let position = position as i64;
            let product = serde_json::to_value(&line.product)
                .map_err(|e| StoreError::NotCommitted(e.to_string()))?;
            let line_args = params![
                line.id,
                self.order_id,
                c.org_id,
                c.id,
                position,
                line.product_id,
                line.variant_id,
                asked.reference,
                line.quantity,
                cost,
                total,
                line.requires_booking,
                product,
                asked.meta,
                holds[position as usize]
            ];
            tx.execute(INSERT_LINE, line_args).await?;
            let mut line_codes = Vec::with_capacity(line.quantity as usize);
            for unit in 0..i64::from(line.quantity) {
                // 65 random bits: a clash is next to impossible, and a new code is drawn if so.
                let code = loop {
                    let code = self.new_code();
                    let args = params![
                        code.id,
                        c.org_id,
                        line.id,
                        unit,
                        code.sealed,
                        code.lookup,
                        code.tail
                    ];
                    if tx.execute(INSERT_CODE, args).await? == 1 {
                        break code;
                    }
                };
                line_codes.push(code);
            }
            codes.push(line_codes);
            if let Some(b) = &bookings[position as usize] {
                tx.execute(INSERT_BOOKING, &b.args(c)).await?;
            }
        }
        let order = self.order(plan, transaction_id, codes, bookings, holds);
        order_events(tx, c, &order, self.at).await?;
        // Keyed by campaign and member: only the first order records it.
        let key = format!("{}:{}", c.id, order.owner_id);
        let attributes = serde_json::json!({ "orderId": order.id, "total": order.total });
        let scope = (c.org_id.as_str(), c.id.as_str());
        let kind = (activities::ORDER_FIRST, key.as_str());
        activities::record_built_in(tx, scope, &order.owner_id, kind, attributes, self.at).await?;
        Ok(Outcome::Placed {
            order: Box::new(order),
            sold_out,
        })
    }
}

/// Records `order.created` for `order`, and `booking.created` for each booking it made.
async fn order_events(
    tx: &mut impl Tx,
    c: &Campaign,
    order: &Order,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let event = NewEvent::new(&c.org_id, Some(&c.id), EventType::OrderCreated, order, at)?;
    events::record(tx, &event).await?;
    for booking in order.lines.iter().filter_map(|l| l.booking.as_ref()) {
        booking_event(tx, c, EventType::BookingCreated, booking).await?;
    }
    Ok(())
}

impl Steps for Placing {
    type Output = Result<Outcome, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.run_keeping(tx).await
    }
}

/// Orders, placed: one order paid in tokens, its stock and codes, in one transaction (scope:
/// `&Campaign`).
impl Orders {
    /// Places `order` in `campaign`, sealing its codes with `codes`. The owner must be a live
    /// member of the organisation (`UnknownReference` on `owner`); a paying wallet must be the
    /// owner's, in the campaign (`UnknownReference`, `Invalid` on `walletId`) and cover the
    /// total (`InsufficientBalance`). Problems with lines are `Rejected` with their paths;
    /// `Refused` says `out_of_stock` or `tier_required`. A reference used by another request
    /// is refused (`already_exists`, naming the first field that differs); by this same
    /// request, the order it made (`replayed`).
    #[tracing::instrument(skip_all)]
    pub async fn place_order(
        &self,
        campaign: &Campaign,
        order: NewOrder,
        codes: Arc<CodeKey>,
    ) -> Result<Placed, StoreError> {
        let fingerprint = order.fingerprint();
        let reference = match &order.reference {
            Some(reference) => {
                if let Some(done) = self
                    .earlier_order(campaign, reference, &fingerprint)
                    .await?
                {
                    return Ok(done);
                }
                reference.clone()
            }
            None => new_id(),
        };
        let (owner_id, owner) = self
            .members()
            .member_by_reference(&campaign.org_id, &order.owner)
            .await?
            .ok_or_else(|| StoreError::UnknownReference {
                field: "owner",
                message: format!("no member has the id or external id `{}`", order.owner),
            })?;
        let payment = match &order.wallet {
            None => None,
            Some(reference) => {
                let wallet = match self.ledger().get_wallet(campaign, reference).await {
                    Err(StoreError::NotFound { .. }) => {
                        return Err(StoreError::UnknownReference {
                            field: "walletId",
                            message: format!("no wallet `{reference}` in the campaign"),
                        });
                    }
                    other => other?,
                };
                if wallet.owner_id != owner_id {
                    return Err(StoreError::invalid(
                        "walletId",
                        format!("wallet `{reference}` belongs to another member than the owner"),
                    ));
                }
                Some(Payment {
                    wallet_id: wallet.id,
                    currency: wallet.currency,
                    min_balance: self.programme().policy(campaign).await?.min_balance,
                })
            }
        };
        let placing = Placing {
            campaign: campaign.clone(),
            order_id: new_id(),
            reference: reference.clone(),
            owner_id,
            owner: owner.unwrap_or_default(),
            fingerprint: fingerprint.clone(),
            order,
            payment,
            codes,
            at: self.now(),
        };
        match self.write(placing).await.and_then(|r| r) {
            Ok(Outcome::Placed { order, sold_out }) => Ok(Placed {
                order: *order,
                replayed: false,
                sold_out,
            }),
            // Another request with this reference came first (and won the race to write it).
            Ok(Outcome::Earlier) => {
                self.earlier_or_conflict(campaign, &reference, &fingerprint)
                    .await
            }
            Err(err) if err.is_unique_violation() => {
                self.earlier_or_conflict(campaign, &reference, &fingerprint)
                    .await
            }
            Err(err) => Err(err),
        }
    }

    async fn earlier_or_conflict(
        &self,
        campaign: &Campaign,
        reference: &str,
        fingerprint: &Fingerprint,
    ) -> Result<Placed, StoreError> {
        self.earlier_order(campaign, reference, fingerprint)
            .await?
            .ok_or(StoreError::Conflict { field: "reference" })
    }

    /// The order an earlier request made with `reference`: `Some` when it was this request,
    /// `Conflict` when it was another, `None` when there is none.
    async fn earlier_order(
        &self,
        campaign: &Campaign,
        reference: &str,
        fingerprint: &Fingerprint,
    ) -> Result<Option<Placed>, StoreError> {
        let row: Option<(String, String)> = self
            .read_row(EARLIER, params![campaign.id, reference])
            .await?;
        let Some((id, earlier)) = row else {
            return Ok(None);
        };
        if fingerprint.matches(&earlier).is_err() {
            return Err(fingerprint.conflict("reference", &earlier));
        }
        let scope = super::OrderScope::campaign(campaign);
        let order = self.get_order(&scope, &id, None).await?;
        Ok(Some(Placed {
            order,
            replayed: true,
            sold_out: false,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NewBooking;

    fn order() -> NewOrder {
        let booking = NewBooking {
            first_name: "Ada".into(),
            last_name: "Lovelace".into(),
            email: Some("ada@example.com".into()),
            phone: None,
            branch: Some("b-1".into()),
            date: DateTime::parse_from_rfc3339("2026-03-01T10:00:00+02:00").unwrap(),
            pax: 2,
            notes: None,
            meta: None,
        };
        NewOrder {
            owner: "card-1".into(),
            reference: Some("o-1".into()),
            meta: Some(json!({"channel": "app"})),
            wallet: Some("w-1".into()),
            lines: vec![NewLine {
                product_id: "p-1".into(),
                variant_id: None,
                quantity: 1,
                reference: None,
                booking: Some(booking),
                meta: None,
            }],
            random_cost: None,
        }
    }

    /// An order's fingerprint, derived from its serialization, is the one earlier releases
    /// stored (owner, meta, wallet, each line positionally, the cost of a random order): a
    /// repeat of an order they placed still finds it, and a random order's drawn lines are no
    /// part of it.
    #[test]
    fn an_order_fingerprint_is_what_earlier_releases_stored() {
        let order = order();
        let line = json!([
            "p-1",
            null,
            1,
            null,
            [
                "Ada",
                "Lovelace",
                "ada@example.com",
                null,
                "b-1",
                "2026-03-01T10:00:00+02:00",
                2,
                null,
                null
            ],
            null
        ]);
        let earlier = Fingerprint::of(
            &["owner", "meta", "walletId", "lines", "cost"],
            vec![
                json!("card-1"),
                json!({"channel": "app"}),
                json!("w-1"),
                json!([line]),
                json!(null),
            ],
        );
        assert_eq!(order.fingerprint().text, earlier.text);

        let random = |product: &str| NewOrder {
            lines: vec![NewLine {
                product_id: product.into(),
                ..order.lines[0].clone()
            }],
            random_cost: Some(Tokens::whole(5)),
            ..order.clone()
        };
        assert_eq!(
            random("p-1").fingerprint().text,
            random("p-2").fingerprint().text
        );
        assert_eq!(
            random("p-1").fingerprint().matches(&earlier.text),
            Err(Some("lines"))
        );
    }
}
