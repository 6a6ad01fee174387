//! Orders and their lines as clients read them: within the key's campaign or across the
//! organisation's campaigns, optionally only a member's; codes masked, or opened with the codes
//! key for the one line a caller decrypts.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use super::booking::{Booking, LINE_BOOKINGS, shown_bookings};
use super::{Code, Order, OrderLine, ProductSummary};
use crate::backend::Tx;
use crate::common::codes::{CodeKey, masked_tail};
use crate::{Campaign, Orders, Page, Paged, StoreError, Tokens};

/// Which orders a caller may see: the organisation's, in one campaign or in all of them.
#[derive(Debug, Clone)]
pub struct OrderScope {
    pub org_id: String,
    /// `None`: every campaign of the organisation (version 1.9.5's `acrossCampaigns`).
    pub campaign_id: Option<String>,
}

impl OrderScope {
    pub fn campaign(campaign: &Campaign) -> Self {
        OrderScope {
            org_id: campaign.org_id.clone(),
            campaign_id: Some(campaign.id.clone()),
        }
    }

    pub fn organisation(campaign: &Campaign) -> Self {
        OrderScope {
            org_id: campaign.org_id.clone(),
            campaign_id: None,
        }
    }
}

macro_rules! order_columns {
    () => {
        "o.id, o.campaign_id, o.reference, o.owner_id, m.external_id, o.total, o.meta, \
         o.wallet_id, o.transaction_id, o.random, o.created_at"
    };
}

/// Orders in scope (`$1` the organisation, `$2` the campaign or NULL), of member `$3` or NULL.
macro_rules! in_scope {
    () => {
        "FROM orders o JOIN members m ON m.id = o.owner_id WHERE o.org_id = $1 \
         AND ($2 IS NULL OR o.campaign_id = $2) AND ($3 IS NULL OR o.owner_id = $3)"
    };
}

row_struct! {
    struct OrderRow {
        id: String,
        campaign_id: String,
        reference: String,
        owner_id: String,
        owner: Option<String>,
        total: i64,
        meta: Option<Json<Value>>,
        wallet_id: Option<String>,
        transaction_id: Option<String>,
        random: bool,
        created_at: DateTime<Utc>,
    }
}

fn order_from_row(r: OrderRow) -> Order {
    Order {
        id: r.id,
        campaign_id: r.campaign_id,
        reference: r.reference,
        owner_id: r.owner_id,
        owner: r.owner.unwrap_or_default(),
        total: Tokens::from_micros(r.total),
        meta: r.meta.map(|m| m.0),
        wallet_id: r.wallet_id,
        transaction_id: r.transaction_id,
        random: r.random,
        date: r.created_at,
        lines: Vec::new(),
    }
}

row_struct! {
    struct LineRow {
        id: String,
        order_id: String,
        product_id: String,
        variant_id: String,
        reference: Option<String>,
        quantity: i64,
        cost: i64,
        total: i64,
        requires_booking: bool,
        product: Json<ProductSummary>,
        meta: Option<Json<Value>>,
        cancelled_at: Option<DateTime<Utc>>,
        hold_id: Option<String>,
    }
}

const LINES: &str = "SELECT l.id, l.order_id, l.product_id, l.variant_id, l.reference, \
     l.quantity, l.cost, l.total, l.requires_booking, l.product, l.meta, l.cancelled_at, \
     l.hold_id FROM order_lines l \
     WHERE l.order_id {key} ORDER BY l.order_id, l.position";

row_struct! {
    struct CodeRow {
        line_id: String,
        tail: String,
        sealed: Vec<u8>,
        redeemed_at: Option<DateTime<Utc>>,
        voided_at: Option<DateTime<Utc>>,
    }
}

const CODES: &str = "SELECT line_id, tail, sealed, redeemed_at, voided_at FROM redemption_codes \
     WHERE line_id {key} ORDER BY line_id, position";

/// Orders, read: a campaign's orders and their lines (scope: `&Campaign`).
impl Orders {
    /// The member id that `owner` (an id or external id) names, for a filter: `None` when no
    /// filter was given, `Err(NotFound)` when it names no member (the caller decides what an
    /// unknown owner means).
    async fn owner_filter(
        &self,
        scope: &OrderScope,
        owner: Option<&str>,
    ) -> Result<Option<String>, StoreError> {
        let Some(owner) = owner else {
            return Ok(None);
        };
        self.members()
            .member_id_of(&scope.org_id, owner)
            .await?
            .map(Some)
            .ok_or(StoreError::NotFound { what: "member" })
    }

    /// Order `id` without its lines; with `owner`, only if it is that member's.
    async fn find_order(
        &self,
        scope: &OrderScope,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Order, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            order_columns!(),
            " ",
            in_scope!(),
            " AND o.id = $4"
        );
        let not_found = StoreError::NotFound { what: "order" };
        let owner = match self.owner_filter(scope, owner).await {
            Err(StoreError::NotFound { .. }) => return Err(not_found),
            other => other?,
        };
        let row: Option<OrderRow> = self
            .read_row(SQL, params![scope.org_id, scope.campaign_id, owner, id])
            .await?;
        Ok(order_from_row(row.ok_or(not_found)?))
    }

    /// Order `id` with its lines; with `owner`, only if it is that member's.
    #[tracing::instrument(skip_all)]
    pub async fn get_order(
        &self,
        scope: &OrderScope,
        id: &str,
        owner: Option<&str>,
    ) -> Result<Order, StoreError> {
        let mut orders = [self.find_order(scope, id, owner).await?];
        self.fill_lines(&scope.org_id, &mut orders, None).await?;
        let [order] = orders;
        Ok(order)
    }

    /// The orders in scope, newest first; with `owner`, only that member's (none when it names
    /// no member); with their lines when `include_lines`.
    #[tracing::instrument(skip_all)]
    pub async fn list_orders(
        &self,
        scope: &OrderScope,
        owner: Option<&str>,
        include_lines: bool,
        page: Page,
    ) -> Result<Paged<Order>, StoreError> {
        let owner = match self.owner_filter(scope, owner).await {
            Err(StoreError::NotFound { .. }) => {
                return Ok(Paged {
                    items: Vec::new(),
                    total: 0,
                    page,
                });
            }
            other => other?,
        };
        let rows = self
            .read_page(
                page,
                order_columns!(),
                in_scope!(),
                "o.created_at DESC, o.id DESC",
                params![&scope.org_id, &scope.campaign_id, &owner],
            )
            .await?;
        let mut orders = Paged::of(rows, page, |row| Ok(order_from_row(row)))?;
        if include_lines {
            self.fill_lines(&scope.org_id, &mut orders.items, None)
                .await?;
        }
        Ok(orders)
    }

    /// Line `line_id` of order `order_id`; its codes in clear when `decrypt` holds the key
    /// (`UnknownStored` when the stored codes do not open with it).
    #[tracing::instrument(skip_all)]
    pub async fn order_line(
        &self,
        scope: &OrderScope,
        order_id: &str,
        line_id: &str,
        owner: Option<&str>,
        decrypt: Option<&CodeKey>,
    ) -> Result<OrderLine, StoreError> {
        let mut orders = [self.find_order(scope, order_id, owner).await?];
        self.fill_lines(&scope.org_id, &mut orders, decrypt).await?;
        let [order] = orders;
        order
            .lines
            .into_iter()
            .find(|l| l.id == line_id)
            .ok_or(StoreError::NotFound { what: "order line" })
    }

    /// Reads the lines of `orders` (of organisation `org_id`), with their codes (opened when
    /// `decrypt` holds the key) and bookings.
    async fn fill_lines(
        &self,
        org_id: &str,
        orders: &mut [Order],
        decrypt: Option<&CodeKey>,
    ) -> Result<(), StoreError> {
        if orders.is_empty() {
            return Ok(());
        }
        let ids: Vec<&str> = orders.iter().map(|o| o.id.as_str()).collect();
        let lines: Vec<LineRow> = self.read_each(LINES, params![], &ids).await?;
        let line_ids: Vec<&str> = lines.iter().map(|l| l.id.as_str()).collect();
        let codes: Vec<CodeRow> = self.read_each(CODES, params![], &line_ids).await?;
        let bookings = self.line_bookings(&line_ids).await?;
        let read = ReadLines {
            lines,
            codes,
            bookings,
        };
        read.fill(org_id, orders, decrypt)
    }
}

/// Order `id` of the campaign with its lines (codes masked), read in the caller's transaction
/// (for an event of the change that transaction makes).
pub(crate) async fn order_within(
    tx: &mut impl Tx,
    campaign: &Campaign,
    id: &str,
) -> Result<Order, StoreError> {
    const ORDER: &str = concat!(
        "SELECT ",
        order_columns!(),
        " FROM orders o JOIN members m ON m.id = o.owner_id WHERE o.id = $1 AND o.campaign_id = $2"
    );
    const OF_ORDER: &str = "IN (SELECT id FROM order_lines WHERE order_id = $1)";
    let row: Option<OrderRow> = tx.row(ORDER, params![id, campaign.id]).await?;
    let mut orders = [order_from_row(
        row.ok_or(StoreError::NotFound { what: "order" })?,
    )];
    let lines = tx
        .rows(&LINES.replace("{key}", "= $1"), params![id])
        .await?;
    let codes = tx
        .rows(&CODES.replace("{key}", OF_ORDER), params![id])
        .await?;
    let bookings = tx
        .rows(&LINE_BOOKINGS.replace("{key}", OF_ORDER), params![id])
        .await?;
    let read = ReadLines {
        lines,
        codes,
        bookings: shown_bookings(bookings)?,
    };
    read.fill(&campaign.org_id, &mut orders, None)?;
    let [order] = orders;
    Ok(order)
}

/// Lines of some orders, their codes and their bookings, as read.
struct ReadLines {
    lines: Vec<LineRow>,
    codes: Vec<CodeRow>,
    bookings: Vec<Booking>,
}

impl ReadLines {
    /// Gives `orders` (of organisation `org_id`) their lines, with their codes (opened when
    /// `decrypt` holds the key) and bookings.
    fn fill(
        self,
        org_id: &str,
        orders: &mut [Order],
        decrypt: Option<&CodeKey>,
    ) -> Result<(), StoreError> {
        let ReadLines {
            lines,
            codes,
            bookings,
        } = self;
        let mut filled: Vec<OrderLine> = Vec::with_capacity(lines.len());
        for l in lines {
            let codes = codes
                .iter()
                .filter(|c| c.line_id == l.id)
                .map(|c| {
                    let code = match decrypt {
                        None => masked_tail(&c.tail),
                        Some(key) => key.open(org_id, &c.sealed).ok_or_else(|| {
                            StoreError::UnknownStored {
                                table: "redemption_codes",
                                column: "sealed",
                                value: "a code sealed with another key (was codes_key changed?)"
                                    .into(),
                            }
                        })?,
                    };
                    Ok(Code {
                        code,
                        redeemed_at: c.redeemed_at,
                        voided_at: c.voided_at,
                    })
                })
                .collect::<Result<Vec<_>, StoreError>>()?;
            let booking: Option<Booking> = bookings.iter().find(|b| b.line_id == l.id).cloned();
            filled.push(OrderLine {
                quantity: u32::try_from(l.quantity).unwrap_or_default(),
                cost: Tokens::from_micros(l.cost),
                total: Tokens::from_micros(l.total),
                requires_booking: l.requires_booking,
                product: l.product.0,
                meta: l.meta.map(|m| m.0),
                codes,
                booking,
                cancelled_at: l.cancelled_at,
                hold_id: l.hold_id,
                id: l.id,
                order_id: l.order_id,
                product_id: l.product_id,
                variant_id: l.variant_id,
                reference: l.reference,
            });
        }
        for order in orders.iter_mut() {
            order.lines = filled
                .iter()
                .filter(|l| l.order_id == order.id)
                .cloned()
                .collect();
        }
        Ok(())
    }
}
