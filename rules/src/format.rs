//! The rule-set file as written by a programme manager (TOML), before compilation.
//!
//! ```toml
//! [programme]
//! time_zone = "Europe/Amsterdam"   # windows and date helpers use this zone (default UTC)
//! rounding = "floor"               # floor | round | ceil, applied to the final tokens
//! decimals = 0
//!
//! [[rule]]
//! id = "base"
//! description = "One token per euro"
//! priority = 10                    # lower runs first; two rules may not share a priority
//! award = "amount"
//!
//! [[rule]]
//! id = "weekend"
//! priority = 20
//! when = "meta.channel == 'app'"
//! multiply = 2
//! active = { weekdays = ["sat", "sun"], hours = "08:00-20:00", from = "2026-12-01", to = "2026-12-31" }
//!
//! [[rule]]
//! id = "returnable"
//! priority = 30
//! when = "meta.category == 'fashion'"
//! pending_days = 30                # its tokens vest 30 days after the purchase
//!
//! [[rule]]
//! id = "welcome-bonus"
//! priority = 40
//! add = 50
//! limits = [{ scope = "member", period = "month", times = 3 }, { scope = "meta.store.id", period = "day", tokens = 500 }]
//!
//! [[rule]]
//! id = "birthday"
//! priority = 50
//! on = "activity"                  # a member's activities, not transactions
//! when = "activity.type == 'member.birthday'"
//! award = 100
//! limits = [{ scope = "member", period = "year", times = 1 }]
//! ```
//!
//! and for the whole campaign `[programme] budget = { period = "month", tokens = 1000000 }`;
//! `[programme] referral_converts_on = "order.first"` makes an activity of that type, rather
//! than a referee's first completed earn, convert its referral.

use rust_decimal::Decimal;
use serde::Deserialize;

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSetSource {
    #[serde(default)]
    pub programme: ProgrammeSource,
    #[serde(default, rename = "rule")]
    pub rules: Vec<RuleSource>,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProgrammeSource {
    /// An IANA zone name such as `Europe/Amsterdam`; UTC when absent.
    pub time_zone: Option<String>,
    pub rounding: Option<RoundingMode>,
    pub decimals: Option<u32>,
    /// The most tokens all rules together give per period.
    pub budget: Option<BudgetSource>,
    /// The activity type whose first occurrence converts a member's pending referral in this
    /// campaign; absent: its first completed earn does.
    pub referral_converts_on: Option<String>,
}

/// `budget = { period = "month", tokens = 1000000 }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetSource {
    pub period: String,
    pub tokens: ExprSource,
}

/// One of a rule's `limits`: `{ scope = "member", period = "month", times = 3 }`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LimitSource {
    /// `member`, `wallet`, `campaign` or `meta.<key>`.
    pub scope: String,
    /// `day`, `week`, `month`, `year`, `Nd` (a rolling N days) or `ever`.
    pub period: String,
    /// The most times the rule fires in a period.
    pub times: Option<i64>,
    /// The most tokens the rule adds in a period.
    pub tokens: Option<ExprSource>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoundingMode {
    /// Towards zero tokens: a member never gets a fraction the programme did not promise.
    #[default]
    Floor,
    /// Half away from zero.
    Round,
    Ceil,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSource {
    pub id: String,
    #[serde(default)]
    pub description: String,
    pub priority: i64,
    /// What the rule applies to: `transaction` (the default) or `activity` (a member's
    /// activities: it reads `activity.type` and `activity.attributes.<key>`).
    pub on: Option<String>,
    pub when: Option<String>,
    pub active: Option<WindowSource>,
    pub award: Option<ExprSource>,
    pub multiply: Option<ExprSource>,
    pub add: Option<ExprSource>,
    pub cap: Option<ExprSource>,
    /// When the rule fires, no later rule applies.
    #[serde(default)]
    pub stop: bool,
    /// When the rule fires, the earn's tokens are pending this many days after its date before
    /// they can be spent (0: at once), whatever the campaign's policy says; the last rule to
    /// fire with it decides.
    pub pending_days: Option<u32>,
    /// How often the rule may fire, or how many tokens it may add, per scope and period.
    #[serde(default)]
    pub limits: Vec<LimitSource>,
}

/// An expression, or a plain number written without quotes (`multiply = 2`).
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum ExprSource {
    Text(String),
    Integer(i64),
    Float(f64),
}

impl ExprSource {
    pub fn text(&self) -> String {
        match self {
            ExprSource::Text(text) => text.clone(),
            ExprSource::Integer(n) => n.to_string(),
            // Rust prints the shortest text that reads back as the same float, so `1.1` stays 1.1.
            ExprSource::Float(f) => f.to_string(),
        }
    }

    /// The number it is, when it is a plain number (a ceiling, not an expression).
    pub fn decimal(&self) -> Option<Decimal> {
        match self {
            ExprSource::Integer(n) => Some(Decimal::from(*n)),
            other => other.text().trim().parse().ok(),
        }
    }
}

/// When a rule may fire, in the programme's time zone. Every part given must hold.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct WindowSource {
    /// First day (inclusive), `YYYY-MM-DD`.
    pub from: Option<String>,
    /// Last day (inclusive), `YYYY-MM-DD`.
    pub to: Option<String>,
    /// Days of the week: `mon`, `tue`, `wed`, `thu`, `fri`, `sat`, `sun`.
    pub weekdays: Option<Vec<String>>,
    /// `HH:MM-HH:MM`, start inclusive, end exclusive; `22:00-02:00` spans midnight.
    pub hours: Option<String>,
}
