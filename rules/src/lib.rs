//! The rule engine: rule sets that decide how many tokens an earn transaction awards. Pure (no
//! I/O, no SQL), shared by the API and the batch-file paths.
//!
//! A rule set (TOML, see `format`) is compiled once (`RuleSet::parse`), reporting every mistake
//! with the rule and position, into a typed tree whose parameters are resolved ahead of time
//! (`compile`, `nodes`); `RuleSet::evaluate` then runs each transaction through the rules in
//! priority order and returns exact decimal tokens with a trace of what each rule contributed.
//! Conditions and expressions are CEL (the Common Expression Language), parsed by the `cel` crate.
//!
//! - `format`: the TOML a rule set is written in; `compile` and `nodes`: the typed tree.
//! - `engine`: a compiled rule set and its evaluation, then the programme's rounding.
//! - `facts`: what the rules read (a transaction, its wallet and member, the meta slots).
//! - `window`: when a rule may fire (dates, weekdays, hours in the programme's time zone).
//! - `limits`: how often a rule may fire and how much it may add per scope and period, the
//!   campaign's budget, and the counters they are checked against.
//! - `error`: every mistake of a rule set, reported at once.

mod compile;
mod engine;
mod error;
mod facts;
mod format;
mod limits;
mod nodes;
mod window;

pub use engine::{Effect, MAX_PENDING_DAYS, Outcome, REFERRAL_CONVERTED, RuleInfo, RuleSet, Step};
pub use error::{CompileError, CompileErrors, ErrorKind};
pub use facts::{Context, MAX_ACTIVITY_TYPE, Row, activity_type_problem};
pub use format::{RoundingMode, RuleSetSource};
pub use limits::{CounterKey, Counters, Cut, LimitInfo, Period, Tally, Use, Used};
pub use nodes::Skip;
pub use rust_decimal::Decimal;
