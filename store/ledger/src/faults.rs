//! Fault injection for the ledger's own tests: where an earn may be made to panic, to show that
//! a panic in the middle loses nothing.

/// Panics when an earn's description says `panic at {stage}` and it has reached `stage`.
pub(crate) fn fault(description: Option<&str>, stage: &str) {
    if description.and_then(|d| d.strip_prefix("panic at ")) == Some(stage) {
        panic!("injected fault at {stage}");
    }
}
