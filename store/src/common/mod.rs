//! What every domain uses: record ids and random tokens, exact token amounts, paging, and the
//! short-lived cache.

pub(crate) mod cache;
pub(crate) mod ids;
#[macro_use]
pub(crate) mod page;
pub(crate) mod tokens;
