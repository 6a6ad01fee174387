//! What the rules read: one transaction (`Row`), what is known of its wallet and member
//! (`Context`), and the per-evaluation view the compiled rules use (`Facts`), where every meta
//! key a rule set mentions has been looked up once into a numbered slot.

use chrono::{DateTime, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use serde_json::Value;

/// One earn transaction, as the mapping (a file row) or the API body gives it; or one
/// activity of a member (`activity` is its type), which rules with `on = "activity"` read.
#[derive(Debug, Clone, Copy)]
pub struct Row<'a> {
    pub id: &'a str,
    pub amount: Decimal,
    pub date: DateTime<Utc>,
    pub currency: &'a str,
    pub description: &'a str,
    /// The transaction's `meta` object, nested keys read as `meta.a.b`; an activity's
    /// attributes, read as `activity.attributes.a.b`.
    pub meta: Option<&'a Value>,
    /// An activity's type (`member.birthday`); `None` for a transaction.
    pub activity: Option<&'a str>,
}

/// The longest activity type.
pub const MAX_ACTIVITY_TYPE: usize = 64;

/// Why `kind` is not an activity type: one or more words of lower-case letters, digits and
/// underscores, each starting with a letter, joined by dots (`app.opened`, `survey.completed`).
pub fn activity_type_problem(kind: &str) -> Option<String> {
    if kind.is_empty() || kind.len() > MAX_ACTIVITY_TYPE {
        return Some(format!("must be 1 to {MAX_ACTIVITY_TYPE} characters"));
    }
    let word = |w: &str| {
        w.starts_with(|c: char| c.is_ascii_lowercase())
            && w.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
    };
    if !kind.split('.').all(word) {
        return Some(format!(
            "`{kind}` is not an activity type: words of lower-case letters, digits and \
             underscores, each starting with a letter, joined by dots (app.opened)"
        ));
    }
    None
}

/// The root of an activity's attributes in a meta path (`meta_paths` hold the whole path, root
/// first: `meta.a` for a transaction's meta, `activity.attributes.a` for an activity's).
const ATTRIBUTES: [&str; 2] = ["activity", "attributes"];

/// The keys of `path` below its root, and whether that root is an activity's attributes.
fn below_root(path: &[String]) -> (&[String], bool) {
    match path {
        [a, b, rest @ ..] if a == ATTRIBUTES[0] && b == ATTRIBUTES[1] => (rest, true),
        [_, rest @ ..] => (rest, false),
        [] => (path, false),
    }
}

/// What the rules know beyond the transaction.
#[derive(Debug, Clone, Copy, Default)]
pub struct Context<'a> {
    /// The wallet's tier name, if it has one.
    pub wallet_tier: Option<&'a str>,
    pub wallet_balance: Decimal,
    pub member_status: &'a str,
    /// The wallet's id: what a `wallet` limit counts by.
    pub wallet_id: &'a str,
    /// The owning member's id: what a `member` limit counts by (a wallet without an owner
    /// counts as its own member).
    pub member_id: Option<&'a str>,
}

/// A meta value as a rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum MetaVal<'a> {
    Missing,
    Null,
    Bool(bool),
    Num(Decimal),
    Str(&'a str),
    /// An object or array: present, but not a value a rule can compare.
    Composite,
}

impl<'a> MetaVal<'a> {
    fn from_json(value: &'a Value) -> Self {
        match value {
            Value::Null => MetaVal::Null,
            Value::Bool(b) => MetaVal::Bool(*b),
            Value::Number(n) => number(n).map_or(MetaVal::Composite, MetaVal::Num),
            Value::String(s) => MetaVal::Str(s),
            Value::Array(_) | Value::Object(_) => MetaVal::Composite,
        }
    }
}

/// A JSON number as an exact decimal: integers as they are, floats through their shortest text
/// (`0.1` is 0.1, not 0.1000000000000000055...).
pub(crate) fn number(n: &serde_json::Number) -> Option<Decimal> {
    if let Some(i) = n.as_i64() {
        Some(Decimal::from(i))
    } else if let Some(u) = n.as_u64() {
        Some(Decimal::from(u))
    } else {
        n.as_f64().and_then(|f| f.to_string().parse().ok())
    }
}

pub(crate) struct Facts<'a> {
    pub row: &'a Row<'a>,
    pub ctx: &'a Context<'a>,
    pub meta: Vec<MetaVal<'a>>,
    /// `row.date` in the programme's time zone (computed only when a rule needs it).
    pub local: NaiveDateTime,
}

impl<'a> Facts<'a> {
    pub fn new(
        row: &'a Row<'a>,
        ctx: &'a Context<'a>,
        paths: &[Vec<String>],
        local: NaiveDateTime,
    ) -> Self {
        let meta = paths
            .iter()
            .map(|path| {
                // A transaction has no attributes and an activity no meta.
                let (keys, attribute) = below_root(path);
                let mut value = row.meta.filter(|_| attribute == row.activity.is_some());
                for key in keys {
                    value = value.and_then(|v| v.get(key));
                }
                value.map_or(MetaVal::Missing, MetaVal::from_json)
            })
            .collect();
        Facts {
            row,
            ctx,
            meta,
            local,
        }
    }
}
