//! Passwords as the service keeps them: argon2id hashes (PHC strings), made and checked off the
//! async workers. SFTP users' and operators' passwords both.

use std::sync::LazyLock;

use argon2::Argon2;
use argon2::password_hash::phc::PasswordHash;
use argon2::password_hash::{PasswordHasher, PasswordVerifier};

use crate::StoreError;

/// The shortest password an operator may issue or choose.
pub const MIN_PASSWORD: usize = 12;
/// The longest: hashing is slow on purpose, and should not be made slower by the input.
pub const MAX_PASSWORD: usize = 1024;

/// The argon2id hash of `password`, which must be `MIN_PASSWORD` to `MAX_PASSWORD` characters.
pub fn hash_password(password: &str) -> Result<String, StoreError> {
    let length = password.chars().count();
    if !(MIN_PASSWORD..=MAX_PASSWORD).contains(&length) {
        return Err(StoreError::invalid(
            "password",
            format!("must be {MIN_PASSWORD} to {MAX_PASSWORD} characters"),
        ));
    }
    Argon2::default()
        .hash_password(password.as_bytes())
        .map(|hash| hash.to_string())
        .map_err(|e| StoreError::invalid("password", e.to_string()))
}

/// Whether `password` matches `hash`; a malformed hash matches nothing.
pub fn verify_password(password: &str, hash: &str) -> bool {
    PasswordHash::new(hash).is_ok_and(|parsed| {
        Argon2::default()
            .verify_password(password.as_bytes(), &parsed)
            .is_ok()
    })
}

/// The hash of a random password nobody knows, verified for unknown users so that a login as
/// nobody takes as long as a login with a wrong password.
pub static DECOY_HASH: LazyLock<String> = LazyLock::new(|| {
    let unknowable = crate::common::ids::random_token("", 32);
    Argon2::default()
        .hash_password(unknowable.as_bytes())
        .map(|hash| hash.to_string())
        .unwrap_or_default()
});

/// Runs CPU-heavy hashing off the async workers.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| StoreError::NotCommitted(format!("hashing stopped: {e}")))?
}
