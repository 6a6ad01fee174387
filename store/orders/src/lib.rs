//! Orders, reached through the `Orders` handle: members redeeming catalogue rewards, paid with
//! points through the ledger, and the bookings their lines may need. It sits on the seam,
//! tenancy (a `Campaign` is its scope), members, the programme, the catalogue (its products'
//! rows and opening hours) and the ledger. Where things live:
//!
//! - `place.rs`: placing an order in one transaction (the reference that makes it idempotent,
//!   stock taken atomically, paying with points through the ledger's debit, codes, inline
//!   bookings), written for each backend;
//! - `plan.rs`: what an order's lines come to, from the catalogue rows it read (no I/O);
//! - `read.rs`: orders and lines as clients read them, codes masked or (logged by the caller)
//!   in clear;
//! - `redeem.rs`: a partner redeeming a code (codes themselves, unguessable and encrypted, are
//!   the seam's `common::codes`);
//! - `booking.rs`: a booking's record, the rules its date and branch keep, its row and events;
//!   `bookings.rs`: booking lines that need one, and moving a booking along its state machine;
//! - `cancel.rs`: cancelling an order or a line: refund, stock, codes voided, booking.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

#[macro_use]
mod booking;
pub mod bookings;
mod cancel;
mod place;
mod plan;
mod read;
mod redeem;

use chrono::{DateTime, FixedOffset, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use catalogue::Weekdays;
use ledger::{Ledger, NewCorrection, NewHold, Transaction, TransactionKind};
use members::Members;
use programme::Programme;
use seam::common::ids::new_id;
use seam::scope::OrgScope;
use seam::{Db, FieldProblem, Page, Paged, StoreError, Tokens, backend, common, error};
use tenancy::Campaign;

pub use booking::{Booking, BookingPatch, BookingStatus, NewBooking};
pub use bookings::BookingFilter;
pub use place::Placed;
pub use read::OrderScope;
pub use redeem::Redeemed;

/// An order to place. Its serialization is what a repeat must match (`Fingerprint::of_request`):
/// each field under the name a client sends it by, the reference itself left out.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NewOrder {
    /// A member of the organisation: id or external id.
    pub owner: String,
    /// Unique in the campaign; made up when absent. The same request again returns the order
    /// it made; another request with the same reference is a `Conflict`.
    #[serde(skip)]
    pub reference: Option<String>,
    pub meta: Option<Value>,
    /// Pay the total with points from this wallet (id or external reference): the owner's, in
    /// the campaign.
    #[serde(rename = "walletId")]
    pub wallet: Option<String>,
    pub lines: Vec<NewLine>,
    /// A random order (`POST /v1/orders/random`): the price of its one line. Its lines were
    /// picked by chance, so they are not part of what makes a repeat the same request.
    #[serde(rename = "cost", serialize_with = "micros_if_any")]
    pub random_cost: Option<Tokens>,
}

fn micros_if_any<S: serde::Serializer>(cost: &Option<Tokens>, s: S) -> Result<S::Ok, S::Error> {
    cost.map(Tokens::micros).serialize(s)
}

#[derive(Debug, Clone)]
pub struct NewLine {
    pub product_id: String,
    /// May be left out when the product has one variant.
    pub variant_id: Option<String>,
    /// 1 to 100.
    pub quantity: u32,
    pub reference: Option<String>,
    pub booking: Option<NewBooking>,
    pub meta: Option<Value>,
}

/// The product as it was when ordered: what a line shows (version 1.9.5).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProductSummary {
    pub name: String,
    /// The variant's name.
    pub variant: String,
    pub description: Option<String>,
    pub primary_image: Option<String>,
    pub variant_description: Option<String>,
    pub offer_details: Option<String>,
    pub terms_and_conditions: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Order {
    pub id: String,
    pub campaign_id: String,
    pub reference: String,
    pub owner_id: String,
    /// The owner's external id (empty once the member was deleted).
    pub owner: String,
    pub total: Tokens,
    pub meta: Option<Value>,
    /// Paid with points: the wallet, and the BURN transaction of the lines that need no
    /// booking (each line that does is paid through a hold: `OrderLine::hold_id`).
    pub wallet_id: Option<String>,
    pub transaction_id: Option<String>,
    pub random: bool,
    pub date: DateTime<Utc>,
    /// Empty when the lines were not asked for.
    pub lines: Vec<OrderLine>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OrderLine {
    pub id: String,
    pub order_id: String,
    pub product_id: String,
    pub variant_id: String,
    pub reference: Option<String>,
    pub quantity: u32,
    /// One unit's price when ordered.
    pub cost: Tokens,
    pub total: Tokens,
    pub requires_booking: bool,
    pub product: ProductSummary,
    pub meta: Option<Value>,
    /// One per unit.
    pub codes: Vec<Code>,
    /// The booking going ahead, else the latest one.
    pub booking: Option<Booking>,
    /// When the line was cancelled (its points refunded, its codes voided).
    pub cancelled_at: Option<DateTime<Utc>>,
    /// A line that requires a booking, paid with points: the hold of its points, captured when
    /// its booking is confirmed, voided when the booking is cancelled or unsuccessful.
    pub hold_id: Option<String>,
}

/// A redemption code as a line shows it: masked (`••••-••••-•HTRC`) unless decrypted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Code {
    pub code: String,
    pub redeemed_at: Option<DateTime<Utc>>,
    /// When its line's cancel voided it: it can no longer be redeemed.
    pub voided_at: Option<DateTime<Utc>>,
}

/// A booking's date as the client gave it: its weekday is the one of its own offset.
pub type LocalDate = DateTime<FixedOffset>;

impl events::Payload for Order {
    const RECORD: &'static str = "order";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// Orders and bookings. Cheap to clone.
#[derive(Clone)]
pub struct Orders {
    db: Db,
    ledger: Ledger,
}

db_handle!(Orders);

impl std::fmt::Debug for Orders {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}

impl Orders {
    /// The orders in `db`, paid through `ledger`.
    pub fn on(db: Db, ledger: Ledger) -> Orders {
        Orders { db, ledger }
    }

    fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    fn members(&self) -> &Members {
        self.ledger.members()
    }

    fn programme(&self) -> &Programme {
        self.ledger.programme()
    }
}
