//! What every domain uses: record ids and random tokens, exact token amounts, paging, the
//! calendar's bounds, and the short-lived cache.

pub(crate) mod cache;
pub(crate) mod calendar;
#[macro_use]
pub(crate) mod enums;
pub(crate) mod ids;
pub(crate) mod page;
pub(crate) mod tokens;
