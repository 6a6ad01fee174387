//! What every domain uses: record ids and random tokens, exact token amounts, paging, the
//! calendar's bounds, the short-lived cache, and the reader of documents people write
//! (`problems.rs`).

pub(crate) mod cache;
pub(crate) mod calendar;
#[macro_use]
pub(crate) mod enums;
pub(crate) mod ids;
pub(crate) mod page;
pub(crate) mod problems;
pub(crate) mod tokens;
