//! Validating a mapping document: every problem is collected, each with its path
//! (`columns.amount.decimal_separator: ...`), so an operator fixes them all in one round.

use chrono::format::{Item, StrftimeItems};
use chrono_tz::Tz;
use serde_json::{Map, Value};

use super::{Acceptance, Columns, Encoding, Field, Mapping, Source, Target};
use crate::batch::values::Kind;
use store::limits::MAX_META_PATH;
use store::{FieldProblem, Problems};

impl Mapping {
    /// Validates a mapping document (TOML turned into JSON, or JSON), listing every problem.
    pub fn parse(document: &Value) -> Result<Mapping, Vec<FieldProblem>> {
        let mut errors = Problems::new("key");
        let Some(top) = document.as_object() else {
            let message = "a mapping is a table (an object) of settings";
            return Err(vec![FieldProblem::new("mapping", message)]);
        };
        errors.unknown_keys(
            top,
            "",
            &[
                "pattern",
                "delimiter",
                "header_row",
                "encoding",
                "acceptance",
                "columns",
                "meta",
            ],
        );
        let pattern = match top.get("pattern") {
            None => "*".to_string(),
            Some(Value::String(p)) if !p.is_empty() && !p.contains(['/', '\\']) => p.clone(),
            Some(_) => {
                errors.fail("pattern", "must be a file-name glob such as `sales_*.csv`");
                "*".into()
            }
        };
        let delimiter = match top.get("delimiter") {
            None => b',',
            Some(Value::String(d)) => match d.as_str() {
                "tab" | "\t" => b'\t',
                d if d.len() == 1 && d.is_ascii() && !matches!(d, "\"" | "\n" | "\r") => {
                    d.as_bytes()[0]
                }
                _ => {
                    errors.fail("delimiter", "must be one character such as `;` or `tab`");
                    b','
                }
            },
            Some(_) => {
                errors.fail("delimiter", "must be a string");
                b','
            }
        };
        let header_row = match top.get("header_row") {
            None => 1,
            Some(v) => match v.as_u64().filter(|n| *n <= 1000) {
                Some(n) => n,
                None => {
                    errors.fail(
                        "header_row",
                        "must be a row number from 1 to 1000, or 0 for no header",
                    );
                    1
                }
            },
        };
        let encoding = match top.get("encoding") {
            None => Encoding::Utf8,
            Some(v) => match v.as_str().and_then(Encoding::parse) {
                Some(e) => e,
                None => {
                    errors.fail(
                        "encoding",
                        "must be `utf-8`, `windows-1252` or `iso-8859-1`",
                    );
                    Encoding::Utf8
                }
            },
        };
        let acceptance = top
            .get("acceptance")
            .map(|a| acceptance(a, &mut errors))
            .unwrap_or_default();
        let mut columns = Vec::new();
        match top.get("columns") {
            Some(Value::Object(given)) => {
                for (key, target) in [
                    ("id", Target::Id),
                    ("walletId", Target::Wallet),
                    ("amount", Target::Amount),
                    ("date", Target::Date),
                    ("description", Target::Description),
                    ("comment", Target::Comment),
                    ("reverses", Target::Reverses),
                    ("activity", Target::Activity),
                ] {
                    let path = format!("columns.{key}");
                    // A file that may hold returns needs no wallet or date for them.
                    let returns = given.contains_key("reverses");
                    // A file that may hold activities needs no amount for them.
                    let activities = given.contains_key("activity");
                    match given.get(key) {
                        Some(doc) => {
                            if let Some(field) = field(doc, &target, &path, header_row, &mut errors)
                            {
                                columns.push((target, field));
                            }
                        }
                        None if matches!(target, Target::Id)
                            || (matches!(target, Target::Amount) && !activities)
                            || (matches!(target, Target::Wallet | Target::Date) && !returns) =>
                        {
                            errors.fail(&path, "is required: say which column holds it");
                        }
                        None => {}
                    }
                }
                errors.unknown_keys(given, "columns", &super::FIELDS);
            }
            _ => errors.fail(
                "columns",
                "is required: a table naming the columns of id, walletId, amount and date",
            ),
        }
        match top.get("meta") {
            None => {}
            Some(Value::Object(meta)) => {
                for (key, doc) in meta {
                    let path = format!("meta.{key}");
                    let keys: Vec<String> = key.split('.').map(String::from).collect();
                    if keys.iter().any(String::is_empty) {
                        errors.fail(
                            &path,
                            "a meta key is names joined by dots, such as `store.code`",
                        );
                        continue;
                    }
                    if key.contains('\0') {
                        errors.fail(&path, "a meta key must not hold a NUL character");
                        continue;
                    }
                    if keys.len() > MAX_META_PATH {
                        errors.fail(
                            &path,
                            format!(
                                "a meta key joins at most {MAX_META_PATH} names (the API's meta \
                                 nests as deep)"
                            ),
                        );
                        continue;
                    }
                    let target = Target::Meta(keys);
                    if let Some(field) = field(doc, &target, &path, header_row, &mut errors) {
                        columns.push((target, field));
                    }
                }
            }
            Some(_) => errors.fail("meta", "must be a table of meta keys"),
        }
        let mapping = Mapping {
            pattern,
            delimiter,
            header_row,
            encoding,
            acceptance,
            columns: Columns::Mapped(columns),
        };
        errors.finish(mapping)
    }
}

fn acceptance(doc: &Value, errors: &mut Problems) -> Acceptance {
    let Some(table) = doc.as_object() else {
        errors.fail("acceptance", "must be a table");
        return Acceptance::default();
    };
    errors.unknown_keys(
        table,
        "acceptance",
        &["policy", "max_rejected_rows", "max_rejected_percent"],
    );
    let mut acceptance = Acceptance::default();
    match table.get("policy").map(|p| p.as_str()) {
        None | Some(Some("partial")) => {}
        Some(Some("all-or-nothing")) => acceptance.all_or_nothing = true,
        Some(_) => errors.fail(
            "acceptance.policy",
            "must be `partial` (load the good rows) or `all-or-nothing`",
        ),
    }
    if let Some(max) = table.get("max_rejected_rows") {
        acceptance.max_rejected_rows = max.as_u64();
        if max.as_u64().is_none() {
            errors.fail(
                "acceptance.max_rejected_rows",
                "must be a whole number, 0 or more",
            );
        }
    }
    if let Some(max) = table.get("max_rejected_percent") {
        acceptance.max_rejected_percent = max.as_f64().filter(|p| (0.0..=100.0).contains(p));
        if acceptance.max_rejected_percent.is_none() {
            errors.fail(
                "acceptance.max_rejected_percent",
                "must be a number from 0 to 100",
            );
        }
    }
    if acceptance.all_or_nothing
        && (acceptance.max_rejected_rows.is_some() || acceptance.max_rejected_percent.is_some())
    {
        errors.fail(
            "acceptance",
            "an all-or-nothing policy takes no rejection threshold (it is zero)",
        );
    }
    acceptance
}

/// The keys a field takes, by its type.
const FIELD_KEYS: [&str; 5] = ["column", "position", "type", "required", "default"];
const TYPE_KEYS: [(&str, &[&str]); 3] = [
    ("decimal", &["decimal_separator", "thousands_separator"]),
    ("date", &["format", "timezone"]),
    ("boolean", &["true_values", "false_values"]),
];

/// One field of a mapping: a column name as a string, or a table.
fn field(
    doc: &Value,
    target: &Target,
    path: &str,
    header_row: u64,
    errors: &mut Problems,
) -> Option<Field> {
    let before = errors.count();
    let table = match doc {
        Value::String(name) => {
            let mut table = Map::new();
            table.insert("column".into(), Value::String(name.clone()));
            table
        }
        Value::Object(table) => table.clone(),
        _ => {
            errors.fail(
                path,
                "must be a column name or a table such as { column = \"Total\" }",
            );
            return None;
        }
    };
    let natural = match target {
        Target::Amount => "decimal",
        Target::Date => "date",
        Target::Meta(_) => "auto",
        _ => "text",
    };
    let type_name = match table.get("type") {
        None => natural.to_string(),
        Some(Value::String(t)) => t.clone(),
        Some(_) => {
            errors.fail(format!("{path}.type"), "must be a string");
            natural.to_string()
        }
    };
    let allowed: &[&str] = match target {
        Target::Meta(_) => &["text", "decimal", "date", "boolean", "auto"],
        _ => &[natural],
    };
    if !allowed.contains(&type_name.as_str()) {
        errors.fail(
            format!("{path}.type"),
            format!("must be {}", allowed.join(", ")),
        );
    }
    let mut known: Vec<&str> = FIELD_KEYS.to_vec();
    for (kind, keys) in TYPE_KEYS {
        if kind == type_name {
            known.extend(keys);
        }
    }
    errors.unknown_keys(&table, path, &known);
    let text = |key: &str, errors: &mut Problems| -> Option<String> {
        match table.get(key)? {
            Value::String(s) => Some(s.clone()),
            _ => {
                errors.fail(format!("{path}.{key}"), "must be a string");
                None
            }
        }
    };
    let kind = match type_name.as_str() {
        "decimal" => {
            let separator =
                |key: &str, default: Option<char>, errors: &mut Problems| match text(key, errors) {
                    None => default,
                    Some(s)
                        if s.chars().count() == 1
                            && !s.starts_with(|c: char| c.is_ascii_digit() || c == '-') =>
                    {
                        s.chars().next()
                    }
                    Some(_) => {
                        errors.fail(
                            format!("{path}.{key}"),
                            "must be one character, not a digit",
                        );
                        default
                    }
                };
            let point = separator("decimal_separator", Some('.'), errors).unwrap_or('.');
            let thousands = separator("thousands_separator", None, errors);
            if thousands == Some(point) {
                errors.fail(path, "the decimal and thousands separators must differ");
            }
            Kind::Decimal { point, thousands }
        }
        "date" => {
            let format = text("format", errors);
            if let Some(f) = &format
                && StrftimeItems::new(f).any(|item| matches!(item, Item::Error))
            {
                errors.fail(
                    format!("{path}.format"),
                    "is not a valid date format (chrono strftime, e.g. `%d/%m/%Y %H:%M`)",
                );
            }
            let zone = match text("timezone", errors) {
                None => Tz::UTC,
                Some(name) => name.parse::<Tz>().unwrap_or_else(|_| {
                    errors.fail(
                        format!("{path}.timezone"),
                        "is not an IANA time zone such as `Europe/Paris`",
                    );
                    Tz::UTC
                }),
            };
            Kind::Date { format, zone }
        }
        "boolean" => {
            let words = |key: &str, default: [&str; 4], errors: &mut Problems| match table.get(key)
            {
                None => default.map(String::from).to_vec(),
                Some(Value::Array(items))
                    if !items.is_empty() && items.iter().all(Value::is_string) =>
                {
                    items
                        .iter()
                        .filter_map(|v| v.as_str().map(String::from))
                        .collect()
                }
                Some(_) => {
                    errors.fail(format!("{path}.{key}"), "must be a list of words");
                    default.map(String::from).to_vec()
                }
            };
            Kind::Boolean {
                yes: words("true_values", Kind::YES, errors),
                no: words("false_values", Kind::NO, errors),
            }
        }
        "auto" => Kind::Auto,
        _ => Kind::Text,
    };
    let source = match (table.get("column"), table.get("position")) {
        (Some(_), Some(_)) => {
            errors.fail(path, "give `column` or `position`, not both");
            Source::Constant
        }
        (Some(Value::String(name)), None) if !name.trim().is_empty() => {
            if header_row == 0 {
                errors.fail(
                    format!("{path}.column"),
                    "a file without a header row (header_row = 0) names columns by `position`",
                );
            }
            Source::Name(name.trim().to_string())
        }
        (Some(_), None) => {
            errors.fail(
                format!("{path}.column"),
                "must be the column's name in the header",
            );
            Source::Constant
        }
        (None, Some(position)) => match position.as_u64().filter(|p| (1..=16_384).contains(p)) {
            Some(p) => Source::Position(p as usize - 1),
            None => {
                errors.fail(format!("{path}.position"), "must be a column number from 1");
                Source::Constant
            }
        },
        (None, None) => Source::Constant,
    };
    let default = match table.get("default") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(v @ (Value::Number(_) | Value::Bool(_))) => Some(v.to_string()),
        Some(_) => {
            errors.fail(
                format!("{path}.default"),
                "must be a string, number or boolean",
            );
            None
        }
    };
    if source == Source::Constant && default.is_none() && errors.count() == before {
        errors.fail(path, "needs a `column`, a `position` or a `default`");
    }
    if let Some(value) = &default {
        if matches!(
            target,
            Target::Id | Target::Wallet | Target::Reverses | Target::Activity
        ) {
            errors.fail(
                format!("{path}.default"),
                "an id, wallet, reversed earn or activity cannot have a default",
            );
        } else if matches!(
            kind,
            Kind::Decimal { .. } | Kind::Date { .. } | Kind::Boolean { .. }
        ) && kind.meta_value(value).is_none()
        {
            errors.fail(format!("{path}.default"), format!("is not {}", kind.hint()));
        }
    }
    let required = match table.get("required") {
        None => matches!(
            target,
            Target::Id | Target::Wallet | Target::Amount | Target::Date
        ),
        Some(Value::Bool(false)) if matches!(target, Target::Id | Target::Wallet) => {
            errors.fail(
                format!("{path}.required"),
                "an id and a wallet are always required",
            );
            true
        }
        Some(Value::Bool(false))
            if matches!(target, Target::Amount | Target::Date) && default.is_none() =>
        {
            errors.fail(
                format!("{path}.required"),
                "an amount or date may be missing only with a `default`",
            );
            true
        }
        Some(Value::Bool(b)) => *b,
        Some(_) => {
            errors.fail(format!("{path}.required"), "must be true or false");
            true
        }
    };
    (errors.count() == before).then_some(Field {
        source,
        kind,
        required,
        default,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_full_mapping_is_understood() {
        let mapping = Mapping::parse(&json!({
            "pattern": "sales_*.csv",
            "delimiter": ";",
            "encoding": "windows-1252",
            "acceptance": { "max_rejected_percent": 5 },
            "columns": {
                "id": "Ticket",
                "walletId": { "column": "Card" },
                "amount": { "column": "Total", "decimal_separator": ",", "thousands_separator": "." },
                "date": { "position": 4, "format": "%d/%m/%Y %H:%M", "timezone": "Europe/Paris" },
                "description": { "default": "In-store purchase" },
            },
            "meta": {
                "store.code": "Shop",
                "member": { "column": "Member?", "type": "boolean", "true_values": ["Y"], "false_values": ["N"] },
            },
        }))
        .unwrap();
        assert_eq!(
            (mapping.delimiter, mapping.encoding),
            (b';', Encoding::Windows1252)
        );
        assert_eq!(mapping.acceptance.max_rejected_percent, Some(5.0));
        let Columns::Mapped(columns) = &mapping.columns else {
            panic!()
        };
        assert_eq!(columns.len(), 7);
        assert!(mapping.matches("SALES_2026-11.csv") && !mapping.matches("returns.csv"));
    }

    #[test]
    fn every_problem_of_a_document_is_reported_at_once() {
        let errors = Mapping::parse(&json!({
            "delimiter": ";;",
            "encoding": "ebcdic",
            "colour": "blue",
            "acceptance": { "policy": "some", "max_rejected_percent": 150 },
            "columns": {
                "id": { "column": "Ticket", "position": 2 },
                "amount": { "column": "Total", "format": "%d" },
                "date": { "column": "When", "format": "%Q", "timezone": "Mars/Olympus" },
                "points": "P",
            },
            "meta": { "a..b": "X", "flag": { "column": "F", "type": "colour" } },
        }))
        .unwrap_err();
        let text = errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n");
        for expected in [
            "delimiter: must be one character",
            "encoding: must be",
            "colour: unknown key",
            "acceptance.policy: must be",
            "acceptance.max_rejected_percent",
            "columns.id: give `column` or `position`, not both",
            "columns.walletId: is required",
            "columns.amount.format: unknown key",
            "columns.date.format: is not a valid date format",
            "columns.date.timezone: is not an IANA time zone",
            "columns.points: unknown key",
            "meta.a..b",
            "meta.flag.type: must be",
        ] {
            assert!(text.contains(expected), "missing `{expected}` in:\n{text}");
        }
        assert_eq!(errors.len(), 13, "{text}");
    }
}
