//! Orders, lines, codes and bookings as the API shows them (the seed's Order, OrderLine and
//! Booking), for each interface version.

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use store::{ApiVersion, Booking, Order, OrderLine, ProductSummary, Redeemed, Tokens};
use utoipa::ToSchema;

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OrderView {
    pub id: String,
    /// When the order was placed.
    pub date: DateTime<Utc>,
    /// The member's external id.
    pub owner: String,
    /// Tokens: the sum of the lines' totals.
    #[schema(value_type = f64)]
    pub total: Tokens,
    /// The client's reference (or the one made up): unique in the campaign.
    pub reference: String,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// Paid with points: the wallet and its BURN transaction.
    pub wallet_id: Option<String>,
    pub transaction_id: Option<String>,
    /// Absent unless asked for (`includeLines`) in a list.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lines: Option<Vec<LineView>>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct LineView {
    pub id: String,
    pub order_id: String,
    pub product_id: String,
    pub variant_id: String,
    /// The product as it was when ordered. Version 1.9.5 only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub product: Option<ProductSummaryView>,
    pub requires_booking: bool,
    /// Tokens for one unit, as priced when ordered.
    #[schema(value_type = f64)]
    pub cost: Tokens,
    pub qty: u32,
    /// Tokens: cost x qty.
    #[schema(value_type = f64)]
    pub total: Tokens,
    /// One per unit: masked (the last 4 characters shown) unless decrypted.
    pub codes: Vec<CodeView>,
    /// The booking going ahead, else the latest one.
    pub booking: Option<BookingView>,
    pub reference: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    /// When the line was cancelled: its points refunded, its stock returned, its codes voided.
    pub cancelled_at: Option<DateTime<Utc>>,
    /// A line that requires a booking, paid with points: the hold of its points (see
    /// `/v1/holds/{id}`), captured when its booking is confirmed; a booking cancelled or
    /// unsuccessful before that cancels the line and releases them.
    pub hold_id: Option<String>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductSummaryView {
    pub name: String,
    /// The variant's name.
    pub variant: String,
    pub description: Option<String>,
    pub primary_image: Option<String>,
    pub variant_description: Option<String>,
    pub offer_details: Option<String>,
    pub terms_and_conditions: Option<String>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CodeView {
    /// `••••-••••-•HTRC`, or the code itself when decrypted.
    pub code: String,
    pub redeemed: bool,
    pub redeemed_at: Option<DateTime<Utc>>,
    /// Voided when its line was cancelled: it can no longer be redeemed.
    pub voided: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BookingView {
    pub id: String,
    /// The order line booked (the path's `redemptionId`).
    pub redemption_id: String,
    pub order_id: String,
    #[schema(value_type = super::input::Status)]
    pub status: Cow<'static, str>,
    pub date_requested: DateTime<Utc>,
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    /// The branch's id.
    pub branch: Option<String>,
    /// When, in UTC.
    pub date: DateTime<Utc>,
    pub pax: u32,
    pub notes: Option<String>,
    #[schema(value_type = Option<Object>)]
    pub meta: Option<Value>,
    pub updated_at: DateTime<Utc>,
}

impl From<ProductSummary> for ProductSummaryView {
    fn from(p: ProductSummary) -> Self {
        ProductSummaryView {
            name: p.name,
            variant: p.variant,
            description: p.description,
            primary_image: p.primary_image,
            variant_description: p.variant_description,
            offer_details: p.offer_details,
            terms_and_conditions: p.terms_and_conditions,
        }
    }
}

impl From<Booking> for BookingView {
    fn from(b: Booking) -> Self {
        BookingView {
            id: b.id,
            redemption_id: b.line_id,
            order_id: b.order_id,
            status: b.status.as_str().into(),
            date_requested: b.date_requested,
            first_name: b.first_name,
            last_name: b.last_name,
            email: b.email,
            phone: b.phone,
            branch: b.branch,
            date: b.date,
            pax: b.pax,
            notes: b.notes,
            meta: b.meta,
            updated_at: b.updated_at,
        }
    }
}

impl LineView {
    pub fn new(l: OrderLine, version: ApiVersion) -> Self {
        LineView {
            product: (version == ApiVersion::V1_9_5).then(|| l.product.into()),
            id: l.id,
            order_id: l.order_id,
            product_id: l.product_id,
            variant_id: l.variant_id,
            requires_booking: l.requires_booking,
            cost: l.cost,
            qty: l.quantity,
            total: l.total,
            codes: l
                .codes
                .into_iter()
                .map(|c| CodeView {
                    code: c.code,
                    redeemed: c.redeemed_at.is_some(),
                    redeemed_at: c.redeemed_at,
                    voided: c.voided_at.is_some(),
                })
                .collect(),
            booking: l.booking.map(BookingView::from),
            reference: l.reference,
            meta: l.meta,
            cancelled_at: l.cancelled_at,
            hold_id: l.hold_id,
        }
    }
}

impl OrderView {
    /// `order` in `version`'s shape; its lines when `with_lines`.
    pub fn new(o: Order, version: ApiVersion, with_lines: bool) -> Self {
        OrderView {
            lines: with_lines.then(|| {
                o.lines
                    .into_iter()
                    .map(|l| LineView::new(l, version))
                    .collect()
            }),
            id: o.id,
            date: o.date,
            owner: o.owner,
            total: o.total,
            reference: o.reference,
            meta: o.meta,
            wallet_id: o.wallet_id,
            transaction_id: o.transaction_id,
        }
    }
}

/// A code a partner redeemed, and what it was for.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedeemedView {
    /// Masked.
    pub code: String,
    pub redeemed: bool,
    pub redeemed_at: DateTime<Utc>,
    pub order_id: String,
    /// The order line (the seed's redemption).
    pub line_id: String,
    pub product_id: String,
    pub variant_id: String,
    pub product: ProductSummaryView,
}

impl From<Redeemed> for RedeemedView {
    fn from(r: Redeemed) -> Self {
        RedeemedView {
            code: r.code,
            redeemed: true,
            redeemed_at: r.redeemed_at,
            order_id: r.order_id,
            line_id: r.line_id,
            product_id: r.product_id,
            variant_id: r.variant_id,
            product: r.product.into(),
        }
    }
}
