//! What every domain uses: the clock (`clock.rs`), record ids and random tokens, paging, the
//! calendar's bounds, the short-lived cache, the versions of the HTTP interface a record may
//! name (`api_version.rs`), the service's data key that seals redemption codes and webhook
//! secrets (`codes.rs`), and the reader of documents people write (`problems.rs`).

pub mod cache;
pub mod calendar;
pub mod clock;
pub mod codes;
#[macro_use]
pub mod enums;
pub mod api_version;
pub mod ids;
pub mod page;
pub mod problems;
