//! Batch files: the SFTP server, the inbox watcher, CSV/XLSX readers, the template mapper and the
//! parallel earn pipeline (`ingest` uses `store` and `rules`). So far: SSH keys.

pub mod keys;
