//! An earn id used again, by either door (an API request, a batch-file row): the same earn
//! (answered as the first was) or another one, refused as `already_exists` naming the first
//! field that differs. The fields are compared as the ledger keeps them (the wallet as found, the
//! amount as a number, the date to the microsecond), so naming a wallet by its reference once and
//! by its id the next time is the same earn.

use std::collections::HashMap;
use std::str::FromStr;

use chrono::{DateTime, TimeDelta, Utc};
use rules::Decimal;
use serde_json::Value;
use sqlx::types::Json;

use crate::transactions::idem_key;
use crate::{EarnInput, Ledger, PendingEarn, StoreError, TransactionKind};

/// The columns of `EarlierEarn`, in order.
#[macro_export]
macro_rules! earlier_columns {
    () => {
        "idem_key, id, batch_id, wallet_id, source_amount, date, description, comment, meta"
    };
}
pub(crate) use earlier_columns;

row_struct! {
    /// An EARN transaction, as far as telling a repeat of it from another earn needs.
    pub struct EarlierEarn {
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
    pub fn differs(&self, earn: &EarnInput, wallet_id: &str) -> Option<&'static str> {
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
    pub fn differs(&self, other: &Facts) -> Option<&'static str> {
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

/// What an API earn's id holds already, as `Ledger::earlier_earns` finds it.
pub(crate) enum Earlier {
    /// Nothing, or the same earn credited from a file (its request ends `duplicate`).
    New,
    /// The same earn, first requested by this request.
    Request(String),
    /// The same earn, first in this batch at this place.
    InBatch(usize),
    /// Another earn, which differs in this field.
    Other(&'static str),
}

impl Ledger {
    /// What each of `pending`'s ids holds: its first request (read for the whole batch at
    /// once), an earlier earn of the batch, or an EARN credited from a file.
    pub(crate) async fn earlier_earns(
        &self,
        pending: &[PendingEarn],
    ) -> Result<Vec<Earlier>, StoreError> {
        const REQUESTS: &str = "SELECT earn_id, id, wallet_id, body FROM earn_requests \
             WHERE org_id = $1 AND earn_id {key} ORDER BY created_at, id";
        const CREDITED: &str = concat!(
            "SELECT ",
            earlier_columns!(),
            " FROM transactions WHERE idem_key {key}"
        );
        let mut by_org: HashMap<&str, Vec<&str>> = HashMap::new();
        for p in pending {
            by_org.entry(&p.org_id).or_default().push(&p.earn.earn_id);
        }
        // Each id's first request: (request id, wallet, the earn as sent).
        let mut first: HashMap<(String, String), (String, String, EarnInput)> = HashMap::new();
        for (org, mut ids) in by_org {
            ids.sort_unstable();
            ids.dedup();
            type Row = (String, String, String, Json<EarnInput>);
            let rows: Vec<Row> = self.read_each(REQUESTS, params![org], &ids).await?;
            for (earn_id, id, wallet_id, body) in rows {
                let key = (org.to_string(), earn_id);
                first.entry(key).or_insert((id, wallet_id, body.0));
            }
        }
        let key_of = |p: &PendingEarn| idem_key(&p.org_id, TransactionKind::Earn, &p.earn.earn_id);
        let mut keys: Vec<Vec<u8>> = pending.iter().map(key_of).collect();
        keys.sort_unstable();
        keys.dedup();
        let credited: Vec<EarlierEarn> = self.read_each(CREDITED, params![], &keys).await?;
        let credited: HashMap<Vec<u8>, EarlierEarn> = credited
            .into_iter()
            .map(|e| (e.idem_key.clone(), e))
            .collect();
        let mut in_batch: HashMap<(&str, &str), usize> = HashMap::new();
        let mut found: Vec<Earlier> = Vec::with_capacity(pending.len());
        for (i, p) in pending.iter().enumerate() {
            let facts = Facts::of(&p.earn, &p.wallet_id);
            let id = (p.org_id.clone(), p.earn.earn_id.clone());
            let batch_key = (p.org_id.as_str(), p.earn.earn_id.as_str());
            let earlier = if let Some((request, wallet, earn)) = first.get(&id) {
                match Facts::of(earn, wallet).differs(&facts) {
                    Some(field) => Earlier::Other(field),
                    None => Earlier::Request(request.clone()),
                }
            } else if let Some(&j) = in_batch.get(&batch_key) {
                let before = Facts::of(&pending[j].earn, &pending[j].wallet_id);
                match (&found[j], before.differs(&facts)) {
                    (_, Some(field)) | (&Earlier::Other(field), None) => Earlier::Other(field),
                    _ => Earlier::InBatch(j),
                }
            } else {
                in_batch.insert(batch_key, i);
                let credited = credited.get(&key_of(p));
                match credited.and_then(|c| c.differs(&p.earn, &p.wallet_id)) {
                    Some(field) => Earlier::Other(field),
                    None => Earlier::New,
                }
            };
            found.push(earlier);
        }
        Ok(found)
    }
}
