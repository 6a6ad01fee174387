//! What operators see of the counters: each limit's use in the period holding a day, over all
//! of its scopes or for one (a member, a wallet, a meta value).

use chrono::NaiveDate;
use rules::{Decimal, LimitInfo};

use crate::{Ledger, StoreError, Tokens};

/// One limit's use in the period holding a day.
#[derive(Debug, Clone, PartialEq)]
pub struct LimitUse {
    pub limit: LimitInfo,
    /// The period holding the day, first and last day (for a rolling period, the day and
    /// those before it; `ever` has no last day).
    pub from: NaiveDate,
    pub to: Option<NaiveDate>,
    /// What was used: over every scope, or the one asked for.
    pub used: CounterUse,
    /// How many scopes used it, and how many of them reached a ceiling.
    pub scopes: i64,
    pub reached: i64,
    /// What is left under each ceiling, for one scope (the one asked for, or the campaign's).
    pub left: Option<Left>,
}

/// What one scope has left under a limit's ceilings (`None`: the limit has no such ceiling).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Left {
    pub times: Option<i64>,
    pub tokens: Option<Tokens>,
}

/// Times and tokens of a counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CounterUse {
    pub times: i64,
    pub tokens: Tokens,
}

/// Operators' view of limits and budgets.
impl Ledger {
    /// The use of each of `limits` (a campaign's active rule set's) in the period holding `day`:
    /// over all scopes, or only `scope` (a member's or wallet's id, a meta value) for the
    /// limits that count per member, wallet or meta value.
    pub async fn limit_uses(
        &self,
        campaign_id: &str,
        limits: &[LimitInfo],
        day: NaiveDate,
        scope: Option<&str>,
    ) -> Result<Vec<LimitUse>, StoreError> {
        // CAST: PostgreSQL sums BIGINTs as NUMERIC.
        const USED: &str = "SELECT COUNT(*), CAST(COALESCE(SUM(s.times), 0) AS BIGINT), \
             CAST(COALESCE(SUM(s.tokens), 0) AS BIGINT), CAST(COALESCE(SUM(CASE WHEN ($5 >= 0 \
             AND s.times >= $5) OR ($6 >= 0 AND s.tokens >= $6) THEN 1 ELSE 0 END), 0) AS BIGINT) \
             FROM (SELECT scope, SUM(times) AS times, SUM(tokens) AS tokens FROM limit_counters \
             WHERE campaign_id = $1 AND counter = $2 AND bucket BETWEEN $3 AND $4 \
             AND ($7 IS NULL OR scope = $7) GROUP BY scope) s";
        let mut uses = Vec::with_capacity(limits.len());
        for limit in limits {
            let (from, last_bucket) = limit.period.window(day);
            let campaign_wide = limit.scope == "campaign";
            let scope = if campaign_wide { Some("") } else { scope };
            let times = limit
                .times
                .map_or(-1, |t| i64::try_from(t).unwrap_or(i64::MAX));
            let tokens = limit.tokens.map_or(-1, micros_of);
            let args = params![
                campaign_id,
                limit.counter,
                from,
                last_bucket,
                times,
                tokens,
                scope
            ];
            let (scopes, used_times, used_tokens, reached): (i64, i64, i64, i64) =
                self.db().read_row(USED, args).await?.unwrap_or_default();
            let used = CounterUse {
                times: used_times,
                tokens: Tokens::from_micros(used_tokens),
            };
            let left = scope.map(|_| Left {
                times: limit.times.map(|_| (times - used_times).max(0)),
                tokens: limit
                    .tokens
                    .map(|_| Tokens::from_micros((tokens - used_tokens).max(0))),
            });
            uses.push(LimitUse {
                limit: limit.clone(),
                from,
                to: limit.period.ends(day).and_then(|end| end.pred_opt()),
                used,
                scopes,
                reached,
                left,
            });
        }
        Ok(uses)
    }
}

/// A ceiling's micro-tokens.
fn micros_of(tokens: Decimal) -> i64 {
    Tokens::from_decimal(tokens).map_or(i64::MAX, Tokens::micros)
}
