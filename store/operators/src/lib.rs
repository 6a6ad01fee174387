//! The people who run the service and the programme: operator accounts (an e-mail, an argon2id
//! password, a role and the organisations a per-organisation role acts on, the source
//! addresses they may sign in from), reached through the `Operators` handle. It sits on the
//! seam and tenancy (organisations are what grants name). Where things live:
//!
//! - `role.rs`: the roles and what each may reach;
//! - `accounts.rs`: adding, listing, disabling, removing operators and resetting passwords;
//! - `addresses.rs`: the allowed source addresses (CIDR blocks);
//! - `sessions.rs`: signing in, and the sessions it opens, listed and revoked;
//! - `second_factor.rs`: TOTP enrolment (`totp.rs`: RFC 6238), recovery codes, the
//!   requirement of it for everyone, and its reset;
//! - `tokens.rs`: automation tokens for scripts, scoped and expiring;
//! - `adjustment_limits.rs`: how much each role may adjust a wallet by hand, and when a second
//!   operator must approve;
//! - `throttle.rs`: failed sign-ins counted per account and address, and the locks they set.

#[macro_use]
extern crate seam;

pub mod accounts;
pub mod addresses;
pub mod adjustment_limits;
pub mod role;
pub mod second_factor;
pub mod sessions;
mod throttle;
pub mod tokens;
pub mod totp;

use seam::Db;

pub use accounts::{NewOperator, Operator, Password};
pub use addresses::AddressBlock;
pub use adjustment_limits::AdjustmentLimits;
pub use role::Role;
pub use second_factor::{Enrolment, RecoveryCodes};
pub use sessions::{Opened, Session, SessionLimits, SignIn, SignedIn};
pub use tokens::{NewToken, Token};

/// Operator accounts. Cheap to clone.
#[derive(Clone, Debug)]
pub struct Operators {
    db: Db,
}

impl Operators {
    /// The operators kept in `db`.
    pub fn on(db: Db) -> Operators {
        Operators { db }
    }
}

db_handle!(Operators);
