//! Token amounts: exact, kept as whole micro-tokens (1 token = 1,000,000) in an `i64`, which
//! both databases store and sum exactly. Up to 6 decimals; every amount and every stored sum
//! (balance, lifetime earnings, lot, order total) at most `Tokens::MAX`, a trillion tokens, so
//! that adding two of them never overflows.

use std::fmt;

use rules::Decimal;
use serde::de::{self, Deserializer, Visitor};
use serde::{Deserialize, Serialize, Serializer};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Default, Hash)]
pub struct Tokens(i64);

const SCALE: u32 = 6;
const PER_TOKEN: i64 = 1_000_000;

impl Tokens {
    pub const ZERO: Tokens = Tokens(0);
    /// The most decimals an amount has.
    pub const DECIMALS: usize = SCALE as usize;
    /// The ledger's ceiling: no amount, balance or lifetime total goes past it.
    pub const MAX: Tokens = Tokens(1_000_000_000_000 * PER_TOKEN);

    /// `value` as tokens, if it has at most 6 decimals and is within `MAX` either side of zero.
    pub fn from_decimal(value: Decimal) -> Result<Tokens, String> {
        if value.normalize().scale() > SCALE {
            return Err(format!("{value} has more than {SCALE} decimals"));
        }
        let micros = value
            .checked_mul(Decimal::from(PER_TOKEN))
            .ok_or_else(|| format!("{value} is too large"))?;
        i64::try_from(micros.trunc())
            .ok()
            .filter(|m| m.unsigned_abs() <= Tokens::MAX.0.unsigned_abs())
            .map(Tokens)
            .ok_or_else(|| format!("{value} is more than the ledger's {} tokens", Tokens::MAX))
    }

    /// Tokens written as decimal text (`12.5`, or with an exponent: `1.25e1`), exactly.
    pub fn from_text(text: &str) -> Result<Tokens, String> {
        let text = text.trim();
        let parsed = if text.contains(['e', 'E']) {
            Decimal::from_scientific(text)
        } else {
            text.parse::<Decimal>()
        };
        parsed
            .map_err(|_| format!("`{text}` is not a number"))
            .and_then(Tokens::from_decimal)
    }

    pub fn whole(tokens: i64) -> Tokens {
        Tokens(tokens * PER_TOKEN)
    }

    pub fn to_decimal(self) -> Decimal {
        Decimal::new(self.0, SCALE).normalize()
    }

    pub fn from_micros(micros: i64) -> Tokens {
        Tokens(micros)
    }

    pub fn micros(self) -> i64 {
        self.0
    }

    pub fn is_positive(self) -> bool {
        self.0 > 0
    }

    pub fn checked_sub(self, other: Tokens) -> Option<Tokens> {
        self.0.checked_sub(other.0).map(Tokens)
    }

    pub fn checked_add(self, other: Tokens) -> Option<Tokens> {
        self.0.checked_add(other.0).map(Tokens)
    }
}

impl fmt::Display for Tokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.to_decimal())
    }
}

impl Serialize for Tokens {
    /// A JSON number. Whole amounts are written as integers; others through the nearest double,
    /// which prints back exactly for the 15 significant digits a balance below a billion tokens
    /// with 6 decimals needs.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if self.0 % PER_TOKEN == 0 {
            serializer.serialize_i64(self.0 / PER_TOKEN)
        } else {
            serializer.serialize_f64(self.0 as f64 / PER_TOKEN as f64)
        }
    }
}

impl<'de> Deserialize<'de> for Tokens {
    /// A JSON number as `serialize` writes it, exactly: a double is read through its shortest
    /// decimal form, which is the text it was written from.
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Tokens, D::Error> {
        struct Amount;
        impl Visitor<'_> for Amount {
            type Value = Tokens;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a number of tokens with at most 6 decimals")
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Tokens, E> {
                Tokens::from_decimal(v.into()).map_err(E::custom)
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Tokens, E> {
                Tokens::from_decimal(v.into()).map_err(E::custom)
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Tokens, E> {
                Tokens::from_text(&v.to_string()).map_err(E::custom)
            }
        }
        deserializer.deserialize_any(Amount)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_convert_exactly_and_too_many_are_refused() {
        let t = Tokens::from_decimal("12.345678".parse().unwrap()).unwrap();
        assert_eq!(t.micros(), 12_345_678);
        assert_eq!(t.to_decimal().to_string(), "12.345678");
        assert_eq!(serde_json::to_string(&t).unwrap(), "12.345678");
        assert_eq!(serde_json::to_string(&Tokens::whole(40)).unwrap(), "40");
        assert!(Tokens::from_decimal("0.1234567".parse().unwrap()).is_err());
        assert!(
            Tokens::from_decimal("1.5000000".parse().unwrap()).is_ok(),
            "trailing zeros are fine"
        );
        assert!(Tokens::from_decimal("99999999999999".parse().unwrap()).is_err());
        assert_eq!(
            Tokens::from_decimal("1000000000000".parse().unwrap()),
            Ok(Tokens::MAX)
        );
        assert!(Tokens::from_decimal("1000000000000.000001".parse().unwrap()).is_err());
        assert!(Tokens::from_decimal("-1000000000000.000001".parse().unwrap()).is_err());
        assert_eq!(
            Tokens::from_decimal("-2.5".parse().unwrap())
                .unwrap()
                .micros(),
            -2_500_000
        );
    }

    #[test]
    fn what_is_written_reads_back_exactly() {
        for text in [
            "0",
            "40",
            "12.345678",
            "0.000001",
            "-2.5",
            "999999999.999999",
            "1000000000000",
        ] {
            let t = Tokens::from_text(text).unwrap();
            let json = serde_json::to_string(&t).unwrap();
            assert_eq!(serde_json::from_str::<Tokens>(&json).unwrap(), t, "{json}");
        }
        assert!(serde_json::from_str::<Tokens>("0.0000001").is_err());
        assert!(serde_json::from_str::<Tokens>("\"12\"").is_err());
    }
}
