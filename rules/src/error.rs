//! Everything wrong with a rule set, reported at once.

use std::fmt;

/// What kind of mistake a compile error is; stable names for tools and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file is not valid TOML or has unknown or missing keys.
    Format,
    /// An expression does not parse as CEL.
    Syntax,
    UnknownParameter,
    UnknownFunction,
    /// Values of types that do not go together (text compared with a number...).
    TypeMismatch,
    /// Two rules share an id or a priority, or a rule has no effect or several.
    InvalidRule,
    /// A bad time zone, date, weekday or hour range.
    InvalidWindow,
    /// A limit or budget with an unknown scope or period, or a ceiling that is not above 0.
    InvalidLimit,
}

impl ErrorKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Format => "format",
            ErrorKind::Syntax => "syntax",
            ErrorKind::UnknownParameter => "unknown_parameter",
            ErrorKind::UnknownFunction => "unknown_function",
            ErrorKind::TypeMismatch => "type_mismatch",
            ErrorKind::InvalidRule => "invalid_rule",
            ErrorKind::InvalidWindow => "invalid_window",
            ErrorKind::InvalidLimit => "invalid_limit",
        }
    }
}

/// One problem: where it is (rule id, key, line and column inside the expression) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompileError {
    pub kind: ErrorKind,
    /// The rule's id; `None` for problems of the programme or the whole file.
    pub rule: Option<String>,
    /// The key the problem is in: `when`, `award`, `active.hours`, `programme.time_zone`...
    pub field: String,
    /// 1-based line and column inside the expression, when the problem has a place there.
    pub position: Option<(usize, usize)>,
    pub message: String,
}

impl fmt::Display for CompileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(rule) = &self.rule {
            write!(f, "rule `{rule}`, ")?;
        }
        write!(f, "{}", self.field)?;
        if let Some((line, column)) = self.position {
            write!(f, " {line}:{column}")?;
        }
        write!(f, ": {} ({})", self.message, self.kind.as_str())
    }
}

/// Every problem found in a rule set.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct CompileErrors(pub Vec<CompileError>);

impl fmt::Display for CompileErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, error) in self.0.iter().enumerate() {
            if i > 0 {
                writeln!(f)?;
            }
            write!(f, "{error}")?;
        }
        Ok(())
    }
}
