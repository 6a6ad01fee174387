//! When a rule may fire: dates, weekdays and hours in the programme's time zone.

use chrono::{Datelike, NaiveDate, NaiveDateTime, NaiveTime};

use crate::format::WindowSource;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window {
    from: Option<NaiveDate>,
    to: Option<NaiveDate>,
    /// Bit `n` set: weekday `n` (Monday 0) allowed.
    weekdays: u8,
    hours: Option<(NaiveTime, NaiveTime)>,
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

impl Window {
    /// Reads a window; each problem is returned as (key, message).
    pub fn parse(source: &WindowSource) -> Result<Window, Vec<(&'static str, String)>> {
        let mut problems = Vec::new();
        let mut date = |key: &'static str, text: &Option<String>| {
            text.as_ref()
                .and_then(|t| match NaiveDate::parse_from_str(t.trim(), "%Y-%m-%d") {
                    Ok(d) => Some(d),
                    Err(_) => {
                        problems.push((key, format!("`{t}` is not a date like 2026-12-24")));
                        None
                    }
                })
        };
        let from = date("active.from", &source.from);
        let to = date("active.to", &source.to);
        let mut weekdays = 0x7f;
        if let Some(days) = &source.weekdays {
            weekdays = 0;
            for day in days {
                match DAYS.iter().position(|d| d.eq_ignore_ascii_case(day.trim())) {
                    Some(i) => weekdays |= 1 << i,
                    None => problems.push((
                        "active.weekdays",
                        format!("`{day}` is not a weekday; use {}", DAYS.join(", ")),
                    )),
                }
            }
            if days.is_empty() {
                problems.push((
                    "active.weekdays",
                    "lists no day, so the rule could never fire".into(),
                ));
            }
        }
        let hours = source.hours.as_ref().and_then(|text| {
            let parsed = text.split_once('-').and_then(|(a, b)| {
                let a = NaiveTime::parse_from_str(a.trim(), "%H:%M").ok()?;
                let b = NaiveTime::parse_from_str(b.trim(), "%H:%M").ok()?;
                (a != b).then_some((a, b))
            });
            if parsed.is_none() {
                problems.push((
                    "active.hours",
                    format!("`{text}` is not a range like 08:00-20:00"),
                ));
            }
            parsed
        });
        if let (Some(from), Some(to)) = (from, to)
            && from > to
        {
            problems.push(("active.to", format!("{to} is before {from}")));
        }
        if problems.is_empty() {
            Ok(Window {
                from,
                to,
                weekdays,
                hours,
            })
        } else {
            Err(problems)
        }
    }

    pub fn contains(&self, local: NaiveDateTime) -> bool {
        let day = local.date();
        if self.from.is_some_and(|from| day < from) || self.to.is_some_and(|to| day > to) {
            return false;
        }
        if self.weekdays & (1 << day.weekday().num_days_from_monday()) == 0 {
            return false;
        }
        match self.hours {
            None => true,
            Some((start, end)) if start < end => (start..end).contains(&local.time()),
            // Spans midnight: 22:00-02:00.
            Some((start, end)) => local.time() >= start || local.time() < end,
        }
    }
}
