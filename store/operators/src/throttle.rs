//! Failed sign-ins, counted per account and per source address in the database (so every node
//! counts the same): too many within a window lock the key for a while. While a key is locked
//! no password is checked at all, so a flood of guesses costs the service a lookup each, not
//! an argon2 hash.

use chrono::{DateTime, Duration, Utc};
use seam::StoreError;
use seam::backend::Tx;

/// The window failures are counted in, and how long a lock lasts.
pub const WINDOW: Duration = Duration::minutes(15);
/// Failures of one account within the window that lock it.
pub const ACCOUNT_FAILURES: i64 = 5;
/// Failures from one address within the window that lock it (over every account it tries).
pub const ADDRESS_FAILURES: i64 = 20;

/// The keys one attempt counts against: its account and, when known, its address.
pub fn keys(email: &str, address: Option<std::net::IpAddr>) -> Vec<(String, i64)> {
    let mut keys = vec![(format!("account:{email}"), ACCOUNT_FAILURES)];
    if let Some(address) = address {
        keys.push((format!("address:{address}"), ADDRESS_FAILURES));
    }
    keys
}

/// The latest time any of `keys` is locked until, if one is locked at `now`.
pub async fn locked_until<T: Tx>(
    tx: &mut T,
    keys: &[(String, i64)],
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let mut until = None;
    for (key, _) in keys {
        let row: Option<(Option<DateTime<Utc>>,)> = tx
            .row(
                "SELECT locked_until FROM sign_in_failures WHERE key = $1",
                params![key],
            )
            .await?;
        if let Some((Some(locked),)) = row
            && locked > now
        {
            until = until.max(Some(locked));
        }
    }
    Ok(until)
}

/// Counts a failure against each of `keys`; the time the keys are locked until, if this
/// failure locked one.
pub async fn fail<T: Tx>(
    tx: &mut T,
    keys: &[(String, i64)],
    now: DateTime<Utc>,
) -> Result<Option<DateTime<Utc>>, StoreError> {
    let mut locked = None;
    for (key, limit) in keys {
        let row: Option<(i64, DateTime<Utc>)> = tx
            .row_locked(
                "SELECT failures, window_start FROM sign_in_failures WHERE key = $1",
                params![key],
            )
            .await?;
        let failures = match row {
            Some((failures, start)) if start + WINDOW > now => failures + 1,
            _ => 1,
        };
        let start = match row {
            Some((_, start)) if start + WINDOW > now => start,
            _ => now,
        };
        let until = (failures >= *limit).then(|| now + WINDOW);
        tx.execute(
            "INSERT INTO sign_in_failures (key, failures, window_start, locked_until) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (key) DO UPDATE SET \
             failures = excluded.failures, window_start = excluded.window_start, \
             locked_until = excluded.locked_until",
            params![key, failures, start, until],
        )
        .await?;
        locked = locked.max(until);
    }
    Ok(locked)
}

/// Forgets the failures of `key` (an account's, after it signs in).
pub async fn clear<T: Tx>(tx: &mut T, key: &str) -> Result<(), StoreError> {
    tx.execute("DELETE FROM sign_in_failures WHERE key = $1", params![key])
        .await?;
    Ok(())
}
