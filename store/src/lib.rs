//! The system of record. `Store` is the one interface the rest of the code uses: domain types in
//! and out, every operation scoped by organisation. It runs on SQLite (the embedded default) or
//! PostgreSQL (several nodes sharing one database); see `db` for how one body of SQL serves both.

#[macro_use]
mod direct;
#[macro_use]
mod db;
mod audit;
mod batches;
mod burn;
mod cache;
mod credit;
mod credit_copy;
mod earn;
mod error;
mod evaluate;
mod expiry;
mod file_earns;
mod ids;
mod keys;
mod mappings;
mod members;
mod orgs;
mod page;
mod policies;
mod rule_book;
mod rule_sets;
mod sftp_users;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod tiers;
mod tokens;
mod transactions;
mod wallets;

pub use audit::Discrepancy;
pub use batches::{Batch, BatchFinish, BatchState, NewBatch};
pub use burn::{Burned, NewBurn};
pub use db::{Backend, Store};
pub use earn::{Credit, Credited, EarnInput, EarnRequest, EarnStatus, PendingEarn};
pub use error::StoreError;
pub use file_earns::{Evaluated, FileEarn, FileOutcome, Pending};
pub use ids::new_id;
pub use keys::{ApiKey, ApiVersion, IssuedKey, KeyContext, NewKey, Permission};
pub use mappings::StoredMapping;
pub use members::{
    CATEGORIES, Channels, ChannelsPatch, CommunicationPreferences, Member, MemberPatch,
    MemberStatus, NewMember, PreferencesPatch,
};
pub use orgs::{Campaign, NewCampaign, Organisation};
pub use page::{Page, Paged};
pub use policies::{Expiry, Policy};
pub use rule_book::RuleBook;
pub use rule_sets::RuleSetVersion;
pub use sftp_users::{MIN_PASSWORD, NewSftpKey, NewSftpUser, SftpKey, SftpLogin, SftpUser};
pub use tiers::NewTier;
pub use tokens::Tokens;
pub use transactions::{EarnReplay, Transaction, TransactionFilter, TransactionKind};
pub use wallets::{NewWallet, Tier, Wallet, WalletFilter};
