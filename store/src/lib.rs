//! The system of record, composed: `Store` holds one handle for each domain, every domain a
//! crate of its own below this one (`store.tenancy()`, `.members()`, `.programme()`,
//! `.ledger()`, `.batches()`, `.orders()`, `.catalogue()`, `.community()`, `.events()`,
//! `.operators()`), each
//! operation on a tenant's records taking its scope as a type (`OrgScope` or `&Campaign`, made
//! only by the store's crates). All run on the database of the `seam` crate at the bottom
//! (`Db`, SQLite or PostgreSQL), which `Store` holds and derefs to. This crate re-exports the
//! domains' types, so that the rest of the code names one crate. Where things live:
//!
//! - `handle.rs`: `Store` itself, and the one constructor of every handle.
//! - `event_data.rs`: the records events carry, read back as the domains' types (events
//!   themselves, their endpoints and deliveries are the `events` crate below the store).
//! - `exports/`: ledger exports read out in chunks, and their schedules (on the store itself).
//! - `member_data.rs`: everything held about one member, from every domain (a right of access).
//! - `testing/` (feature `testing`): fresh stores on either backend and schema comparison.

#[macro_use]
extern crate seam;

mod event_data;
mod exports;
mod handle;
mod member_data;
pub use seam::meta;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub use batches::{
    ActivityOutcome, Batch, BatchFinish, BatchState, Batches, CreditingChunk, Evaluated,
    FileActivity, FileEarn, FileLoad, FileOutcome, FileReturn, FileTotals, NewBatch, ReturnOutcome,
    StoredMapping,
};
pub use catalogue::document::{Catalogue, ProductEntry, TierEntry, VariantEntry};
pub use catalogue::import::{Counts, ImportOptions, ImportReport};
pub use catalogue::index::{
    CatalogueIndex, Catalogues, Comparison, Found, Near, ProductQuery, Sort, SortField,
    VectorProblem,
};
pub use catalogue::{
    Address, Branch, CatalogueStore, Category, ContactDetails, Product, Tag, Variant, Weekdays,
};
pub use common::api_version::ApiVersion;
pub use common::calendar::{
    DATES_AHEAD, DateWindow, day_of, in_calendar, into_calendar, last_second,
};
pub use common::clock::Clock;
pub use common::codes::{CodeKey, masked as masked_code, new_code};
pub use common::ids::{new_id, random_roll};
pub use common::page::{Page, Paged};
pub use common::problems::Problems;
pub use community::Community;
pub use community::leaderboard::{Built, Neighbourhood, Snapshot, Standing, display_name};
pub use community::reviews::{
    Decision, Moderation, NewReview, Review, ReviewFilter, ReviewList, ReviewStatus,
    profanity_score,
};
pub use error::{FieldProblem, StoreError};
pub use event_data::EventData;
pub use events::deliveries::RETRY_FOR as DELIVERY_WINDOW;
pub use events::endpoints::MAX_URL as MAX_WEBHOOK_URL;
pub use events::{
    AttemptOutcome, ClaimedDelivery, DeliveryAttempt, DeliveryStatus, Dispatched, EVENT_RETENTION,
    EndpointAfter, EndpointPatch, EndpointStatus, Event, EventFilter, EventType, Events,
    FIRST_RETRY, ManualBounds, NewEndpoint, Record, Redelivery, Secrets, WebhookEndpoint,
};
pub use exports::schedule::{ClaimedDay, ExportFormat, ExportSchedule, SETTLE as EXPORT_SETTLE};
pub use exports::{ExportChunk, ExportFilter, ExportTime, Texts};
pub use handle::Store;
pub use ledger::{
    Adjusted, Adjustment, AdjustmentFilter, AdjustmentRules, AdjustmentStatus, Backtest, BalanceAt,
    BulkReport, BulkRow, Burned, CampaignFigures, Corrected, CounterUse, Credit, Credited,
    Discrepancy, EarnInput, EarnReplay, EarnRequest, EarnStatus, ExpiringDay, Hold, HoldFilter,
    HoldPlaced, HoldSettled, HoldStatus, Ledger, Left, LimitUse, Limited, NewAdjustment, NewBurn,
    NewCorrection, NewHold, NewTransfer, NewWallet, PendingEarn, Reason as AdjustmentReason,
    Received, RecordedDay, Requester, RowOutcome, RowTrial, RulesInput, Spend, Transaction,
    TransactionFilter, TransactionKind, Transfer, Transferred, Wallet, WalletContext, WalletFilter,
    try_rows,
};
pub use member_data::{LimitCount, MemberData};
pub use members::activities::{
    Activity, ActivitySource, Award, BUILT_IN as BUILT_IN_ACTIVITIES,
    MAX_TYPE as MAX_ACTIVITY_TYPE, NewActivity, type_problem as activity_type_problem,
};
pub use members::referrals::{Referral, ReferralCode, ReferralRole, ReferralStatus};
pub use members::{
    CATEGORIES, Channels, ChannelsPatch, CommunicationPreferences, Member, MemberPatch,
    MemberStatus, Members, NewMember, PreferencesPatch,
};
pub use operators::totp as operators_totp;
pub use operators::{
    AdjustmentLimits, Enrolment, NewOperator, NewToken, Opened, Operator, Operators, Password,
    RecoveryCodes, Role, Session, SessionLimits, SignIn, SignedIn, Token,
};
pub use orders::{
    Booking, BookingFilter, BookingPatch, BookingStatus, Code, LocalDate, NewBooking, NewLine,
    NewOrder, Order, OrderLine, OrderScope, Orders, Placed, ProductSummary, Redeemed,
};
pub use programme::{
    Expiry, ExpiryFrom, NewTier, Policy, Programme, RuleBook, RuleSetVersion, Shortfall, Tier,
    TierRef, Transfers,
};
pub use seam::Tokens;
pub use seam::audit;
pub use seam::limits;
pub use seam::scope::OrgScope;
pub use seam::{Backend, Db};
use seam::{backend, common, error};
pub use tenancy::{
    ApiKey, Campaign, IssuedKey, KeyContext, MIN_PASSWORD, NewCampaign, NewKey, NewSftpKey,
    NewSftpUser, Organisation, Permission, SftpBan, SftpKey, SftpLogin, SftpUser, Tenancy,
};
