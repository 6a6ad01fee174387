//! An earn id used again, by either door (an API request, a batch-file row): the same earn
//! (answered as the first was) or another one, refused as `already_exists` naming the first
//! field that differs. The fields are compared as the ledger keeps them (the wallet as found, the
//! amount as a number, the date to the microsecond), so naming a wallet by its reference once and
//! by its id the next time is the same earn.

use std::str::FromStr;

use chrono::{DateTime, TimeDelta, Utc};
use rules::Decimal;
use serde_json::Value;
use sqlx::types::Json;

use crate::{EarnInput, StoreError};

/// The columns of `EarlierEarn`, in order.
macro_rules! earlier_columns {
    () => {
        "idem_key, id, batch_id, wallet_id, source_amount, date, description, comment, meta"
    };
}
pub(crate) use earlier_columns;

row_struct! {
    /// An EARN transaction, as far as telling a repeat of it from another earn needs.
    pub(crate) struct EarlierEarn {
        idem_key: Vec<u8>,
        id: String,
        batch_id: Option<String>,
        wallet_id: String,
        source_amount: Option<String>,
        date: DateTime<Utc>,
        description: Option<String>,
        comment: Option<String>,
        meta: Option<Json<Value>>,
    }
}

impl EarlierEarn {
    /// The first field in which `earn`, for wallet `wallet_id`, is not this earn.
    pub(crate) fn differs(&self, earn: &EarnInput, wallet_id: &str) -> Option<&'static str> {
        let earlier = Facts {
            wallet_id: &self.wallet_id,
            amount: self.source_amount.as_deref().unwrap_or_default(),
            date: self.date,
            description: self.description.as_deref(),
            comment: self.comment.as_deref(),
            meta: self.meta.as_ref().map(|m| &m.0),
        };
        earlier.differs(&Facts::of(earn, wallet_id))
    }
}

/// What makes an earn the one it is, besides its id.
pub(crate) struct Facts<'a> {
    wallet_id: &'a str,
    amount: &'a str,
    date: DateTime<Utc>,
    description: Option<&'a str>,
    comment: Option<&'a str>,
    meta: Option<&'a Value>,
}

impl<'a> Facts<'a> {
    pub(crate) fn of(earn: &'a EarnInput, wallet_id: &'a str) -> Self {
        Facts {
            wallet_id,
            amount: &earn.amount,
            date: earn.date,
            description: earn.description.as_deref(),
            comment: earn.comment.as_deref(),
            meta: earn.meta.as_ref(),
        }
    }

    /// The first field, by its name in the API, in which `other` differs from this earn.
    pub(crate) fn differs(&self, other: &Facts) -> Option<&'static str> {
        let amounts_equal = match (
            Decimal::from_str(self.amount),
            Decimal::from_str(other.amount),
        ) {
            (Ok(a), Ok(b)) => a == b,
            _ => self.amount == other.amount,
        };
        let fields = [
            ("walletId", self.wallet_id == other.wallet_id),
            ("amount", amounts_equal),
            // Kept to the microsecond (PostgreSQL rounds what it is given, SQLite keeps it).
            (
                "date",
                (self.date - other.date).abs() < TimeDelta::microseconds(1),
            ),
            ("description", self.description == other.description),
            ("comment", self.comment == other.comment),
            ("meta", given(self.meta) == given(other.meta)),
        ];
        fields
            .iter()
            .find(|(_, same)| !same)
            .map(|(field, _)| *field)
    }
}

/// Meta that says something: `null` is as good as none.
fn given(meta: Option<&Value>) -> Option<&Value> {
    meta.filter(|v| !v.is_null())
}

/// The refusal of an earn whose id was used for another one that differs in `field`.
pub(crate) fn conflict(field: &'static str) -> StoreError {
    StoreError::refused(
        "already_exists",
        Some(field.into()),
        format!("id was used for another earn: its {field} differs"),
    )
}
