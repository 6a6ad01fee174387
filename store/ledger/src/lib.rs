//! The ledger: wallets and their transactions, reached through the `Ledger` handle. It sits on
//! the seam, tenancy (a `Campaign` is its scope), members (a wallet's owner), the programme
//! (policies, tiers, rule books) and events (what each transaction records); orders and batch
//! files spend and credit through it. Where things live:
//!
//! - `wallets.rs`, `transactions.rs`: wallets, and the journal every balance is the sum of;
//! - `earn/` (its records, `evaluate.rs`, `same_earn.rs`), `credit/`, `pending.rs`: earn
//!   requests stored, evaluated under the rules and credited with their expiry lots, pending
//!   tokens vested;
//! - `counters/`: limits and budgets counted in the credit's transaction, given back by
//!   reversals, and their use read for operators;
//! - `fifo.rs` (deciding in memory), `spend/` (the spend kernel: taking from lots, repaying,
//!   giving back), `burn.rs` (`burn/`: a burn's debit, and each backend's path to it): spending
//!   the oldest tokens first;
//! - `holds/`, `transfers.rs`, `corrections/`: holds and their capture, transfers between
//!   wallets, reversals and refunds that name what they correct;
//! - `activities.rs`: members' activities awarded under the rules with `on = "activity"`;
//! - `adjustments/`: operators' manual credits and debits with a reason, four-eyes approval
//!   above a threshold, and bulk files of them;
//! - `expiry.rs`, `expiry_notices.rs`: expiring what is due, and warning before it;
//! - `in_time.rs`: a balance at an instant; `audit.rs`: every balance against its journal;
//! - `overview.rs`: a campaign at a glance (its wallets, liability, tiers, tokens per day);
//! - `refusals.rs`: a spend's refusals; `order_keys.rs`: the `externalId`s orders pay under;
//! - `faults.rs` (tests only): an earn made to panic at a chosen stage;
//! - `testing.rs` (feature `testing`): what tests read of lots beyond the ledger's operations.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;
#[macro_use]
extern crate programme;

pub mod activities;
pub mod adjustments;
pub mod audit;
pub mod burn;
pub mod corrections;
pub mod counters;
pub mod credit;
pub mod earn;
pub mod expiry;
pub mod expiry_notices;
#[cfg(test)]
mod faults;
pub mod fifo;
pub mod holds;
pub mod in_time;
pub mod order_keys;
pub mod overview;
pub mod pending;
pub mod refusals;
pub mod spend;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
pub mod transactions;
pub mod transfers;
pub mod wallets;

use members::Members;
use programme::{Policy, Programme, RuleBook, Shortfall, Tier, Transfers};
use seam::common::calendar::{DATES_AHEAD, DateWindow};
use seam::{Backend, Db, Page, Paged, StoreError, Tokens, backend, common, error, limits};
use tenancy::Campaign;

pub use adjustments::bulk::{BulkReport, BulkRow, RowOutcome};
pub use adjustments::{
    Adjusted, Adjustment, AdjustmentFilter, AdjustmentRules, AdjustmentStatus, NewAdjustment,
    Reason, Requester,
};
pub use audit::Discrepancy;
pub use burn::{Burned, NewBurn};
pub use corrections::{Corrected, NewCorrection};
pub use counters::{CounterUse, Left, LimitUse};
pub use earn::evaluate::RulesInput;
pub use earn::evaluate::{Limited, WalletContext};
pub use earn::trials::{
    Backtest, LimitCuts, MAX_SAMPLE_ROWS, RowTrial, RuleTotals, Tried, WalletChange, try_rows,
};
pub use earn::{Credit, Credited, EarnInput, EarnRequest, EarnStatus, PendingEarn};
pub use expiry_notices::PointsExpiring;
pub use holds::{Hold, HoldFilter, HoldPlaced, HoldSettled, HoldStatus, NewHold};
pub use in_time::{BalanceAt, ExpiringDay};
pub use overview::{CampaignFigures, RecordedDay};
pub use spend::Spend;
pub use transactions::{EarnReplay, Transaction, TransactionFilter, TransactionKind};
pub use transfers::{NewTransfer, Received, Transfer, Transferred};
pub use wallets::{NewWallet, Wallet, WalletFilter};

/// Wallets and their transactions. Cheap to clone.
#[derive(Clone)]
pub struct Ledger {
    db: Db,
    programme: Programme,
    members: Members,
    /// How far ahead of the clock a transaction may be dated (`DateWindow`).
    dates_ahead: chrono::Duration,
}

db_handle!(Ledger);

impl std::fmt::Debug for Ledger {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.db.fmt(f)
    }
}

impl Ledger {
    /// The ledger in `db`, reading policies and rules through `programme` and owners through
    /// `members`.
    pub fn on(db: Db, programme: Programme, members: Members) -> Ledger {
        Ledger {
            db,
            programme,
            members,
            dates_ahead: DATES_AHEAD,
        }
    }

    /// How far ahead of the clock a transaction may be dated.
    pub fn dates_ahead(&self) -> chrono::Duration {
        self.dates_ahead
    }

    /// This ledger, letting transactions be dated up to `ahead` past the clock (`DATES_AHEAD`
    /// unless set).
    pub fn with_dates_ahead(mut self, ahead: chrono::Duration) -> Ledger {
        self.dates_ahead = ahead;
        self
    }

    /// The dates a transaction may carry now; an earn of a campaign that allows earns at most
    /// `back_days` old, no further back.
    pub fn date_window(&self, back_days: Option<u32>) -> DateWindow {
        DateWindow::at(self.now(), self.dates_ahead, back_days)
    }

    /// The programme the ledger reads policies and rules from.
    pub fn programme(&self) -> &Programme {
        &self.programme
    }

    /// The members wallets belong to.
    pub fn members(&self) -> &Members {
        &self.members
    }

    /// The database under this ledger.
    pub fn db(&self) -> &Db {
        &self.db
    }
}
