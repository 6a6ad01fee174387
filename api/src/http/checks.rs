//! Field validation shared by every resource's request bodies: each check records its error and
//! lets the next run, so a client learns every problem of a body at once.

use std::str::FromStr;

use rules::Decimal;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use store::Tokens;

use crate::http::error::{ApiError, FieldError};

use store::limits::{self, Refused};
pub use store::limits::{
    MAX_EMAIL, MAX_ID, MAX_LONG_TEXT, MAX_META_BYTES, MAX_META_DEPTH, MAX_NAME, MAX_PHONE, MAX_TEXT,
};

/// `null` and absent mean different things in an update: `Some(None)` clears, `None` keeps.
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// An RFC 3339 date-time (`2026-11-18T10:15:00Z`). chrono also reads a space for the `T` and
/// a leap second in any minute; the document's `date-time` format allows neither, so neither
/// does the service.
pub fn date_time(text: &str) -> Option<chrono::DateTime<chrono::Utc>> {
    local_date_time(text).map(|t| store::into_calendar(t.to_utc()))
}

/// `date_time` with the offset it was given (a booking's weekday is the one of its offset).
pub fn local_date_time(text: &str) -> Option<chrono::DateTime<chrono::FixedOffset>> {
    let bytes = text.as_bytes();
    if !matches!(bytes.get(10), Some(b'T' | b't')) || bytes.get(17..19) == Some(b"60") {
        return None;
    }
    // The year 0 is outside the calendar the service records (see `store::in_calendar`).
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .filter(|t| chrono::Datelike::year(t) != 0)
}

/// A JSON number read exactly (`12.30` stays 12.30, never a binary float), to 28 decimal
/// places: digits beyond them are rounded (half to even).
pub fn exact(
    checks: &mut Checks,
    field: &str,
    number: Option<serde_json::Number>,
) -> Option<Decimal> {
    let number = number?;
    let text = number.to_string();
    match positional(&text).and_then(|plain| Decimal::from_str(&plain).ok()) {
        Some(value) => Some(value),
        None => {
            checks.fail(
                field,
                "invalid_value",
                format!("{number} is not a number this service can hold exactly"),
            );
            None
        }
    }
}

/// How many decimals `number` has as written, trailing zeros aside. Counted on the text: the
/// decimal it is read into keeps 28 digits, so a non-zero digit far past the sixth decimal
/// (`1e-42`) would be rounded away unseen.
fn written_decimals(number: Option<&serde_json::Number>) -> usize {
    number
        .and_then(|n| positional(&n.to_string()))
        .map_or(0, |plain| decimals(&plain))
}

/// How many decimals a positional number's text has, trailing zeros aside (`1.250`: 2).
fn decimals(plain: &str) -> usize {
    plain
        .split_once('.')
        .map_or(0, |(_, fraction)| fraction.trim_end_matches('0').len())
}

/// `text` without an exponent (`1.5e-3` is `0.0015`), so that `Decimal::from_str` reads it and
/// rounds what is past its precision instead of refusing it.
pub fn positional(text: &str) -> Option<String> {
    let Some((mantissa, exponent)) = text.split_once(['e', 'E']) else {
        return Some(text.to_string());
    };
    let exponent: i64 = exponent.parse().ok()?;
    let (sign, mantissa) = match mantissa.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", mantissa),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits = format!("{whole}{fraction}");
    // Where the point falls among `digits`; a JSON number's exponent stays within a few hundred.
    let point = i64::try_from(whole.len()).ok()? + exponent;
    if point.unsigned_abs() > 400 {
        return None;
    }
    let plain = if point <= 0 {
        format!("0.{}{digits}", "0".repeat(point.unsigned_abs() as usize))
    } else if point as usize >= digits.len() {
        format!("{digits}{}", "0".repeat(point as usize - digits.len()))
    } else {
        let (left, right) = digits.split_at(point as usize);
        format!("{left}.{right}")
    };
    Some(format!("{sign}{plain}"))
}

/// Collects every field error of a body before answering, so a client fixes them all at once.
/// Which side of 0 a token amount may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sign {
    /// More than 0.
    Positive,
    /// 0 or more.
    NonNegative,
    /// Either side, but not 0 (a credit or a debit).
    NonZero,
}

#[derive(Default)]
pub struct Checks(Vec<FieldError>);

impl Checks {
    pub fn fail(&mut self, field: &str, code: &'static str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// Records `refused` (from one of `store::limits`' checks) against `field`.
    pub fn refuse(&mut self, field: &str, refused: Result<(), Refused>) {
        if let Err(refused) = refused {
            let code = match refused {
                Refused::TooLong { .. } | Refused::TooBig => "too_long",
                Refused::NotAnObject => "invalid_type",
                _ => "invalid_value",
            };
            self.fail(field, code, refused.message());
        }
    }

    /// A text that, when present, is not blank and at most `max` characters.
    pub fn text(&mut self, field: &str, value: Option<String>, max: usize) -> Option<String> {
        let value = value?;
        self.refuse(field, limits::text(&value, max));
        Some(value)
    }

    /// An id (a reference, a code...): `text` of at most `MAX_ID` characters without control
    /// characters, which nothing that names a record needs and which paths and filters refuse.
    pub fn id(&mut self, field: &str, value: Option<String>) -> Option<String> {
        let value = value?;
        self.refuse(field, limits::id(&value));
        Some(value)
    }

    /// An RFC 3339 instant, as `date_time` reads it; `None` when absent or refused (recorded).
    pub fn instant(
        &mut self,
        field: &str,
        value: Option<String>,
    ) -> Option<chrono::DateTime<chrono::Utc>> {
        let value = value?;
        let instant = date_time(&value);
        if instant.is_none() {
            let message = format!("`{value}` is not an RFC 3339 date-time (2026-11-18T10:15:00Z)");
            self.fail(field, "invalid_value", message);
        }
        instant
    }

    /// A day, `YYYY-MM-DD`; `None` when absent or refused (recorded).
    pub fn day(&mut self, field: &str, value: Option<String>) -> Option<chrono::NaiveDate> {
        let value = value?;
        let day = chrono::NaiveDate::parse_from_str(&value, "%Y-%m-%d")
            .ok()
            .filter(|_| value.len() == 10);
        if day.is_none() {
            self.fail(
                field,
                "invalid_value",
                format!("`{value}` is not a day (2026-11-18)"),
            );
        }
        day
    }

    /// An `instant` that must be given (`missing_field` when absent).
    pub fn required_instant(
        &mut self,
        field: &str,
        value: Option<String>,
    ) -> Option<chrono::DateTime<chrono::Utc>> {
        if value.is_none() {
            self.fail(field, "missing_field", "is required");
        }
        self.instant(field, value)
    }

    pub fn required_id(&mut self, field: &str, value: Option<String>) -> String {
        let value = self.id(field, value);
        if value.is_none() {
            self.fail(field, "missing_field", "is required");
        }
        value.unwrap_or_default()
    }

    pub fn required(&mut self, field: &str, value: Option<String>, max: usize) -> String {
        let value = self.text(field, value, max);
        if value.is_none() {
            self.fail(field, "missing_field", "is required");
        }
        value.unwrap_or_default()
    }

    pub fn email(&mut self, field: &str, value: Option<String>) -> Option<String> {
        let value = self.text(field, value, MAX_EMAIL)?;
        let well_formed = value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }) && !value.chars().any(char::is_whitespace)
            && value.matches('@').count() == 1;
        if !well_formed {
            self.fail(
                field,
                "invalid_value",
                "must be an email address such as ada@example.com",
            );
        }
        Some(value)
    }

    pub fn phone(&mut self, field: &str, value: Option<String>) -> Option<String> {
        let value = self.text(field, value, MAX_PHONE)?;
        let digits = value.chars().filter(char::is_ascii_digit).count();
        let allowed = value
            .chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || " -().".contains(c) || (c == '+' && i == 0));
        if !allowed || digits < 3 {
            self.fail(
                field,
                "invalid_value",
                "must be a phone number: digits, spaces, - ( ) . and a leading +",
            );
        }
        Some(value)
    }

    pub fn meta(&mut self, value: Option<Value>) -> Option<Value> {
        self.meta_at("meta", value)
    }

    /// `meta` of a nested object, at `field` (`lines[0].meta`).
    pub fn meta_at(&mut self, field: &str, value: Option<Value>) -> Option<Value> {
        let value = value?;
        self.refuse(field, limits::meta(&value));
        Some(value)
    }

    /// A token amount: a JSON number read exactly, of `sign`, at most `max` tokens either side
    /// of 0 and 6 decimals. `None` when absent or refused (recorded).
    pub fn tokens(
        &mut self,
        field: &str,
        number: Option<serde_json::Number>,
        sign: Sign,
        max: i64,
    ) -> Option<Tokens> {
        let decimals = written_decimals(number.as_ref());
        let amount = exact(self, field, number)?;
        let refused = if decimals > store::Tokens::DECIMALS {
            Some(format!(
                "has more than {} decimals",
                store::Tokens::DECIMALS
            ))
        } else {
            match sign {
                Sign::Positive if amount <= Decimal::ZERO => Some("must be more than 0".into()),
                Sign::NonNegative if amount < Decimal::ZERO => Some("must be at least 0".into()),
                Sign::NonZero if amount.is_zero() => Some("must not be 0".into()),
                Sign::NonZero if amount.abs() > Decimal::from(max) => {
                    Some(format!("must be from -{max} to {max}"))
                }
                _ if amount > Decimal::from(max) => Some(format!("must be at most {max}")),
                _ => None,
            }
        };
        if let Some(message) = refused {
            self.fail(field, "invalid_value", message);
            return None;
        }
        Tokens::from_decimal(amount)
            .map_err(|message| self.fail(field, "invalid_value", message))
            .ok()
    }

    /// A purchase's (or a return's) amount: a JSON number read exactly, as `limits::earn_amount`
    /// bounds it (6 decimals as written at most). `None` when absent or refused (recorded).
    pub fn amount(&mut self, field: &str, number: Option<serde_json::Number>) -> Option<Decimal> {
        let decimals = written_decimals(number.as_ref());
        let amount = exact(self, field, number)?;
        let refused = if decimals > limits::AMOUNT_DECIMALS as usize {
            Err(Refused::TooPrecise)
        } else {
            limits::earn_amount(amount)
        };
        self.refuse(field, refused);
        refused.ok().map(|()| amount)
    }

    /// A token amount that must be given (`missing_field` when absent), of `sign`, within
    /// `max`: as `tokens`, 0 standing in for a refused one (the checks then fail).
    pub fn required_tokens(
        &mut self,
        field: &str,
        number: Option<serde_json::Number>,
        sign: Sign,
        max: i64,
    ) -> Tokens {
        let amount = self.tokens(field, number, sign, max);
        if amount.is_none() && !self.has(field) {
            self.fail(field, "missing_field", "is required");
        }
        amount.unwrap_or(Tokens::ZERO)
    }

    /// A whole number within `range` given as a JSON number (`3` or `3.0`); `None` when absent
    /// or refused (recorded).
    pub fn whole(
        &mut self,
        field: &str,
        number: Option<&serde_json::Number>,
        range: std::ops::RangeInclusive<u32>,
    ) -> Option<u32> {
        let number = number?;
        let whole = number
            .as_u64()
            .or_else(|| {
                number
                    .as_f64()
                    .filter(|f| f.fract() == 0.0 && *f >= 0.0)
                    .map(|f| f as u64)
            })
            .and_then(|n| u32::try_from(n).ok())
            .filter(|n| range.contains(n));
        if whole.is_none() {
            self.fail(
                field,
                "invalid_value",
                format!(
                    "must be a whole number from {} to {}",
                    range.start(),
                    range.end()
                ),
            );
        }
        whole
    }

    /// How many errors are recorded so far.
    pub fn count(&self) -> usize {
        self.0.len()
    }

    /// Whether `field` already has an error.
    pub fn has(&self, field: &str) -> bool {
        self.0.iter().any(|e| e.field == field)
    }

    /// Records an error found elsewhere (e.g. by a nested parser).
    pub fn push(&mut self, error: FieldError) {
        self.0.push(error);
    }

    pub fn finish<T>(self, value: T) -> Result<T, ApiError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::validation(self.0))
        }
    }
}

/// The JSON Schemas of the checked values, for the OpenAPI document: each states what the check
/// of the same name enforces. `nullable` where `null` is read as absent.
pub mod schema {
    use serde_json::Value;
    use utoipa::openapi::schema::{KnownFormat, Object, ObjectBuilder, SchemaFormat, Type};

    use super::{
        MAX_EMAIL, MAX_ID, MAX_LONG_TEXT, MAX_META_BYTES, MAX_META_DEPTH, MAX_NAME, MAX_PHONE,
        MAX_TEXT,
    };

    /// The characters `char::is_whitespace` (Unicode's White_Space) and so `str::trim` treat as
    /// white space, spelled out: regex engines disagree about what `\\s` covers.
    const SPACE: &str =
        "\\u0009-\\u000d \\u0085\\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000";

    /// At least one character that is not white space, and no NUL.
    fn not_blank() -> String {
        format!("^[^\\u0000]*[^\\u0000{SPACE}][^\\u0000]*$")
    }

    /// `Checks::email`: one `@`, a dot inside the domain, no white space.
    fn email_pattern() -> String {
        let part = format!("[^@\\u0000{SPACE}]");
        let edge = format!("[^@.\\u0000{SPACE}]");
        format!("^{part}+@{edge}{part}*\\.{part}*{edge}$")
    }

    /// `Checks::phone`: digits, spaces, `-().` and a leading `+`, with at least three digits.
    const PHONE: &str = "^\\+?[0-9 ().-]*[0-9][0-9 ().-]*[0-9][0-9 ().-]*[0-9][0-9 ().-]*$";

    fn string(nullable: bool) -> ObjectBuilder {
        let kind = if nullable {
            vec![Type::String, Type::Null]
        } else {
            vec![Type::String]
        };
        ObjectBuilder::new().schema_type(utoipa::openapi::schema::SchemaType::from_iter(kind))
    }

    /// What `Checks::text` accepts.
    fn text(max: usize, nullable: bool) -> Object {
        string(nullable)
            .max_length(Some(max))
            .pattern(Some(not_blank()))
            .build()
    }

    /// What `Checks::id` accepts.
    fn id_text(nullable: bool) -> Object {
        let control = "\\u0000-\\u001f\\u007f-\\u009f";
        string(nullable)
            .max_length(Some(MAX_ID))
            .pattern(Some(format!(
                "^[^{control}]*[^{control}{SPACE}][^{control}]*$"
            )))
            .build()
    }

    /// `Checks::id` and `Checks::required_id`, then `Checks::text` and `Checks::required` for
    /// each size of text.
    pub fn id() -> Object {
        id_text(false)
    }
    pub fn id_or_null() -> Object {
        id_text(true)
    }
    pub fn name() -> Object {
        text(MAX_NAME, false)
    }
    pub fn name_or_null() -> Object {
        text(MAX_NAME, true)
    }
    pub fn text_or_null() -> Object {
        text(MAX_TEXT, true)
    }
    pub fn text_required() -> Object {
        text(MAX_TEXT, false)
    }
    pub fn long_text() -> Object {
        text(MAX_LONG_TEXT, false)
    }

    /// What `Checks::email` accepts.
    pub fn email() -> Object {
        string(true)
            .max_length(Some(MAX_EMAIL))
            .pattern(Some(email_pattern()))
            .build()
    }

    /// What `Checks::phone` accepts.
    pub fn phone() -> Object {
        string(true)
            .max_length(Some(MAX_PHONE))
            .pattern(Some(PHONE))
            .build()
    }

    /// How a meta object's description begins, by which `without_nul` finds it.
    pub const META: &str = "Free-form JSON object kept as given";

    /// States on every meta object of `document` (found by its description) what `Checks::meta`
    /// enforces besides its size: its depth and no NUL in a key or a text. The levels are
    /// components (`MetaLevel2` to `MetaLevel8`), each naming the next: no recursive reference,
    /// which some clients cannot follow.
    pub fn meta_bounds(document: &mut Value) {
        fn apply(node: &mut Value) {
            match node {
                Value::Object(fields) => {
                    let meta = fields
                        .get("description")
                        .and_then(Value::as_str)
                        .is_some_and(|d| d.starts_with(META));
                    if meta {
                        fields.insert("propertyNames".into(), no_nul());
                        fields.insert("additionalProperties".into(), level_ref(2));
                    } else {
                        fields.values_mut().for_each(apply);
                    }
                }
                Value::Array(items) => items.iter_mut().for_each(apply),
                _ => {}
            }
        }
        fn no_nul() -> Value {
            serde_json::json!({"pattern": "^[^\\u0000]*$"})
        }
        fn level_ref(level: usize) -> Value {
            serde_json::json!({"$ref": format!("#/components/schemas/MetaLevel{level}")})
        }
        apply(document);
        let schemas = &mut document["components"]["schemas"];
        for level in 2..=MAX_META_DEPTH {
            let mut schema = no_nul();
            if level < MAX_META_DEPTH {
                schema["propertyNames"] = no_nul();
                schema["additionalProperties"] = level_ref(level + 1);
                schema["items"] = level_ref(level + 1);
            } else {
                schema["type"] = serde_json::json!(["string", "number", "boolean", "null"]);
            }
            schema["description"] = format!("A value at level {level} of a meta object.").into();
            schemas[format!("MetaLevel{level}")] = schema;
        }
    }

    /// What `Checks::meta` accepts.
    pub fn meta() -> Object {
        ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::SchemaType::from_iter([
                Type::Object,
                Type::Null,
            ]))
            .description(Some(format!(
                "{META} (at most {MAX_META_BYTES} bytes and {MAX_META_DEPTH} levels; no NUL in a \
                 key or a text)."
            )))
            .build()
    }

    /// The years 0001 to 9999.
    const DAY: &str = "(000[1-9]|00[1-9][0-9]|0[1-9][0-9]{2}|[1-9][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|[12][0-9]|3[01])";

    /// An RFC 3339 date-time, as `checks::date_time` reads it. The pattern repeats
    /// the format, which JSON Schema 2020-12 treats as an annotation only.
    pub fn date_time(nullable: bool) -> Object {
        let time = "([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\\.[0-9]+)?";
        let offset = "([Zz]|[+-]([01][0-9]|2[0-3]):[0-5][0-9])";
        string(nullable)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::DateTime)))
            .pattern(Some(format!("^{DAY}[Tt]{time}{offset}$")))
            .build()
    }

    pub fn date_time_or_null() -> Object {
        date_time(true)
    }
    pub fn date_time_required() -> Object {
        date_time(false)
    }

    /// A day, YYYY-MM-DD.
    pub fn day() -> Object {
        day_text(false)
    }
    pub fn day_or_null() -> Object {
        day_text(true)
    }

    fn day_text(nullable: bool) -> Object {
        string(nullable)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Date)))
            .pattern(Some(format!("^{DAY}$")))
            .build()
    }
}

#[cfg(test)]
mod tests {
    use super::positional;

    #[test]
    fn exponents_become_positional() {
        for (text, plain) in [
            ("12.30", "12.30"),
            ("1.5e-3", "0.0015"),
            ("-1.5E2", "-150"),
            ("2.5e1", "25"),
            ("1e+3", "1000"),
            (
                "1.175494351e-38",
                "0.00000000000000000000000000000000000001175494351",
            ),
        ] {
            assert_eq!(positional(text).as_deref(), Some(plain), "{text}");
        }
        assert_eq!(positional("1e999"), None);
    }
}
