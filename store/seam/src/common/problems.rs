//! Reading a document someone wrote (a catalogue, a batch-file mapping): every problem is
//! collected with its path (`products[3].name`, `columns.amount.format`), and a part with a
//! problem reads as absent or a default so that the walk goes on, so whoever wrote it fixes
//! them all in one round.

use serde_json::{Map, Value};

use crate::FieldProblem;

/// The problems found so far in one document.
#[derive(Debug)]
pub struct Problems {
    found: Vec<FieldProblem>,
    /// What the document calls the names in its tables: `field` (JSON documents), `key` (TOML
    /// settings).
    member: &'static str,
}

impl Problems {
    /// For a document whose tables' names are called `member` in its problems.
    pub fn new(member: &'static str) -> Problems {
        Problems {
            found: Vec::new(),
            member,
        }
    }

    pub fn fail(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.found.push(FieldProblem::new(path, message));
    }

    /// How many problems were found so far: a part that added none read well.
    pub fn count(&self) -> usize {
        self.found.len()
    }

    /// Whether a problem was found at `path`.
    pub fn has(&self, path: &str) -> bool {
        self.found.iter().any(|p| p.path == path)
    }

    /// The path of `key` in the table at `path` (the document's top when `path` is empty).
    pub fn join(path: &str, key: &str) -> String {
        if path.is_empty() {
            key.to_string()
        } else {
            format!("{path}.{key}")
        }
    }

    /// A problem for each name of `table` (at `path`) that is not in `known`.
    pub fn unknown_keys(&mut self, table: &Map<String, Value>, path: &str, known: &[&str]) {
        for key in table.keys().filter(|k| !known.contains(&k.as_str())) {
            let message = format!(
                "unknown {}; expected one of {}",
                self.member,
                known.join(", ")
            );
            self.fail(Problems::join(path, key), message);
        }
    }

    /// `value` as an object whose keys are all in `known`.
    pub fn object<'v>(
        &mut self,
        value: &'v Value,
        path: &str,
        known: &[&str],
    ) -> Option<&'v Map<String, Value>> {
        let Some(object) = value.as_object() else {
            self.fail(path, "must be an object");
            return None;
        };
        self.unknown_keys(object, path, known);
        Some(object)
    }

    /// The items of the array at `key` of `object` (none when absent).
    pub fn list<'v>(
        &mut self,
        object: &'v Map<String, Value>,
        key: &str,
        path: &str,
    ) -> &'v [Value] {
        match object.get(key) {
            None | Some(Value::Null) => &[],
            Some(Value::Array(items)) => items,
            Some(_) => {
                self.fail(Problems::join(path, key), "must be an array");
                &[]
            }
        }
    }

    /// `value` when the document had no problem, else every problem, in the order found.
    /// Every problem found, in the order found.
    pub fn into_found(self) -> Vec<FieldProblem> {
        self.found
    }

    pub fn finish<T>(self, value: T) -> Result<T, Vec<FieldProblem>> {
        if self.found.is_empty() {
            Ok(value)
        } else {
            Err(self.found)
        }
    }
}
