//! The service as a library: its configuration (`config`) and its composition root (`app`:
//! `Application::build(config, store)` then `run(stop)`), used by `rewards serve` and by tests
//! that run the whole service in-process; and the allocator's set-up (`arenas`), which `main`
//! and the benches call first. The operator's commands live in the binary.

pub mod app;
pub mod arenas;
pub mod config;

pub use app::{Application, open_store};
pub use config::Config;
