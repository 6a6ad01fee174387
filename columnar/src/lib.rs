//! Parquet in and out, with polars. polars is large to build and breaks its Rust API on every
//! minor release, so it is pinned to one version and used here only: the rest of the code sees
//! plain Rust values (text fields of rows for reading, and later rows for writing).
//!
//! - `read`: a Parquet earn file as rows of text fields, as a CSV file's would be, read a row
//!   group (or a part of a large one) and a column at a time, so memory stays bounded.
//! - `write`: Parquet files from plain columns, a row group per batch.
//! - `checksums`: every page's CRC-32 checked before a row is read, where the writer stored one.

mod checksums;
mod read;
mod write;

pub use read::ParquetRows;
pub use write::{ParquetSink, Values};
