//! The request bodies of orders and bookings, and how they become store values: every problem
//! of a body at once, each at its JSON path (`lines[2].booking.date`).

use serde::Deserialize;
use serde_json::{Number, Value};
use store::{BookingPatch, BookingStatus, LocalDate, NewBooking, NewLine, NewOrder};
use utoipa::ToSchema;
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

use crate::http::checks::{self, Checks, MAX_NAME, MAX_TEXT, Sign, nullable, schema};
use crate::http::error::ApiError;

/// Units one line may order.
const MAX_QUANTITY: u32 = 100;
/// Lines one order may hold.
pub const MAX_LINES: usize = 100;
/// People one booking may be for.
const MAX_PAX: u32 = 1000;
/// The most tokens a random order's line may cost.
const MAX_COST: i64 = 1_000_000_000_000;

fn whole(low: u32, high: u32, description: &str) -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(low))
        .maximum(Some(high))
        .description(Some(description))
        .build()
}

fn quantity() -> Object {
    whole(
        1,
        MAX_QUANTITY,
        "Units of the variant, 1 to 100; 1 when absent.",
    )
}

fn pax() -> Object {
    whole(1, MAX_PAX, "People the booking is for; 1 when absent.")
}

fn cost() -> Object {
    ObjectBuilder::new()
        .schema_type(Type::Number)
        .minimum(Some(0))
        .maximum(Some(MAX_COST))
        .multiple_of(Some(0.000_001))
        .description(Some(
            "Tokens the random line costs (at most 6 decimals); 1 when absent.",
        ))
        .build()
}

/// A new order. `owner` and `lines` are required.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OrderInput {
    /// Unique in the campaign: the same body again returns the first order; another body with
    /// it is 409. Made up when absent.
    #[schema(schema_with = schema::id_or_null)]
    reference: Option<String>,
    /// The member: external id or id.
    #[schema(schema_with = schema::id, required = true)]
    owner: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
    /// Pay the total with points from this wallet of the owner (id or external reference),
    /// in the same transaction as the order.
    #[schema(schema_with = schema::id_or_null)]
    wallet_id: Option<String>,
    #[schema(required = true, min_items = 1, max_items = 100)]
    lines: Option<Vec<LineInput>>,
}

#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LineInput {
    #[schema(schema_with = schema::id, required = true)]
    product_id: Option<String>,
    /// May be left out when the product has one variant.
    #[schema(schema_with = schema::id_or_null)]
    variant_id: Option<String>,
    #[schema(schema_with = quantity)]
    quantity: Option<Number>,
    #[schema(schema_with = schema::id_or_null)]
    reference: Option<String>,
    /// Book the line with the order (its product must be booked in advance).
    booking: Option<BookingInput>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
}

/// A booking: `firstName`, `lastName` and `date` are required. The date must be in the future,
/// on one of the product's weekdays (in the date's own offset); `branch` one of the product's
/// branches (it may be left out when the product has one).
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BookingInput {
    #[schema(schema_with = schema::name, required = true)]
    first_name: Option<String>,
    #[schema(schema_with = schema::name, required = true)]
    last_name: Option<String>,
    #[schema(schema_with = schema::email)]
    email: Option<String>,
    #[schema(schema_with = schema::phone)]
    phone: Option<String>,
    /// The branch's id.
    #[schema(schema_with = schema::id_or_null)]
    branch: Option<String>,
    #[schema(schema_with = schema::date_time_required, required = true)]
    date: Option<String>,
    #[schema(schema_with = pax)]
    pax: Option<Number>,
    #[schema(schema_with = schema::text_or_null)]
    notes: Option<String>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
}

/// A random order: one unit of a product drawn by weight. `owner` is required.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RandomOrderInput {
    /// As for orders: the same body again returns the first order.
    #[schema(schema_with = schema::id_or_null)]
    reference: Option<String>,
    /// The member: external id or id.
    #[schema(schema_with = schema::id, required = true)]
    owner: Option<String>,
    #[schema(schema_with = cost)]
    cost: Option<Number>,
    #[schema(schema_with = schema::meta)]
    meta: Option<Value>,
    /// Pay with points from this wallet of the owner (id or external reference).
    #[schema(schema_with = schema::id_or_null)]
    wallet_id: Option<String>,
}

/// A change to a booking; every field is optional.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct BookingUpdate {
    /// Along the state machine: REQUESTED -> PENDING | CONFIRMED | UNSUCCESSFUL | CANCELLED;
    /// PENDING -> CONFIRMED | UNSUCCESSFUL | CANCELLED; CONFIRMED -> CANCELLED. The current
    /// status again changes nothing.
    status: Option<Status>,
    #[schema(schema_with = schema::date_time_or_null)]
    date: Option<String>,
    #[schema(schema_with = pax)]
    pax: Option<Number>,
    /// `null` clears them.
    #[serde(default, deserialize_with = "nullable")]
    #[schema(schema_with = schema::text_or_null)]
    notes: Option<Option<String>>,
}

/// A booking's status. (Named apart from the member's `Status` in the OpenAPI document, where
/// one name holds one schema.)
#[derive(Debug, Clone, Copy, Deserialize, ToSchema)]
#[serde(rename_all = "UPPERCASE")]
#[schema(as = BookingStatus)]
pub enum Status {
    Requested,
    Pending,
    Confirmed,
    Unsuccessful,
    Cancelled,
}

impl From<Status> for BookingStatus {
    fn from(status: Status) -> Self {
        match status {
            Status::Requested => BookingStatus::Requested,
            Status::Pending => BookingStatus::Pending,
            Status::Confirmed => BookingStatus::Confirmed,
            Status::Unsuccessful => BookingStatus::Unsuccessful,
            Status::Cancelled => BookingStatus::Cancelled,
        }
    }
}

fn date(checks: &mut Checks, field: &str, value: Option<String>) -> Option<LocalDate> {
    let value = value?;
    let parsed = checks::local_date_time(&value);
    if parsed.is_none() {
        checks.fail(
            field,
            "invalid_value",
            format!("`{value}` is not an RFC 3339 date-time (2026-11-18T19:00:00+02:00)"),
        );
    }
    parsed
}

/// `input` read as a booking, its fields named under `prefix` (empty at the top of a body).
fn booking(checks: &mut Checks, prefix: &str, input: BookingInput) -> Option<NewBooking> {
    let at = |field: &str| {
        if prefix.is_empty() {
            field.to_string()
        } else {
            format!("{prefix}.{field}")
        }
    };
    let errors_before = checks.count();
    let first_name = checks.required(&at("firstName"), input.first_name, MAX_NAME);
    let last_name = checks.required(&at("lastName"), input.last_name, MAX_NAME);
    let email = checks.email(&at("email"), input.email);
    let phone = checks.phone(&at("phone"), input.phone);
    let branch = checks.id(&at("branch"), input.branch);
    let when = date(checks, &at("date"), input.date.clone());
    if input.date.is_none() {
        checks.fail(&at("date"), "missing_field", "is required");
    }
    let pax = checks.whole(&at("pax"), input.pax.as_ref(), 1..=MAX_PAX);
    let notes = checks.text(&at("notes"), input.notes, MAX_TEXT);
    let meta = checks.meta_at(&at("meta"), input.meta);
    if checks.count() > errors_before {
        return None;
    }
    Some(NewBooking {
        first_name,
        last_name,
        email,
        phone,
        branch,
        date: when?,
        pax: pax.unwrap_or(1),
        notes,
        meta,
    })
}

pub fn new_order(input: OrderInput) -> Result<NewOrder, ApiError> {
    let mut checks = Checks::default();
    let owner = checks.required_id("owner", input.owner);
    let reference = checks.id("reference", input.reference);
    let wallet = checks.id("walletId", input.wallet_id);
    let meta = checks.meta(input.meta);
    let inputs = input.lines.unwrap_or_default();
    if inputs.is_empty() {
        checks.fail("lines", "missing_field", "is required: at least one line");
    } else if inputs.len() > MAX_LINES {
        checks.fail(
            "lines",
            "invalid_value",
            format!("must hold at most {MAX_LINES} lines"),
        );
    }
    let mut lines = Vec::with_capacity(inputs.len());
    for (i, line) in inputs.into_iter().enumerate() {
        let at = |field: &str| format!("lines[{i}].{field}");
        let product_id = checks.required_id(&at("productId"), line.product_id);
        let variant_id = checks.id(&at("variantId"), line.variant_id);
        let quantity = checks.whole(&at("quantity"), line.quantity.as_ref(), 1..=MAX_QUANTITY);
        let reference = checks.id(&at("reference"), line.reference);
        let booking = line
            .booking
            .and_then(|b| booking(&mut checks, &format!("lines[{i}].booking"), b));
        let meta = checks.meta_at(&at("meta"), line.meta);
        lines.push(NewLine {
            product_id,
            variant_id,
            quantity: quantity.unwrap_or(1),
            reference,
            booking,
            meta,
        });
    }
    checks.finish(NewOrder {
        owner,
        reference,
        meta,
        wallet,
        lines,
        random_cost: None,
    })
}

/// A random order's request; its line is drawn later.
pub fn new_random_order(input: RandomOrderInput) -> Result<NewOrder, ApiError> {
    let mut checks = Checks::default();
    let cost = match input.cost {
        None => Some(store::Tokens::whole(1)),
        Some(cost) => checks.tokens("cost", Some(cost), Sign::NonNegative, MAX_COST),
    };
    let order = NewOrder {
        owner: checks.required_id("owner", input.owner),
        reference: checks.id("reference", input.reference),
        meta: checks.meta(input.meta),
        wallet: checks.id("walletId", input.wallet_id),
        lines: Vec::new(),
        random_cost: cost,
    };
    checks.finish(order)
}

pub fn new_booking(input: BookingInput) -> Result<NewBooking, ApiError> {
    let mut checks = Checks::default();
    let booking = booking(&mut checks, "", input);
    match booking {
        Some(booking) => checks.finish(booking),
        None => Err(checks
            .finish(())
            .expect_err("a booking that was not read has errors")),
    }
}

pub fn booking_patch(input: BookingUpdate) -> Result<BookingPatch, ApiError> {
    let mut checks = Checks::default();
    let patch = BookingPatch {
        status: input.status.map(BookingStatus::from),
        date: date(&mut checks, "date", input.date),
        pax: checks.whole("pax", input.pax.as_ref(), 1..=MAX_PAX),
        notes: input
            .notes
            .map(|notes| checks.text("notes", notes, MAX_TEXT)),
    };
    checks.finish(patch)
}
