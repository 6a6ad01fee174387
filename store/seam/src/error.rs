//! What a store operation can report besides success.

/// One problem with a request or document: where (a JSON path) and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub path: String,
    pub message: String,
}

impl FieldProblem {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Self {
        FieldProblem {
            path: path.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.path.is_empty() {
            f.write_str(&self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// An error from a store operation. `Invalid` and `Conflict` are the caller's fault and carry the
/// field concerned; `Database` is ours (or the database's) and is never shown in detail to clients.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A value the store refuses (an unknown campaign for a key, a malformed currency...).
    #[error("{field}: {message}")]
    Invalid {
        field: &'static str,
        message: String,
    },
    /// A uniqueness rule: another live record already holds this value in the organisation.
    #[error("{field} is already in use")]
    Conflict { field: &'static str },
    /// The referenced record does not exist (or belongs to another organisation).
    #[error("{what} not found")]
    NotFound { what: &'static str },
    /// A record that a field of the request names (a new wallet's `owner`) does not exist.
    #[error("{field}: {message}")]
    UnknownReference {
        field: &'static str,
        message: String,
    },
    /// A burn the wallet cannot cover: `available` is the balance less the minimum to keep.
    #[error("insufficient balance: {available} available")]
    InsufficientBalance { available: crate::Tokens },
    /// A rule set that does not compile; every problem is listed.
    #[error("the rule set has errors:\n{0}")]
    InvalidRules(rules::CompileErrors),
    /// A catalogue import document with problems; every one is listed with its JSON path.
    #[error("the catalogue has {} problem(s), the first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    InvalidCatalogue(Vec<FieldProblem>),
    /// A request whose fields name data that does not allow it (an order line naming an
    /// unknown product); every problem is listed with its JSON path.
    #[error("{} problem(s), the first: {}", .0.len(), .0.first().map(ToString::to_string).unwrap_or_default())]
    Rejected(Vec<FieldProblem>),
    /// A well-formed request that the state of what it names refuses (sold out, a code already
    /// redeemed, a booking move the state machine does not allow): `code` says which.
    #[error("{message}")]
    Refused {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
    /// More of something within a period than the service allows (redeliveries in an hour):
    /// asked again after `retry_after` seconds, it may pass.
    #[error("{message}")]
    Throttled {
        code: &'static str,
        message: String,
        retry_after: u64,
    },
    /// A stored value this version of the code does not know (a status, kind or state written
    /// by a newer version, or damaged data): reported, never read as something else.
    #[error("{table}.{column} holds `{value}`, which this version does not know")]
    UnknownStored {
        table: &'static str,
        column: &'static str,
        value: String,
    },
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    /// From the statements SQLite runs on the calling thread (see `direct`).
    #[error("database error: {0}")]
    Sqlite(#[from] rusqlite::Error),
    /// A write whose shared commit failed or never ran (the cause is logged).
    #[error("database error: {0}")]
    NotCommitted(String),
    #[error("migration failed: {0}")]
    Migration(#[from] sqlx::migrate::MigrateError),
    /// Code that panicked while doing this one operation (a defect, logged): the operation
    /// failed and changed nothing; others go on.
    #[error("internal error: {0}")]
    Panicked(String),
}

impl StoreError {
    pub fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        StoreError::Invalid {
            field,
            message: message.into(),
        }
    }

    pub fn refused(code: &'static str, field: Option<String>, message: String) -> Self {
        StoreError::Refused {
            code,
            field,
            message,
        }
    }
}

/// What `run` returns, or `Panicked` if it panicked (logged with its message).
pub fn unpanicked<T>(
    what: &str,
    run: impl FnOnce() -> Result<T, StoreError>,
) -> Result<T, StoreError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(run))
        .unwrap_or_else(|payload| Err(panicked(what, payload.as_ref())))
}

/// The `Panicked` error for a panic's payload, logged.
pub fn panicked(what: &str, payload: &(dyn std::any::Any + Send)) -> StoreError {
    let message = payload
        .downcast_ref::<&str>()
        .map(std::string::ToString::to_string)
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic without a message".into());
    tracing::error!(%message, "{what} panicked");
    StoreError::Panicked(format!("{what} failed"))
}

/// `parsed` (the reading of `text`, stored in `table.column`), or `UnknownStored` naming it.
pub fn known<T>(
    parsed: Option<T>,
    table: &'static str,
    column: &'static str,
    text: &str,
) -> Result<T, StoreError> {
    parsed.ok_or_else(|| StoreError::UnknownStored {
        table,
        column,
        value: text.to_string(),
    })
}

impl StoreError {
    /// For a unique-constraint violation, from either driver, the text that names what it
    /// protects (PostgreSQL's index name and message; SQLite's message lists the columns).
    fn unique_violation(&self) -> Option<String> {
        match self {
            StoreError::Database(sqlx::Error::Database(db)) if db.is_unique_violation() => Some(
                format!("{} {}", db.constraint().unwrap_or_default(), db.message()),
            ),
            StoreError::Sqlite(rusqlite::Error::SqliteFailure(failure, message))
                if matches!(
                    failure.extended_code,
                    rusqlite::ffi::SQLITE_CONSTRAINT_UNIQUE
                        | rusqlite::ffi::SQLITE_CONSTRAINT_PRIMARYKEY
                ) =>
            {
                Some(message.clone().unwrap_or_default())
            }
            _ => None,
        }
    }

    /// Whether this is a unique-constraint violation, whichever driver reported it.
    pub fn is_unique_violation(&self) -> bool {
        self.unique_violation().is_some()
    }
}

/// Turns a unique-constraint violation into a `Conflict` naming the field it protects.
/// `fields` pairs a column name (found in PostgreSQL's index name and in SQLite's message,
/// which lists the columns) with the API field it stands for. Any other error passes through.
pub fn conflict_on(err: impl Into<StoreError>, fields: &[(&str, &'static str)]) -> StoreError {
    let err = err.into();
    if let Some(text) = err.unique_violation()
        && let Some((_, field)) = fields.iter().find(|(column, _)| text.contains(column))
    {
        return StoreError::Conflict { field };
    }
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_unique_violation_is_a_conflict_from_either_driver() {
        let connection = rusqlite::Connection::open_in_memory().unwrap();
        connection
            .execute_batch(
                "CREATE TABLE members (id TEXT PRIMARY KEY, external_id TEXT UNIQUE);
                 INSERT INTO members VALUES ('a', 'card-1');",
            )
            .unwrap();
        let clash = |sql: &str| StoreError::from(connection.execute(sql, []).unwrap_err());
        let fields = &[("external_id", "externalId"), ("id", "id")];
        let err = clash("INSERT INTO members VALUES ('b', 'card-1')");
        assert!(err.is_unique_violation());
        assert!(matches!(
            conflict_on(err, fields),
            StoreError::Conflict {
                field: "externalId"
            }
        ));
        let err = clash("INSERT INTO members VALUES ('a', 'card-2')");
        assert!(matches!(
            conflict_on(err, &fields[1..]),
            StoreError::Conflict { field: "id" }
        ));
        let other = clash("INSERT INTO nowhere VALUES (1)");
        assert!(!other.is_unique_violation());
        assert!(matches!(conflict_on(other, fields), StoreError::Sqlite(_)));
    }
}
