//! Batch files: the SFTP server, the inbox watcher, CSV/XLSX readers, the template mapper and the
//! parallel earn pipeline (`ingest` uses `store` and `rules`). So far: SSH keys, the SFTP server,
//! the inbox watcher and the intake that turns a complete file into a batch record.

pub mod generate;
pub mod intake;
pub mod keys;
pub mod pipeline;
pub mod rows;
pub mod sftp;
pub mod watcher;
