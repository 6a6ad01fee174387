//! The admin API as an operator's client sees it: a real server on a random port, spoken to
//! over HTTP, on SQLite and (with `--ignored` and `REWARDS_TEST_POSTGRES_URL`) on PostgreSQL.

mod adjustments;
mod batches;
mod catalogue;
mod exports;
mod helpers;
mod mappings;
mod moderation;
mod orders;
mod permissions;
mod resources;
mod rules;
mod sftp;
mod sign_in;
mod support;
mod tokens;
mod webhooks;
