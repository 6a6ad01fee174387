//! Search parts that a catalogue index is built from, kept in memory and free of any storage:
//!
//! - `text`: ranked full-text search over weighted fields, tolerant of typos (one in words of 5
//!   or more characters, two from 9), stems (plurals match) and the last word taken as a prefix
//!   (search as you type), ranked in stages like Meilisearch: words matched, then typos, then
//!   the best field, then BM25.
//! - `geo`: points within a great-circle radius, found through a latitude-sorted list.
//! - `vectors`: nearest neighbours by cosine distance (an 8-bit copy scanned, the best
//!   candidates re-ranked exactly; from ten thousand vectors on, an HNSW graph built in the
//!   background and walked instead), and `embed`, a vector computed from text with no model.

pub mod geo;
pub mod text;
pub mod vectors;
