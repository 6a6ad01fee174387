//! Batch files, from the door to the ledger. `ingest` uses `store`, `rules` and `columnar`;
//! ledger files out are the `exports` crate's.
//!
//! - The doors: `sftp` (the SFTP server and its host key), `watcher` (files put into an inbox by
//!   other means), `intake` (a complete file moved to the spool and recorded as a batch), and
//!   `folders`, each organisation's folder layout and the spool's names (the `folders` crate,
//!   which `exports` shares, re-exported here).
//! - `error`: what can fail between a door and a batch, with what was being done when it did.
//! - `batch`: a received file read (CSV, XLSX, Parquet, through a mapping), its rows evaluated
//!   and credited by the pipeline, and its reports written.

pub mod batch;
pub mod error;
pub mod intake;
/// The folder layout, in a crate of its own that `exports` shares.
pub use folders;
pub mod sftp;
pub mod watcher;
