//! A CSV file read record by record within fixed bounds, whatever the file holds: a record's
//! fields are at most `MAX_ROW_BYTES` together, `MAX_FIELD_BYTES` each and `MAX_FIELDS` in
//! number, and a record spans at most `MAX_RECORD_LINES` lines. A record past a bound is
//! reported as such (and skipped, its bytes never kept), and reading goes on with the next.
//!
//! A quote left open would otherwise swallow the rest of the file into one field. When a record
//! passes the line bound, or ends at the end of the file with an odd number of quotes, it is
//! reported as an open quote and reading starts again on the line after the one it began on,
//! so that every line after it is read as a row of its own.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};

use csv_core::{ReadRecordResult, Reader, ReaderBuilder};

/// Fields a record may have (a header too).
pub const MAX_FIELDS: usize = 1_024;
/// A record's fields together, as read (quotes and delimiters taken out).
pub const MAX_ROW_BYTES: usize = 1 << 20;
/// One field.
pub const MAX_FIELD_BYTES: usize = 64 << 10;
/// Lines one record may span (a quoted field may hold line breaks).
pub const MAX_RECORD_LINES: usize = 100;

const INPUT: usize = 64 << 10;

/// What the next record is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// A record within the bounds: its fields are `Delimited::fields`.
    Record,
    /// More than `MAX_FIELDS` fields.
    TooManyFields,
    /// More than `MAX_ROW_BYTES` of fields.
    RowTooLong,
    /// A field of more than `MAX_FIELD_BYTES`.
    FieldTooLong,
    /// A quoted field that runs past `MAX_RECORD_LINES` lines or to the end of the file.
    OpenQuote,
}

pub struct Delimited {
    file: File,
    core: Reader,
    quote: u8,
    input: Box<[u8]>,
    /// The unread input is `input[start..end]`; `offset` is the file offset of `input[start]`.
    start: usize,
    end: usize,
    offset: u64,
    eof: bool,
    out: Box<[u8]>,
    ends: Box<[usize]>,
    /// The last record's number of fields.
    fields: usize,
}

impl Delimited {
    pub fn new(file: File, delimiter: u8) -> Self {
        Delimited {
            file,
            core: ReaderBuilder::new().delimiter(delimiter).build(),
            quote: b'"',
            input: vec![0; INPUT].into_boxed_slice(),
            start: 0,
            end: 0,
            offset: 0,
            eof: false,
            out: vec![0; MAX_ROW_BYTES].into_boxed_slice(),
            ends: vec![0; MAX_FIELDS].into_boxed_slice(),
            fields: 0,
        }
    }

    /// How far reading is, in bytes of the file.
    pub fn position(&self) -> u64 {
        self.offset
    }

    /// The last `Outcome::Record`'s fields.
    pub fn fields(&self) -> impl Iterator<Item = &[u8]> {
        (0..self.fields).map(|i| {
            let from = if i == 0 { 0 } else { self.ends[i - 1] };
            &self.out[from..self.ends[i]]
        })
    }

    /// Reads the next record; `None` at the end of the file.
    pub fn next_record(&mut self) -> std::io::Result<Option<Outcome>> {
        let mut first_line_end: Option<u64> = None;
        let (mut lines, mut quotes) = (0usize, 0usize);
        let (mut nout, mut nends) = (0usize, 0usize);
        let mut past: Option<Outcome> = None;
        loop {
            if self.start == self.end && !self.eof {
                self.fill()?;
            }
            let input = &self.input[self.start..self.end];
            // Once past a bound, the rest of the record is parsed over the start of the buffers
            // and dropped. (csv_core takes an empty input as the end of the file.)
            let (out, ends) = match past {
                None => (&mut self.out[nout..], &mut self.ends[nends..]),
                Some(_) => (&mut self.out[..], &mut self.ends[..]),
            };
            let (result, nin, n_out, n_ends) = self.core.read_record(input, out, ends);
            let taken = &input[..nin];
            if first_line_end.is_none()
                && let Some(at) = taken.iter().position(|&b| b == b'\n')
            {
                first_line_end = Some(self.offset + at as u64);
            }
            lines += taken.iter().filter(|&&b| b == b'\n').count();
            quotes += taken.iter().filter(|&&b| b == self.quote).count();
            self.start += nin;
            self.offset += nin as u64;
            if past.is_none() {
                nout += n_out;
                nends += n_ends;
            }
            match result {
                ReadRecordResult::InputEmpty => {}
                ReadRecordResult::OutputFull => {
                    past.get_or_insert(Outcome::RowTooLong);
                }
                ReadRecordResult::OutputEndsFull => {
                    past.get_or_insert(Outcome::TooManyFields);
                }
                ReadRecordResult::Record => {
                    let at_end = self.eof && self.start == self.end;
                    if at_end && quotes % 2 == 1 && lines > 0 {
                        return self.open_quote(first_line_end).map(Some);
                    }
                    if let Some(past) = past {
                        return Ok(Some(past));
                    }
                    self.fields = nends;
                    let too_long = self.fields().any(|f| f.len() > MAX_FIELD_BYTES);
                    return Ok(Some(if too_long {
                        Outcome::FieldTooLong
                    } else {
                        Outcome::Record
                    }));
                }
                ReadRecordResult::End => {
                    return Ok(None);
                }
            }
            // (A record's own line break counts as one of its lines.)
            if lines > MAX_RECORD_LINES {
                return self.open_quote(first_line_end).map(Some);
            }
        }
    }

    /// Reports an open quote and starts reading again after the line it began on.
    fn open_quote(&mut self, first_line_end: Option<u64>) -> std::io::Result<Outcome> {
        if let Some(end) = first_line_end {
            self.file.seek(SeekFrom::Start(end + 1))?;
            self.offset = end + 1;
            self.start = 0;
            self.end = 0;
            self.eof = false;
            self.core.reset();
        }
        Ok(Outcome::OpenQuote)
    }

    fn fill(&mut self) -> std::io::Result<()> {
        let n = loop {
            match self.file.read(&mut self.input) {
                Err(err) if err.kind() == std::io::ErrorKind::Interrupted => continue,
                other => break other?,
            }
        };
        self.start = 0;
        self.end = n;
        self.eof = n == 0;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;

    use super::*;

    fn read(content: &[u8]) -> Vec<(Outcome, Vec<String>)> {
        let mut file = tempfile::tempfile().unwrap();
        file.write_all(content).unwrap();
        file.seek(SeekFrom::Start(0)).unwrap();
        let mut reader = Delimited::new(file, b',');
        let mut all = Vec::new();
        while let Some(read) = reader.next_record().unwrap() {
            let fields = match read {
                Outcome::Record => reader
                    .fields()
                    .map(|f| String::from_utf8_lossy(f).into_owned())
                    .collect(),
                _ => Vec::new(),
            };
            all.push((read, fields));
        }
        all
    }

    #[test]
    fn records_quotes_and_line_breaks_in_quotes() {
        let all = read(b"id,amount\r\na,\"1,5\"\n\"b\nc\",2\n\nlast,3");
        let fields: Vec<Vec<String>> = all.iter().map(|(_, f)| f.clone()).collect();
        assert_eq!(
            fields,
            vec![
                vec!["id", "amount"],
                vec!["a", "1,5"],
                vec!["b\nc", "2"],
                vec!["last", "3"],
            ]
        );
        assert!(all.iter().all(|(r, _)| *r == Outcome::Record));
    }

    #[test]
    fn an_open_quote_is_one_row_and_the_lines_after_it_are_read() {
        let mut file = b"id,amount\na,1\nb,\"2\n".to_vec();
        for i in 0..998 {
            file.extend_from_slice(format!("r{i},{i}\n").as_bytes());
        }
        let all = read(&file);
        assert_eq!(all.len(), 1 + 1 + 1 + 998, "every line is a row");
        assert_eq!(all[2].0, Outcome::OpenQuote);
        assert_eq!(all[3].1, vec!["r0", "0"]);
        assert_eq!(all[1000].1, vec!["r997", "997"]);
        // Open to the end of a short file.
        let all = read(b"id,amount\na,\"1\nb,2\nc,3\n");
        let kinds: Vec<Outcome> = all.iter().map(|(r, _)| *r).collect();
        assert_eq!(
            kinds,
            vec![
                Outcome::Record,
                Outcome::OpenQuote,
                Outcome::Record,
                Outcome::Record
            ]
        );
        assert_eq!(all[3].1, vec!["c", "3"]);
    }

    #[test]
    fn records_past_a_bound_are_skipped_and_reading_goes_on() {
        let mut wide = vec![b'x'; 0];
        for _ in 0..3_000 {
            wide.extend_from_slice(b"x,");
        }
        wide.extend_from_slice(b"x\na,1\n");
        let all = read(&wide);
        assert_eq!(all[0].0, Outcome::TooManyFields);
        assert_eq!(all[1].1, vec!["a", "1"]);

        let mut long = vec![b'y'; 3 << 20];
        long.extend_from_slice(b",1\nb,2\n");
        let all = read(&long);
        assert_eq!(all[0].0, Outcome::RowTooLong);
        assert_eq!(all[1].1, vec!["b", "2"]);

        let mut field = vec![b'z'; MAX_FIELD_BYTES + 1];
        field.extend_from_slice(b",1\nc,3\n");
        let all = read(&field);
        assert_eq!(all[0].0, Outcome::FieldTooLong);
        assert_eq!(all[1].1, vec!["c", "3"]);
    }
}
