//! Field validation shared by every resource's request bodies: each check records its error and
//! lets the next run, so a client learns every problem of a body at once.

use serde::{Deserialize, Deserializer};
use serde_json::Value;

use crate::error::{ApiError, FieldError};

pub const MAX_EMAIL: usize = 254;
pub const MAX_PHONE: usize = 32;
pub const MAX_META_BYTES: usize = 16 * 1024;

/// `null` and absent mean different things in an update: `Some(None)` clears, `None` keeps.
pub fn nullable<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    d: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(d).map(Some)
}

/// Collects every field error of a body before answering, so a client fixes them all at once.
#[derive(Default)]
pub struct Checks(Vec<FieldError>);

impl Checks {
    pub fn fail(&mut self, field: &str, code: &'static str, message: impl Into<String>) {
        self.0.push(FieldError::new(field, code, message));
    }

    /// A text that, when present, is not blank and at most `max` characters.
    pub fn text(&mut self, field: &str, value: Option<String>, max: usize) -> Option<String> {
        let value = value?;
        if value.trim().is_empty() {
            self.fail(field, "invalid_value", "must not be blank");
        } else if value.chars().count() > max {
            self.fail(
                field,
                "too_long",
                format!("must be at most {max} characters"),
            );
        }
        Some(value)
    }

    pub fn required(&mut self, field: &str, value: Option<String>, max: usize) -> String {
        let value = self.text(field, value, max);
        if value.is_none() {
            self.fail(field, "missing_field", "is required");
        }
        value.unwrap_or_default()
    }

    pub fn email(&mut self, value: Option<String>) -> Option<String> {
        let value = self.text("email", value, MAX_EMAIL)?;
        let well_formed = value.split_once('@').is_some_and(|(local, domain)| {
            !local.is_empty()
                && domain.contains('.')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }) && !value.chars().any(char::is_whitespace)
            && value.matches('@').count() == 1;
        if !well_formed {
            self.fail(
                "email",
                "invalid_value",
                "must be an email address such as ada@example.com",
            );
        }
        Some(value)
    }

    pub fn phone(&mut self, value: Option<String>) -> Option<String> {
        let value = self.text("phone", value, MAX_PHONE)?;
        let digits = value.chars().filter(char::is_ascii_digit).count();
        let allowed = value
            .chars()
            .enumerate()
            .all(|(i, c)| c.is_ascii_digit() || " -().".contains(c) || (c == '+' && i == 0));
        if !allowed || digits < 3 {
            self.fail(
                "phone",
                "invalid_value",
                "must be a phone number: digits, spaces, - ( ) . and a leading +",
            );
        }
        Some(value)
    }

    pub fn meta(&mut self, value: Option<Value>) -> Option<Value> {
        let value = value?;
        if !value.is_object() {
            self.fail("meta", "invalid_type", "must be a JSON object");
        } else if value.to_string().len() > MAX_META_BYTES {
            self.fail(
                "meta",
                "too_long",
                format!("must be at most {MAX_META_BYTES} bytes of JSON"),
            );
        }
        Some(value)
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
