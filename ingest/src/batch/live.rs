//! The batches this node is loading now and how far each has got (rows read, credited,
//! rejected), after every chunk: what the operators' console shows while a file loads. Kept in
//! memory: another node's file shows its state alone until it is done.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

/// How far a file has got, after each chunk.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Progress {
    /// Rows read.
    pub rows: u64,
    /// Rows credited and rejected so far (those of the chunk being written not yet).
    pub loaded: u64,
    pub rejected: u64,
    /// Bytes (CSV) or rows (XLSX) read, of the file's total.
    pub done: u64,
    pub of: u64,
}

#[derive(Clone, Default)]
pub struct LiveBatches(Arc<Mutex<HashMap<String, Progress>>>);

impl LiveBatches {
    pub fn set(&self, batch: &str, progress: Progress) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(batch.to_owned(), progress);
    }

    /// How far batch `batch` has got, while this node loads it.
    pub fn get(&self, batch: &str) -> Option<Progress> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(batch)
            .copied()
    }

    /// The batch is done (or interrupted) here.
    pub fn end(&self, batch: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(batch);
    }
}
