//! Members' reviews of a campaign's vouchers (a product or variant of its catalogue) and
//! partners: each carries a profanity score (`profanity.rs`), members report what they find
//! offensive, and operators moderate. A review whose score or reports pass the thresholds of
//! `Moderation` is hidden from lists and averages until an operator approves or removes it; the
//! thresholds apply when reviews are read, so a changed setting applies to every review at once.
//! Writing in `write.rs`, reading in `read.rs`.

mod profanity;
mod read;
mod write;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

pub use profanity::profanity_score;
pub use read::{ReviewFilter, ReviewList};
pub use write::NewReview;

/// When a review is hidden for an operator to decide.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Moderation {
    /// A profanity score at or above this hides the review (`reviews_profanity_threshold`).
    pub profanity_threshold: f64,
    /// This many distinct reporters hide the review (`reviews_report_threshold`).
    pub report_threshold: u32,
}

impl Default for Moderation {
    fn default() -> Self {
        Moderation {
            profanity_threshold: 0.5,
            report_threshold: 3,
        }
    }
}

string_enum! {
    /// An operator's decision, as stored.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum Decision ("moderation decision") {
        /// None yet: shown unless a threshold hides it.
        Open = "open",
        /// Shown, whatever is reported afterwards.
        Approved = "approved",
        /// Gone from the API.
        Removed = "removed",
    }
}

string_enum! {
    /// Where a review stands with moderation, as clients see it.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ReviewStatus ("review status") {
        /// Listed and counted in averages.
        Visible = "visible",
        /// Hidden from lists and averages until an operator decides: its profanity score or
        /// its reports passed a threshold.
        Pending = "pending",
        /// An operator approved it: listed whatever is reported later.
        Approved = "approved",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Review {
    pub id: String,
    pub campaign_id: String,
    pub member_id: String,
    pub voucher_id: String,
    pub partner_id: String,
    /// 1 to 5.
    pub rating: u8,
    pub review_text: String,
    /// 0.0 (clean) to 1.0 (severe), see `profanity_score`.
    pub profanity_score: f64,
    pub decision: Decision,
    /// The latest of the members who reported it.
    pub reported_by_id: Option<String>,
    /// How many distinct members reported it.
    pub reports: u32,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl Review {
    /// Where the review stands under `rules` (the same test as the lists' SQL, `shown`).
    pub fn status(&self, rules: &Moderation) -> ReviewStatus {
        match self.decision {
            Decision::Approved => ReviewStatus::Approved,
            _ if self.profanity_score >= rules.profanity_threshold
                || self.reports >= rules.report_threshold =>
            {
                ReviewStatus::Pending
            }
            _ => ReviewStatus::Visible,
        }
    }
}

/// The SQL condition (on `reviews r`) for a review shown in lists: approved, or open with its
/// score below `$score` and its reports below `$reports` (the `$n` given).
fn shown(score: usize, reports: usize) -> String {
    format!(
        "(r.moderation = 'approved' OR (r.moderation = 'open' \
         AND r.profanity_score < ${score} AND r.reports < ${reports}))"
    )
}

/// The opposite for open reviews: waiting for an operator.
fn waiting(score: usize, reports: usize) -> String {
    format!(
        "(r.moderation = 'open' AND (r.profanity_score >= ${score} OR r.reports >= ${reports}))"
    )
}

/// A review in an event, and where it stood with moderation after the change.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewEvent {
    pub review: Box<Review>,
    pub status: ReviewStatus,
}

impl events::Payload for ReviewEvent {
    const RECORD: &'static str = "review";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.review.id)
    }
}
