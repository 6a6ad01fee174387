//! Refusals kept: a burn, correction or order the ledger refused for the state of what it named
//! (a balance that could not cover it, stock sold out, a return beyond its earn) is kept under
//! the request's key, in the transaction that refused it. The same request under that key is
//! refused again the same way, whatever the state has become (a client that wants another try
//! sends a new key); another request under it is `already_exists` naming the first field that
//! differs. Refusals that say something of the request itself (`already_exists`, a bad field)
//! are answered as they come and not kept.

use chrono::{DateTime, Utc};

use crate::backend::Tx;
use crate::common::ids::Fingerprint;
use crate::error::known;
use crate::{StoreError, Tokens};

/// The `Refused` codes kept, besides `InsufficientBalance`.
const KEPT: &[&str] = &[
    "reversal_exceeds_earn",
    "refund_exceeds_burn",
    "reversal_shortfall",
    "lots_unknown",
    "out_of_stock",
    "tier_required",
    "transfer_cap_exceeded",
];
const INSUFFICIENT: &str = "insufficient_balance";

const EARLIER: &str =
    "SELECT fingerprint, code, field, message, available FROM refusals WHERE idem_key = $1";
const KEEP: &str = "INSERT INTO refusals (idem_key, fingerprint, code, field, message, \
     available, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (idem_key) DO NOTHING";

/// Whether `err` is a refusal that is kept.
pub fn is_kept(err: &StoreError) -> bool {
    match err {
        StoreError::InsufficientBalance { .. } => true,
        StoreError::Refused { code, .. } => KEPT.contains(code),
        _ => false,
    }
}

/// Answers a request whose key (`key`, named `name` in the API) was refused before: `Err` with
/// that refusal for the same request (`fingerprint`), or with `already_exists` for another; `Ok`
/// when the key holds no refusal.
pub async fn answer_earlier(
    tx: &mut impl Tx,
    key: &[u8],
    fingerprint: &Fingerprint,
    name: &'static str,
) -> Result<(), StoreError> {
    type Row = (String, String, Option<String>, String, Option<i64>);
    let Some((stored, code, field, message, available)) =
        tx.row::<Row>(EARLIER, params![key]).await?
    else {
        return Ok(());
    };
    if fingerprint.matches(&stored).is_err() {
        return Err(fingerprint.conflict(name, &stored));
    }
    if code == INSUFFICIENT {
        return Err(StoreError::InsufficientBalance {
            available: Tokens::from_micros(available.unwrap_or(0)),
        });
    }
    let code = known(KEPT.iter().find(|k| **k == code), "refusals", "code", &code)?;
    Err(StoreError::Refused {
        code,
        field,
        message,
    })
}

/// Keeps `err` (if `is_kept`) as the refusal of the request `fingerprint` under `key`, in the
/// caller's transaction: the caller commits it with nothing else the request wrote.
pub async fn keep(
    tx: &mut impl Tx,
    key: &[u8],
    fingerprint: &Fingerprint,
    err: &StoreError,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let (code, field, message, available) = match err {
        StoreError::InsufficientBalance { available } => (
            INSUFFICIENT,
            None,
            err.to_string(),
            Some(available.micros()),
        ),
        StoreError::Refused {
            code,
            field,
            message,
        } if KEPT.contains(code) => (*code, field.clone(), message.clone(), None),
        _ => return Ok(()),
    };
    let args = params![key, fingerprint.text, code, field, message, available, at];
    tx.execute(KEEP, args).await?;
    Ok(())
}
