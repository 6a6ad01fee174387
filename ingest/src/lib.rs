//! Batch files: the SFTP server (`sftp`, `keys`), the inbox watcher, the intake that turns a
//! complete file into a batch record, the CSV and XLSX readers (`records`, with `delimited`, the
//! bounded CSV reader, and `xlsx`), mappings
//! (`mapping`, `values`, `rows`) and the parallel earn pipeline with its reports (`pipeline`,
//! `reports`). `ingest` uses `store` and `rules`.

pub mod arenas;
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
