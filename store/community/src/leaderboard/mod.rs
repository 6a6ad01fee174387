//! The leaderboard: each campaign's members ranked by the tokens their wallets in it have
//! earned over their lifetime (spending does not drop a member), read from a snapshot that a
//! background job rebuilds on an interval (`build.rs`), so that a request never scans the
//! ledger. Pages and a member's own place are read by rank from the snapshot (`read.rs`).

mod build;
mod read;

use chrono::{DateTime, Utc};

use crate::Tokens;

pub use build::Built;

/// A campaign's published snapshot.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot {
    pub campaign_id: String,
    /// Counts the snapshots built for the campaign; 1 is the first.
    pub generation: i64,
    /// When the snapshot read the ledger: it holds what was earned up to then.
    pub built_at: DateTime<Utc>,
    /// How many members it ranks.
    pub entries: u64,
    /// When the next snapshot is due (it may come a few seconds later).
    pub due_at: DateTime<Utc>,
}

/// One member's place on the leaderboard.
#[derive(Debug, Clone, PartialEq)]
pub struct Standing {
    /// 1 is the top.
    pub rank: u64,
    pub member_id: String,
    /// The first name and the last name's initial ("Ada L."); `None` when the member has
    /// neither (or was deleted since the snapshot).
    pub display_name: Option<String>,
    /// Lifetime earned tokens in the campaign's wallets.
    pub points: Tokens,
}

/// A member's standing with its neighbours: the entries just above (better ranks, nearest
/// last) and just below (nearest first).
#[derive(Debug, Clone, PartialEq)]
pub struct Neighbourhood {
    pub standing: Standing,
    pub above: Vec<Standing>,
    pub below: Vec<Standing>,
}

/// The name the leaderboard shows: the first name and the initial of the last name ("Ada L."),
/// nothing more. Either part may be missing; with neither, none.
pub fn display_name(first: Option<&str>, last: Option<&str>) -> Option<String> {
    let first = first.map(str::trim).filter(|s| !s.is_empty());
    let initial = last
        .and_then(|l| l.trim().chars().next())
        .map(|c| format!("{}.", c.to_uppercase()));
    match (first, initial) {
        (Some(first), Some(initial)) => Some(format!("{first} {initial}")),
        (Some(first), None) => Some(first.to_string()),
        (None, Some(initial)) => Some(initial),
        (None, None) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::display_name;

    #[test]
    fn a_display_name_is_the_first_name_and_an_initial() {
        assert_eq!(
            display_name(Some("Ada"), Some("Lovelace")).as_deref(),
            Some("Ada L.")
        );
        assert_eq!(
            display_name(Some(" Émile "), Some(" ørsted")).as_deref(),
            Some("Émile Ø.")
        );
        assert_eq!(display_name(Some("Ada"), None).as_deref(), Some("Ada"));
        assert_eq!(
            display_name(Some("Ada"), Some("  ")).as_deref(),
            Some("Ada")
        );
        assert_eq!(display_name(None, Some("lovelace")).as_deref(), Some("L."));
        assert_eq!(display_name(Some(""), None), None);
    }
}
