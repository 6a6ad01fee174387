//! The console as a browser sees it over HTTP: a real admin listener on a random port, pages
//! and forms with cookies and CSRF tokens, on SQLite and (with `--ignored` and
//! `REWARDS_TEST_POSTGRES_URL`) on PostgreSQL.

mod access;
mod batches;
mod catalogue;
mod exports;
mod helpers;
mod mappings;
mod members;
mod operators;
mod overview;
mod reviews;
mod rules;
mod security;
mod settings;
mod sign_in;
