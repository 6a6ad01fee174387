//! The dates the service records: the years 1 to 9999. Within them every date is four digits,
//! so SQLite's text dates sort as the instants they name; beyond them an offset or a long expiry
//! could write `+10000-01-01`, which sorts before `2026`.

use chrono::{DateTime, Datelike, NaiveDate, TimeZone, Utc};

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
}
