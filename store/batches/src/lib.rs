//! Batch files, reached through the `Batches` handle: the record of each file received and its
//! claim by one node, crediting its rows (found by wallet id or reference, evaluated, credited
//! in chunks through the ledger), reversing its return rows, and the organisations' column
//! mappings. It sits on the seam, tenancy (an organisation is a file's scope), the programme and
//! the ledger. Where things live:
//!
//! - `records.rs`: a received file's record, its states, the claims and their renewal;
//! - `file_earns.rs`: a file's earn rows checked, evaluated and credited;
//! - `file_load.rs`: a file's load, chunk by chunk, up to its commit (`Batches::file_load`);
//! - `file_returns.rs`: a file's return rows, each reversing (part of) an earn;
//! - `file_activities.rs`: a file's activity rows, each a member's activity recorded and awarded;
//! - `mappings.rs`: the organisations' stored column mappings.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

pub mod file_activities;
pub mod file_earns;
pub mod file_load;
pub mod file_returns;
pub mod mappings;
pub mod records;

use ledger::{Credit, Credited, EarnInput, Ledger, NewCorrection, TransactionKind};
use programme::RuleBook;
use seam::scope::OrgScope;
use seam::{Db, Page, Paged, StoreError, Tokens, backend, error};
use tenancy::{Campaign, Tenancy};

pub use file_activities::{ActivityOutcome, FileActivity};
pub use file_earns::{Evaluated, FileEarn, FileOutcome, FileTotals};
pub use file_load::{CreditingChunk, FileLoad};
pub use file_returns::{FileReturn, ReturnOutcome};
pub use mappings::StoredMapping;
pub use records::{Batch, BatchFinish, BatchState, NewBatch};

/// Received files, their rows and the column mappings. Cheap to clone.
#[derive(Clone)]
pub struct Batches {
    db: Db,
    tenancy: Tenancy,
    ledger: Ledger,
}

db_handle!(Batches);

impl std::fmt::Debug for Batches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}

impl Batches {
    /// The batch records in `db`, finding organisations through `tenancy` and crediting through
    /// `ledger`.
    pub fn on(db: Db, tenancy: Tenancy, ledger: Ledger) -> Batches {
        Batches {
            db,
            tenancy,
            ledger,
        }
    }

    fn tenancy(&self) -> &Tenancy {
        &self.tenancy
    }

    fn ledger(&self) -> &Ledger {
        &self.ledger
    }
}

#[cfg(test)]
mod testing {
    use seam::testing::TestDb;

    use crate::Batches;

    /// The batches on a test database.
    pub fn batches_on(db: &TestDb) -> Batches {
        let ledger = ledger::testing::ledger_on(db);
        Batches::on(db.db.clone(), tenancy::Tenancy::on(db.db.clone()), ledger)
    }
}
