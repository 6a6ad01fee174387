//! Batch files: the record of each file received, crediting its rows (found by wallet id or
//! reference, evaluated, credited in chunks), and the organisations' column mappings.

pub(crate) mod file_earns;
pub(crate) mod mappings;
pub(crate) mod records;
