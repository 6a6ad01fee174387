//! What every domain uses: record ids and random tokens, exact token amounts, paging, the
//! calendar's bounds, the short-lived cache, and the reader of documents people write
//! (`problems.rs`).

pub mod cache;
pub mod calendar;
#[macro_use]
pub mod enums;
pub mod ids;
pub mod page;
pub mod problems;
pub mod tokens;
