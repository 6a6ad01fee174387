//! The operator's and client's stories through the real binary: the CLI, the
//! service it serves, SFTP uploads, crashes and restarts. One test binary (a module per story),
//! linked once.

mod application;
mod batch_cli;
mod batch_crash;
mod batch_limits;
mod catalogue_cli;
mod cli;
mod cli_scripts;
mod common;
mod imports;
mod layout;
mod leaderboard_reviews_cli;
mod operators_cli;
mod orders_cli;
mod readme;
#[allow(dead_code)]
#[path = "../support/running.rs"]
mod running;
mod sftp_cli;
mod webhook_faults;
