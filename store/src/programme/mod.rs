//! A campaign's programme: its policies (minimum balance, expiry), tiers, versioned rule sets,
//! the compiled rule book, and the evaluation of an earn under them.

pub(crate) mod evaluate;
pub(crate) mod policies;
pub(crate) mod rule_book;
pub(crate) mod rule_sets;
#[macro_use]
pub(crate) mod tiers;
