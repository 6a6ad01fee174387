//! What a store operation can report besides success.

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
}

impl StoreError {
    pub(crate) fn invalid(field: &'static str, message: impl Into<String>) -> Self {
        StoreError::Invalid {
            field,
            message: message.into(),
        }
    }
}

/// Turns a unique-constraint violation into a `Conflict` naming the field it protects.
/// `fields` pairs a column name (found in PostgreSQL's index name and in SQLite's message,
/// which lists the columns) with the API field it stands for.
pub(crate) fn conflict_on(err: sqlx::Error, fields: &[(&str, &'static str)]) -> StoreError {
    if let sqlx::Error::Database(db) = &err
        && db.is_unique_violation()
    {
        let text = format!("{} {}", db.constraint().unwrap_or_default(), db.message());
        if let Some((_, field)) = fields.iter().find(|(column, _)| text.contains(column)) {
            return StoreError::Conflict { field };
        }
    }
    StoreError::Database(err)
}
