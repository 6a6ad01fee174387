//! The limits every door holds input to (the API's bodies, batch files' rows, the catalogue
//! document, the CLI), declared once so that they cannot disagree.

/// Ids, references and short names.
pub const MAX_ID: usize = 128;
/// People's names.
pub const MAX_NAME: usize = 100;
/// Descriptions and comments.
pub const MAX_TEXT: usize = 256;
/// Texts people write at length (a review).
pub const MAX_LONG_TEXT: usize = 4000;
pub const MAX_EMAIL: usize = 254;
pub const MAX_PHONE: usize = 32;
pub const MAX_META_BYTES: usize = 16 * 1024;
/// How deep a meta object may nest: the object itself is level 1, a text or number inside an
/// object inside it level 3.
pub const MAX_META_DEPTH: usize = 8;
