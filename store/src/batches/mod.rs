//! Batch files: the record of each file received, crediting its rows (found by wallet id or
//! reference, evaluated, credited in chunks), reversing its return rows, and the organisations'
//! column mappings.

pub(crate) mod file_earns;
pub(crate) mod file_returns;
pub(crate) mod mappings;
pub(crate) mod records;
