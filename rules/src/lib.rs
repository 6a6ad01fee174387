//! The rule engine: rule sets that decide how many tokens an earn transaction awards.
//! Pure (no I/O, no SQL), shared by the API and the batch-file paths. Built by a later issue;
//! this crate holds its place in the workspace so dependencies keep pointing one way.
