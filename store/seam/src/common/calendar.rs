//! The dates the service records: the years 1 to 9999. Within them every date is four digits,
//! so SQLite's text dates sort as the instants they name; beyond them an offset or a long expiry
//! could write `+10000-01-01`, which sorts before `2026`.
//!
//! A transaction's own date (an earn's, a burn's, a file row's) is held to a narrower window,
//! `DateWindow`: from the Unix epoch to a tolerance ahead of the clock (a day unless the
//! operator says otherwise), and for earns no further back than the campaign allows. A typo
//! such as `0226-11-20` is refused rather than recorded where no member's history could be.

use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveTime, TimeZone, Utc};

use crate::limits::Refused;

/// Whether `at` falls in the years the service records.
pub fn in_calendar(at: DateTime<Utc>) -> bool {
    (1..=9_999).contains(&at.year())
}

/// The last second the service records: the end of the year 9999.
pub fn last_second() -> DateTime<Utc> {
    let last = NaiveDate::from_ymd_opt(9_999, 12, 31).and_then(|d| d.and_hms_opt(23, 59, 59));
    Utc.from_utc_datetime(&last.expect("a valid date"))
}

/// The first second the service records: the start of the year 1.
pub fn first_second() -> DateTime<Utc> {
    let first = NaiveDate::from_ymd_opt(1, 1, 1).and_then(|d| d.and_hms_opt(0, 0, 0));
    Utc.from_utc_datetime(&first.expect("a valid date"))
}

/// `at`, or the calendar's nearest edge if it falls outside (a local time of the year 9999 or 1
/// whose offset takes it across, in UTC, by less than a day).
pub fn into_calendar(at: DateTime<Utc>) -> DateTime<Utc> {
    at.clamp(first_second(), last_second())
}

/// The first instant (UTC) of `at`'s day; defined for every instant chrono holds.
pub fn day_of(at: DateTime<Utc>) -> DateTime<Utc> {
    at.date_naive().and_time(NaiveTime::MIN).and_utc()
}

/// How far ahead of the clock a transaction may be dated unless the operator says otherwise
/// (`dates_ahead_secs`): clocks and time zones disagree by hours, not days.
pub const DATES_AHEAD: Duration = Duration::days(1);

/// The dates a transaction may carry, as seen at one instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateWindow {
    pub earliest: DateTime<Utc>,
    pub latest: DateTime<Utc>,
}

impl DateWindow {
    /// The window at `now`: from the Unix epoch, or `back_days` before `now` if later, to
    /// `ahead` after `now`.
    pub fn at(now: DateTime<Utc>, ahead: Duration, back_days: Option<u32>) -> DateWindow {
        let earliest = back_days
            .and_then(|days| now.checked_sub_signed(Duration::days(i64::from(days))))
            .map_or(DateTime::UNIX_EPOCH, |back| back.max(DateTime::UNIX_EPOCH));
        let latest = now
            .checked_add_signed(ahead)
            .map_or(last_second(), |latest| latest.min(last_second()));
        DateWindow { earliest, latest }
    }

    pub fn check(&self, date: DateTime<Utc>) -> Result<(), Refused> {
        if (self.earliest..=self.latest).contains(&date) {
            Ok(())
        } else {
            Err(Refused::OutOfWindow {
                earliest: self.earliest,
                latest: self.latest,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_calendar_is_four_digit_years() {
        let at = |text: &str| text.parse::<DateTime<Utc>>().unwrap();
        assert!(in_calendar(at("0001-01-01T00:00:00Z")));
        assert!(in_calendar(last_second()));
        assert!(in_calendar(at("9999-12-31T23:59:59.999999Z")));
        // 9999-12-31T23:59:59-01:00 is in the year 10000 in UTC.
        assert!(!in_calendar(at("9999-12-31T23:59:59-01:00")));
        assert!(!in_calendar(at("0001-01-01T00:00:00+01:00")));
        let edge = into_calendar(at("9999-12-31T23:59:59-01:00"));
        assert_eq!(edge, last_second());
        let first = into_calendar(at("0001-01-01T00:00:00+01:00"));
        assert_eq!(first.to_rfc3339(), "0001-01-01T00:00:00+00:00");
        let inside = at("2026-11-27T10:00:00+01:00");
        assert_eq!(into_calendar(inside), inside);
    }

    #[test]
    fn every_instant_has_a_day() {
        let at = |text: &str| text.parse::<DateTime<Utc>>().unwrap();
        for (instant, day) in [
            ("2026-11-20T08:00:00Z", "2026-11-20T00:00:00+00:00"),
            // Outside the nanosecond range chrono's `duration_trunc` needs.
            ("0226-11-20T08:00:00Z", "0226-11-20T00:00:00+00:00"),
            ("9999-12-31T23:59:59Z", "9999-12-31T00:00:00+00:00"),
            ("0001-01-01T00:00:01Z", "0001-01-01T00:00:00+00:00"),
        ] {
            assert_eq!(day_of(at(instant)).to_rfc3339(), day, "{instant}");
        }
    }

    #[test]
    fn a_window_runs_from_the_epoch_or_the_campaigns_limit_to_the_tolerance() {
        let now = "2026-12-02T10:00:00Z".parse::<DateTime<Utc>>().unwrap();
        let window = DateWindow::at(now, DATES_AHEAD, None);
        assert!(window.check(DateTime::UNIX_EPOCH).is_ok());
        assert!(window.check(now + DATES_AHEAD).is_ok());
        let refused = window.check(now + DATES_AHEAD + Duration::seconds(1));
        let message = refused.unwrap_err().message();
        assert!(
            message.contains("1970-01-01") && message.contains("2026-12-03"),
            "{message}"
        );
        assert!(
            window
                .check(DateTime::UNIX_EPOCH - Duration::seconds(1))
                .is_err()
        );
        let recent = DateWindow::at(now, DATES_AHEAD, Some(30));
        assert!(recent.check(now - Duration::days(30)).is_ok());
        assert!(recent.check(now - Duration::days(31)).is_err());
        assert_eq!(
            DateWindow::at(now, DATES_AHEAD, Some(u32::MAX)).earliest,
            DateTime::UNIX_EPOCH
        );
    }
}
