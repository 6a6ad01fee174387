//! The query-string extractor: parameters are read into the same `IntoParams` struct that the
//! OpenAPI document describes, and a parameter that cannot be read is a 400 naming it.
//!
//! A list parameter given more than once (`type=EARN&type=BURN`) arrives as its values joined
//! with commas, so lists accept both the repeated and the comma-separated form. Names the
//! operation does not take, and single values given twice, were refused before
//! (`http::parameters`).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

use crate::http::error::ApiError;
use crate::http::json::field_error;

pub struct QueryParams<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned> FromRequestParts<S> for QueryParams<T> {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        parse(parts.uri.query().unwrap_or_default()).map(QueryParams)
    }
}

/// Reads `query` into `T` (see the module's description).
pub fn parse<T: DeserializeOwned>(query: &str) -> Result<T, ApiError> {
    let mut pairs: Vec<(String, String)> = Vec::new();
    for (name, value) in form_urlencoded::parse(query.as_bytes()) {
        match pairs.iter_mut().find(|(seen, _)| *seen == name) {
            Some((_, joined)) => {
                joined.push(',');
                joined.push_str(&value);
            }
            None => pairs.push((name.into_owned(), value.into_owned())),
        }
    }
    let joined = form_urlencoded::Serializer::new(String::new())
        .extend_pairs(&pairs)
        .finish();
    let deserializer =
        serde_urlencoded::Deserializer::new(form_urlencoded::parse(joined.as_bytes()));
    serde_path_to_error::deserialize(deserializer).map_err(|err| {
        let path = err.path().to_string();
        ApiError::validation(vec![field_error(&path, &err.into_inner().to_string())])
    })
}

/// A whole-number parameter, read as text so that every bad parameter of a request is reported
/// together (serde would stop at the first). Checked with `Whole::within`.
#[derive(Debug, Clone, Default, serde::Deserialize)]
#[serde(transparent)]
pub struct Whole(Option<String>);

impl Whole {
    /// The number if given; `Err` says what is allowed.
    pub fn optional(&self, range: std::ops::RangeInclusive<u32>) -> Result<Option<u32>, String> {
        match &self.0 {
            None => Ok(None),
            Some(_) => self.within(range, 0).map(Some),
        }
    }

    /// The number, `default` when absent; `Err` says what is allowed.
    pub fn within(
        &self,
        range: std::ops::RangeInclusive<u32>,
        default: u32,
    ) -> Result<u32, String> {
        let Some(text) = &self.0 else {
            return Ok(default);
        };
        match text.trim().parse::<u32>() {
            Ok(n) if range.contains(&n) => Ok(n),
            _ => Err(format!(
                "must be a whole number from {} to {}, not `{text}`",
                range.start(),
                range.end()
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    use super::*;

    #[derive(Debug, Deserialize)]
    struct Params {
        kind: Option<String>,
        n: Option<u32>,
    }

    #[test]
    fn repeated_parameters_join_and_bad_ones_are_named() {
        let params: Params = parse("kind=EARN&kind=BURN&other=1").unwrap();
        assert_eq!(params.kind.as_deref(), Some("EARN,BURN"));
        assert_eq!(params.n, None);
        let ApiError::BadRequest { errors, .. } = parse::<Params>("n=x").unwrap_err() else {
            panic!("a 400");
        };
        assert_eq!(errors[0].field, "n");
        assert!(parse::<Params>("n=1&n=2").is_err(), "one value only");
    }

    #[test]
    fn whole_numbers_are_checked_against_their_range() {
        let whole = |text: &str| Whole(Some(text.into()));
        assert_eq!(Whole(None).within(1..=5, 3), Ok(3));
        assert_eq!(whole(" 5 ").within(1..=5, 3), Ok(5));
        for bad in ["0", "6", "-1", "1.5", "", "x"] {
            assert!(whole(bad).within(1..=5, 3).is_err(), "{bad}");
        }
    }
}
