//! The rule engine: table tests and a property test against a plain interpreter. One test
//! binary, linked once.

mod activities;
mod engine;
mod limits;
mod reference;
