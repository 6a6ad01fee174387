//! Writing Parquet files from plain columns, a batch at a time (each batch a row group, zstd
//! compressed): earn files that `rewards generate` makes and tests read back.

use std::fs::File;
use std::path::Path;

use polars::prelude::*;

/// One column's values; `None` is null.
#[derive(Debug, Clone)]
pub enum Values {
    Text(Vec<Option<String>>),
    /// Texts in one buffer: value `i` is `bytes[ends[i - 1]..ends[i]]` (from 0 for the first),
    /// null where `present[i]` is false. Many values, few allocations.
    Packed {
        bytes: String,
        ends: Vec<usize>,
        present: Vec<bool>,
    },
    /// Exact decimals given as text (`12.50`), stored as DECIMAL(`precision`, `scale`).
    Decimal {
        values: Vec<Option<String>>,
        precision: usize,
        scale: usize,
    },
    /// Exact decimals given as whole units of 10^-`scale` (micro-tokens with a scale of 6),
    /// stored as DECIMAL(`precision`, `scale`).
    Scaled {
        units: Vec<Option<i64>>,
        precision: usize,
        scale: usize,
    },
    /// Microseconds since 1970-01-01T00:00:00; `utc`: an instant (a zone of UTC), else a local
    /// date and time.
    Timestamp {
        micros: Vec<Option<i64>>,
        utc: bool,
    },
    /// Days since 1970-01-01.
    Date(Vec<Option<i32>>),
    Int(Vec<Option<i64>>),
    Float(Vec<Option<f64>>),
    Bool(Vec<Option<bool>>),
    /// Raw bytes (Parquet BYTE_ARRAY without a string type).
    Bytes(Vec<Option<Vec<u8>>>),
    /// A struct of named fields, each as long as the struct.
    Struct(Vec<(String, Values)>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::Text(v) | Values::Decimal { values: v, .. } => v.len(),
            Values::Packed { ends, .. } => ends.len(),
            Values::Timestamp { micros, .. } => micros.len(),
            Values::Scaled { units, .. } => units.len(),
            Values::Date(v) => v.len(),
            Values::Int(v) => v.len(),
            Values::Float(v) => v.len(),
            Values::Bool(v) => v.len(),
            Values::Bytes(v) => v.len(),
            Values::Struct(fields) => fields.first().map_or(0, |(_, v)| v.len()),
        }
    }

    fn series(self, name: &str) -> PolarsResult<Series> {
        let name = PlSmallStr::from(name);
        Ok(match self {
            Values::Text(v) => Series::new(name, v),
            Values::Packed {
                bytes,
                ends,
                present,
            } => {
                let starts = std::iter::once(0).chain(ends.iter().copied());
                let values = starts
                    .zip(&ends)
                    .zip(&present)
                    .map(|((start, &end), &there)| {
                        there.then(|| bytes.get(start..end).unwrap_or_default())
                    });
                StringChunked::from_iter_options(name, values).into_series()
            }
            Values::Decimal {
                values,
                precision,
                scale,
            } => Series::new(name, values).cast(&DataType::Decimal(precision, scale))?,
            Values::Scaled {
                units,
                precision,
                scale,
            } => {
                Int128Chunked::from_iter_options(name, units.into_iter().map(|u| u.map(i128::from)))
                    .into_decimal(precision, scale)?
                    .into_series()
            }
            Values::Timestamp { micros, utc } => {
                let zone = utc.then_some(TimeZone::UTC);
                Series::new(name, micros).cast(&DataType::Datetime(TimeUnit::Microseconds, zone))?
            }
            Values::Date(v) => Series::new(name, v).cast(&DataType::Date)?,
            Values::Int(v) => Series::new(name, v),
            Values::Float(v) => Series::new(name, v),
            Values::Bool(v) => Series::new(name, v),
            Values::Bytes(v) => BinaryChunked::from_iter_options(name, v.into_iter()).into_series(),
            Values::Struct(fields) => {
                let len = fields.first().map_or(0, |(_, v)| v.len());
                let series = fields
                    .into_iter()
                    .map(|(field, values)| values.series(&field))
                    .collect::<PolarsResult<Vec<_>>>()?;
                StructChunked::from_series(name, len, series.iter())?.into_series()
            }
        })
    }
}

/// A Parquet file being written, a row group per batch.
pub struct ParquetSink {
    writer: Option<polars::io::parquet::write::BatchedWriter<File>>,
    file: Option<File>,
}

impl ParquetSink {
    /// Creates (or truncates) the file at `path`.
    pub fn create(path: &Path) -> Result<ParquetSink, String> {
        let file = File::create(path).map_err(|e| format!("creating {}: {e}", path.display()))?;
        Ok(ParquetSink {
            writer: None,
            file: Some(file),
        })
    }

    /// Writes `columns` (all as long as each other, the same names and types in every batch)
    /// as one row group.
    pub fn write(&mut self, columns: Vec<(String, Values)>) -> Result<(), String> {
        let height = columns.first().map_or(0, |(_, v)| v.len());
        let series = columns
            .into_iter()
            .map(|(name, values)| values.series(&name).map(Column::from))
            .collect::<PolarsResult<Vec<_>>>()
            .map_err(|e| e.to_string())?;
        let frame = DataFrame::new(height, series).map_err(|e| e.to_string())?;
        if self.writer.is_none() {
            let file = self.file.take().ok_or("the file is already finished")?;
            let writer = ParquetWriter::new(file)
                .with_compression(ParquetCompression::Zstd(None))
                .batched(frame.schema())
                .map_err(|e| e.to_string())?;
            self.writer = Some(writer);
        }
        let writer = self.writer.as_mut().ok_or("the file is already finished")?;
        writer.write_batch(&frame).map_err(|e| e.to_string())
    }

    /// Writes the file's footer; the file is complete only then.
    pub fn finish(self) -> Result<(), String> {
        match self.writer {
            Some(writer) => writer.finish().map(|_| ()).map_err(|e| e.to_string()),
            None => Err("nothing was written: a Parquet file needs a schema".into()),
        }
    }
}
