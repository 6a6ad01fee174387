//! Test data of any size, the same for the same seed: earn files with a chosen share of bad
//! rows (`earns`: CSV, XLSX, Parquet), reward catalogues (`catalogue`), embeddings clustered as
//! a catalogue's are (`vectors`), and the one-sheet workbook writer the files use (`xlsx`), all
//! from one small seeded generator (`random`). Not part of the service: the `generate` commands
//! reach it through the binary's `generate` feature, and tests and benchmarks as a
//! dev-dependency.

pub mod catalogue;
pub mod earns;
mod random;
pub mod vectors;
pub mod xlsx;
