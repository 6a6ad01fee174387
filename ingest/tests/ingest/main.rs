//! Batch files end to end: intake, the pipeline, mappings, Parquet, exports, the SFTP server
//! and the inbox watcher. One test binary (a module per part), linked once.

mod activities;
mod common;
mod export;
mod intake;
mod mappings;
mod parquet;
mod pipeline;
mod readers_fuzz;
mod returns;
mod sftp;
mod watcher;
