//! Programme policies per campaign: the balance a member must keep, and when earned tokens expire.

use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use std::fmt;
use std::str::FromStr;

use crate::common::ids::now;
use crate::error::known;
use crate::{Store, StoreError, Tokens};

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

impl Expiry {
    /// The moment tokens earned at `earned` expire (the first instant they no longer count).
    pub fn expires_at(self, earned: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let first_of = |year: i32, month: u32| {
            NaiveDate::from_ymd_opt(year, month, 1)
                .and_then(|d| d.and_hms_opt(0, 0, 0))
                .map(|d| Utc.from_utc_datetime(&d))
        };
        match self {
            Expiry::Never => None,
            Expiry::Days(days) => Some(earned + Duration::days(i64::from(days))),
            Expiry::EndOfMonth if earned.month() == 12 => first_of(earned.year() + 1, 1),
            Expiry::EndOfMonth => first_of(earned.year(), earned.month() + 1),
            Expiry::EndOfYear => first_of(earned.year() + 1, 1),
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
                .and_then(|n| n.parse().ok())
                .filter(|n| *n > 0)
                .map(Expiry::Days)
                .ok_or_else(|| {
                    format!("`{other}`: use never, end-of-month, end-of-year or days:N")
                }),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Policy {
    /// A burn may not take the balance below this.
    pub min_balance: Tokens,
    pub expiry: Expiry,
}

impl Store {
    /// The campaign's policy; a campaign never given one keeps no minimum and never expires.
    pub async fn policy(&self, campaign_id: &str) -> Result<Policy, StoreError> {
        if let Some(policy) = self.caches.policies.get(campaign_id) {
            return Ok(policy);
        }
        let policy = self.stored_policy(campaign_id).await?;
        self.caches.policies.put(campaign_id, policy);
        Ok(policy)
    }

    async fn stored_policy(&self, campaign_id: &str) -> Result<Policy, StoreError> {
        const SQL: &str =
            "SELECT min_balance, expiry FROM campaign_policies WHERE campaign_id = $1";
        let row: Option<(i64, String)> = with_pool!(self, |pool| sqlx::query_as(SQL)
            .bind(campaign_id)
            .fetch_optional(pool)
            .await)?;
        let Some((min, expiry)) = row else {
            return Ok(Policy::default());
        };
        Ok(Policy {
            min_balance: Tokens::from_micros(min),
            expiry: known(expiry.parse().ok(), "campaign_policies", "expiry", &expiry)?,
        })
    }

    pub async fn set_policy(
        &self,
        org_id: &str,
        campaign_id: &str,
        policy: Policy,
    ) -> Result<Policy, StoreError> {
        self.get_campaign(org_id, campaign_id).await?;
        if policy.min_balance < Tokens::ZERO {
            return Err(StoreError::invalid("min-balance", "must not be negative"));
        }
        const SQL: &str = "INSERT INTO campaign_policies (campaign_id, min_balance, expiry, updated_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT (campaign_id) DO UPDATE \
             SET min_balance = excluded.min_balance, expiry = excluded.expiry, updated_at = excluded.updated_at";
        with_writer!(self, |pool| {
            sqlx::query(SQL)
                .bind(campaign_id)
                .bind(policy.min_balance.micros())
                .bind(policy.expiry.to_string())
                .bind(now())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
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
}
