//! Cell values by type, as a mapping declares them: decimals with their separators, dates with
//! their format and time zone, booleans with their words, and text.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, NaiveDateTime, TimeZone, Utc};
use chrono_tz::Tz;
use rules::Decimal;
use serde_json::Value;

/// What a column holds.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    Text,
    Decimal {
        point: char,
        /// Groups of three digits before the point may be separated by this.
        thousands: Option<char>,
    },
    Date {
        /// A chrono `strftime` format; `None`: RFC 3339, `YYYY-MM-DDTHH:MM:SS` or `YYYY-MM-DD`.
        format: Option<String>,
        /// The zone of a date or time written without an offset.
        zone: Tz,
    },
    Boolean {
        yes: Vec<String>,
        no: Vec<String>,
    },
    /// A meta cell that is a number or boolean when plainly one, else text (the canonical file).
    Auto,
}

impl Kind {
    pub const DECIMAL: Kind = Kind::Decimal {
        point: '.',
        thousands: None,
    };
    pub const DATE: Kind = Kind::Date {
        format: None,
        zone: Tz::UTC,
    };

    /// The words a boolean column takes unless its mapping says others.
    pub const YES: [&str; 4] = ["true", "yes", "y", "1"];
    pub const NO: [&str; 4] = ["false", "no", "n", "0"];

    pub fn boolean() -> Kind {
        Kind::Boolean {
            yes: Kind::YES.map(String::from).to_vec(),
            no: Kind::NO.map(String::from).to_vec(),
        }
    }

    /// The name a mapping gives this kind.
    pub fn name(&self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Decimal { .. } => "decimal",
            Kind::Date { .. } => "date",
            Kind::Boolean { .. } => "boolean",
            Kind::Auto => "auto",
        }
    }

    /// How a cell of this kind should look, for rejection messages.
    pub fn hint(&self) -> String {
        match self {
            Kind::Decimal { point, thousands } => match thousands {
                Some(t) => format!("a decimal number such as 1{t}234{point}50"),
                None => format!("a decimal number such as 1234{point}50"),
            },
            Kind::Date {
                format: Some(f), ..
            } => format!("a date in the format `{f}`"),
            Kind::Date { .. } => "a date such as 2026-11-20 or 2026-11-20T10:15:00Z".into(),
            Kind::Boolean { yes, no } => format!("one of {} or {}", yes.join("/"), no.join("/")),
            Kind::Text | Kind::Auto => "text".into(),
        }
    }

    /// The cell as JSON for `meta`, or `None` when it is not of this kind.
    pub fn meta_value(&self, text: &str) -> Option<Value> {
        Some(match self {
            Kind::Text => Value::String(text.to_string()),
            Kind::Auto => store::meta::cell_value(text),
            Kind::Decimal { point, thousands } => {
                let number = decimal(text, *point, *thousands)?.normalize().to_string();
                serde_json::from_str(&number).ok()?
            }
            Kind::Date { format, zone } => {
                Value::String(date(text, format.as_deref(), *zone)?.to_rfc3339())
            }
            Kind::Boolean { yes, no } => Value::Bool(boolean(text, yes, no)?),
        })
    }
}

/// `text` as a decimal with `point` before the fraction and, optionally, `thousands` between
/// groups of three digits.
pub fn decimal(text: &str, point: char, thousands: Option<char>) -> Option<Decimal> {
    let (sign, unsigned) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text.strip_prefix('+').unwrap_or(text)),
    };
    let (whole, fraction) = match unsigned.split_once(point) {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (unsigned, None),
    };
    let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    let whole = match thousands {
        Some(sep) if whole.contains(sep) => {
            let groups: Vec<&str> = whole.split(sep).collect();
            let well_grouped = groups[0].len() <= 3
                && groups.iter().all(|g| digits(g))
                && groups[1..].iter().all(|g| g.len() == 3);
            if !well_grouped {
                return None;
            }
            groups.concat()
        }
        _ if digits(whole) => whole.to_string(),
        _ => return None,
    };
    let plain = match fraction {
        Some(f) if digits(f) => format!("{sign}{whole}.{f}"),
        Some(_) => return None,
        None => format!("{sign}{whole}"),
    };
    Decimal::from_str(&plain).ok()
}

/// `text` as an instant. Without a format: RFC 3339, or a date and time or a day without an
/// offset (ISO 8601), read in `zone`. With one: that format, read in `zone` unless it has an
/// offset (`%z`); a value the format refuses is still read as ISO 8601 if it is (what a typed
/// Parquet date or timestamp column holds as text), which no format could read as another day.
/// A local time that does not exist (a spring-forward gap) is refused; an ambiguous one takes the
/// earlier instant.
pub fn date(text: &str, format: Option<&str>, zone: Tz) -> Option<DateTime<Utc>> {
    any_date(text, format, zone).filter(|t| store::in_calendar(*t))
}

fn any_date(text: &str, format: Option<&str>, zone: Tz) -> Option<DateTime<Utc>> {
    let local = match format {
        None => return iso(text, zone),
        Some(format) if format.contains("%z") || format.contains("%:z") => {
            return DateTime::parse_from_str(text, format)
                .ok()
                .map(|t| t.with_timezone(&Utc))
                .or_else(|| iso(text, zone));
        }
        Some(format) => match NaiveDateTime::parse_from_str(text, format)
            .ok()
            .or_else(|| day(text, format))
        {
            Some(local) => local,
            None => return iso(text, zone),
        },
    };
    in_zone(local, zone)
}

/// RFC 3339, or an ISO 8601 date and time or day without an offset, read in `zone`.
fn iso(text: &str, zone: Tz) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    let local = NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f"))
        .ok()
        .or_else(|| day(text, "%Y-%m-%d"))?;
    in_zone(local, zone)
}

fn in_zone(local: NaiveDateTime, zone: Tz) -> Option<DateTime<Utc>> {
    Some(
        zone.from_local_datetime(&local)
            .earliest()?
            .with_timezone(&Utc),
    )
}

fn day(text: &str, format: &str) -> Option<NaiveDateTime> {
    NaiveDate::parse_from_str(text, format)
        .ok()?
        .and_hms_opt(0, 0, 0)
}

/// `text` as a boolean: one of `yes` or `no`, in any letter case.
pub fn boolean(text: &str, yes: &[String], no: &[String]) -> Option<bool> {
    let is = |words: &[String]| words.iter().any(|w| w.eq_ignore_ascii_case(text));
    if is(yes) {
        Some(true)
    } else if is(no) {
        Some(false)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn decimals_follow_their_separators() {
        let d = |t, p, s| decimal(t, p, s).map(|d: Decimal| d.to_string());
        assert_eq!(d("12.50", '.', None).as_deref(), Some("12.50"));
        assert_eq!(d("1.234,5", ',', Some('.')).as_deref(), Some("1234.5"));
        assert_eq!(
            d("1 234 567,00", ',', Some(' ')).as_deref(),
            Some("1234567.00")
        );
        assert_eq!(d("-3", '.', None).as_deref(), Some("-3"));
        for bad in ["12,50", "1.2.3", "", ".5", "5.", "1e3", "abc", "12.5x"] {
            assert_eq!(d(bad, '.', None), None, "{bad}");
        }
        for bad in ["1.23,4", "12.34,5", "1..234", "1234.567,0"] {
            assert_eq!(d(bad, ',', Some('.')), None, "{bad}");
        }
    }

    #[test]
    fn dates_follow_their_format_and_zone() {
        let paris: Tz = "Europe/Paris".parse().unwrap();
        let at = |t, f, z| date(t, f, z).map(|d| d.to_rfc3339());
        assert_eq!(
            at("20/11/2026 10:15", Some("%d/%m/%Y %H:%M"), paris).as_deref(),
            Some("2026-11-20T09:15:00+00:00")
        );
        assert_eq!(
            at("20.11.2026", Some("%d.%m.%Y"), paris).as_deref(),
            Some("2026-11-19T23:00:00+00:00")
        );
        assert_eq!(
            at("2026-11-20T10:15:00", None, paris).as_deref(),
            Some("2026-11-20T09:15:00+00:00")
        );
        assert_eq!(
            at("2026-11-20T10:15:00+05:00", None, paris).as_deref(),
            Some("2026-11-20T05:15:00+00:00")
        );
        assert_eq!(
            at("2026-11-20 10:15 +0100", Some("%Y-%m-%d %H:%M %z"), Tz::UTC).as_deref(),
            Some("2026-11-20T09:15:00+00:00")
        );
        // 02:30 does not exist in Paris on the last Sunday of March.
        assert_eq!(at("2026-03-29T02:30:00", None, paris), None);
        assert_eq!(at("20/11/2026", Some("%Y-%m-%d"), paris), None);
        // ISO 8601 is read whatever the format (typed Parquet dates and timestamps hold it).
        assert_eq!(
            at("2026-11-20T10:15:00Z", Some("%d/%m/%Y %H:%M"), paris).as_deref(),
            Some("2026-11-20T10:15:00+00:00")
        );
        assert_eq!(
            at("2026-11-20", Some("%d/%m/%Y"), paris).as_deref(),
            Some("2026-11-19T23:00:00+00:00")
        );
        assert_eq!(at("31/02/2026", Some("%d/%m/%Y"), paris), None);
        // Only the years 1 to 9999 (in UTC) are recorded.
        assert_eq!(at("+10000-01-01T00:00:00Z", None, paris), None);
        assert_eq!(at("10000-01-01", Some("%Y-%m-%d"), paris), None);
        assert_eq!(at("9999-12-31T23:30:00-05:00", None, paris), None);
        assert_eq!(at("0000-06-01", None, Tz::UTC), None);
        assert!(at("9999-12-31T12:00:00Z", None, paris).is_some());
    }

    #[test]
    fn booleans_and_meta_values() {
        let kind = Kind::boolean();
        assert_eq!(kind.meta_value("Yes"), Some(json!(true)));
        assert_eq!(kind.meta_value("0"), Some(json!(false)));
        assert_eq!(kind.meta_value("maybe"), None);
        assert_eq!(
            Kind::Decimal {
                point: ',',
                thousands: None
            }
            .meta_value("2,50"),
            Some(json!(2.5))
        );
    }
}
