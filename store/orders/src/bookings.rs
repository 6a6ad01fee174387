//! Booking order lines whose product is booked in advance, and moving a booking along. A line
//! has at most one booking going ahead (REQUESTED, PENDING or CONFIRMED); its status moves only
//! along the state machine of `BookingStatus::can_become`, and its date must fall on one of the
//! product's weekdays, in the future, at one of the product's branches (`booking.rs`).

use chrono::{DateTime, Utc};

use super::booking::{
    Booking, BookingPatch, BookingRow, BookingStatus, INSERT_BOOKING, LINE_BOOKINGS, NewBooking,
    Rules, SELECT_BOOKING, booking_event, booking_from_row, shown_bookings,
};
use super::cancel::cancel_lines;
use super::plan::{BRANCHES, PRODUCT, ProductRow};
use crate::backend::{Steps, Tx};
use crate::{Campaign, FieldProblem, Orders, Page, Paged, StoreError};
use events::EventType;
use ledger::holds::Settle;
use ledger::holds::settle::{HoldRef, Settling};

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
    async fn book(self, tx: &mut impl Tx) -> Result<Booking, StoreError> {
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

impl Steps for LineBooking {
    type Output = Booking;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.book(tx).await
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
    async fn update(self, tx: &mut impl Tx) -> Result<Booking, StoreError> {
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
    tx: &mut impl Tx,
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

impl Steps for BookingUpdate {
    type Output = Booking;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.update(tx).await
    }
}

/// Bookings: a campaign's bookings and their status changes (scope: `&Campaign`).
impl Orders {
    /// Books order line `line_id` of the campaign: the line must require a booking and have
    /// none going ahead (`Refused`: `booking_not_required`, `booking_exists`); the date and
    /// branch must suit the product (`Rejected`).
    #[tracing::instrument(skip_all)]
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
            at: self.now(),
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
    #[tracing::instrument(skip_all)]
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
            at: self.now(),
        };
        self.write(update).await
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_booking(&self, campaign: &Campaign, id: &str) -> Result<Booking, StoreError> {
        let row: Option<BookingRow> = self
            .read_row(SELECT_BOOKING, params![campaign.id, id])
            .await?;
        booking_from_row(row.ok_or(StoreError::NotFound { what: "booking" })?)
    }

    /// The campaign's bookings, newest first, filtered.
    #[tracing::instrument(skip_all)]
    pub async fn list_bookings(
        &self,
        campaign: &Campaign,
        filter: &BookingFilter,
        page: Page,
    ) -> Result<Paged<Booking>, StoreError> {
        let owner = match &filter.owner {
            Some(reference) => match self
                .members()
                .member_id_of(&campaign.org_id, reference)
                .await?
            {
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
