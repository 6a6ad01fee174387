//! The records of a batch file, CSV (streamed) or XLSX (at most 10,000 records, read whole), as
//! text fields in the order of the file, each with its row number. The mapping says the
//! delimiter, the encoding and which row is the header.

use std::fs::File;
use std::path::Path;

use crate::mapping::{Encoding, Mapping};

/// One record: its row number in the file (counting from 1) and its fields.
#[derive(Debug, Clone)]
pub struct Record {
    pub row: u64,
    pub fields: Vec<String>,
    /// A field was not text in the file's encoding (its undecodable bytes are shown as `�`).
    pub bad_encoding: bool,
}

pub enum Records {
    Csv {
        reader: csv::Reader<File>,
        record: csv::ByteRecord,
        encoding: Encoding,
        row: u64,
        size: u64,
    },
    Sheet {
        rows: std::vec::IntoIter<(u64, Vec<String>)>,
        count: u64,
        taken: u64,
    },
}

impl Records {
    /// Opens the file (by its name: `.xlsx` is a workbook, anything else CSV) and reads up to the
    /// header. Returns the records and the header, if the mapping says there is one. The `Err` is
    /// why the whole file is refused.
    pub fn open(
        path: &Path,
        file_name: &str,
        mapping: &Mapping,
    ) -> Result<(Records, Option<Vec<String>>), String> {
        let mut records = if file_name.to_ascii_lowercase().ends_with(".xlsx") {
            let rows = crate::xlsx::read(path, mapping.header_row)?;
            Records::Sheet {
                count: rows.len() as u64,
                rows: rows.into_iter(),
                taken: 0,
            }
        } else {
            let file = File::open(path).map_err(|e| format!("the file cannot be read: {e}"))?;
            let size = file.metadata().map(|m| m.len()).unwrap_or(0);
            let reader = csv::ReaderBuilder::new()
                .has_headers(false)
                .flexible(true)
                .delimiter(mapping.delimiter)
                .from_reader(file);
            Records::Csv {
                reader,
                record: csv::ByteRecord::new(),
                encoding: mapping.encoding,
                row: 0,
                size,
            }
        };
        let mut header = None;
        for n in 1..=mapping.header_row {
            match records.next_record()? {
                Some(record) if n == mapping.header_row => {
                    if record.bad_encoding {
                        return Err(format!(
                            "the header row is not {} text (the mapping's encoding)",
                            mapping.encoding.name()
                        ));
                    }
                    header = Some(record.fields);
                }
                Some(_) => {}
                None => return Err(format!("the file ends before its header row ({n})")),
            }
        }
        Ok((records, header))
    }

    /// The next record, or `None` at the end; `Err` when the file cannot be read on (a CSV
    /// quote left open, an I/O failure).
    pub fn next_record(&mut self) -> Result<Option<Record>, String> {
        match self {
            Records::Csv {
                reader,
                record,
                encoding,
                row,
                ..
            } => {
                match reader.read_byte_record(record) {
                    Ok(false) => return Ok(None),
                    Ok(true) => {}
                    Err(err) => {
                        return Err(format!(
                            "the file cannot be read past row {}: {err}",
                            *row + 1
                        ));
                    }
                }
                *row += 1;
                let mut bad_encoding = false;
                let mut fields: Vec<String> = record
                    .iter()
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
                }))
            }
            Records::Sheet { rows, taken, .. } => Ok(rows.next().map(|(row, fields)| {
                *taken += 1;
                Record {
                    row,
                    fields,
                    bad_encoding: false,
                }
            })),
        }
    }

    /// How far through the file reading is, as (done, of): bytes for CSV, rows for XLSX.
    pub fn position(&self) -> (u64, u64) {
        match self {
            Records::Csv { reader, size, .. } => (reader.position().byte(), *size),
            Records::Sheet { count, taken, .. } => (*taken, *count),
        }
    }
}
