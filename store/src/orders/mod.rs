//! Orders and what hangs on them: redemption codes (`codes`), made unguessable and kept
//! encrypted.

pub(crate) mod codes;
