//! What can go wrong between a file's door and its batch, each with what was being done when it
//! did (`Context`): the message an operator reads in the log or the CLI names the file, the
//! folder or the batch, and the cause below it stays reachable (`source`).

use std::fmt::Display;

use store::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum IngestError {
    /// A file or folder could not be read, written, moved or watched.
    #[error("{what}: {source}")]
    Io {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The store failed or refused.
    #[error("{what}: {source}")]
    Store {
        what: String,
        #[source]
        source: StoreError,
    },
    /// A step on another thread (hashing a file) ended before it finished.
    #[error("{what} stopped: {source}")]
    Stopped {
        what: String,
        #[source]
        source: tokio::task::JoinError,
    },
    /// What was given is not what it must be (a workbook that is not one or could be a zip bomb,
    /// a key that is not an OpenSSH public key, a file that changed in the spool).
    #[error("{0}")]
    Refused(String),
}

impl IngestError {
    pub fn refused(message: impl Into<String>) -> IngestError {
        IngestError::Refused(message.into())
    }
}

/// Says what was being done when an operation failed: `fs::rename(a, b).context(...)`.
pub trait Context<T> {
    fn context(self, what: impl Display) -> Result<T, IngestError>;
    /// As `context`, the description made only when it is needed.
    fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T, IngestError>;
}

macro_rules! context_for {
    ($error:ty, $variant:ident) => {
        impl<T> Context<T> for Result<T, $error> {
            fn context(self, what: impl Display) -> Result<T, IngestError> {
                self.map_err(|source| IngestError::$variant {
                    what: what.to_string(),
                    source,
                })
            }
            fn with_context<D: Display>(self, what: impl FnOnce() -> D) -> Result<T, IngestError> {
                self.map_err(|source| IngestError::$variant {
                    what: what().to_string(),
                    source,
                })
            }
        }
    };
}

context_for!(std::io::Error, Io);
context_for!(StoreError, Store);
context_for!(tokio::task::JoinError, Stopped);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_names_what_was_being_done_and_keeps_its_cause() {
        let failed: Result<(), std::io::Error> = Err(std::io::Error::new(
            std::io::ErrorKind::NotFound,
            "no such file",
        ));
        let err = failed
            .with_context(|| format!("moving {} to the spool", "a.csv"))
            .unwrap_err();
        assert_eq!(err.to_string(), "moving a.csv to the spool: no such file");
        let cause = std::error::Error::source(&err).expect("the cause is kept");
        assert_eq!(cause.to_string(), "no such file");
    }
}
