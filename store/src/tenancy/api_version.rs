//! The versions of the HTTP interface. A request names one in `x-api-version`; a key may pin
//! the version its requests default to.

use std::fmt;
use std::str::FromStr;

/// A version of the HTTP interface. A key may pin the version its requests default to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ApiVersion {
    V1_6_2,
    #[default]
    V1_9_5,
}

impl ApiVersion {
    pub const ALL: &'static [ApiVersion] = &[ApiVersion::V1_6_2, ApiVersion::V1_9_5];

    pub fn as_str(self) -> &'static str {
        match self {
            ApiVersion::V1_6_2 => "1.6.2",
            ApiVersion::V1_9_5 => "1.9.5",
        }
    }
}

impl FromStr for ApiVersion {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ApiVersion::ALL
            .iter()
            .copied()
            .find(|v| v.as_str() == s.trim())
            .ok_or_else(|| format!("unknown API version `{s}`; supported: 1.6.2, 1.9.5"))
    }
}

impl fmt::Display for ApiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
