//! An earn's `meta` built from cells (a batch file's `meta.*` columns, `rules test`'s sample
//! rows): how a cell reads as a JSON value and where it goes, the same for every door.

use serde_json::{Map, Value};

/// A meta cell as its JSON value: a number or a boolean when it is plainly one, else text.
/// Leading zeros (`007`), exponents (`1e5`) and a lone sign or point stay text: they are codes
/// more often than numbers.
pub fn cell_value(text: &str) -> Value {
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

/// Sets `value` at `path` (`["a", "b"]` for `meta.a.b`) in `map`, creating objects on the way
/// and replacing a value that is in the way.
pub fn insert<S: AsRef<str>>(map: &mut Map<String, Value>, path: &[S], value: Value) {
    match path {
        [] => {}
        [last] => {
            map.insert(last.as_ref().to_string(), value);
        }
        [first, rest @ ..] => {
            let child = map
                .entry(first.as_ref().to_string())
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

    #[test]
    fn cells_are_numbers_or_booleans_only_when_plainly_so() {
        for (cell, expected) in [
            ("true", json!(true)),
            ("false", json!(false)),
            ("42", json!(42)),
            ("-2.5", json!(-2.5)),
            ("0.5", json!(0.5)),
            ("007", json!("007")),
            ("1e5", json!("1e5")),
            ("-", json!("-")),
            (".5", json!(".5")),
            ("TRUE", json!("TRUE")),
            ("gold", json!("gold")),
        ] {
            assert_eq!(cell_value(cell), expected, "{cell}");
        }
    }

    #[test]
    fn paths_make_their_objects() {
        let mut meta = Map::new();
        insert(&mut meta, &["store", "id"], json!("s1"));
        insert(&mut meta, &["store", "region"], json!("north"));
        insert(&mut meta, &["channel"], json!("web"));
        insert(&mut meta, &["channel", "kind"], json!("app"));
        assert_eq!(
            Value::Object(meta),
            json!({"store": {"id": "s1", "region": "north"}, "channel": {"kind": "app"}})
        );
    }
}
