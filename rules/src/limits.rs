//! Limits on rules and the campaign's budget: how often a rule may fire and how many tokens it
//! may add, per member, wallet, campaign or a value of the transaction's `meta`, per period in
//! the programme's time zone; and how many tokens all rules together may give per period.
//!
//! The engine stays pure: what was already used comes from a `Counters` (the store's, locked in
//! the credit's database transaction, or a `Tally` in memory for dry runs and backtests), and an
//! evaluation returns the `Use`s its caller records beside the credit.

use std::collections::BTreeMap;

use chrono::{Datelike, Days, Months, NaiveDate};
use rust_decimal::Decimal;

use crate::format::{BudgetSource, ExprSource, LimitSource};

/// Whose uses a limit counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Scope {
    /// The wallet's owner (a wallet without one counts as its own member).
    Member,
    Wallet,
    Campaign,
    /// A value of the transaction's `meta` (`meta.store.id`), or of an activity's attributes
    /// (`activity.attributes.channel`), by slot.
    Meta(u16),
}

/// The period a limit's uses are counted over, in the programme's time zone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Period {
    Day,
    /// Monday to Sunday.
    Week,
    Month,
    Year,
    /// The day of the use and the days before it, this many in all.
    Rolling(u16),
    /// The rule's whole life.
    Ever,
}

/// The longest rolling period: ten years of days.
const MAX_ROLLING_DAYS: u16 = 3_660;

/// The bucket every use of an `ever` limit is recorded in.
const EVER: NaiveDate = NaiveDate::from_ymd_opt(1970, 1, 1).expect("a date");

impl Period {
    fn parse(text: &str) -> Result<Period, String> {
        let text = text.trim();
        match text {
            "day" => Ok(Period::Day),
            "week" => Ok(Period::Week),
            "month" => Ok(Period::Month),
            "year" => Ok(Period::Year),
            "ever" => Ok(Period::Ever),
            _ => match text.strip_suffix('d').map(str::parse::<u16>) {
                Some(Ok(days)) if (1..=MAX_ROLLING_DAYS).contains(&days) => {
                    Ok(Period::Rolling(days))
                }
                Some(Ok(_)) => Err(format!(
                    "a rolling period is 1d to {MAX_ROLLING_DAYS}d, not `{text}`"
                )),
                _ => Err(format!(
                    "`{text}` is not a period; use day, week, month, year, ever or a number of days such as 30d"
                )),
            },
        }
    }

    pub fn name(self) -> String {
        match self {
            Period::Day => "day".into(),
            Period::Week => "week".into(),
            Period::Month => "month".into(),
            Period::Year => "year".into(),
            Period::Rolling(days) => format!("{days}d"),
            Period::Ever => "ever".into(),
        }
    }

    /// The bucket a use on `day` is recorded in: the first day of its period (the day itself
    /// for a rolling period, 1970-01-01 for `ever`).
    pub fn bucket(self, day: NaiveDate) -> NaiveDate {
        match self {
            Period::Day | Period::Rolling(_) => day,
            Period::Week => day - Days::new(u64::from(day.weekday().num_days_from_monday())),
            Period::Month => day.with_day(1).unwrap_or(day),
            Period::Year => day.with_ordinal(1).unwrap_or(day),
            Period::Ever => EVER,
        }
    }

    /// The buckets, first and last, whose uses count against a use on `day`.
    pub fn window(self, day: NaiveDate) -> (NaiveDate, NaiveDate) {
        match self {
            Period::Rolling(days) => (day - Days::new(u64::from(days) - 1), day),
            _ => (self.bucket(day), self.bucket(day)),
        }
    }

    /// The first day after the period holding `day` (for a rolling period, the day its oldest
    /// use stops counting), if it ends.
    pub fn ends(self, day: NaiveDate) -> Option<NaiveDate> {
        let start = self.bucket(day);
        match self {
            Period::Day => start.succ_opt(),
            Period::Week => start.checked_add_days(Days::new(7)),
            Period::Month => start.checked_add_months(Months::new(1)),
            Period::Year => start.checked_add_months(Months::new(12)),
            Period::Rolling(_) => day.succ_opt(),
            Period::Ever => None,
        }
    }
}

/// One limit of a rule (or the campaign's budget, whose scope is the campaign).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Limit {
    pub scope: Scope,
    pub period: Period,
    /// The limit's counter: which uses it counts (see `Counter`).
    pub counter: String,
    pub times: Option<u64>,
    pub tokens: Option<Decimal>,
}

/// A limit as shown to people.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitInfo {
    /// The rule's id; `None` for the campaign's budget.
    pub rule: Option<String>,
    /// `member`, `wallet`, `campaign` or `meta.<key>`.
    pub scope: String,
    pub period: Period,
    /// The name its uses are counted under (see `CounterKey::counter`).
    pub counter: String,
    pub times: Option<u64>,
    pub tokens: Option<Decimal>,
}

/// The name a limit's uses are counted under: `"{period} {scope} {rule}"` (`month member
/// welcome`), and `"{period} campaign "` for the budget (rule ids are never empty). A new
/// version of a rule set that keeps a rule's id, scope and period keeps counting where the last
/// one was; changing the ceiling does not start again.
pub(crate) fn counter(period: Period, scope: &str, rule: &str) -> String {
    format!("{} {scope} {rule}", period.name())
}

/// Which uses a limit counts for this transaction: the limit's counter and whose they are.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CounterKey {
    pub counter: String,
    /// The member's or wallet's id, a meta value as text, or empty for the campaign.
    pub scope: String,
}

/// What was used of a counter over some buckets.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Used {
    pub times: u64,
    pub tokens: Decimal,
}

/// One use an evaluation made of a counter: once, with these tokens, in this bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Use {
    pub key: CounterKey,
    pub bucket: NaiveDate,
    pub tokens: Decimal,
}

/// What was already used, as the caller knows it.
pub trait Counters {
    /// The uses of `key` recorded in the buckets `from..=to`.
    fn used(&mut self, key: &CounterKey, from: NaiveDate, to: NaiveDate) -> Used;
}

/// Counters in memory: nothing used until `add` records it. What dry runs, tests and backtests
/// count with, and what the store keeps while it evaluates a chunk.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    /// Per counter, its buckets by date (a counter looked up without copying its key).
    buckets: BTreeMap<CounterKey, BTreeMap<NaiveDate, Used>>,
}

impl Tally {
    pub fn new() -> Tally {
        Tally::default()
    }

    /// Records uses (times 1 each).
    pub fn add(&mut self, uses: &[Use]) {
        for u in uses {
            self.set_more(&u.key, u.bucket, 1, u.tokens);
        }
    }

    /// Adds `times` and `tokens` to a bucket (negative to give back), as loaded or returned.
    pub fn set_more(&mut self, key: &CounterKey, bucket: NaiveDate, times: i64, tokens: Decimal) {
        let days = match self.buckets.get_mut(key) {
            Some(days) => days,
            None => self.buckets.entry(key.clone()).or_default(),
        };
        let used = days.entry(bucket).or_default();
        used.times = used.times.saturating_add_signed(times);
        used.tokens += tokens;
    }

    /// Every bucket with its uses, in key and date order.
    pub fn buckets(&self) -> impl Iterator<Item = (&CounterKey, NaiveDate, Used)> {
        self.buckets
            .iter()
            .flat_map(|(key, days)| days.iter().map(move |(day, used)| (key, *day, *used)))
    }
}

impl Counters for Tally {
    fn used(&mut self, key: &CounterKey, from: NaiveDate, to: NaiveDate) -> Used {
        let mut sum = Used::default();
        let Some(days) = self.buckets.get(key) else {
            return sum;
        };
        for used in days.range(from..=to).map(|(_, used)| used) {
            sum.times += used.times;
            sum.tokens += used.tokens;
        }
        sum
    }
}

/// How a limit cut a rule (or the budget an earn).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The rule had fired as often as the limit allows; it did not fire.
    Times,
    /// Only `left` tokens were left under the limit; the rule gave that (0: it did not fire).
    Tokens { left: Decimal },
}

/// Reads a rule's `limits` (or the budget): the limits, or each problem as (key, message).
pub(crate) fn compile_limits(
    rule: &str,
    sources: &[LimitSource],
    activity: bool,
    meta_paths: &mut Vec<Vec<String>>,
) -> Result<Vec<Limit>, Vec<(String, String)>> {
    let (root, keyed) = if activity {
        ("activity.attributes.", "activity.attributes.<key>")
    } else {
        ("meta.", "meta.<key>")
    };
    let mut problems = Vec::new();
    let mut limits = Vec::new();
    for (i, source) in sources.iter().enumerate() {
        let field = |key: &str| format!("limits[{i}].{key}");
        let scope_text = source.scope.trim();
        let scope = match scope_text {
            "member" => Some(Scope::Member),
            "wallet" => Some(Scope::Wallet),
            "campaign" => Some(Scope::Campaign),
            _ => match scope_text.strip_prefix(root) {
                Some(path) if meta_key(path) => {
                    let path: Vec<String> = scope_text.split('.').map(str::to_string).collect();
                    let slot = match meta_paths.iter().position(|p| *p == path) {
                        Some(slot) => slot,
                        None => {
                            meta_paths.push(path);
                            meta_paths.len() - 1
                        }
                    };
                    Some(Scope::Meta(u16::try_from(slot).unwrap_or(u16::MAX)))
                }
                _ => {
                    problems.push((
                        field("scope"),
                        format!(
                            "`{scope_text}` is not a scope; use member, wallet, campaign or {keyed} (letters, digits, `_` and `-`, parts joined by dots)"
                        ),
                    ));
                    None
                }
            },
        };
        let period = Period::parse(&source.period)
            .map_err(|message| problems.push((field("period"), message)))
            .ok();
        let times = match source.times {
            Some(n) if n > 0 => Some(n as u64),
            Some(n) => {
                problems.push((field("times"), format!("must be at least 1, not {n}")));
                None
            }
            None => None,
        };
        let tokens = match source.tokens.as_ref().map(ExprSource::decimal) {
            Some(Some(n)) if n > Decimal::ZERO => Some(n),
            Some(_) => {
                problems.push((field("tokens"), "must be a number above 0".into()));
                None
            }
            None => None,
        };
        if source.times.is_none() && source.tokens.is_none() {
            problems.push((
                format!("limits[{i}]"),
                "needs times, tokens or both: a ceiling on how often the rule fires or on the tokens it adds".into(),
            ));
        }
        if let (Some(scope), Some(period)) = (scope, period) {
            let counter = counter(period, scope_text, rule);
            if limits.iter().any(|l: &Limit| l.counter == counter) {
                problems.push((
                    field("scope"),
                    format!(
                        "another limit of this rule counts {scope_text} per {}; join them into one",
                        period.name()
                    ),
                ));
            }
            limits.push(Limit {
                scope,
                period,
                counter,
                times,
                tokens,
            });
        }
    }
    if problems.is_empty() {
        Ok(limits)
    } else {
        Err(problems)
    }
}

/// Reads the campaign's budget: the limit, or each problem as (key, message).
pub(crate) fn compile_budget(source: &BudgetSource) -> Result<Limit, Vec<(String, String)>> {
    let mut problems = Vec::new();
    let period = Period::parse(&source.period)
        .map_err(|message| problems.push(("programme.budget.period".to_string(), message)))
        .ok();
    let tokens = match source.tokens.decimal() {
        Some(n) if n > Decimal::ZERO => Some(n),
        _ => {
            problems.push((
                "programme.budget.tokens".to_string(),
                "must be a number above 0".into(),
            ));
            None
        }
    };
    match (period, tokens) {
        (Some(period), Some(tokens)) if problems.is_empty() => Ok(Limit {
            scope: Scope::Campaign,
            period,
            counter: counter(period, "campaign", ""),
            times: None,
            tokens: Some(tokens),
        }),
        _ => Err(problems),
    }
}

/// A meta key a scope may name: parts of letters, digits, `_` and `-`, joined by dots.
fn meta_key(path: &str) -> bool {
    path.split('.').all(|part| {
        !part.is_empty()
            && part
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    })
}

impl Limit {
    pub fn scope_name(&self, meta_paths: &[Vec<String>]) -> String {
        match self.scope {
            Scope::Member => "member".into(),
            Scope::Wallet => "wallet".into(),
            Scope::Campaign => "campaign".into(),
            Scope::Meta(slot) => meta_paths[usize::from(slot)].join("."),
        }
    }

    /// `member/month` or `meta.store.id/day`: the limit in a trace.
    pub fn label(&self, meta_paths: &[Vec<String>]) -> String {
        format!("{}/{}", self.scope_name(meta_paths), self.period.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn day(text: &str) -> NaiveDate {
        text.parse().unwrap()
    }

    #[test]
    fn periods_start_where_a_calendar_says_and_rolling_ones_look_back() {
        let d = day("2026-12-03"); // a Thursday
        assert_eq!(Period::Day.window(d), (d, d));
        assert_eq!(Period::Week.bucket(d), day("2026-11-30"));
        assert_eq!(Period::Month.bucket(d), day("2026-12-01"));
        assert_eq!(Period::Year.bucket(d), day("2026-01-01"));
        assert_eq!(Period::Ever.window(d), (EVER, EVER));
        assert_eq!(Period::Rolling(30).window(d), (day("2026-11-04"), d));
        assert_eq!(Period::Rolling(1).window(d), (d, d));
        assert_eq!(
            Period::Month.ends(day("2026-12-31")),
            Some(day("2027-01-01"))
        );
        assert_eq!(Period::Week.ends(d), Some(day("2026-12-07")));
        assert_eq!(Period::Ever.ends(d), None);
    }

    #[test]
    fn a_period_is_one_of_the_names_or_a_number_of_days() {
        assert_eq!(Period::parse("30d"), Ok(Period::Rolling(30)));
        assert_eq!(Period::parse(" month "), Ok(Period::Month));
        for bad in ["0d", "fortnight", "d", "-3d", "99999d", "3 d", ""] {
            assert!(Period::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_tally_sums_the_buckets_of_a_window_and_takes_back_what_is_given_back() {
        let key = CounterKey {
            counter: counter(Period::Rolling(7), "member", "bonus"),
            scope: "m-1".into(),
        };
        let other = CounterKey {
            scope: "m-2".into(),
            ..key.clone()
        };
        let mut tally = Tally::new();
        let uses = [
            (key.clone(), "2026-11-24", 10),
            (key.clone(), "2026-12-01", 5),
            (other.clone(), "2026-12-01", 7),
        ];
        for (key, on, tokens) in uses {
            tally.add(&[Use {
                key,
                bucket: day(on),
                tokens: Decimal::from(tokens),
            }]);
        }
        let (from, to) = Period::Rolling(7).window(day("2026-12-01"));
        assert_eq!(
            tally.used(&key, from, to),
            Used {
                times: 1,
                tokens: Decimal::from(5)
            }
        );
        tally.set_more(&key, day("2026-12-01"), -1, Decimal::from(-5));
        assert_eq!(tally.used(&key, from, to), Used::default());
        assert_eq!(tally.used(&other, from, to).times, 1);
    }
}
