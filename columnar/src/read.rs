//! A Parquet earn file as rows of text fields. Each typed value becomes the text a CSV cell
//! would hold for it, so the rest of the batch pipeline (mappings, checks, reason codes) treats
//! every format alike: decimals exactly (`12.50`), integers and floats as Rust writes them (the
//! shortest text that reads back as the same number), timestamps with a zone as RFC 3339 in UTC
//! and without one as a local date and time (read in the mapping's zone, as XLSX dates are),
//! dates as `YYYY-MM-DD`, booleans as `true` or `false`, nulls as empty. A struct column
//! (`meta`) becomes one column per field (`meta.store`, `meta.store.code`).
//!
//! The file is read a row group at a time (its metadata read once), so memory holds one row
//! group's columns, whatever the number of rows.

use std::fs::File;
use std::path::{Path, PathBuf};

use chrono::{DateTime, NaiveDate, SecondsFormat};
use polars::prelude::*;

/// The rows of a Parquet file, in order, as text fields under `header()`.
pub struct ParquetRows {
    path: PathBuf,
    metadata: FileMetadataRef,
    columns: Vec<Plan>,
    /// Each row group's first row and number of rows.
    groups: Vec<(usize, usize)>,
    next_group: usize,
    batch: Vec<Series>,
    at: usize,
    rows: u64,
}

/// Where a header column comes from: a top-level column, or a field inside a struct column.
struct Plan {
    name: String,
    top: String,
    fields: Vec<String>,
}

/// One row: its number (the first row is 1), its fields in header order, and whether a field
/// was binary data that is not UTF-8 text (shown with `�` in its place).
pub type Row = (u64, Vec<String>, bool);

impl ParquetRows {
    /// Opens `path` and reads its metadata and schema. `Err` says why the whole file is refused:
    /// not Parquet (or truncated), or columns of types an earn file cannot hold (each named).
    pub fn open(path: &Path) -> Result<ParquetRows, String> {
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
        let mut groups = Vec::with_capacity(metadata.row_groups.len());
        let mut first = 0;
        for group in &metadata.row_groups {
            groups.push((first, group.num_rows()));
            first += group.num_rows();
        }
        Ok(ParquetRows {
            path: path.to_owned(),
            metadata,
            columns,
            groups,
            next_group: 0,
            batch: Vec::new(),
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

    /// The next row, or `None` at the end. `Err` when a row group cannot be read (a damaged
    /// page): the rows before it were handed out.
    pub fn next_row(&mut self) -> Result<Option<Row>, String> {
        while self.at >= self.batch.first().map_or(0, |s| s.len()) {
            let Some(&(first, count)) = self.groups.get(self.next_group) else {
                return Ok(None);
            };
            self.next_group += 1;
            self.batch = self
                .read_group(first, count)
                .map_err(|e| format!("the file cannot be read past row {}: {e}", first))?;
            self.at = 0;
            if self.columns.is_empty() {
                return Ok(None);
            }
        }
        let mut bad_encoding = false;
        let mut fields = Vec::with_capacity(self.batch.len());
        for series in &self.batch {
            let value = series.get(self.at).map_err(|e| e.to_string())?;
            fields.push(text(value, &mut bad_encoding));
        }
        self.at += 1;
        self.rows += 1;
        Ok(Some((self.rows, fields, bad_encoding)))
    }

    /// The planned columns of the `count` rows from `first` (one row group).
    fn read_group(&self, first: usize, count: usize) -> PolarsResult<Vec<Series>> {
        let file = File::open(&self.path)?;
        let mut reader = ParquetReader::new(file)
            .with_slice(Some((first, count)))
            .read_parallel(ParallelStrategy::Columns);
        reader.set_metadata(self.metadata.clone());
        let frame = reader.finish()?;
        self.columns
            .iter()
            .map(|plan| {
                let mut series = frame.column(&plan.top)?.as_materialized_series().clone();
                for field in &plan.fields {
                    series = series.struct_()?.field_by_name(field)?;
                }
                Ok(series.rechunk())
            })
            .collect()
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

/// The text a CSV cell would hold for `value`.
fn text(value: AnyValue, bad_encoding: &mut bool) -> String {
    match value {
        AnyValue::Null => String::new(),
        AnyValue::Boolean(b) => b.to_string(),
        AnyValue::String(s) => s.to_string(),
        AnyValue::StringOwned(s) => s.to_string(),
        AnyValue::Binary(b) => utf8(b, bad_encoding),
        AnyValue::BinaryOwned(b) => utf8(&b, bad_encoding),
        AnyValue::Int8(n) => n.to_string(),
        AnyValue::Int16(n) => n.to_string(),
        AnyValue::Int32(n) => n.to_string(),
        AnyValue::Int64(n) => n.to_string(),
        AnyValue::UInt8(n) => n.to_string(),
        AnyValue::UInt16(n) => n.to_string(),
        AnyValue::UInt32(n) => n.to_string(),
        AnyValue::UInt64(n) => n.to_string(),
        AnyValue::Float32(f) => f.to_string(),
        AnyValue::Float64(f) => f.to_string(),
        AnyValue::Decimal(v, _, scale) => decimal(v, scale),
        AnyValue::Date(days) => NaiveDate::from_epoch_days(days)
            .map(|d| d.format("%Y-%m-%d").to_string())
            .unwrap_or_default(),
        AnyValue::Datetime(v, unit, zone) => timestamp(v, unit, zone.is_some()),
        AnyValue::DatetimeOwned(v, unit, zone) => timestamp(v, unit, zone.is_some()),
        other => other.to_string(),
    }
}

fn utf8(bytes: &[u8], bad_encoding: &mut bool) -> String {
    match std::str::from_utf8(bytes) {
        Ok(text) => text.to_string(),
        Err(_) => {
            *bad_encoding = true;
            String::from_utf8_lossy(bytes).into_owned()
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
