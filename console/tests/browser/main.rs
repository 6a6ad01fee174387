//! The console's main journeys in headless Chromium, driven over WebDriver: each page it
//! visits is checked for console errors and for anything loaded from outside the service, and
//! saved as a screenshot under `target/console-screenshots/` (an artefact, not committed).
//! Ignored by a plain `cargo test` (they need Chromium and chromedriver, which `.ci/run`
//! installs); `.ci/run` runs them with the other ignored tests. They run on SQLite: the HTTP
//! tests cover PostgreSQL.

#[allow(dead_code)]
#[path = "../console/helpers.rs"]
mod helpers;
mod journeys;
mod steps;
mod webdriver;
