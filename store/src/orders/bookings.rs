//! Bookings of order lines whose product is booked in advance. A line has at most one booking
//! going ahead (REQUESTED, PENDING or CONFIRMED); its status moves only along the state machine
//! of `BookingStatus::can_become`, and its date must fall on one of the product's weekdays, in
//! the future, at one of the product's branches.

use chrono::{DateTime, Datelike, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;

use super::LocalDate;
use super::cancel::cancel_lines;
use super::plan::{BRANCHES, PRODUCT, ProductRow};
use crate::backend::{Arg, PgTx, SqliteTx, ToArg, Tx, Work};
use crate::common::ids::{new_id, now};
use crate::error::known;
use crate::events::{self, EventData, EventType, NewEvent};
use crate::ledger::burn::Debiting;
use crate::ledger::holds::Settle;
use crate::ledger::holds::settle::{HoldRef, Settling};
use crate::{Campaign, FieldProblem, Page, Paged, Store, StoreError, Weekdays};

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
    fn check_date(
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

/// The refusal of a second booking going ahead for one line.
fn already_booked(line_id: &str) -> StoreError {
    StoreError::refused(
        "booking_exists",
        None,
        format!("order line `{line_id}` already has a booking going ahead; cancel it first"),
    )
}

/// The refusal of a booking whose product a later import removed from the catalogue.
fn withdrawn(product_id: &str) -> StoreError {
    StoreError::refused(
        "product_withdrawn",
        None,
        format!("product `{product_id}` is no longer in the catalogue, so it cannot be booked"),
    )
}

const SELECT_BOOKING: &str = concat!(
    "SELECT ",
    booking_columns!(),
    " FROM bookings b WHERE b.campaign_id = $1 AND b.id = $2"
);

/// Filters of the booking list.
#[derive(Debug, Clone, Default)]
pub struct BookingFilter {
    pub id: Option<String>,
    /// A member id or external id.
    pub owner: Option<String>,
}

/// Booking an order line: one transaction.
struct LineBooking {
    campaign: Campaign,
    line_id: String,
    new: NewBooking,
    at: DateTime<Utc>,
}

impl LineBooking {
    async fn run(self, tx: &mut impl Tx) -> Result<Booking, StoreError> {
        const LINE: &str = "SELECT l.order_id, l.product_id, l.requires_booking, o.owner_id, \
             l.cancelled_at IS NOT NULL FROM order_lines l JOIN orders o ON o.id = l.order_id \
             WHERE l.campaign_id = $1 AND l.id = $2";
        const ACTIVE: &str = "SELECT id FROM bookings WHERE line_id = $1 \
             AND status IN ('REQUESTED', 'PENDING', 'CONFIRMED')";
        let (campaign, line_id) = (&self.campaign, self.line_id.as_str());
        let line: Option<(String, String, bool, String, bool)> =
            tx.row(LINE, params![campaign.id, line_id]).await?;
        let (order_id, product_id, requires, owner_id, cancelled) =
            line.ok_or(StoreError::NotFound { what: "order line" })?;
        if cancelled {
            return Err(StoreError::refused(
                "line_cancelled",
                None,
                format!("order line `{line_id}` was cancelled"),
            ));
        }
        if !requires {
            return Err(StoreError::refused(
                "booking_not_required",
                None,
                format!("order line `{line_id}` is for a product that is not booked in advance"),
            ));
        }
        let active: Option<(String,)> = tx.row(ACTIVE, params![line_id]).await?;
        if active.is_some() {
            return Err(already_booked(line_id));
        }
        let product: Option<ProductRow> = tx.row(PRODUCT, params![campaign.id, product_id]).await?;
        let product = product.ok_or_else(|| withdrawn(&product_id))?;
        let branches: Vec<(String,)> = tx.rows(BRANCHES, params![campaign.id, product_id]).await?;
        let branches: Vec<String> = branches.into_iter().map(|(b,)| b).collect();
        let rules = Rules {
            weekdays: product.weekdays.0,
            branches: &branches,
        };
        let mut problems = Vec::new();
        let Some(branch) = rules.check("", &self.new, self.at, &mut problems) else {
            return Err(StoreError::Rejected(problems));
        };
        let booking = Booking::new(self.new, branch, line_id, &order_id, &owner_id, self.at);
        tx.execute(INSERT_BOOKING, &booking.args(campaign)).await?;
        booking_event(tx, campaign, EventType::BookingCreated, &booking).await?;
        Ok(booking)
    }
}

/// Records `kind` (`booking.created`, `booking.status_changed`) for `booking` as it now is.
pub(super) async fn booking_event(
    tx: &mut impl Tx,
    campaign: &Campaign,
    kind: EventType,
    booking: &Booking,
) -> Result<(), StoreError> {
    let data = EventData::Booking(Box::new(booking.clone()));
    let event = NewEvent::new(&campaign.org_id, Some(&campaign.id), kind, &data)?;
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

impl Work for LineBooking {
    type Output = Booking;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Booking, StoreError> {
        self.run(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Booking, StoreError> {
        self.run(tx).await
    }
}

/// Changing a booking: one transaction. A status change settles the hold its line is paid
/// through (see `settle_line`).
struct BookingUpdate {
    campaign: Campaign,
    id: String,
    patch: BookingPatch,
    at: DateTime<Utc>,
}

impl BookingUpdate {
    async fn run(self, tx: &mut impl Debiting) -> Result<Booking, StoreError> {
        const LINE_PRODUCT: &str = "SELECT product_id FROM order_lines WHERE id = $1";
        const UPDATE: &str = "UPDATE bookings SET status = $3, date = $4, pax = $5, notes = $6, \
             updated_at = $7 WHERE campaign_id = $1 AND id = $2";
        let (campaign_id, id, patch, at) = (&self.campaign.id, &self.id, self.patch, self.at);
        let row: Option<BookingRow> = tx
            .row_locked(SELECT_BOOKING, params![campaign_id, id])
            .await?;
        let before = booking_from_row(row.ok_or(StoreError::NotFound { what: "booking" })?)?;
        let mut after = before.clone();
        if let Some(next) = patch.status {
            if next != before.status && !before.status.can_become(next) {
                return Err(StoreError::refused(
                    "illegal_transition",
                    Some("status".into()),
                    format!(
                        "a booking cannot go from {} to {}",
                        before.status.as_str(),
                        next.as_str()
                    ),
                ));
            }
            after.status = next;
        }
        if let Some(date) = patch.date {
            after.date = date.with_timezone(&Utc);
        }
        if let Some(pax) = patch.pax {
            after.pax = pax;
        }
        if let Some(notes) = patch.notes {
            after.notes = notes;
        }
        let details_changed =
            (after.date, after.pax, &after.notes) != (before.date, before.pax, &before.notes);
        if details_changed && !before.status.is_active() {
            return Err(StoreError::refused(
                "booking_closed",
                None,
                format!(
                    "the booking is {}: its date, pax and notes no longer change",
                    before.status.as_str()
                ),
            ));
        }
        let mut problems = Vec::new();
        if let Some(date) = patch.date.filter(|_| after.date != before.date) {
            let (product_id,): (String,) = tx
                .row(LINE_PRODUCT, params![before.line_id])
                .await?
                .ok_or(StoreError::NotFound { what: "order line" })?;
            let product: Option<ProductRow> =
                tx.row(PRODUCT, params![campaign_id, product_id]).await?;
            let product = product.ok_or_else(|| withdrawn(&product_id))?;
            let rules = Rules {
                weekdays: product.weekdays.0,
                branches: &[],
            };
            problems.extend(rules.check_date("", date, at));
        }
        if after.pax == 0 {
            problems.push(FieldProblem::new("pax", "must be at least 1"));
        }
        if !problems.is_empty() {
            return Err(StoreError::Rejected(problems));
        }
        if after == before {
            return Ok(before);
        }
        after.updated_at = at;
        let (status, pax) = (after.status.as_str(), after.pax);
        let args = params![campaign_id, id, status, after.date, pax, after.notes, at];
        tx.execute(UPDATE, args).await?;
        if after.status != before.status {
            let changed = EventType::BookingStatusChanged;
            booking_event(tx, &self.campaign, changed, &after).await?;
            settle_line(tx, &self.campaign, &after, at).await?;
        }
        Ok(after)
    }
}

/// What a booking's new status does to the hold its line is paid through, if it is still held:
/// CONFIRMED captures it (the member pays); UNSUCCESSFUL or CANCELLED cancels the line (its
/// hold voided, its codes voided, its stock returned: the member does not pay for a booking
/// the partner could not honour, and orders again to try another).
async fn settle_line(
    tx: &mut impl Debiting,
    campaign: &Campaign,
    booking: &Booking,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    const HOLD: &str = "SELECT h.id FROM order_lines l JOIN holds h ON h.id = l.hold_id \
         WHERE l.id = $1 AND h.status = 'held'";
    let Some((hold_id,)) = tx.row::<(String,)>(HOLD, params![booking.line_id]).await? else {
        return Ok(());
    };
    match booking.status {
        BookingStatus::Confirmed => {
            let capture = Settling {
                hold: HoldRef::Id(hold_id),
                how: Settle::Capture(None),
                at,
            };
            capture.run(tx).await??;
        }
        BookingStatus::Unsuccessful | BookingStatus::Cancelled => {
            cancel_lines(tx, campaign, &booking.order_id, Some(&booking.line_id), at).await?;
        }
        BookingStatus::Requested | BookingStatus::Pending => {}
    }
    Ok(())
}

impl Work for BookingUpdate {
    type Output = Booking;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Booking, StoreError> {
        self.run(tx).await
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Booking, StoreError> {
        self.run(tx).await
    }
}

/// Bookings: a campaign's bookings and their status changes (scope: `&Campaign`).
impl Store {
    /// Books order line `line_id` of the campaign: the line must require a booking and have
    /// none going ahead (`Refused`: `booking_not_required`, `booking_exists`); the date and
    /// branch must suit the product (`Rejected`).
    pub async fn create_booking(
        &self,
        campaign: &Campaign,
        line_id: &str,
        new: NewBooking,
    ) -> Result<Booking, StoreError> {
        let booking = LineBooking {
            campaign: campaign.clone(),
            line_id: line_id.to_string(),
            new,
            at: now(),
        };
        let result = self.write(booking).await;
        match result {
            // A booking made at the same moment won the line.
            Err(err) if err.is_unique_violation() => Err(already_booked(line_id)),
            other => other,
        }
    }

    /// Changes booking `id`: its status along the state machine (`Refused`:
    /// `illegal_transition`), its date (checked as when booked), pax and notes. A booking that
    /// is over (UNSUCCESSFUL, CANCELLED) keeps its details (`Refused`: `booking_closed`).
    /// Nothing changed: the booking as it was.
    pub async fn update_booking(
        &self,
        campaign: &Campaign,
        id: &str,
        patch: BookingPatch,
    ) -> Result<Booking, StoreError> {
        let update = BookingUpdate {
            campaign: campaign.clone(),
            id: id.to_string(),
            patch,
            at: now(),
        };
        self.write(update).await
    }

    pub async fn get_booking(&self, campaign: &Campaign, id: &str) -> Result<Booking, StoreError> {
        let row: Option<BookingRow> = self
            .read_row(SELECT_BOOKING, params![campaign.id, id])
            .await?;
        booking_from_row(row.ok_or(StoreError::NotFound { what: "booking" })?)
    }

    /// The campaign's bookings, newest first, filtered.
    pub async fn list_bookings(
        &self,
        campaign: &Campaign,
        filter: &BookingFilter,
        page: Page,
    ) -> Result<Paged<Booking>, StoreError> {
        let owner = match &filter.owner {
            Some(reference) => match self.member_id_of(&campaign.org_id, reference).await? {
                Some(id) => Some(id),
                None => {
                    return Ok(Paged {
                        items: Vec::new(),
                        total: 0,
                        page,
                    });
                }
            },
            None => None,
        };
        let rows = self
            .read_page(
                page,
                booking_columns!(),
                "FROM bookings b WHERE b.campaign_id = $1 AND ($2 IS NULL OR b.id = $2) \
                AND ($3 IS NULL OR b.owner_id = $3)",
                "b.date_requested DESC, b.id DESC",
                params![&campaign.id, &filter.id, &owner],
            )
            .await?;
        Paged::of(rows, page, booking_from_row)
    }

    /// The booking each of `line_ids` shows: the one going ahead, else the latest.
    pub(crate) async fn line_bookings(
        &self,
        line_ids: &[&str],
    ) -> Result<Vec<Booking>, StoreError> {
        let rows: Vec<BookingRow> = self.read_each(LINE_BOOKINGS, params![], line_ids).await?;
        shown_bookings(rows)
    }
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
