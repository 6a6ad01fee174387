//! The limits every door holds input to (the API's bodies, batch files' rows, the catalogue
//! document, the CLI), declared once so that they cannot disagree, with the checks that hold
//! them.

use chrono::{DateTime, Utc};
use rules::Decimal;
use serde_json::Value;

/// Ids, references and short names.
pub const MAX_ID: usize = 128;
/// People's names.
pub const MAX_NAME: usize = 100;
/// Descriptions and comments.
pub const MAX_TEXT: usize = 256;
/// Texts people write at length (a review).
pub const MAX_LONG_TEXT: usize = 4000;
pub const MAX_EMAIL: usize = 254;
pub const MAX_PHONE: usize = 32;
/// Web addresses (a webhook endpoint, a campaign's logo, a product's image).
pub const MAX_URL: usize = 2_048;
pub const MAX_META_BYTES: usize = 16 * 1024;
/// How deep a meta object may nest: the object itself is level 1, a text or number inside an
/// object inside it level 3.
pub const MAX_META_DEPTH: usize = 8;
/// The largest purchase amount an earn may carry (a quintillion units of the currency): exact as
/// a decimal and as a double.
pub const MAX_EARN_AMOUNT: i64 = 1_000_000_000_000_000;
/// The most names a meta key may join (`store.code` is two): its value then sits at
/// `MAX_META_DEPTH`.
pub const MAX_META_PATH: usize = MAX_META_DEPTH - 1;

/// Why a value is refused. Each door says it in its own terms (the API's problem fields, a
/// batch row's reason code), from the one check here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Blank,
    /// A NUL character, which no text may hold (PostgreSQL cannot store one).
    Nul,
    /// A control character in an id (line breaks, tabs...), which paths and filters refuse.
    ControlCharacter,
    TooLong {
        max: usize,
    },
    Negative,
    TooLarge {
        max: i64,
    },
    NotAnObject,
    /// Nested deeper than `MAX_META_DEPTH`, or a NUL in a key or a text.
    Unfit,
    /// More than `MAX_META_BYTES` of JSON.
    TooBig,
    /// More decimals than `AMOUNT_DECIMALS`.
    TooPrecise,
    /// A client's key that starts as the keys the service makes for itself do
    /// (`RESERVED_KEY_PREFIXES`).
    Reserved {
        prefix: &'static str,
    },
    /// A transaction's date outside the window it may be dated in (`DateWindow`).
    OutOfWindow {
        earliest: DateTime<Utc>,
        latest: DateTime<Utc>,
    },
}

impl Refused {
    /// What is wrong, as a sentence's predicate ("must not be blank").
    pub fn message(self) -> String {
        match self {
            Refused::Blank => "must not be blank".into(),
            Refused::Nul => "must not contain NUL characters".into(),
            Refused::ControlCharacter => {
                "must not contain control characters (NUL, line breaks, tabs...)".into()
            }
            Refused::TooLong { max } => format!("must be at most {max} characters"),
            Refused::Negative => "must not be negative".into(),
            Refused::TooLarge { max } => format!("must be at most {max}"),
            Refused::NotAnObject => "must be a JSON object".into(),
            Refused::Unfit => format!(
                "must nest at most {MAX_META_DEPTH} levels and hold no NUL character in a key or \
                 a text"
            ),
            Refused::TooBig => format!("must be at most {MAX_META_BYTES} bytes of JSON"),
            Refused::TooPrecise => format!("must have at most {AMOUNT_DECIMALS} decimals"),
            Refused::Reserved { prefix } => format!(
                "must not start with `{prefix}`: the service makes the keys starting so for \
                 itself"
            ),
            Refused::OutOfWindow { earliest, latest } => format!(
                "must fall from {} to {} (UTC)",
                earliest.format("%Y-%m-%dT%H:%M:%SZ"),
                latest.format("%Y-%m-%dT%H:%M:%SZ")
            ),
        }
    }
}

/// A text of at most `max` characters that is not blank and holds no NUL.
pub fn text(value: &str, max: usize) -> Result<(), Refused> {
    if value.trim().is_empty() {
        Err(Refused::Blank)
    } else if value.contains('\0') {
        Err(Refused::Nul)
    } else if value.chars().count() > max {
        Err(Refused::TooLong { max })
    } else {
        Ok(())
    }
}

/// An id (a reference, a code...): a `text` of at most `MAX_ID` characters without control
/// characters, which nothing that names a record needs.
pub fn id(value: &str) -> Result<(), Refused> {
    text(value, MAX_ID)?;
    if value.chars().any(char::is_control) {
        return Err(Refused::ControlCharacter);
    }
    Ok(())
}

/// Decimals an amount (a purchase's, a return's) may have: as many as tokens have.
pub const AMOUNT_DECIMALS: u32 = 6;

/// What the keys the service makes for itself start with: a capture's burn (`hold:`), an
/// order's payment and its lines' holds (`order:`), an order's refunds (`cancel:`), a transfer's
/// receiving side (`transfer:`), an expiry (`lot:`), an operator's adjustment (`adjustment:`).
/// A client's key may not, so that no request can take a key the service will need.
pub const RESERVED_KEY_PREFIXES: [&str; 6] = [
    "hold:",
    "order:",
    "cancel:",
    "transfer:",
    "lot:",
    "adjustment:",
];

/// A client's key for a burn, hold, transfer or reversal: an `id` not in the service's own
/// space (`RESERVED_KEY_PREFIXES`).
pub fn client_key(value: &str) -> Result<(), Refused> {
    id(value)?;
    not_reserved(value, &RESERVED_KEY_PREFIXES)
}

/// What the earn ids the service makes for itself start with: a member's activity's award
/// (`activity:`). A client's earn id may not.
pub const RESERVED_EARN_PREFIXES: [&str; 1] = ["activity:"];

/// A client's earn id: an `id` not in the service's own space (`RESERVED_EARN_PREFIXES`).
pub fn earn_id(value: &str) -> Result<(), Refused> {
    id(value)?;
    not_reserved(value, &RESERVED_EARN_PREFIXES)
}

fn not_reserved(value: &str, prefixes: &[&'static str]) -> Result<(), Refused> {
    match prefixes.iter().find(|p| value.starts_with(**p)) {
        Some(prefix) => Err(Refused::Reserved { prefix }),
        None => Ok(()),
    }
}

/// `client_key` as the store refuses it: `Invalid` naming `externalId`.
pub fn check_client_key(key: &str) -> Result<(), crate::StoreError> {
    client_key(key).map_err(|refused| crate::StoreError::invalid("externalId", refused.message()))
}

/// An earn's purchase amount (or a return's): at least 0, at most `MAX_EARN_AMOUNT`, at most
/// `AMOUNT_DECIMALS` decimals.
pub fn earn_amount(amount: Decimal) -> Result<(), Refused> {
    if amount.normalize().scale() > AMOUNT_DECIMALS {
        Err(Refused::TooPrecise)
    } else if amount < Decimal::ZERO {
        Err(Refused::Negative)
    } else if amount > Decimal::from(MAX_EARN_AMOUNT) {
        Err(Refused::TooLarge {
            max: MAX_EARN_AMOUNT,
        })
    } else {
        Ok(())
    }
}

/// An earn's (or an order line's) meta: a JSON object within `MAX_META_DEPTH` levels and
/// `MAX_META_BYTES` bytes, with no NUL in a key or a text.
pub fn meta(value: &Value) -> Result<(), Refused> {
    if !value.is_object() {
        Err(Refused::NotAnObject)
    } else if !fits(value, 1) {
        Err(Refused::Unfit)
    } else if value.to_string().len() > MAX_META_BYTES {
        Err(Refused::TooBig)
    } else {
        Ok(())
    }
}

/// Whether `value`, at nesting level `level`, keeps within `MAX_META_DEPTH` and holds no NUL in
/// a key or a text.
fn fits(value: &Value, level: usize) -> bool {
    match value {
        Value::String(text) => !text.contains('\0'),
        Value::Array(items) => level < MAX_META_DEPTH && items.iter().all(|v| fits(v, level + 1)),
        Value::Object(fields) => {
            level < MAX_META_DEPTH
                && fields
                    .iter()
                    .all(|(key, v)| !key.contains('\0') && fits(v, level + 1))
        }
        _ => true,
    }
}
