//! The operator's commands, one file per command group; `serve` runs the service itself.

pub mod adjustments;
pub mod batch;
pub mod catalogue;
pub mod export;
pub mod ledger;
pub mod local;
pub mod operators;
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
        outln!("{value:#}");
    } else {
        outln!("{}", human());
    }
}

/// Writes `text` and a new line to standard output. A reader that has gone (a closed pipe) ends
/// the command at once, quietly and successfully, as `head` expects of what it reads from.
pub fn print_line(text: impl std::fmt::Display) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    if let Err(err) = writeln!(out, "{text}").and_then(|()| out.flush()) {
        if err.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        eprintln!("error: writing the output: {err}");
        std::process::exit(1);
    }
}
