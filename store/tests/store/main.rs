//! The storage stories, each against SQLite and PostgreSQL (`backend_tests!`). One test
//! binary (a module per domain), linked once.

mod activities;
mod adjustments;
mod audit_trail;
mod batch_files;
mod catalogue;
mod catalogue_search;
mod corrections;
mod event_types;
mod events;
mod holds;
mod idempotency;
mod in_time;
mod leaderboard;
mod ledger;
mod ledger_model;
mod limits;
mod members;
mod operators;
mod orders;
mod overview;
mod pending;
mod personal_data;
mod referrals;
mod reviews;
mod rule_book;
mod storage;
mod transfers;
