//! Mappings: how an organisation's files become earns when they are not in the canonical layout.
//! A mapping is a TOML or JSON document (see `templates/README.md`), stored per organisation and
//! file-name pattern; it names the column (or position) of each earn field and its type, the meta
//! columns, the delimiter, header row and encoding, and the acceptance policy. Validation reports
//! every problem of a document at once, each with its path.

mod parse;

use std::borrow::Cow;

use serde_json::Value;
use store::{OrgScope, Store, StoreError, StoredMapping};

use crate::batch::values::Kind;

/// A mapping document from its text: JSON when `json`, else TOML; `Err` says why it is
/// neither.
pub fn read_document(text: &str, json: bool) -> Result<Value, String> {
    if json {
        serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))
    } else {
        toml::from_str(text).map_err(|e| format!("not TOML: {e}"))
    }
}

/// Validates `document` and stores it as `org`'s mapping for the files its pattern matches
/// (replacing the one there was). An invalid one is `StoreError::Rejected` with every problem
/// and its path.
pub async fn set_mapping(
    store: &Store,
    org: &OrgScope,
    document: &Value,
) -> Result<StoredMapping, StoreError> {
    let mapping = Mapping::parse(document).map_err(StoreError::Rejected)?;
    store
        .batches()
        .set_mapping(org, &mapping.pattern, document)
        .await
}

/// A validated mapping.
#[derive(Debug, Clone)]
pub struct Mapping {
    /// The file names it applies to: a glob of `*` and `?`, matched ignoring letter case.
    pub pattern: String,
    pub delimiter: u8,
    /// The header's row number, counting from 1; 0: no header (columns by position).
    pub header_row: u64,
    pub encoding: Encoding,
    pub acceptance: Acceptance,
    pub columns: Columns,
}

/// Which cells make the earn.
#[derive(Debug, Clone)]
pub enum Columns {
    /// The canonical header (`templates/earn.csv`) decides.
    Canonical,
    Mapped(Vec<(Target, Field)>),
}

/// The fields a row's columns fill, by their canonical names (meta columns aside).
pub const FIELDS: [&str; 8] = [
    "id",
    "walletId",
    "amount",
    "date",
    "description",
    "comment",
    "reverses",
    "activity",
];

/// An earn field a column fills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Id,
    Wallet,
    Amount,
    Date,
    Description,
    Comment,
    /// The client's id of the earn a return row reverses: a row with it is a return.
    Reverses,
    /// An activity's type: a row with it is the wallet owner's activity (its meta the
    /// attributes).
    Activity,
    /// `meta.store.code` → `["store", "code"]`.
    Meta(Vec<String>),
}

impl Target {
    /// The canonical column name.
    pub fn name(&self) -> String {
        match self {
            Target::Id => "id".into(),
            Target::Wallet => "walletId".into(),
            Target::Amount => "amount".into(),
            Target::Date => "date".into(),
            Target::Description => "description".into(),
            Target::Comment => "comment".into(),
            Target::Reverses => "reverses".into(),
            Target::Activity => "activity".into(),
            Target::Meta(path) => format!("meta.{}", path.join(".")),
        }
    }
}

/// Where a field's value comes from and what it must look like.
#[derive(Debug, Clone)]
pub struct Field {
    pub source: Source,
    pub kind: Kind,
    pub required: bool,
    /// Used when the cell is empty (or for every row, with no column).
    pub default: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The header's column of this name (letter case ignored).
    Name(String),
    /// The column at this index (the mapping counts from 1; this from 0).
    Position(usize),
    /// No column: the default, for every row.
    Constant,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    /// With or without a byte-order mark.
    Utf8,
    Windows1252,
    Latin1,
}

impl Encoding {
    fn parse(name: &str) -> Option<Encoding> {
        match name.to_ascii_lowercase().as_str() {
            "utf-8" | "utf8" => Some(Encoding::Utf8),
            "windows-1252" | "cp1252" => Some(Encoding::Windows1252),
            "iso-8859-1" | "latin1" | "latin-1" => Some(Encoding::Latin1),
            _ => None,
        }
    }

    pub fn name(&self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Windows1252 => "Windows-1252",
            Encoding::Latin1 => "ISO-8859-1",
        }
    }

    /// The text of a field; `None` when it is not valid in this encoding.
    pub fn decode<'a>(&self, bytes: &'a [u8]) -> Option<Cow<'a, str>> {
        if let Ok(text) = std::str::from_utf8(bytes) {
            // ASCII (and valid UTF-8 where it is declared) needs no copy.
            if *self == Encoding::Utf8 || text.is_ascii() {
                return Some(Cow::Borrowed(text));
            }
        }
        match self {
            Encoding::Utf8 => None,
            Encoding::Latin1 => Some(Cow::Owned(bytes.iter().map(|b| *b as char).collect())),
            Encoding::Windows1252 => {
                Some(Cow::Owned(bytes.iter().map(|b| windows_1252(*b)).collect()))
            }
        }
    }
}

/// Windows-1252 differs from Latin-1 in 0x80-0x9F; its five unassigned bytes keep their C1
/// code points, as browsers decode them.
fn windows_1252(byte: u8) -> char {
    const HIGH: [u16; 32] = [
        0x20AC, 0x81, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
        0x2039, 0x0152, 0x8D, 0x017D, 0x8F, 0x90, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013,
        0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D, 0x017E, 0x0178,
    ];
    match byte {
        0x80..=0x9F => {
            char::from_u32(u32::from(HIGH[usize::from(byte - 0x80)])).unwrap_or('\u{fffd}')
        }
        _ => byte as char,
    }
}

/// What share of bad rows a file may have and still be loaded.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Acceptance {
    /// One bad row and nothing is loaded.
    pub all_or_nothing: bool,
    pub max_rejected_rows: Option<u64>,
    pub max_rejected_percent: Option<f64>,
}

impl Acceptance {
    /// Whether the whole file must be checked before anything is loaded.
    pub fn checks_first(&self) -> bool {
        self.all_or_nothing
            || self.max_rejected_rows.is_some()
            || self.max_rejected_percent.is_some()
    }

    /// Why a file of `rows` rows with `rejected` bad ones is refused, if it is.
    pub fn refusal(&self, rows: u64, rejected: u64) -> Option<String> {
        if self.all_or_nothing && rejected > 0 {
            return Some(format!(
                "{rejected} of {rows} rows were rejected and the acceptance policy is \
                 all-or-nothing: nothing was loaded"
            ));
        }
        if let Some(max) = self.max_rejected_rows.filter(|max| rejected > *max) {
            return Some(format!(
                "{rejected} of {rows} rows were rejected, more than the {max} the acceptance \
                 policy allows: nothing was loaded"
            ));
        }
        let percent = if rows == 0 {
            0.0
        } else {
            rejected as f64 * 100.0 / rows as f64
        };
        self.max_rejected_percent
            .filter(|max| percent > *max)
            .map(|max| {
                format!(
                    "{rejected} of {rows} rows ({percent:.2}%) were rejected, more than the \
                     {max}% the acceptance policy allows: nothing was loaded"
                )
            })
    }
}

impl Mapping {
    /// The canonical layout of `templates/earn.csv`, for organisations without a mapping.
    pub fn canonical() -> Mapping {
        Mapping {
            pattern: "*".into(),
            delimiter: b',',
            header_row: 1,
            encoding: Encoding::Utf8,
            acceptance: Acceptance::default(),
            columns: Columns::Canonical,
        }
    }

    /// Whether it applies to a file named `name`.
    pub fn matches(&self, name: &str) -> bool {
        glob(
            self.pattern.to_lowercase().as_bytes(),
            name.to_lowercase().as_bytes(),
        )
    }

    /// The mapping of `mappings` for a file named `name`: the matching one with the most literal
    /// characters in its pattern (so `sales_*.csv` wins over `*`), else the canonical layout.
    pub fn choose(mappings: Vec<Mapping>, name: &str) -> Mapping {
        mappings
            .into_iter()
            .filter(|m| m.matches(name))
            .max_by_key(|m| {
                m.pattern
                    .chars()
                    .filter(|c| !matches!(c, '*' | '?'))
                    .count()
            })
            .unwrap_or_else(Mapping::canonical)
    }
}

/// `*` any run of characters, `?` one character.
fn glob(pattern: &[u8], name: &[u8]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some(b'*'), _) => {
            glob(&pattern[1..], name) || (!name.is_empty() && glob(pattern, &name[1..]))
        }
        (Some(b'?'), Some(_)) => glob(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob(&pattern[1..], &name[1..]),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_most_specific_pattern_wins() {
        let with = |pattern: &str| {
            Mapping::parse(&json!({
                "pattern": pattern,
                "columns": { "id": "a", "walletId": "b", "amount": "c", "date": "d" },
            }))
            .unwrap()
        };
        let chosen = Mapping::choose(
            vec![with("*"), with("sales_*.csv"), with("*.csv")],
            "sales_1.csv",
        );
        assert_eq!(chosen.pattern, "sales_*.csv");
        let chosen = Mapping::choose(vec![with("sales_*.csv")], "other.csv");
        assert!(matches!(chosen.columns, Columns::Canonical));
    }

    #[test]
    fn legacy_encodings_decode() {
        let text = Encoding::Windows1252
            .decode(b"caf\xe9 \x80 \x96 \x93")
            .unwrap();
        assert_eq!(text, "café € – “");
        assert_eq!(Encoding::Latin1.decode(b"caf\xe9").unwrap(), "café");
        assert_eq!(Encoding::Utf8.decode(b"caf\xe9"), None);
        assert_eq!(Encoding::Utf8.decode("café".as_bytes()).unwrap(), "café");
    }

    #[test]
    fn acceptance_thresholds() {
        let policy = Acceptance {
            max_rejected_percent: Some(5.0),
            ..Acceptance::default()
        };
        assert_eq!(policy.refusal(100, 5), None);
        assert!(policy.refusal(100, 6).unwrap().contains("6 of 100"));
        let strict = Acceptance {
            all_or_nothing: true,
            ..Acceptance::default()
        };
        assert!(strict.checks_first() && strict.refusal(10, 1).is_some());
        assert!(!Acceptance::default().checks_first());
    }
}
