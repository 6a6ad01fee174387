//! The `externalId`s under which orders pay through the ledger: the ledger refuses to correct or
//! capture directly what an order paid, so that the order's own cancellation stays the one way
//! to give it back.

/// The `externalId` of an order's payment by points.
pub fn payment_key(order_id: &str) -> String {
    format!("order:{order_id}")
}

/// The `externalId` of the hold paying an order's line that needs a booking.
pub fn line_hold_key(order_id: &str, line_id: &str) -> String {
    format!("order:{order_id}:{line_id}")
}

/// The order an `externalId` says it pays: a payment's, a line's hold's, or the capture of
/// such a hold (`hold:order:<id>:<line>`).
pub fn paid_order(key: &str) -> Option<&str> {
    let rest = key.strip_prefix("hold:").unwrap_or(key);
    let order = rest.strip_prefix("order:")?;
    Some(order.split(':').next().unwrap_or(order))
}
