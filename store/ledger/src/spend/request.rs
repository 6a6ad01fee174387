//! What every request that spends a wallet's tokens names (a burn, a hold): one definition, so
//! the kinds of spend share their fields, and each one's fingerprint (its serialization,
//! `Fingerprint::of_request`) names them the same way.

use serde::Serialize;
use serde_json::Value;

use crate::Tokens;
use crate::common::ids::as_micros;

/// Its serialization is part of what a repeat must match: each field under the name a client
/// sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct Spend {
    /// The wallet's id or external reference.
    #[serde(rename = "walletId")]
    pub wallet: String,
    /// The client's id for this spend: unique in the organisation among spends of its kind.
    #[serde(skip)]
    pub external_id: String,
    #[serde(serialize_with = "as_micros")]
    pub amount: Tokens,
    pub description: String,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}
