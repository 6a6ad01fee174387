//! The API as a client sees it: a real server on a random port, spoken to over HTTP, on SQLite
//! and (with `--ignored` and `REWARDS_TEST_POSTGRES_URL`) on PostgreSQL.

mod activities;
mod auth;
mod batches;
mod bookings;
mod cancellations;
mod catalogue;
mod contract;
mod fuzz;
mod helpers;
mod holds;
mod hostile;
mod leaderboard;
mod ledger;
mod member_data;
mod members;
mod ops;
mod orders;
mod paging;
mod pending;
mod products;
mod referrals;
mod reversals;
mod reviews;
mod similar;
mod transfers;
mod wallets;
mod webhook_bounds;
mod webhooks;
