//! Earn rows of a batch file in the canonical layout (`templates/earn.csv`): the header names the
//! EARN API body's fields, and each record becomes the earn the API would accept, or a rejection
//! with its row number, column, value and a stable reason code. A row with a `reverses` cell is
//! a return: it takes back (part of) the earn that cell names.

use chrono::{DateTime, Utc};
use serde_json::{Map, Value};
use store::limits::{self, MAX_META_BYTES, MAX_META_PATH, MAX_TEXT, Refused};
use store::{EarnInput, FileActivity, FileReturn};

use crate::batch::mapping::{Columns, FIELDS, Field, Mapping, Source, Target};
use crate::batch::values::{self, Kind};

/// Why a row was rejected. The codes are stable: clients match on them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reason {
    MissingField,
    BadDecimal,
    NegativeAmount,
    /// An amount past `store::limits::MAX_EARN_AMOUNT`, which the API refuses too.
    AmountTooLarge,
    BadDate,
    TooLong,
    RaggedRow,
    DuplicateInFile,
    DuplicateTransaction,
    UnknownWallet,
    /// A boolean meta cell that is none of the mapping's words.
    BadBoolean,
    /// A field that is not text in the file's encoding.
    BadEncoding,
    /// A NUL in a field, or a control character in an id.
    ControlCharacter,
    /// A CSV record with more fields than the reader takes.
    TooManyFields,
    /// A CSV record (or one of its fields) longer than the reader takes.
    RowTooLong,
    /// A quoted CSV field left open past the reader's line bound or to the end of the file.
    UnterminatedQuote,
    /// The rules gave tokens the ledger cannot hold.
    RulesRefused,
    /// The wallet's balance or lifetime earnings would pass the ledger's ceiling.
    BalanceCeiling,
    /// The row could not be evaluated (a defect of the service, logged).
    InternalError,
    /// A return's amount of 0 (it returns nothing).
    NotPositive,
    /// A return of an earn the organisation has not credited (yet): later in the file, in a
    /// later file, or never.
    EarnNotCredited,
    /// A return naming a wallet that does not hold the earn.
    WalletMismatch,
    /// A return of more of the purchase than is left to return.
    ReversalExceedsEarn,
    /// A return of tokens the member has spent, which the campaign's policy refuses.
    ReversalShortfall,
    /// An id used before for another request (its first differing field is named).
    AlreadyExists,
    /// An activity type that is not one (words of lower-case letters, digits and `_` joined
    /// by dots), or one the platform records itself.
    BadActivityType,
}

impl Reason {
    pub fn code(self) -> &'static str {
        match self {
            Reason::MissingField => "missing_field",
            Reason::BadDecimal => "bad_decimal",
            Reason::NegativeAmount => "negative_amount",
            Reason::AmountTooLarge => "amount_too_large",
            Reason::BadDate => "bad_date",
            Reason::TooLong => "too_long",
            Reason::RaggedRow => "ragged_row",
            Reason::DuplicateInFile => "duplicate_in_file",
            Reason::DuplicateTransaction => "duplicate_transaction",
            Reason::UnknownWallet => "unknown_wallet",
            Reason::BadBoolean => "bad_boolean",
            Reason::BadEncoding => "bad_encoding",
            Reason::ControlCharacter => "control_character",
            Reason::TooManyFields => "too_many_fields",
            Reason::RowTooLong => "row_too_long",
            Reason::UnterminatedQuote => "unterminated_quote",
            Reason::RulesRefused => "rules_refused",
            Reason::BalanceCeiling => "balance_ceiling",
            Reason::InternalError => "internal_error",
            Reason::NotPositive => "not_positive",
            Reason::EarnNotCredited => "earn_not_credited",
            Reason::WalletMismatch => "wallet_mismatch",
            Reason::ReversalExceedsEarn => "reversal_exceeds_earn",
            Reason::ReversalShortfall => "reversal_shortfall",
            Reason::AlreadyExists => "already_exists",
            Reason::BadActivityType => "bad_activity_type",
        }
    }
}

/// A refusal of one of `store::limits`' checks (the API's own), as a row's reason and message.
fn reason_of(refused: Refused) -> (Reason, String) {
    match refused {
        Refused::Blank => (Reason::MissingField, "is required".into()),
        Refused::Nul | Refused::ControlCharacter | Refused::Unfit => (
            Reason::ControlCharacter,
            "holds a control character (NUL anywhere, or any in an id)".into(),
        ),
        Refused::TooLong { max } => (Reason::TooLong, format!("longer than {max} characters")),
        Refused::TooBig | Refused::NotAnObject => (Reason::TooLong, refused.message()),
        Refused::Negative => (Reason::NegativeAmount, refused.message()),
        Refused::TooLarge { .. } => (Reason::AmountTooLarge, refused.message()),
        Refused::OutOfWindow { .. } => (Reason::BadDate, refused.message()),
        Refused::TooPrecise => (Reason::BadDecimal, refused.message()),
        // A key the service keeps for itself is one a client cannot take: as if taken.
        Refused::Reserved { .. } => (Reason::DuplicateTransaction, refused.message()),
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

/// A row of a file: an earn, a return of one, or a member's activity.
#[derive(Debug, Clone, PartialEq)]
pub enum Row {
    Earn(EarnInput),
    Return(FileReturn),
    Activity(FileActivity),
}

/// Which cell fills which earn field, from a mapping and the file's header.
#[derive(Debug, Clone)]
pub struct Layout {
    slots: Vec<Slot>,
    /// With a `reverses` column, an earn field no column fills (a file of returns needs no
    /// wallet or date): an earn row is refused for it.
    earn_missing: Option<Target>,
    /// Column names for reports: the header's, or `column N` without one.
    names: Vec<String>,
    /// With a header, a row has exactly its number of fields; without, at least this many.
    width: usize,
    has_header: bool,
}

#[derive(Debug, Clone)]
struct Slot {
    target: Target,
    column: Option<usize>,
    field: Field,
}

impl Layout {
    /// The layout of a canonical header: `id`, `walletId`, `amount`, `date` (required),
    /// `description`, `comment` and `meta.<key>` columns (dots nest), in any order and case.
    pub fn from_header<S: AsRef<str>>(header: &[S]) -> Result<Layout, Vec<String>> {
        Layout::new(&Mapping::canonical(), Some(header))
    }

    /// `mapping` applied to a file with `header` (`None`: the mapping says there is none).
    /// Every problem is reported at once. In the canonical layout an unknown column is one (a
    /// misspelt `amout` must not be skipped silently); a mapping names the columns it uses and
    /// the others are ignored.
    pub fn new<S: AsRef<str>>(
        mapping: &Mapping,
        header: Option<&[S]>,
    ) -> Result<Layout, Vec<String>> {
        let names: Vec<String> = header
            .unwrap_or(&[])
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
        let mut slots = Vec::new();
        match &mapping.columns {
            Columns::Canonical => {
                let returns = find("reverses").is_some();
                let activities = find("activity").is_some();
                for (target, kind, required) in [
                    (Target::Id, Kind::Text, true),
                    (Target::Wallet, Kind::Text, true),
                    (Target::Amount, Kind::DECIMAL, true),
                    (Target::Date, Kind::DATE, true),
                    (Target::Description, Kind::Text, false),
                    (Target::Comment, Kind::Text, false),
                    (Target::Reverses, Kind::Text, false),
                    (Target::Activity, Kind::Text, false),
                ] {
                    let name = target.name();
                    let column = find(&name);
                    let for_earns_only = (returns && target != Target::Id)
                        || (activities && target == Target::Amount);
                    if column.is_none() && required && !for_earns_only {
                        errors.push(format!("the column `{name}` is missing"));
                    }
                    let field = Field {
                        source: Source::Name(name),
                        kind,
                        required,
                        default: None,
                    };
                    if column.is_some() {
                        slots.push(Slot {
                            target,
                            column,
                            field,
                        });
                    }
                }
                for (i, name) in names.iter().enumerate() {
                    let known = FIELDS.iter().any(|k| name.eq_ignore_ascii_case(k));
                    if known {
                        if names[..i].iter().any(|n| n.eq_ignore_ascii_case(name)) {
                            errors.push(format!("the column `{name}` appears twice"));
                        }
                        continue;
                    }
                    match name.strip_prefix("meta.") {
                        Some(path) if path.contains('\0') => {
                            errors.push(format!("column `{name}`: a meta key holds a NUL"));
                        }
                        Some(path) if path.split('.').count() > MAX_META_PATH => {
                            errors.push(format!(
                                "column `{name}`: a meta key joins at most {MAX_META_PATH} names"
                            ));
                        }
                        Some(path) if !path.split('.').any(str::is_empty) => slots.push(Slot {
                            target: Target::Meta(path.split('.').map(String::from).collect()),
                            column: Some(i),
                            field: Field {
                                source: Source::Position(i),
                                kind: Kind::Auto,
                                required: false,
                                default: None,
                            },
                        }),
                        _ => errors.push(format!(
                            "unknown column `{name}`: the canonical columns are id, walletId, \
                             amount, date, description, comment, reverses, activity and \
                             meta.<key>; other layouts need a mapping"
                        )),
                    }
                }
            }
            Columns::Mapped(columns) => {
                for (target, field) in columns {
                    let column = match &field.source {
                        Source::Name(name) => {
                            let found = find(name);
                            if found.is_none() {
                                errors.push(format!(
                                    "the column `{name}` (mapped to {}) is not in the header",
                                    target.name()
                                ));
                            }
                            found
                        }
                        Source::Position(p) => {
                            if header.is_some() && *p >= names.len() {
                                errors.push(format!(
                                    "column {} (mapped to {}) is past the header's {} columns",
                                    p + 1,
                                    target.name(),
                                    names.len()
                                ));
                            }
                            Some(*p)
                        }
                        Source::Constant => None,
                    };
                    slots.push(Slot {
                        target: target.clone(),
                        column,
                        field: field.clone(),
                    });
                }
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let earn_missing = [Target::Wallet, Target::Amount, Target::Date]
            .into_iter()
            .find(|t| !slots.iter().any(|s| s.target == *t));
        let needed = slots
            .iter()
            .filter_map(|s| s.column)
            .map(|c| c + 1)
            .max()
            .unwrap_or(0);
        let (width, names) = match header {
            Some(_) => (names.len(), names),
            None => (
                needed,
                (1..=needed).map(|n| format!("column {n}")).collect(),
            ),
        };
        Ok(Layout {
            slots,
            earn_missing,
            names,
            width,
            has_header: header.is_some(),
        })
    }

    /// The earn or return in `record`, row `row` of the file.
    pub fn row<S: AsRef<str>>(&self, row: u64, record: &[S]) -> Result<Row, Rejection> {
        let ragged = if self.has_header {
            record.len() != self.width
        } else {
            record.len() < self.width
        };
        if ragged {
            return Err(Rejection {
                row,
                column: None,
                value: None,
                reason: Reason::RaggedRow,
                message: format!(
                    "{} fields where the {} {}",
                    record.len(),
                    if self.has_header {
                        "header has"
                    } else {
                        "mapping needs at least"
                    },
                    self.width
                ),
            });
        }
        let mut earn = EarnInput {
            activity: None,
            earn_id: String::new(),
            wallet: String::new(),
            amount: String::new(),
            date: DateTime::<Utc>::UNIX_EPOCH,
            description: None,
            comment: None,
            meta: None,
        };
        let mut meta = Map::new();
        // At least the bytes of the meta's JSON: each character escaped takes at most six.
        let mut meta_bound = 2;
        let cell_of = |slot: &Slot| slot.column.map_or("", |c| record[c].as_ref().trim());
        let reverses = self
            .slots
            .iter()
            .find(|s| s.target == Target::Reverses)
            .map(cell_of)
            .filter(|cell| !cell.is_empty());
        let activity = self
            .slots
            .iter()
            .find(|s| s.target == Target::Activity)
            .map(cell_of)
            .filter(|cell| !cell.is_empty());
        // A return: its value (None: all that is left) and date, when the row gives them.
        let (mut returned, mut dated) = (None, false);
        // An activity needs a wallet and a date, no amount.
        let missing = match (activity, &self.earn_missing) {
            (Some(_), Some(Target::Amount)) => None,
            (_, missing) => missing.as_ref(),
        };
        if let (None, Some(target)) = (reverses, missing) {
            return Err(Rejection {
                row,
                column: Some(target.name()),
                value: None,
                reason: Reason::MissingField,
                message: "an earn row (one that reverses nothing) needs it".into(),
            });
        }
        for slot in &self.slots {
            let reject = |reason: Reason, message: String| Rejection {
                row,
                column: Some(match slot.column {
                    Some(c) => self.names[c].clone(),
                    None => slot.target.name(),
                }),
                value: slot.column.map(|c| record[c].as_ref().to_string()),
                reason,
                message,
            };
            let cell = cell_of(slot);
            let for_earns_only = (reverses.is_some()
                && matches!(slot.target, Target::Wallet | Target::Amount | Target::Date))
                || (activity.is_some() && slot.target == Target::Amount);
            let value = match (cell, &slot.field.default) {
                // An activity's amount is not read.
                _ if activity.is_some() && slot.target == Target::Amount => continue,
                ("", _) if for_earns_only => continue,
                ("", Some(default)) => default.as_str(),
                ("", None) if slot.field.required => {
                    return Err(reject(Reason::MissingField, "is required".into()));
                }
                ("", None) => continue,
                (cell, _) => cell,
            };
            // The API's checks, said as a row's reasons.
            let held = |checked: Result<(), Refused>| {
                checked.map_err(|refused| {
                    let (reason, message) = reason_of(refused);
                    reject(reason, message)
                })
            };
            held(if value.contains('\0') {
                Err(Refused::Nul)
            } else {
                Ok(())
            })?;
            let text = |checked: Result<(), Refused>| held(checked).map(|()| value.to_string());
            match &slot.target {
                Target::Id => earn.earn_id = text(limits::earn_id(value))?,
                Target::Reverses => {
                    text(limits::id(value))?;
                }
                Target::Activity => {
                    if let Some(problem) = store::activity_type_problem(value) {
                        return Err(reject(Reason::BadActivityType, problem));
                    }
                }
                Target::Wallet => earn.wallet = text(limits::id(value))?,
                Target::Description => {
                    earn.description = Some(text(limits::text(value, MAX_TEXT))?);
                }
                Target::Comment => earn.comment = Some(text(limits::text(value, MAX_TEXT))?),
                Target::Amount => {
                    let Kind::Decimal { point, thousands } = slot.field.kind else {
                        unreachable!("a mapping's amount is a decimal")
                    };
                    let amount = values::decimal(value, point, thousands).ok_or_else(|| {
                        reject(
                            Reason::BadDecimal,
                            format!("not {}", slot.field.kind.hint()),
                        )
                    })?;
                    held(limits::earn_amount(amount))?;
                    if reverses.is_some() {
                        if amount.is_zero() {
                            let message = "a return's value must be more than 0".into();
                            return Err(reject(Reason::NotPositive, message));
                        }
                        returned = Some(amount);
                    }
                    earn.amount = amount.normalize().to_string();
                }
                Target::Date => {
                    let Kind::Date { format, zone } = &slot.field.kind else {
                        unreachable!("a mapping's date is a date")
                    };
                    earn.date = values::date(value, format.as_deref(), *zone).ok_or_else(|| {
                        reject(Reason::BadDate, format!("not {}", slot.field.kind.hint()))
                    })?;
                    dated = true;
                }
                Target::Meta(path) => {
                    let json = slot.field.kind.meta_value(value).ok_or_else(|| {
                        let reason = match slot.field.kind {
                            Kind::Decimal { .. } => Reason::BadDecimal,
                            Kind::Date { .. } => Reason::BadDate,
                            _ => Reason::BadBoolean,
                        };
                        reject(reason, format!("not {}", slot.field.kind.hint()))
                    })?;
                    meta_bound += 6 * (value.len() + path.iter().map(String::len).sum::<usize>())
                        + 8 * path.len();
                    store::meta::insert(&mut meta, path, json);
                }
            }
        }
        if !meta.is_empty() {
            let meta = Value::Object(meta);
            // Its depth is held by the layout and its NULs cell by cell; only a meta that may be
            // too big is rendered to be measured.
            let checked = if meta_bound > MAX_META_BYTES {
                limits::meta(&meta)
            } else {
                Ok(())
            };
            if let Err(refused) = checked {
                let (reason, message) = reason_of(refused);
                return Err(Rejection {
                    row,
                    column: Some("meta".into()),
                    value: None,
                    reason,
                    message: format!("the row's meta {message}"),
                });
            }
            earn.meta = Some(meta);
        }
        if let Some(kind) = activity {
            if reverses.is_some() {
                return Err(Rejection {
                    row,
                    column: Some(Target::Activity.name()),
                    value: Some(kind.to_string()),
                    reason: Reason::BadActivityType,
                    message: "a row is an activity or a return, not both".into(),
                });
            }
            return Ok(Row::Activity(FileActivity {
                row,
                id: earn.earn_id,
                wallet: earn.wallet,
                kind: kind.to_string(),
                date: earn.date,
                attributes: earn.meta,
            }));
        }
        let Some(reverses) = reverses else {
            return Ok(Row::Earn(earn));
        };
        Ok(Row::Return(FileReturn {
            row,
            id: earn.earn_id,
            reverses: reverses.to_string(),
            earn_earlier_in_file: false,
            amount: returned,
            wallet: Some(earn.wallet).filter(|w| !w.is_empty()),
            date: dated.then_some(earn.date),
            description: earn.description,
            comment: earn.comment,
            meta: earn.meta,
        }))
    }

    /// The earn in `record`, for a caller that knows the file holds only earns (the
    /// generators' and tests' own files). Panics on a return or activity row.
    pub fn earn<S: AsRef<str>>(&self, row: u64, record: &[S]) -> Result<EarnInput, Rejection> {
        match self.row(row, record)? {
            Row::Earn(earn) => Ok(earn),
            Row::Return(r) => panic!("row {row} is a return of {}", r.reverses),
            Row::Activity(a) => panic!("row {row} is an activity, {}", a.kind),
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
        let cases: [([&str; 7], Option<&str>, Reason); 9] = [
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
            (
                ["e", "w", "1", "2026-11-20", "a\0b", "", ""],
                Some("description"),
                Reason::ControlCharacter,
            ),
            (
                ["e\n2", "w", "1", "2026-11-20", "", "", ""],
                Some("id"),
                Reason::ControlCharacter,
            ),
            (
                ["e", "w\u{1b}", "1", "2026-11-20", "", "", ""],
                Some("walletId"),
                Reason::ControlCharacter,
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
    fn a_row_with_a_reverses_cell_is_a_return_and_needs_no_wallet_or_date() {
        assert!(
            Layout::from_header(&["id", "amount"]).is_err(),
            "an earn file needs walletId and date"
        );
        let layout = Layout::from_header(&["id", "amount", "reverses", "walletId"]).unwrap();
        let row = layout.row(2, &["r-1", "2.50", "e-1", ""]).unwrap();
        let Row::Return(r) = row else {
            panic!("{row:?}")
        };
        assert_eq!(
            (r.row, r.id.as_str(), r.reverses.as_str()),
            (2, "r-1", "e-1")
        );
        assert_eq!(
            (r.amount, r.wallet, r.date),
            (Some("2.5".parse().unwrap()), None, None)
        );
        let whole = layout.row(3, &["r-2", "", "e-1", "w"]).unwrap();
        assert!(matches!(
            whole,
            Row::Return(FileReturn { amount: None, .. })
        ));
        // A row reversing nothing is an earn, and this layout has no date for it.
        let earn = layout.row(4, &["e-2", "1", "", "w"]).unwrap_err();
        assert_eq!(
            (earn.reason, earn.column.as_deref()),
            (Reason::MissingField, Some("date"))
        );
        for (amount, reason) in [
            ("0", Reason::NotPositive),
            ("0.0000001", Reason::BadDecimal),
            ("-1", Reason::NegativeAmount),
        ] {
            let refused = layout.row(5, &["r-3", amount, "e-1", ""]).unwrap_err();
            assert_eq!(
                (refused.reason, refused.column.as_deref()),
                (reason, Some("amount"))
            );
        }
    }

    /// A row holds the API's own limits: what `POST /v1/transactions/earn` refuses, a file's
    /// row refuses too.
    #[test]
    fn rows_hold_the_limits_the_api_holds() {
        let huge = layout()
            .earn(
                2,
                &["e", "w", "1000000000000000.5", "2026-11-20", "", "", ""],
            )
            .unwrap_err();
        assert_eq!(
            (huge.reason, huge.column.as_deref()),
            (Reason::AmountTooLarge, Some("amount"))
        );
        let largest = layout().earn(2, &["e", "w", "1000000000000000", "2026-11-20", "", "", ""]);
        assert_eq!(largest.unwrap().amount, "1000000000000000");
        let id = "i".repeat(store::limits::MAX_ID + 1);
        let long = layout()
            .earn(3, &[id.as_str(), "w", "1", "2026-11-20", "", "", ""])
            .unwrap_err();
        assert_eq!(long.reason, Reason::TooLong);
        let big = "m".repeat(store::limits::MAX_META_BYTES);
        let heavy = layout()
            .earn(4, &["e", "w", "1", "2026-11-20", "", big.as_str(), ""])
            .unwrap_err();
        assert_eq!(
            (heavy.reason, heavy.column.as_deref()),
            (Reason::TooLong, Some("meta"))
        );
        let deep = format!("meta.{}", ["k"; store::limits::MAX_META_PATH + 1].join("."));
        let errors = Layout::from_header(&["id", "walletId", "amount", "date", &deep]).unwrap_err();
        assert!(errors[0].contains("at most"), "{errors:?}");
        let deepest = format!("meta.{}", ["k"; store::limits::MAX_META_PATH].join("."));
        let layout = Layout::from_header(&["id", "walletId", "amount", "date", &deepest]).unwrap();
        let earn = layout.earn(2, &["e", "w", "1", "2026-11-20", "x"]).unwrap();
        assert!(store::limits::meta(earn.meta.as_ref().unwrap()).is_ok());
    }

    #[test]
    fn the_template_clients_download_is_a_valid_file() {
        let template = include_str!("../../../templates/earn.csv");
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
}
