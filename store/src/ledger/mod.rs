//! The ledger: wallets and their transactions. Earns are stored, evaluated and credited (with
//! their expiry lots); burns spend the oldest tokens first; expiry gives back what is due; the
//! audit checks that every balance equals its transactions.

pub(crate) mod audit;
pub(crate) mod burn;
pub(crate) mod corrections;
pub(crate) mod credit;
pub(crate) mod earn;
pub(crate) mod evaluate;
pub(crate) mod expiry;
pub(crate) mod expiry_notices;
pub(crate) mod fifo;
pub(crate) mod holds;
pub(crate) mod in_time;
pub(crate) mod pending;
pub(crate) mod refusals;
pub(crate) mod same_earn;
pub(crate) mod transactions;
pub(crate) mod transfers;
pub(crate) mod wallets;
