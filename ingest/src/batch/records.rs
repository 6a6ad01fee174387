//! The records of a batch file, CSV (streamed), XLSX (at most 10,000 records, read whole) or
//! Parquet (a row group at a time), as text fields in the order of the file, each with its row
//! number. The mapping says a CSV file's delimiter and encoding, and which row is the header of
//! a CSV file or a sheet; a Parquet file's columns always have their names.

use std::fs::File;
use std::path::Path;

use crate::batch::delimited::{self, Delimited, Outcome};
use crate::batch::mapping::{Encoding, Mapping};
use crate::batch::rows::Reason;
use crate::error::{Context, IngestError};

/// One record: its row number in the file (counting from 1) and its fields.
#[derive(Debug, Clone)]
pub struct Record {
    pub row: u64,
    pub fields: Vec<String>,
    /// A field was not text in the file's encoding (its undecodable bytes are shown as `�`).
    pub bad_encoding: bool,
    /// Why the record could not be read as fields (a CSV record past the reader's bounds, or a
    /// quote left open): it is rejected with this reason, and `fields` is empty.
    pub unread: Option<(Reason, String)>,
}

pub enum Records {
    Csv {
        reader: Box<Delimited>,
        encoding: Encoding,
        row: u64,
        size: u64,
    },
    Sheet {
        rows: std::vec::IntoIter<(u64, Vec<String>)>,
        count: u64,
        taken: u64,
    },
    Parquet {
        rows: columnar::ParquetRows,
        taken: u64,
    },
}

impl Records {
    /// Opens the file (by its name: `.xlsx` is a workbook, `.parquet` Parquet, anything else
    /// CSV) and reads up to the header. Returns the records and the header, if the mapping says
    /// there is one (a Parquet file always has one: its column names). The `Err` is why the
    /// whole file is refused.
    pub fn open(
        path: &Path,
        file_name: &str,
        mapping: &Mapping,
    ) -> Result<(Records, Option<Vec<String>>), IngestError> {
        let lower = file_name.to_ascii_lowercase();
        if lower.ends_with(".parquet") {
            let rows = columnar::ParquetRows::open(path).map_err(IngestError::Refused)?;
            let header = rows.header();
            return Ok((Records::Parquet { rows, taken: 0 }, Some(header)));
        }
        let mut records = if lower.ends_with(".xlsx") {
            let rows = crate::batch::xlsx::read(path, mapping.header_row)?;
            Records::Sheet {
                count: rows.len() as u64,
                rows: rows.into_iter(),
                taken: 0,
            }
        } else {
            let file = File::open(path).context("the file cannot be read")?;
            let size = file.metadata().map_or(0, |m| m.len());
            Records::Csv {
                reader: Box::new(Delimited::new(file, mapping.delimiter)),
                encoding: mapping.encoding,
                row: 0,
                size,
            }
        };
        let mut header = None;
        for n in 1..=mapping.header_row {
            match records.next_record()? {
                Some(record) if n == mapping.header_row => {
                    if let Some((_, why)) = record.unread {
                        return Err(IngestError::refused(format!(
                            "the header row (row {n}) cannot be read: {why}"
                        )));
                    }
                    if record.bad_encoding {
                        return Err(IngestError::refused(format!(
                            "the header row is not {} text (the mapping's encoding)",
                            mapping.encoding.name()
                        )));
                    }
                    header = Some(record.fields);
                }
                Some(_) => {}
                None => {
                    return Err(IngestError::refused(format!(
                        "the file ends before its header row ({n})"
                    )));
                }
            }
        }
        Ok((records, header))
    }

    /// The next record, or `None` at the end; `Err` when the file cannot be read on (a CSV
    /// quote left open, an I/O failure).
    pub fn next_record(&mut self) -> Result<Option<Record>, IngestError> {
        match self {
            Records::Csv {
                reader,
                encoding,
                row,
                ..
            } => {
                let outcome = match reader.next_record() {
                    Ok(None) => return Ok(None),
                    Ok(Some(outcome)) => outcome,
                    Err(err) => {
                        return Err(IngestError::refused(format!(
                            "the file cannot be read past row {}: {err}",
                            *row + 1
                        )));
                    }
                };
                *row += 1;
                if let Some(unread) = unread(outcome) {
                    return Ok(Some(Record {
                        row: *row,
                        fields: Vec::new(),
                        bad_encoding: false,
                        unread: Some(unread),
                    }));
                }
                let mut bad_encoding = false;
                let mut fields: Vec<String> = reader
                    .fields()
                    .map(|bytes| match encoding.decode(bytes) {
                        Some(text) => text.into_owned(),
                        None => {
                            bad_encoding = true;
                            String::from_utf8_lossy(bytes).into_owned()
                        }
                    })
                    .collect();
                if *row == 1
                    && let Some(first) = fields.first_mut()
                    && first.starts_with('\u{feff}')
                {
                    first.drain(..'\u{feff}'.len_utf8());
                }
                Ok(Some(Record {
                    row: *row,
                    fields,
                    bad_encoding,
                    unread: None,
                }))
            }
            Records::Sheet { rows, taken, .. } => Ok(rows.next().map(|(row, fields)| {
                *taken += 1;
                Record {
                    row,
                    fields,
                    bad_encoding: false,
                    unread: None,
                }
            })),
            Records::Parquet { rows, taken } => Ok(rows
                .next_row()
                .map_err(IngestError::Refused)?
                .map(|(row, fields, bad)| {
                    *taken = row;
                    Record {
                        row,
                        fields,
                        bad_encoding: bad,
                        unread: None,
                    }
                })),
        }
    }

    /// How far through the file reading is, as (done, of): bytes for CSV, rows otherwise.
    pub fn position(&self) -> (u64, u64) {
        match self {
            Records::Csv { reader, size, .. } => (reader.position(), *size),
            Records::Sheet { count, taken, .. } => (*taken, *count),
            Records::Parquet { rows, taken } => (*taken, rows.len()),
        }
    }
}

/// The reason and message for a CSV record that is not read as fields.
fn unread(outcome: Outcome) -> Option<(Reason, String)> {
    Some(match outcome {
        Outcome::Record => return None,
        Outcome::TooManyFields => (
            Reason::TooManyFields,
            format!("more than {} fields", delimited::MAX_FIELDS),
        ),
        Outcome::RowTooLong => (
            Reason::RowTooLong,
            format!("more than {} bytes of fields", delimited::MAX_ROW_BYTES),
        ),
        Outcome::FieldTooLong => (
            Reason::RowTooLong,
            format!("a field of more than {} bytes", delimited::MAX_FIELD_BYTES),
        ),
        Outcome::OpenQuote => (
            Reason::UnterminatedQuote,
            format!(
                "a quote opened here is not closed within {} lines or before the end of the \
                 file; the lines after this one are read as rows",
                delimited::MAX_RECORD_LINES
            ),
        ),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn read_all(
        content: &[u8],
        name: &str,
        mapping: &Mapping,
    ) -> (Option<Vec<String>>, Vec<Record>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(name);
        std::fs::write(&path, content).unwrap();
        let (mut records, header) = Records::open(&path, name, mapping).unwrap();
        let mut all = Vec::new();
        while let Some(record) = records.next_record().unwrap() {
            all.push(record);
        }
        (header, all)
    }

    fn mapping(document: serde_json::Value) -> Mapping {
        Mapping::parse(&document).unwrap()
    }

    #[test]
    fn a_header_below_a_title_line_with_tabs_and_crlf() {
        let mapping = mapping(json!({
            "delimiter": "tab",
            "header_row": 2,
            "columns": { "id": "Id", "walletId": "Card", "amount": "Total", "date": "Day" },
        }));
        let content = b"Till export\r\nId\tCard\tTotal\tDay\r\nT1\tc-1\t\"1\t5\"\t2026-11-20\r\n";
        let (header, records) = read_all(content, "till.csv", &mapping);
        assert_eq!(header.unwrap(), ["Id", "Card", "Total", "Day"]);
        assert_eq!(records.len(), 1);
        assert_eq!(records[0].row, 3);
        assert_eq!(records[0].fields, ["T1", "c-1", "1\t5", "2026-11-20"]);
    }

    #[test]
    fn without_a_header_the_first_row_is_data_and_loses_its_byte_order_mark() {
        let mapping = mapping(json!({
            "header_row": 0,
            "columns": {
                "id": { "position": 1 }, "walletId": { "position": 2 },
                "amount": { "position": 3 }, "date": { "position": 4 },
            },
        }));
        let content = "\u{feff}T1,c-1,5,2026-11-20\n\"T2\",c-2,\"multi\nline\",2026-11-20\n";
        let (header, records) = read_all(content.as_bytes(), "plain.csv", &mapping);
        assert!(header.is_none());
        assert_eq!(records[0].fields[0], "T1");
        assert_eq!((records[0].row, records[1].row), (1, 2));
        assert_eq!(records[1].fields[2], "multi\nline");
    }

    #[test]
    fn a_file_ending_before_its_header_is_refused_and_an_open_quote_is_reported() {
        let mapping = mapping(json!({
            "header_row": 3,
            "columns": { "id": "a", "walletId": "b", "amount": "c", "date": "d" },
        }));
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("short.csv");
        std::fs::write(&path, "one line\n").unwrap();
        let error = Records::open(&path, "short.csv", &mapping).err().unwrap();
        assert!(
            error.to_string().contains("ends before its header row"),
            "{error}"
        );

        let (mut records, _) = {
            std::fs::write(&path, "id,walletId,amount,date\n\"open,w,1,2026-11-20\n").unwrap();
            Records::open(&path, "short.csv", &Mapping::canonical()).unwrap()
        };
        // A quote left open to the end of the file: the record is reported, not read as fields.
        let record = records.next_record().unwrap().unwrap();
        assert!(record.fields.is_empty());
        let (reason, _) = record.unread.unwrap();
        assert_eq!(reason, Reason::UnterminatedQuote);
        assert!(records.next_record().unwrap().is_none());
    }

    #[test]
    fn legacy_text_is_decoded_and_bad_utf8_flagged() {
        let latin = mapping(json!({
            "encoding": "windows-1252",
            "columns": { "id": "id", "walletId": "w", "amount": "a", "date": "d" },
        }));
        let (_, records) = read_all(b"id,w,a,d\ncaf\xe9,w,1,2026-11-20\n", "l.csv", &latin);
        assert_eq!(records[0].fields[0], "café");
        assert!(!records[0].bad_encoding);
        let (_, records) = read_all(
            b"id,w,a,d\ncaf\xe9,w,1,2026-11-20\n",
            "u.csv",
            &Mapping::canonical(),
        );
        assert!(records[0].bad_encoding);
    }
}
