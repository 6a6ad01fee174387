//! The storage seam, under every domain of the store: one database (`Db`) on SQLite (the
//! embedded default) or PostgreSQL (several nodes sharing one database), and what every domain
//! shares. Where things live:
//!
//! - `backend/`: the one place that picks a backend: single statements (`statements.rs`), the
//!   transaction seam (`tx.rs`: `Tx`, `Work`, `Db::write`, `Db::read`, `Db::fork`), the
//!   migrations of both trees (`migrations/` beside `src/`), and `direct/`, SQLite through
//!   rusqlite with its writer thread.
//! - `common/`: ids, paging, the calendar's bounds, the short-lived cache,
//!   stored enums (`string_enum!`), the reader of documents people write (`problems.rs`).
//! - `audit/`: the operators' audit trail, appended by every write made for an action
//!   (`Db::acting`), chained by hash and verified.
//! - `scope.rs`: the organisation scope every tenant's operation takes, and the seal on the
//!   records it is made from.
//! - `limits.rs`: the input limits every door holds; `error.rs`: the one error type.
//! - `tokens.rs`: exact token amounts (micro-tokens), under the error type that names them.
//! - `meta.rs`: an earn's meta from cells (a batch file's, a rule test's sample rows).
//! - `testing.rs` (feature `testing`): fresh databases on either backend for tests.
//!
//! Its macros (`params!`, `row_struct!`, `string_enum!`, `args!`, `db_handle!`) are exported at
//! its root.

// The seam's traits (`Tx`, `Work`, the forks) are public so that the domains above can write
// against them; every caller names the concrete transaction type at the end, where `Send` is
// known, so the bound the lint asks for would only narrow them.
#![allow(async_fn_in_trait)]

#[macro_use]
pub mod backend;
#[macro_use]
pub mod common;
pub mod audit;
pub mod error;
pub mod limits;
pub mod meta;
pub mod scope;
#[cfg(feature = "testing")]
pub mod testing;
pub mod tokens;

pub use backend::{Backend, Db};
pub use common::page::{Page, Paged};
pub use error::{FieldProblem, StoreError};
pub use tokens::Tokens;

/// A domain's handle reads and writes through the database it holds (its field `db`): it
/// derefs to that `Db`, so its methods call the seam's statements and transactions directly.
#[macro_export]
macro_rules! db_handle {
    ($handle:ty) => {
        impl std::ops::Deref for $handle {
            type Target = $crate::Db;

            fn deref(&self) -> &$crate::Db {
                &self.db
            }
        }
    };
}
