//! Batch files, from the door to the ledger and back out. `ingest` uses `store`, `rules` and
//! `columnar`.
//!
//! - The doors: `sftp` (the SFTP server; `sftp::tree` is each organisation's folder layout:
//!   inbox, reports, exports), `keys` (its host key), `watcher` (files put into an inbox by
//!   other means), `intake` (a complete file moved to the spool and recorded as a batch).
//! - Reading: `records` (a file's rows from CSV, XLSX or Parquet), `delimited` (the bounded CSV
//!   reader), `xlsx` (workbooks, read and written), `mapping` (a client's layout), `values`
//!   (cells as decimals, dates, booleans), `rows` (a row as an earn, or why not).
//! - Loading: `pipeline` (claimed batches read, evaluated and credited chunk by chunk), `seen`
//!   (ids met earlier in a file), `reports` (the result and rejected-rows files).
//! - Out: `export` (the ledger as Parquet or CSV files, on demand and daily).
//! - `generate`: earn files of any size, good and bad rows, for the `generate` command,
//!   benchmarks and fuzz tests.
pub mod delimited;
pub mod export;
pub mod generate;
pub mod intake;
pub mod keys;
pub mod mapping;
pub mod pipeline;
pub mod records;
pub mod reports;
pub mod rows;
pub mod seen;
pub mod sftp;
pub mod values;
pub mod watcher;
pub mod xlsx;
