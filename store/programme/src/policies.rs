//! Programme policies per campaign: the balance a member must keep, when earned tokens expire,
//! and what a reversal does with tokens already spent.

use crate::Campaign;
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use seam::common::cache::FRESH_FOR;
use std::fmt;
use std::str::FromStr;

use crate::common::calendar::last_second;
use crate::error::known;
use crate::{Programme, StoreError, Tokens};
use rules::MAX_PENDING_DAYS;

/// When earned tokens expire, counted from the earn's date (in UTC).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Expiry {
    #[default]
    Never,
    /// This many days after the earn.
    Days(u32),
    /// At the end of the month of the earn.
    EndOfMonth,
    /// At the end of the year of the earn.
    EndOfYear,
}

/// The longest expiry a policy may give, in days: a hundred years. Beyond it a policy is refused
/// when it is set, not met as an error in every earn it would govern.
pub const MAX_EXPIRY_DAYS: u32 = 36_525;

impl Expiry {
    /// The moment tokens earned at `earned` expire (the first instant they no longer count),
    /// at the latest `last_second()`: the arithmetic never overflows, and every stored expiry
    /// has a four-digit year (timestamps stored as text then order as time does).
    pub fn expires_at(self, earned: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let first_of = |year: i32, month: u32| {
            NaiveDate::from_ymd_opt(year, month, 1)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|d| Utc.from_utc_datetime(&d))
        };
        let next_year = earned.year().saturating_add(1);
        let at = match self {
            Expiry::Never => return None,
            Expiry::Days(days) => {
                Duration::try_days(i64::from(days)).and_then(|span| earned.checked_add_signed(span))
            }
            Expiry::EndOfMonth if earned.month() == 12 => first_of(next_year, 1),
            Expiry::EndOfMonth => first_of(earned.year(), earned.month() + 1),
            Expiry::EndOfYear => first_of(next_year, 1),
        };
        Some(at.map_or(last_second(), |at| at.min(last_second())))
    }

    /// An expiry as stored: also one set before expiries were bounded (applied as it says, the
    /// arithmetic saturating), so that such a campaign's earns still go through.
    fn stored(text: &str) -> Option<Expiry> {
        text.parse().ok().or_else(|| {
            let days = text.strip_prefix("days:")?.parse::<u32>().ok()?;
            (days > 0).then_some(Expiry::Days(days))
        })
    }

    /// Refuses an expiry the service will not apply: more than `MAX_EXPIRY_DAYS`, or none.
    pub fn check(self) -> Result<Expiry, String> {
        match self {
            Expiry::Days(0) => Err("days:0: tokens must count for at least a day".into()),
            Expiry::Days(days) if days > MAX_EXPIRY_DAYS => Err(format!(
                "days:{days}: at most days:{MAX_EXPIRY_DAYS} (a hundred years)"
            )),
            fine => Ok(fine),
        }
    }
}

impl fmt::Display for Expiry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Expiry::Never => f.write_str("never"),
            Expiry::Days(days) => write!(f, "days:{days}"),
            Expiry::EndOfMonth => f.write_str("end-of-month"),
            Expiry::EndOfYear => f.write_str("end-of-year"),
        }
    }
}

impl FromStr for Expiry {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "never" => Ok(Expiry::Never),
            "end-of-month" => Ok(Expiry::EndOfMonth),
            "end-of-year" => Ok(Expiry::EndOfYear),
            other => other
                .strip_prefix("days:")
                .and_then(|n| n.parse::<u32>().ok())
                .map(Expiry::Days)
                .ok_or_else(|| {
                    format!(
                        "`{other}`: use never, end-of-month, end-of-year or days:N \
                         (N from 1 to {MAX_EXPIRY_DAYS})"
                    )
                })?
                .check(),
        }
    }
}

/// What a reversal of an earn does when the member has already spent some of the tokens it
/// takes back (the wallet's lots hold less than it takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Shortfall {
    /// The wallet owes the rest: its balance goes below zero, burns are refused until tokens
    /// credited later pay the debt, and those tokens pay it before anything else can spend them.
    #[default]
    Debt,
    /// The wallet gives what it has; the rest is forgiven (the earn still counts as reversed).
    Clip,
    /// The reversal is refused, naming the shortfall.
    Refuse,
}

impl Shortfall {
    pub fn as_str(self) -> &'static str {
        match self {
            Shortfall::Debt => "debt",
            Shortfall::Clip => "clip",
            Shortfall::Refuse => "refuse",
        }
    }
}

impl fmt::Display for Shortfall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Shortfall {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "debt" => Ok(Shortfall::Debt),
            "clip" => Ok(Shortfall::Clip),
            "refuse" => Ok(Shortfall::Refuse),
            other => Err(format!("`{other}`: use debt, clip or refuse")),
        }
    }
}

/// Whether members may transfer tokens between the campaign's wallets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Transfers {
    #[default]
    Allowed,
    Forbidden,
}

impl Transfers {
    pub fn as_str(self) -> &'static str {
        match self {
            Transfers::Allowed => "allow",
            Transfers::Forbidden => "forbid",
        }
    }
}

impl std::str::FromStr for Transfers {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "allow" => Ok(Transfers::Allowed),
            "forbid" => Ok(Transfers::Forbidden),
            other => Err(format!("`{other}`: use allow or forbid")),
        }
    }
}

/// What an earn's expiry counts from when its tokens are pending first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ExpiryFrom {
    /// The earn's date, as for any earn.
    #[default]
    Earn,
    /// The day its tokens vest.
    Vest,
}

impl ExpiryFrom {
    pub fn as_str(self) -> &'static str {
        match self {
            ExpiryFrom::Earn => "earn",
            ExpiryFrom::Vest => "vest",
        }
    }
}

impl FromStr for ExpiryFrom {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim() {
            "earn" => Ok(ExpiryFrom::Earn),
            "vest" => Ok(ExpiryFrom::Vest),
            other => Err(format!("`{other}`: use earn or vest")),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Policy {
    /// A burn may not take the balance below this.
    pub min_balance: Tokens,
    pub expiry: Expiry,
    /// What a reversal does with tokens already spent.
    pub shortfall: Shortfall,
    pub transfers: Transfers,
    /// The most one wallet may transfer out in a day (UTC); None: no cap.
    pub transfer_daily_cap: Option<Tokens>,
    /// Whether a transfer moves lifetime earnings (and so tiers) with the tokens.
    pub transfers_move_earned: bool,
    /// Earned tokens are pending this many days after the earn's date before they can be
    /// spent (0: at once); a rule may say otherwise for its earns.
    pub pending_days: u32,
    /// Whether pending tokens count toward lifetime earnings (and so tiers) when credited,
    /// rather than when they vest.
    pub pending_counts_tier: bool,
    /// What the expiry of tokens that were pending counts from.
    pub expiry_from: ExpiryFrom,
    /// Tokens about to expire are announced (`wallet.points_expiring`) this many days before
    /// their day (0: never).
    pub expiry_notice_days: u32,
    /// How many days back an earn may be dated (by either door); None: back to 1970.
    pub earn_max_age_days: Option<u32>,
}

/// The notice a campaign's members get of their tokens' expiry unless its policy says
/// otherwise, in days.
pub const DEFAULT_EXPIRY_NOTICE_DAYS: u32 = 30;

/// The furthest back a campaign may let earns be dated, in days: a hundred years.
pub const MAX_EARN_AGE_DAYS: u32 = 36_525;

/// The longest notice of an expiry, in days: a year.
pub const MAX_EXPIRY_NOTICE_DAYS: u32 = 366;

impl Default for Policy {
    fn default() -> Self {
        Policy {
            min_balance: Tokens::ZERO,
            expiry: Expiry::default(),
            shortfall: Shortfall::default(),
            transfers: Transfers::default(),
            transfer_daily_cap: None,
            transfers_move_earned: false,
            pending_days: 0,
            pending_counts_tier: false,
            expiry_from: ExpiryFrom::default(),
            expiry_notice_days: DEFAULT_EXPIRY_NOTICE_DAYS,
            earn_max_age_days: None,
        }
    }
}

impl Policy {
    /// When tokens earned on `date` vest, if they are pending at all (`rule_days`: what the
    /// earn's rules said, over the policy's days). Tokens whose day has come by `now` are not.
    pub fn vests_at(
        &self,
        date: DateTime<Utc>,
        rule_days: Option<u32>,
        now: DateTime<Utc>,
    ) -> Option<DateTime<Utc>> {
        let days = rule_days.unwrap_or(self.pending_days);
        let vests_at = pending_until(date, days)?;
        (vests_at > now).then_some(vests_at)
    }

    /// When tokens earned on `date` expire (`rule_days` as for `vests_at`): counted from the
    /// earn, or from the day they vest (whether that day is past or not) as the policy says.
    pub fn expires_at(&self, date: DateTime<Utc>, rule_days: Option<u32>) -> Option<DateTime<Utc>> {
        let from = match self.expiry_from {
            ExpiryFrom::Earn => date,
            ExpiryFrom::Vest => {
                pending_until(date, rule_days.unwrap_or(self.pending_days)).unwrap_or(date)
            }
        };
        self.expiry.expires_at(from)
    }
}

/// `days` after `date` (None for 0: nothing is pending), at the latest `last_second()`.
fn pending_until(date: DateTime<Utc>, days: u32) -> Option<DateTime<Utc>> {
    if days == 0 {
        return None;
    }
    let until = Duration::try_days(i64::from(days)).and_then(|span| date.checked_add_signed(span));
    Some(until.map_or(last_second(), |at| at.min(last_second())))
}

/// Policies: a campaign's minimum balance and expiry (scope: `&Campaign`).
impl Programme {
    /// The campaign's policy; a campaign never given one keeps no minimum and never expires.
    #[tracing::instrument(skip_all)]
    pub async fn policy(&self, campaign: &Campaign) -> Result<Policy, StoreError> {
        self.policy_of(&campaign.id).await
    }

    /// The policy of a campaign the store's own work read from a wallet or an earn.
    #[tracing::instrument(skip_all)]
    pub async fn policy_of(&self, campaign_id: &str) -> Result<Policy, StoreError> {
        if let Some(policy) = self.caches.policies.fresh(campaign_id, FRESH_FOR) {
            return Ok(policy);
        }
        let policy = self.stored_policy(campaign_id).await?;
        self.caches.policies.put(campaign_id, policy);
        Ok(policy)
    }

    async fn stored_policy(&self, campaign_id: &str) -> Result<Policy, StoreError> {
        const SQL: &str = "SELECT min_balance, expiry, shortfall, transfers, transfer_daily_cap, \
             transfers_move_earned, CAST(pending_days AS BIGINT), pending_counts_tier, expiry_from, \
             CAST(expiry_notice_days AS BIGINT), CAST(earn_max_age_days AS BIGINT) \
             FROM campaign_policies WHERE campaign_id = $1";
        type Row = (
            i64,
            String,
            String,
            String,
            Option<i64>,
            bool,
            i64,
            bool,
            String,
            i64,
            Option<i64>,
        );
        let row: Option<Row> = self.read_row(SQL, params![campaign_id]).await?;
        let Some((
            min,
            expiry,
            shortfall,
            transfers,
            cap,
            move_earned,
            pending_days,
            pending_counts_tier,
            expiry_from,
            notice_days,
            max_age,
        )) = row
        else {
            return Ok(Policy::default());
        };
        Ok(Policy {
            min_balance: Tokens::from_micros(min),
            expiry: known(
                Expiry::stored(&expiry),
                "campaign_policies",
                "expiry",
                &expiry,
            )?,
            shortfall: known(
                shortfall.parse().ok(),
                "campaign_policies",
                "shortfall",
                &shortfall,
            )?,
            transfers: known(
                transfers.parse().ok(),
                "campaign_policies",
                "transfers",
                &transfers,
            )?,
            transfer_daily_cap: cap.map(Tokens::from_micros),
            transfers_move_earned: move_earned,
            pending_days: known(
                u32::try_from(pending_days).ok(),
                "campaign_policies",
                "pending_days",
                &pending_days.to_string(),
            )?,
            pending_counts_tier,
            expiry_from: known(
                expiry_from.parse().ok(),
                "campaign_policies",
                "expiry_from",
                &expiry_from,
            )?,
            expiry_notice_days: known(
                u32::try_from(notice_days).ok(),
                "campaign_policies",
                "expiry_notice_days",
                &notice_days.to_string(),
            )?,
            earn_max_age_days: match max_age {
                None => None,
                Some(days) => Some(known(
                    u32::try_from(days).ok(),
                    "campaign_policies",
                    "earn_max_age_days",
                    &days.to_string(),
                )?),
            },
        })
    }

    #[tracing::instrument(skip_all)]
    pub async fn set_policy(
        &self,
        campaign: &Campaign,
        policy: Policy,
    ) -> Result<Policy, StoreError> {
        let campaign_id = campaign.id.as_str();
        if policy.min_balance < Tokens::ZERO {
            return Err(StoreError::invalid("minBalance", "must not be negative"));
        }
        policy
            .expiry
            .check()
            .map_err(|why| StoreError::invalid("expiry", &why))?;
        if policy
            .transfer_daily_cap
            .is_some_and(|cap| !cap.is_positive())
        {
            return Err(StoreError::invalid(
                "transferDailyCap",
                "must be more than 0",
            ));
        }
        if policy.pending_days > MAX_PENDING_DAYS {
            return Err(StoreError::invalid(
                "pendingDays",
                format!("at most {MAX_PENDING_DAYS} (ten years)"),
            ));
        }
        if policy.expiry_notice_days > MAX_EXPIRY_NOTICE_DAYS {
            return Err(StoreError::invalid(
                "expiryNoticeDays",
                format!("at most {MAX_EXPIRY_NOTICE_DAYS} (a year)"),
            ));
        }
        if policy
            .earn_max_age_days
            .is_some_and(|days| !(1..=MAX_EARN_AGE_DAYS).contains(&days))
        {
            return Err(StoreError::invalid(
                "earnMaxAgeDays",
                format!("from 1 to {MAX_EARN_AGE_DAYS} (a hundred years)"),
            ));
        }
        const SQL: &str = "INSERT INTO campaign_policies (campaign_id, min_balance, expiry, \
             shortfall, transfers, transfer_daily_cap, transfers_move_earned, pending_days, \
             pending_counts_tier, expiry_from, updated_at, expiry_notice_days, earn_max_age_days) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13) \
             ON CONFLICT (campaign_id) DO UPDATE \
             SET min_balance = excluded.min_balance, expiry = excluded.expiry, \
             shortfall = excluded.shortfall, transfers = excluded.transfers, \
             transfer_daily_cap = excluded.transfer_daily_cap, \
             transfers_move_earned = excluded.transfers_move_earned, \
             pending_days = excluded.pending_days, \
             pending_counts_tier = excluded.pending_counts_tier, \
             expiry_from = excluded.expiry_from, updated_at = excluded.updated_at, \
             expiry_notice_days = excluded.expiry_notice_days, \
             earn_max_age_days = excluded.earn_max_age_days";
        let cap = policy.transfer_daily_cap.map(Tokens::micros);
        self.execute(
            SQL,
            params![
                campaign_id,
                policy.min_balance.micros(),
                policy.expiry.to_string(),
                policy.shortfall.as_str(),
                policy.transfers.as_str(),
                cap,
                policy.transfers_move_earned,
                i64::from(policy.pending_days),
                policy.pending_counts_tier,
                policy.expiry_from.as_str(),
                self.now(),
                i64::from(policy.expiry_notice_days),
                policy.earn_max_age_days.map(i64::from)
            ],
        )
        .await?;
        self.caches.policies.remove(campaign_id);
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_dates() {
        let at = |s: &str| s.parse::<DateTime<Utc>>().unwrap();
        let earned = at("2026-12-15T10:00:00Z");
        assert_eq!(Expiry::Never.expires_at(earned), None);
        assert_eq!(
            Expiry::Days(30).expires_at(earned),
            Some(at("2027-01-14T10:00:00Z"))
        );
        assert_eq!(
            Expiry::EndOfMonth.expires_at(earned),
            Some(at("2027-01-01T00:00:00Z"))
        );
        assert_eq!(
            Expiry::EndOfMonth.expires_at(at("2026-02-01T00:00:00Z")),
            Some(at("2026-03-01T00:00:00Z"))
        );
        assert_eq!(
            Expiry::EndOfYear.expires_at(earned),
            Some(at("2027-01-01T00:00:00Z"))
        );
        for text in ["never", "days:90", "end-of-month", "end-of-year"] {
            assert_eq!(text.parse::<Expiry>().unwrap().to_string(), text);
        }
        assert!("days:0".parse::<Expiry>().is_err());
        assert!("weekly".parse::<Expiry>().is_err());
    }

    #[test]
    fn expiries_are_bounded_and_never_overflow() {
        assert_eq!(
            format!("days:{MAX_EXPIRY_DAYS}").parse(),
            Ok(Expiry::Days(MAX_EXPIRY_DAYS))
        );
        for refused in [
            "days:36526",
            "days:4000000000",
            "days:99999999999",
            "days:-1",
        ] {
            let why = refused.parse::<Expiry>().unwrap_err();
            assert!(why.contains("36525"), "{refused}: {why}");
        }
        assert!(Expiry::Days(4_000_000_000).check().is_err());
        // Stored before the bound: still read, and applied without overflow.
        assert_eq!(
            Expiry::stored("days:4000000000"),
            Some(Expiry::Days(4_000_000_000))
        );
        assert_eq!(Expiry::stored("days:0"), None);
        // Past the year 9999 (or the calendar's end), an expiry is the last second of 9999:
        // no panic, no "never", no five-digit year.
        let latest = last_second();
        assert_eq!(latest.to_rfc3339(), "9999-12-31T23:59:59+00:00");
        let late = "9999-12-31T23:00:00Z".parse::<DateTime<Utc>>().unwrap();
        for earned in [DateTime::<Utc>::MAX_UTC, late] {
            for expiry in [
                Expiry::Days(u32::MAX),
                Expiry::Days(MAX_EXPIRY_DAYS),
                Expiry::EndOfMonth,
                Expiry::EndOfYear,
            ] {
                assert_eq!(expiry.expires_at(earned), Some(latest), "{expiry}");
            }
        }
        let now = "2026-11-27T00:00:00Z".parse::<DateTime<Utc>>().unwrap();
        assert_eq!(Expiry::Days(4_000_000_000).expires_at(now), Some(latest));
    }
}
