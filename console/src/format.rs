//! How numbers and dates read on a page: tokens with thousands separators and the campaign's
//! currency, instants as `<time>` elements that the browser shows in the reader's time zone
//! (the UTC instant on hover; UTC itself without script).

use chrono::{DateTime, SecondsFormat, Utc};

/// `1234567` as `1,234,567`; a decimal keeps its fraction (`-1234.5` as `-1,234.5`).
pub fn number(text: &str) -> String {
    let (sign, digits) = match text.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", text),
    };
    let (whole, fraction) = match digits.split_once('.') {
        Some((whole, fraction)) => (whole, Some(fraction)),
        None => (digits, None),
    };
    let mut grouped = String::with_capacity(whole.len() + whole.len() / 3);
    for (i, digit) in whole.chars().enumerate() {
        if i > 0 && (whole.len() - i) % 3 == 0 {
            grouped.push(',');
        }
        grouped.push(digit);
    }
    match fraction {
        Some(fraction) => format!("{sign}{grouped}.{fraction}"),
        None => format!("{sign}{grouped}"),
    }
}

/// An amount of tokens in `currency`: `1,234 PTS`.
pub fn tokens(amount: impl ToString, currency: &str) -> String {
    let amount = number(&amount.to_string());
    if currency.is_empty() {
        amount
    } else {
        format!("{amount} {currency}")
    }
}

/// An instant as a `<time>` element (markup; nothing in it comes from a user).
pub fn when(at: &DateTime<Utc>) -> String {
    format!(
        "<time datetime=\"{}\" data-local>{} UTC</time>",
        at.to_rfc3339_opts(SecondsFormat::Secs, true),
        at.format("%Y-%m-%d %H:%M:%S")
    )
}

/// An optional instant, or a dash.
pub fn maybe_when(at: &Option<DateTime<Utc>>) -> String {
    at.as_ref().map_or_else(|| "—".to_owned(), when)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_have_thousands_separators() {
        assert_eq!(number("0"), "0");
        assert_eq!(number("999"), "999");
        assert_eq!(number("1000"), "1,000");
        assert_eq!(number("-1234567"), "-1,234,567");
        assert_eq!(number("1234.50"), "1,234.50");
        assert_eq!(tokens(2500, "PTS"), "2,500 PTS");
    }
}
