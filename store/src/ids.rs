//! Identifiers and random tokens.

use sha2::{Digest, Sha256};

/// A new record id: a UUIDv7, so ids sort by creation time (lists page in creation order).
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// `bytes` random bytes from the operating system, as lowercase hex, behind `prefix`.
pub(crate) fn random_token(prefix: &str, bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the operating system's random source is available");
    let mut out = String::with_capacity(prefix.len() + bytes * 2);
    out.push_str(prefix);
    for b in buf {
        out.push_str(&format!("{b:02x}"));
    }
    out
}

pub(crate) fn sha256(text: &str) -> [u8; 32] {
    Sha256::digest(text.as_bytes()).into()
}

/// Compares two byte strings in time that depends only on their length, so a response time never
/// tells an attacker how many leading bytes of a guess were right.
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The current time at microsecond precision: what PostgreSQL keeps, so a value reads back
/// exactly as it was written on either backend.
pub(crate) fn now() -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound;
    chrono::Utc::now().trunc_subsecs(6)
}
