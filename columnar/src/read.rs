//! A Parquet earn file as rows of text fields. Each typed value becomes the text a CSV cell
//! would hold for it, so the rest of the batch pipeline (mappings, checks, reason codes) treats
//! every format alike: decimals exactly (`12.50`), integers and floats as Rust writes them (the
//! shortest text that reads back as the same number), timestamps with a zone as RFC 3339 in UTC
//! and without one as a local date and time (read in the mapping's zone, as XLSX dates are),
//! dates as `YYYY-MM-DD`, booleans as `true` or `false`, nulls as empty. A struct column
//! (`meta`) becomes one column per field (`meta.store`, `meta.store.code`).
//!
//! The file is read a part at a time (a row group, or up to `PART_ROWS` rows of a larger one; its
//! metadata read once), and each part a column at a time: a column's values become text in a
//! buffer of its own, kept from one part to the next, before the next column is decoded. Memory
//! holds one decoded column and one part's text, whatever the number of rows. (Decoding every
//! column of a row group at once, on polars' threads, left the allocator's heaps fragmented:
//! 50 MiB more for 1,000,000 rows.)

use std::fmt::Write;
use std::fs::File;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, SecondsFormat};
use polars::prelude::*;

/// What `read` returns; a panic in the Parquet library (which some damaged files cause) is the
/// file's error, not the process's.
fn unpanicked<T>(read: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(read)).unwrap_or_else(|payload| {
        let message = payload
            .downcast_ref::<&str>()
            .map(ToString::to_string)
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default();
        Err(format!("the file is damaged ({message})"))
    })
}

/// Rows read at once, at most: a row group of a million rows is read a part at a time. (Smaller
/// parts cost more than they save: polars decompresses a column chunk again for each part.)
const PART_ROWS: usize = 65_536;

/// The rows of a Parquet file, in order, as text fields under `header()`.
pub struct ParquetRows {
    path: PathBuf,
    metadata: FileMetadataRef,
    columns: Vec<Plan>,
    /// Each part's first row and number of rows.
    parts: Vec<(usize, usize)>,
    next_part: usize,
    /// The current part's text, one buffer per planned column.
    batch: Vec<Texts>,
    /// Whether each row of the current part had binary data that is not UTF-8.
    bad: Vec<bool>,
    /// Rows in the current part, and the next one to hand out.
    held: usize,
    at: usize,
    rows: u64,
}

/// Where a header column comes from: a top-level column, or a field inside a struct column.
struct Plan {
    name: String,
    top: String,
    fields: Vec<String>,
}

/// One column's texts in one buffer: value `i` ends at `ends[i]`.
#[derive(Default)]
struct Texts {
    bytes: String,
    ends: Vec<usize>,
}

impl Texts {
    fn get(&self, i: usize) -> &str {
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.bytes[start..self.ends[i]]
    }
}

/// One row: its number (the first row is 1), its fields in header order, and whether a field
/// was binary data that is not UTF-8 text (shown with `�` in its place).
pub type Row = (u64, Vec<String>, bool);

impl ParquetRows {
    /// Opens `path` and reads its metadata and schema. `Err` says why the whole file is refused:
    /// not Parquet (or truncated), or columns of types an earn file cannot hold (each named).
    pub fn open(path: &Path) -> Result<ParquetRows, String> {
        unpanicked(|| Self::open_unguarded(path))
    }

    fn open_unguarded(path: &Path) -> Result<ParquetRows, String> {
        let open = || File::open(path).map_err(|e| format!("the file cannot be read: {e}"));
        let mut reader = ParquetReader::new(open()?);
        let metadata = reader
            .get_metadata()
            .map_err(|e| format!("the file is not Parquet, or is truncated ({e})"))?
            .clone();
        let mut empty = ParquetReader::new(open()?).with_slice(Some((0, 0)));
        empty.set_metadata(metadata.clone());
        let schema = empty
            .finish()
            .map_err(|e| format!("the file's schema cannot be read ({e})"))?
            .schema()
            .clone();
        let mut columns = Vec::new();
        let mut problems = Vec::new();
        for (name, dtype) in schema.iter() {
            plan(
                name.as_str(),
                name.as_str(),
                &[],
                dtype,
                &mut columns,
                &mut problems,
            );
        }
        if !problems.is_empty() {
            return Err(problems.join("; "));
        }
        // Damaged metadata may claim any number of rows: more than the bytes of the file could
        // hold is refused before anything is planned per row.
        let size = std::fs::metadata(path).map_or(0, |m| m.len());
        // A closure rather than the method's path: the method's crate is polars' own.
        #[allow(clippy::redundant_closure_for_method_calls)]
        let claimed: usize = metadata.row_groups.iter().map(|g| g.num_rows()).sum();
        if claimed as u64 > size.saturating_mul(8).max(1 << 20) {
            return Err(format!(
                "the file says it holds {claimed} rows, more than its {size} bytes can: it is damaged"
            ));
        }
        #[allow(clippy::redundant_closure_for_method_calls)]
        let chunks = metadata
            .row_groups
            .iter()
            .flat_map(|g| g.byte_ranges_iter());
        crate::checksums::verify(path, chunks).map_err(|e| format!("the file is damaged: {e}"))?;
        let mut parts = Vec::with_capacity(metadata.row_groups.len());
        let mut first = 0;
        for group in &metadata.row_groups {
            let end = first + group.num_rows();
            while first < end {
                let count = (end - first).min(PART_ROWS);
                parts.push((first, count));
                first += count;
            }
        }
        Ok(ParquetRows {
            path: path.to_owned(),
            metadata,
            batch: columns.iter().map(|_| Texts::default()).collect(),
            columns,
            parts,
            next_part: 0,
            bad: Vec::new(),
            held: 0,
            at: 0,
            rows: 0,
        })
    }

    /// The column names, struct fields spelt with dots (`meta.store`).
    pub fn header(&self) -> Vec<String> {
        self.columns.iter().map(|c| c.name.clone()).collect()
    }

    /// The number of rows the file says it holds.
    pub fn len(&self) -> u64 {
        self.metadata.num_rows as u64
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next row, or `None` at the end. `Err` when a part cannot be read (a damaged page):
    /// the rows before it were handed out.
    pub fn next_row(&mut self) -> Result<Option<Row>, String> {
        if self.columns.is_empty() {
            return Ok(None);
        }
        while self.at >= self.held {
            let Some(&(first, count)) = self.parts.get(self.next_part) else {
                return Ok(None);
            };
            self.next_part += 1;
            unpanicked(|| self.read_part(first, count).map_err(|e| e.to_string()))
                .map_err(|e| format!("the file cannot be read past row {first}: {e}"))?;
            self.at = 0;
        }
        let fields = self
            .batch
            .iter()
            .map(|texts| texts.get(self.at).to_string())
            .collect();
        let bad_encoding = self.bad[self.at];
        self.at += 1;
        self.rows += 1;
        Ok(Some((self.rows, fields, bad_encoding)))
    }

    /// Reads the `count` rows from `first` (one part, never empty) into `batch`, one top-level
    /// column (a struct with all its fields) at a time.
    fn read_part(&mut self, first: usize, count: usize) -> PolarsResult<()> {
        self.held = 0;
        self.bad.clear();
        self.bad.resize(count, false);
        for texts in &mut self.batch {
            texts.bytes.clear();
            texts.ends.clear();
        }
        // A struct's fields are planned one after another, so its name repeats only in a run.
        let mut tops: Vec<&str> = self.columns.iter().map(|c| c.top.as_str()).collect();
        tops.dedup();
        for top in tops {
            let mut reader = ParquetReader::new(File::open(&self.path)?)
                .with_columns(Some(vec![top.to_string()]))
                .with_slice(Some((first, count)))
                .read_parallel(ParallelStrategy::None);
            reader.set_metadata(self.metadata.clone());
            let frame = reader.finish()?;
            let column = frame.column(top)?.as_materialized_series();
            for (plan, texts) in self.columns.iter().zip(&mut self.batch) {
                if plan.top != top {
                    continue;
                }
                let mut series = column.clone();
                for field in &plan.fields {
                    series = series.struct_()?.field_by_name(field)?;
                }
                if series.len() != count {
                    polars_bail!(ComputeError: "column `{}` holds {} of {count} rows", plan.name, series.len());
                }
                for (value, bad) in series.iter().zip(&mut self.bad) {
                    write_text(value, &mut texts.bytes, bad);
                    texts.ends.push(texts.bytes.len());
                }
            }
        }
        self.held = count;
        Ok(())
    }
}

/// Adds the header column(s) for `dtype` at `name` (a struct adds each field), or a problem.
fn plan(
    name: &str,
    top: &str,
    fields: &[String],
    dtype: &DataType,
    columns: &mut Vec<Plan>,
    problems: &mut Vec<String>,
) {
    match dtype {
        DataType::Struct(inner) => {
            for field in inner {
                let mut path = fields.to_vec();
                path.push(field.name.to_string());
                let nested = format!("{name}.{}", field.name);
                plan(&nested, top, &path, &field.dtype, columns, problems);
            }
        }
        DataType::Boolean
        | DataType::String
        | DataType::Binary
        | DataType::Int8
        | DataType::Int16
        | DataType::Int32
        | DataType::Int64
        | DataType::UInt8
        | DataType::UInt16
        | DataType::UInt32
        | DataType::UInt64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal(..)
        | DataType::Date
        | DataType::Datetime(..)
        | DataType::Null => columns.push(Plan {
            name: name.to_string(),
            top: top.to_string(),
            fields: fields.to_vec(),
        }),
        other => problems.push(format!(
            "column `{name}` holds {other}, which an earn file cannot use (text, numbers, \
             decimals, booleans, dates, timestamps and structs of them can be read)"
        )),
    }
}

/// Appends the text a CSV cell would hold for `value` to `out`.
fn write_text(value: AnyValue<'_>, out: &mut String, bad_encoding: &mut bool) {
    // Writing to a `String` cannot fail.
    let _ = match value {
        AnyValue::Null => Ok(()),
        AnyValue::Boolean(b) => write!(out, "{b}"),
        AnyValue::String(s) => out.write_str(s),
        AnyValue::StringOwned(s) => out.write_str(&s),
        AnyValue::Binary(b) => utf8(b, out, bad_encoding),
        AnyValue::BinaryOwned(b) => utf8(&b, out, bad_encoding),
        AnyValue::Int8(n) => write!(out, "{n}"),
        AnyValue::Int16(n) => write!(out, "{n}"),
        AnyValue::Int32(n) => write!(out, "{n}"),
        AnyValue::Int64(n) => write!(out, "{n}"),
        AnyValue::UInt8(n) => write!(out, "{n}"),
        AnyValue::UInt16(n) => write!(out, "{n}"),
        AnyValue::UInt32(n) => write!(out, "{n}"),
        AnyValue::UInt64(n) => write!(out, "{n}"),
        AnyValue::Float32(f) => write!(out, "{f}"),
        AnyValue::Float64(f) => write!(out, "{f}"),
        AnyValue::Decimal(v, _, scale) => out.write_str(&decimal(v, scale)),
        AnyValue::Date(days) => match NaiveDate::from_epoch_days(days) {
            Some(day) => write!(out, "{}", day.format("%Y-%m-%d")),
            None => Ok(()),
        },
        AnyValue::Datetime(v, unit, zone) => out.write_str(&timestamp(v, unit, zone.is_some())),
        AnyValue::DatetimeOwned(v, unit, zone) => {
            out.write_str(&timestamp(v, unit, zone.is_some()))
        }
        other => write!(out, "{other}"),
    };
}

fn utf8(bytes: &[u8], out: &mut String, bad_encoding: &mut bool) -> std::fmt::Result {
    match std::str::from_utf8(bytes) {
        Ok(text) => out.write_str(text),
        Err(_) => {
            *bad_encoding = true;
            out.write_str(&String::from_utf8_lossy(bytes))
        }
    }
}

/// A decimal's exact text: `v` x 10^-`scale`.
fn decimal(v: i128, scale: usize) -> String {
    let sign = if v < 0 { "-" } else { "" };
    let digits = v.unsigned_abs().to_string();
    if scale == 0 {
        return format!("{sign}{digits}");
    }
    let padded = format!("{digits:0>width$}", width = scale + 1);
    let (whole, fraction) = padded.split_at(padded.len() - scale);
    format!("{sign}{whole}.{fraction}")
}

/// An instant (with a zone: RFC 3339 in UTC) or a local date and time (without one).
fn timestamp(v: i64, unit: TimeUnit, zoned: bool) -> String {
    let at = match unit {
        TimeUnit::Nanoseconds => Some(DateTime::from_timestamp_nanos(v)),
        TimeUnit::Microseconds => DateTime::from_timestamp_micros(v),
        TimeUnit::Milliseconds => DateTime::from_timestamp_millis(v),
    };
    match at {
        Some(at) if zoned => at.to_rfc3339_opts(SecondsFormat::AutoSi, true),
        Some(at) => at.naive_utc().format("%Y-%m-%dT%H:%M:%S%.f").to_string(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimals_keep_every_digit() {
        assert_eq!(decimal(1250, 2), "12.50");
        assert_eq!(decimal(-5, 3), "-0.005");
        assert_eq!(decimal(42, 0), "42");
        assert_eq!(decimal(0, 2), "0.00");
    }

    #[test]
    fn timestamps_read_as_the_csv_would_hold_them() {
        let micros = 1_763_633_700_000_000; // 2025-11-20T10:15:00Z
        assert_eq!(
            timestamp(micros, TimeUnit::Microseconds, true),
            "2025-11-20T10:15:00Z"
        );
        assert_eq!(
            timestamp(micros * 1000 + 5, TimeUnit::Nanoseconds, false),
            "2025-11-20T10:15:00.000000005"
        );
        assert_eq!(
            timestamp(micros / 1000, TimeUnit::Milliseconds, false),
            "2025-11-20T10:15:00"
        );
    }
}
