//! Earn rows of a batch file in the canonical layout (`templates/earn.csv`): the header names the
//! EARN API body's fields, and each record becomes the earn the API would accept, or a rejection
//! with its row number, column, value and a stable reason code.

use std::str::FromStr;

use chrono::{DateTime, NaiveDate, Utc};
use rules::Decimal;
use serde_json::{Map, Value};
use store::EarnInput;

/// Why a row was rejected. The codes are stable: clients match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    MissingField,
    BadDecimal,
    NegativeAmount,
    BadDate,
    TooLong,
    RaggedRow,
    DuplicateInFile,
    DuplicateTransaction,
    UnknownWallet,
    /// A field that is not UTF-8 text.
    BadEncoding,
    /// The rules gave tokens the ledger cannot hold.
    RulesRefused,
}

impl Reason {
    pub fn code(self) -> &'static str {
        match self {
            Reason::MissingField => "missing_field",
            Reason::BadDecimal => "bad_decimal",
            Reason::NegativeAmount => "negative_amount",
            Reason::BadDate => "bad_date",
            Reason::TooLong => "too_long",
            Reason::RaggedRow => "ragged_row",
            Reason::DuplicateInFile => "duplicate_in_file",
            Reason::DuplicateTransaction => "duplicate_transaction",
            Reason::UnknownWallet => "unknown_wallet",
            Reason::BadEncoding => "bad_encoding",
            Reason::RulesRefused => "rules_refused",
        }
    }
}

/// A rejected row: where, what and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The row's number in the file, the header being row 1.
    pub row: u64,
    pub column: Option<String>,
    pub value: Option<String>,
    pub reason: Reason,
    pub message: String,
}

/// Longest id and wallet reference, and longest description and comment, as in the API.
const MAX_ID: usize = 128;
const MAX_TEXT: usize = 256;

/// Which column holds what, read from the header row.
#[derive(Debug, Clone)]
pub struct Layout {
    id: usize,
    wallet: usize,
    amount: usize,
    date: usize,
    description: Option<usize>,
    comment: Option<usize>,
    /// `meta.store.code` → (["store", "code"], column).
    meta: Vec<(Vec<String>, usize)>,
    names: Vec<String>,
}

impl Layout {
    /// The layout of a canonical header: `id`, `walletId`, `amount`, `date` (required),
    /// `description`, `comment` and `meta.<key>` columns (dots nest), in any order and case.
    /// Every problem is reported at once; an unknown column is one (a misspelt `amout` must not
    /// be skipped silently).
    pub fn from_header<S: AsRef<str>>(header: &[S]) -> Result<Layout, Vec<String>> {
        let names: Vec<String> = header
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let name = name.as_ref().trim();
                // A byte-order mark sticks to the first name.
                if i == 0 {
                    name.trim_start_matches('\u{feff}')
                } else {
                    name
                }
                .to_string()
            })
            .collect();
        let mut errors = Vec::new();
        let find = |wanted: &str| names.iter().position(|n| n.eq_ignore_ascii_case(wanted));
        let mut required = |wanted: &str| {
            find(wanted).unwrap_or_else(|| {
                errors.push(format!("the column `{wanted}` is missing"));
                0
            })
        };
        let (id, wallet, amount, date) = (
            required("id"),
            required("walletId"),
            required("amount"),
            required("date"),
        );
        let mut meta = Vec::new();
        for (i, name) in names.iter().enumerate() {
            let known = ["id", "walletId", "amount", "date", "description", "comment"]
                .iter()
                .any(|k| name.eq_ignore_ascii_case(k));
            if known {
                if names[..i].iter().any(|n| n.eq_ignore_ascii_case(name)) {
                    errors.push(format!("the column `{name}` appears twice"));
                }
                continue;
            }
            match name.strip_prefix("meta.") {
                Some(path) if !path.split('.').any(str::is_empty) => {
                    meta.push((path.split('.').map(String::from).collect(), i));
                }
                _ => errors.push(format!(
                    "unknown column `{name}`: the canonical columns are id, walletId, amount, date, \
                     description, comment and meta.<key>; other layouts need a mapping"
                )),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Layout {
            id,
            wallet,
            amount,
            date,
            description: find("description"),
            comment: find("comment"),
            meta,
            names,
        })
    }

    /// The earn in `record`, row `row` of the file.
    pub fn earn<S: AsRef<str>>(&self, row: u64, record: &[S]) -> Result<EarnInput, Rejection> {
        let reject = |column: Option<usize>, reason: Reason, message: String| Rejection {
            row,
            column: column.map(|c| self.names[c].clone()),
            value: column
                .and_then(|c| record.get(c))
                .map(|v| v.as_ref().to_string()),
            reason,
            message,
        };
        if record.len() != self.names.len() {
            return Err(reject(
                None,
                Reason::RaggedRow,
                format!(
                    "{} fields where the header has {}",
                    record.len(),
                    self.names.len()
                ),
            ));
        }
        let value = |column: usize| record[column].as_ref().trim();
        let text = |column: usize, max: usize| -> Result<Option<String>, Rejection> {
            match value(column) {
                "" => Ok(None),
                v if v.chars().count() > max => Err(reject(
                    Some(column),
                    Reason::TooLong,
                    format!("longer than {max} characters"),
                )),
                v => Ok(Some(v.to_string())),
            }
        };
        let required = |column: usize, max: usize| -> Result<String, Rejection> {
            text(column, max)?.ok_or_else(|| {
                reject(
                    Some(column),
                    Reason::MissingField,
                    "is required".to_string(),
                )
            })
        };
        let earn_id = required(self.id, MAX_ID)?;
        let wallet = required(self.wallet, MAX_ID)?;
        let amount = required(self.amount, MAX_ID)?;
        let amount = Decimal::from_str(&amount).map_err(|_| {
            reject(
                Some(self.amount),
                Reason::BadDecimal,
                "not a decimal number (write 12.50: a point, no thousands separators)".into(),
            )
        })?;
        if amount < Decimal::ZERO {
            return Err(reject(
                Some(self.amount),
                Reason::NegativeAmount,
                "must not be negative".into(),
            ));
        }
        let date = required(self.date, MAX_ID)?;
        let date = parse_date(&date).ok_or_else(|| {
            reject(
                Some(self.date),
                Reason::BadDate,
                "not a date: write 2026-11-20 or 2026-11-20T10:15:00Z".into(),
            )
        })?;
        let optional = |column: Option<usize>| column.map(|c| text(c, MAX_TEXT)).transpose();
        let description = optional(self.description)?.flatten();
        let comment = optional(self.comment)?.flatten();
        let mut meta = Map::new();
        for (path, column) in &self.meta {
            let v = value(*column);
            if !v.is_empty() {
                insert(&mut meta, path, meta_value(v));
            }
        }
        Ok(EarnInput {
            earn_id,
            wallet,
            amount: amount.normalize().to_string(),
            date,
            description,
            comment,
            meta: (!meta.is_empty()).then_some(Value::Object(meta)),
        })
    }
}

/// RFC 3339, or a day (its first instant in UTC).
fn parse_date(text: &str) -> Option<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Some(t.with_timezone(&Utc));
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    Some(day.and_hms_opt(0, 0, 0)?.and_utc())
}

/// A meta cell as the rules see it: a number or a boolean when it is plainly one, else text.
fn meta_value(text: &str) -> Value {
    match text {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => {
            let plain = text.strip_prefix('-').unwrap_or(text);
            let numeric = !plain.is_empty()
                && plain.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                && plain.bytes().filter(|b| *b == b'.').count() <= 1
                && !plain.starts_with('.')
                && !plain.ends_with('.')
                // Leading zeros mark codes ("007"), not numbers.
                && !(plain.len() > 1 && plain.starts_with('0') && !plain.starts_with("0."));
            match numeric
                .then(|| serde_json::from_str::<Value>(text).ok())
                .flatten()
            {
                Some(number @ Value::Number(_)) => number,
                _ => Value::String(text.to_string()),
            }
        }
    }
}

fn insert(map: &mut Map<String, Value>, path: &[String], value: Value) {
    match path {
        [] => {}
        [last] => {
            map.insert(last.clone(), value);
        }
        [first, rest @ ..] => {
            let child = map
                .entry(first.clone())
                .or_insert_with(|| Value::Object(Map::new()));
            if !child.is_object() {
                *child = Value::Object(Map::new());
            }
            if let Value::Object(child) = child {
                insert(child, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    const HEADER: [&str; 7] = [
        "\u{feff}id",
        "walletId",
        "amount",
        "date",
        "description",
        "meta.store.code",
        "meta.qty",
    ];

    fn layout() -> Layout {
        Layout::from_header(&HEADER).unwrap()
    }

    #[test]
    fn a_good_row_becomes_the_earn_the_api_would_take() {
        let earn = layout()
            .earn(
                2,
                &["e-1", "card-1", "12.50", "2026-11-20", "Coffee", "A1", "3"],
            )
            .unwrap();
        assert_eq!(earn.earn_id, "e-1");
        assert_eq!(earn.wallet, "card-1");
        assert_eq!(earn.amount, "12.5");
        assert_eq!(earn.date.to_rfc3339(), "2026-11-20T00:00:00+00:00");
        assert_eq!(earn.description.as_deref(), Some("Coffee"));
        assert_eq!(earn.meta, Some(json!({"store": {"code": "A1"}, "qty": 3})));
        let timed = layout()
            .earn(
                3,
                &["e-2", "w", "0", "2026-11-20T10:15:00+01:00", "", "", ""],
            )
            .unwrap();
        assert_eq!(timed.date.to_rfc3339(), "2026-11-20T09:15:00+00:00");
        assert_eq!((timed.description, timed.meta), (None, None));
    }

    #[test]
    fn each_bad_row_names_its_row_column_value_and_reason() {
        let cases: [([&str; 7], Option<&str>, Reason); 6] = [
            (
                ["", "w", "1", "2026-11-20", "", "", ""],
                Some("id"),
                Reason::MissingField,
            ),
            (
                ["e", "w", "12,50", "2026-11-20", "", "", ""],
                Some("amount"),
                Reason::BadDecimal,
            ),
            (
                ["e", "w", "-1", "2026-11-20", "", "", ""],
                Some("amount"),
                Reason::NegativeAmount,
            ),
            (
                ["e", "w", "1", "20/11/2026", "", "", ""],
                Some("date"),
                Reason::BadDate,
            ),
            (
                ["e", "", "1", "2026-11-20", "", "", ""],
                Some("walletId"),
                Reason::MissingField,
            ),
            (
                ["e", "w", "1", "2026-11-20", &"x".repeat(300), "", ""],
                Some("description"),
                Reason::TooLong,
            ),
        ];
        for (record, column, reason) in cases {
            let rejected = layout().earn(7, &record).unwrap_err();
            assert_eq!((rejected.row, rejected.reason), (7, reason), "{record:?}");
            assert_eq!(rejected.column.as_deref(), column);
        }
        let bad = layout()
            .earn(9, &["e", "w", "12,50", "2026-11-20", "", "", ""])
            .unwrap_err();
        assert_eq!(bad.value.as_deref(), Some("12,50"));
        let ragged = layout().earn(4, &["e", "w"]).unwrap_err();
        assert_eq!((ragged.reason, ragged.column), (Reason::RaggedRow, None));
    }

    #[test]
    fn the_template_clients_download_is_a_valid_file() {
        let template = include_str!("../../templates/earn.csv");
        let mut lines = template.lines();
        let header: Vec<&str> = lines.next().unwrap().split(',').collect();
        let layout = Layout::from_header(&header).unwrap();
        for (i, line) in lines.enumerate() {
            let record: Vec<&str> = line.split(',').collect();
            layout.earn(i as u64 + 2, &record).unwrap();
        }
    }

    #[test]
    fn a_header_with_problems_lists_them_all() {
        let errors = Layout::from_header(&["id", "amout", "date", "date", "meta."]).unwrap_err();
        let text = errors.join("\n");
        for expected in [
            "`walletId` is missing",
            "`amount` is missing",
            "unknown column `amout`",
            "`date` appears twice",
            "unknown column `meta.`",
        ] {
            assert!(text.contains(expected), "{expected}: {text}");
        }
    }

    #[test]
    fn meta_cells_are_numbers_and_booleans_only_when_plainly_so() {
        for (cell, expected) in [
            ("3", json!(3)),
            ("-2.5", json!(-2.5)),
            ("true", json!(true)),
            ("007", json!("007")),
            ("1e3", json!("1e3")),
            ("A1", json!("A1")),
            ("1.2.3", json!("1.2.3")),
        ] {
            assert_eq!(meta_value(cell), expected, "{cell}");
        }
    }
}
