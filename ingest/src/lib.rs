//! Batch files: the SFTP server, the inbox watcher, CSV/XLSX readers, the template mapper and the
//! parallel earn pipeline. Built by later issues; this crate holds its place in the workspace so
//! dependencies keep pointing one way (`ingest` uses `store` and `rules`).
