//! The reports a processed file leaves in the organisation's `reports/`: `<file>.rejected.csv`
//! (each rejected row with its number, reason code, column, value, message and original fields)
//! and `<file>.result.json` (the summary). Each is written under a temporary name and then
//! renamed, so a client never reads half a report.

use std::path::{Path, PathBuf};

use store::StoreError;

use crate::batch::rows::Rejection;

/// The rejected-rows report, written as the file is read.
pub struct Rejected {
    writer: csv::Writer<std::fs::File>,
    temporary: PathBuf,
    path: PathBuf,
    pub count: u64,
    header_written: bool,
}

fn io(err: impl std::fmt::Display) -> StoreError {
    StoreError::NotCommitted(format!("writing the report: {err}"))
}

const COLUMNS: [&str; 5] = ["row", "code", "column", "value", "message"];

impl Rejected {
    pub fn create(path: PathBuf) -> Result<Rejected, StoreError> {
        let temporary = path.with_extension("csv.tmp");
        // Rejected rows keep their own number of fields (a ragged row stays ragged).
        let writer = csv::WriterBuilder::new()
            .flexible(true)
            .from_path(&temporary)
            .map_err(io)?;
        Ok(Rejected {
            writer,
            temporary,
            path,
            count: 0,
            header_written: false,
        })
    }

    /// The report's header: its own columns, then the file's.
    pub fn header(&mut self, original: &[String]) -> Result<(), StoreError> {
        let mut header: Vec<&str> = COLUMNS.to_vec();
        header.extend(original.iter().map(String::as_str));
        self.writer.write_record(&header).map_err(io)?;
        self.header_written = true;
        Ok(())
    }

    pub fn row(&mut self, rejection: &Rejection, fields: &[String]) -> Result<(), StoreError> {
        let row = rejection.row.to_string();
        let mut record: Vec<&str> = vec![
            &row,
            rejection.reason.code(),
            rejection.column.as_deref().unwrap_or_default(),
            rejection.value.as_deref().unwrap_or_default(),
            &rejection.message,
        ];
        record.extend(fields.iter().map(String::as_str));
        self.writer.write_record(&record).map_err(io)?;
        self.count += 1;
        Ok(())
    }

    /// Puts the report in place (a file refused whole has only the header line).
    pub fn finish(mut self) -> Result<(), StoreError> {
        if !self.header_written {
            self.writer.write_record(COLUMNS).map_err(io)?;
        }
        self.writer.flush().map_err(io)?;
        drop(self.writer);
        std::fs::rename(&self.temporary, &self.path).map_err(io)
    }
}

/// A report's summary, written whole or not at all.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<(), StoreError> {
    folders::write_atomically(path, bytes).map_err(io)
}
