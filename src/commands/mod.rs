//! The operator's commands, one file per command group; `serve` runs the service itself.

pub mod batch;
pub mod catalogue;
pub mod export;
pub mod ledger;
pub mod progress;
pub mod reviews;
pub mod rules;
pub mod serve;
pub mod sftp;
pub mod tenancy;
pub mod webhooks;

/// Prints `value` as JSON with `--json`, else the text `human` gives.
pub fn emit(json: bool, value: serde_json::Value, human: impl FnOnce() -> String) {
    if json {
        println!("{value:#}");
    } else {
        println!("{}", human());
    }
}
