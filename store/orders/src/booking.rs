//! A booking of an order line: its record and status, the rules its date and branch keep, its
//! row, and the events that tell of it. Placing an order (`place.rs`), booking a line and moving
//! a booking along (`bookings.rs`) and cancelling (`cancel.rs`) all build on this.

use chrono::{DateTime, Datelike, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;

use super::LocalDate;
use crate::backend::{Arg, ToArg, Tx};
use crate::common::ids::new_id;
use crate::error::known;
use crate::{Campaign, FieldProblem, StoreError, Weekdays};
use events::{EventType, NewEvent};

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum BookingStatus ("booking status") {
        Requested = "REQUESTED",
        Pending = "PENDING",
        Confirmed = "CONFIRMED",
        Unsuccessful = "UNSUCCESSFUL",
        Cancelled = "CANCELLED",
    }
}

impl BookingStatus {
    /// The state machine: REQUESTED -> PENDING | CONFIRMED | UNSUCCESSFUL | CANCELLED;
    /// PENDING -> CONFIRMED | UNSUCCESSFUL | CANCELLED; CONFIRMED -> CANCELLED; UNSUCCESSFUL
    /// and CANCELLED are final.
    pub fn can_become(self, next: BookingStatus) -> bool {
        use BookingStatus::*;
        matches!(
            (self, next),
            (Requested, Pending | Confirmed | Unsuccessful | Cancelled)
                | (Pending, Confirmed | Unsuccessful | Cancelled)
                | (Confirmed, Cancelled)
        )
    }

    /// Still going ahead: the line cannot have another booking.
    pub fn is_active(self) -> bool {
        matches!(
            self,
            BookingStatus::Requested | BookingStatus::Pending | BookingStatus::Confirmed
        )
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewBooking {
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    /// One of the product's branches; may be left out when it has one (or none).
    pub branch: Option<String>,
    pub date: LocalDate,
    /// At least 1.
    pub pax: u32,
    pub notes: Option<String>,
    pub meta: Option<Value>,
}

/// A change to a booking; `None` keeps the field.
#[derive(Debug, Clone, Default)]
pub struct BookingPatch {
    pub status: Option<BookingStatus>,
    pub date: Option<LocalDate>,
    pub pax: Option<u32>,
    /// `Some(None)` clears the notes.
    pub notes: Option<Option<String>>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Booking {
    pub id: String,
    /// The order line booked (the seed's `redemptionId`).
    pub line_id: String,
    pub order_id: String,
    pub owner_id: String,
    pub status: BookingStatus,
    pub first_name: String,
    pub last_name: String,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub branch: Option<String>,
    pub date: DateTime<Utc>,
    pub pax: u32,
    pub notes: Option<String>,
    pub meta: Option<Value>,
    pub date_requested: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What a booking's date and branch must satisfy: the product's weekdays and branches.
pub(crate) struct Rules<'a> {
    pub weekdays: Weekdays,
    pub branches: &'a [String],
}

fn path(prefix: &str, field: &str) -> String {
    if prefix.is_empty() {
        field.to_string()
    } else {
        format!("{prefix}.{field}")
    }
}

const WEEK: [chrono::Weekday; 7] = {
    use chrono::Weekday::*;
    [Mon, Tue, Wed, Thu, Fri, Sat, Sun]
};
const DAY_NAMES: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

impl Rules<'_> {
    /// Checks `date` (in the future, on a weekday the product allows, in the date's own
    /// offset); a problem at `{prefix}.date` when it fails.
    pub(super) fn check_date(
        &self,
        prefix: &str,
        date: LocalDate,
        now: DateTime<Utc>,
    ) -> Option<FieldProblem> {
        let day = date.weekday();
        if date.with_timezone(&Utc) < now {
            Some(FieldProblem::new(
                path(prefix, "date"),
                "must not be in the past",
            ))
        } else if !self.weekdays.allows(day) {
            let allowed: Vec<&str> = WEEK
                .iter()
                .zip(DAY_NAMES)
                .filter(|(day, _)| self.weekdays.allows(**day))
                .map(|(_, name)| name)
                .collect();
            Some(FieldProblem::new(
                path(prefix, "date"),
                format!(
                    "is a {}; the product can be booked on: {}",
                    DAY_NAMES[day.num_days_from_monday() as usize],
                    if allowed.is_empty() {
                        "no day".to_string()
                    } else {
                        allowed.join(", ")
                    }
                ),
            ))
        } else {
            None
        }
    }

    /// Checks a new booking; its branch (given, or the product's only one) when it passes,
    /// else `None` with every problem added to `problems`.
    pub(crate) fn check(
        &self,
        prefix: &str,
        booking: &NewBooking,
        now: DateTime<Utc>,
        problems: &mut Vec<FieldProblem>,
    ) -> Option<Option<String>> {
        let before = problems.len();
        problems.extend(self.check_date(prefix, booking.date, now));
        if booking.pax == 0 {
            problems.push(FieldProblem::new(path(prefix, "pax"), "must be at least 1"));
        }
        let branch = match (&booking.branch, self.branches) {
            (Some(b), branches) if branches.contains(b) => Some(b.clone()),
            (Some(b), []) => {
                problems.push(FieldProblem::new(
                    path(prefix, "branch"),
                    format!("`{b}`: the product has no branches"),
                ));
                None
            }
            (Some(b), branches) => {
                problems.push(FieldProblem::new(
                    path(prefix, "branch"),
                    format!(
                        "`{b}` is not a branch of the product; its branches: {}",
                        branches.join(", ")
                    ),
                ));
                None
            }
            (None, [one]) => Some(one.clone()),
            (None, []) => None,
            (None, many) => {
                problems.push(FieldProblem::new(
                    path(prefix, "branch"),
                    format!(
                        "is required: the product has {} branches: {}",
                        many.len(),
                        many.join(", ")
                    ),
                ));
                None
            }
        };
        (problems.len() == before).then_some(branch)
    }
}

macro_rules! booking_columns {
    () => {
        "b.id, b.line_id, b.order_id, b.owner_id, b.status, b.first_name, b.last_name, b.email, \
         b.phone, b.branch_id, b.date, b.pax, b.notes, b.meta, b.date_requested, b.updated_at"
    };
}

row_struct! {
    /// The columns of `booking_columns!`, in order.
    pub(crate) struct BookingRow {
        id: String,
        line_id: String,
        order_id: String,
        owner_id: String,
        status: String,
        first_name: String,
        last_name: String,
        email: Option<String>,
        phone: Option<String>,
        branch_id: Option<String>,
        date: DateTime<Utc>,
        pax: i64,
        notes: Option<String>,
        meta: Option<Json<Value>>,
        date_requested: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

pub(crate) fn booking_from_row(r: BookingRow) -> Result<Booking, StoreError> {
    Ok(Booking {
        status: known(
            BookingStatus::parse(&r.status),
            "bookings",
            "status",
            &r.status,
        )?,
        id: r.id,
        line_id: r.line_id,
        order_id: r.order_id,
        owner_id: r.owner_id,
        first_name: r.first_name,
        last_name: r.last_name,
        email: r.email,
        phone: r.phone,
        branch: r.branch_id,
        date: r.date,
        pax: u32::try_from(r.pax).unwrap_or_default(),
        notes: r.notes,
        meta: r.meta.map(|m| m.0),
        date_requested: r.date_requested,
        updated_at: r.updated_at,
    })
}

pub(crate) const INSERT_BOOKING: &str = "INSERT INTO bookings (id, org_id, campaign_id, order_id, \
     line_id, owner_id, status, first_name, last_name, email, phone, branch_id, date, pax, notes, \
     meta, date_requested, updated_at) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)";

impl Booking {
    /// Its values for `INSERT_BOOKING`, in `campaign`.
    pub(crate) fn args<'a>(&'a self, campaign: &'a Campaign) -> [Arg<'a>; 18] {
        [
            self.id.to_arg(),
            campaign.org_id.to_arg(),
            campaign.id.to_arg(),
            self.order_id.to_arg(),
            self.line_id.to_arg(),
            self.owner_id.to_arg(),
            self.status.as_str().to_arg(),
            self.first_name.to_arg(),
            self.last_name.to_arg(),
            self.email.to_arg(),
            self.phone.to_arg(),
            self.branch.to_arg(),
            self.date.to_arg(),
            self.pax.to_arg(),
            self.notes.to_arg(),
            self.meta.to_arg(),
            self.date_requested.to_arg(),
            self.updated_at.to_arg(),
        ]
    }

    /// A new booking of line `line_id` of order `order_id`, at `branch`.
    pub(crate) fn new(
        new: NewBooking,
        branch: Option<String>,
        line_id: &str,
        order_id: &str,
        owner_id: &str,
        at: DateTime<Utc>,
    ) -> Booking {
        Booking {
            id: new_id(),
            line_id: line_id.to_string(),
            order_id: order_id.to_string(),
            owner_id: owner_id.to_string(),
            status: BookingStatus::Requested,
            first_name: new.first_name,
            last_name: new.last_name,
            email: new.email,
            phone: new.phone,
            branch,
            date: new.date.with_timezone(&Utc),
            pax: new.pax,
            notes: new.notes,
            meta: new.meta,
            date_requested: at,
            updated_at: at,
        }
    }
}

pub(super) const SELECT_BOOKING: &str = concat!(
    "SELECT ",
    booking_columns!(),
    " FROM bookings b WHERE b.campaign_id = $1 AND b.id = $2"
);

/// Records `kind` (`booking.created`, `booking.status_changed`) for `booking` as it now is.
pub(super) async fn booking_event(
    tx: &mut impl Tx,
    campaign: &Campaign,
    kind: EventType,
    booking: &Booking,
) -> Result<(), StoreError> {
    let at = booking.updated_at;
    let event = NewEvent::new(&campaign.org_id, Some(&campaign.id), kind, booking, at)?;
    events::record(tx, &event).await
}

/// Records `booking.status_changed` for booking `id` of the campaign, as it now is.
pub(super) async fn booking_changed(
    tx: &mut impl Tx,
    campaign: &Campaign,
    id: &str,
) -> Result<(), StoreError> {
    let row: Option<BookingRow> = tx.row(SELECT_BOOKING, params![campaign.id, id]).await?;
    let booking = booking_from_row(row.ok_or(StoreError::NotFound { what: "booking" })?)?;
    booking_event(tx, campaign, EventType::BookingStatusChanged, &booking).await
}

/// The bookings of lines `{key}`.
pub(super) const LINE_BOOKINGS: &str = concat!(
    "SELECT ",
    booking_columns!(),
    " FROM bookings b WHERE b.line_id {key}"
);

/// Of the bookings `rows`, the one each line shows: the one going ahead, else the latest.
pub(super) fn shown_bookings(rows: Vec<BookingRow>) -> Result<Vec<Booking>, StoreError> {
    let mut shown: Vec<Booking> = Vec::new();
    for booking in rows.into_iter().map(booking_from_row) {
        let booking = booking?;
        match shown.iter_mut().find(|b| b.line_id == booking.line_id) {
            None => shown.push(booking),
            Some(kept) => {
                let rank = |b: &Booking| (b.status.is_active(), b.date_requested);
                if rank(&booking) > rank(kept) {
                    *kept = booking;
                }
            }
        }
    }
    Ok(shown)
}

impl events::Payload for Booking {
    const RECORD: &'static str = "booking";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}
