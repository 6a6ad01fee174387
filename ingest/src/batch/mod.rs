//! A received file, read and loaded: `records` (a file's rows from CSV, XLSX or Parquet, with
//! `delimited`, the bounded CSV reader, and `xlsx`, workbooks read and written), `mapping` (a
//! client's layout), `values` (cells as decimals, dates, booleans), `rows` (a row as an earn, or
//! why not), `pipeline` (claimed batches read, evaluated and credited chunk by chunk), `seen` (ids
//! met earlier in a file), `reports` (the result and rejected-rows files), `stages` (where a file's
//! time went) and `live` (how far the files loading on this node have got).

pub mod delimited;
pub mod live;
pub mod mapping;
pub mod pipeline;
pub mod records;
pub mod reports;
pub mod rows;
pub mod seen;
pub mod stages;
pub mod values;
pub mod xlsx;
