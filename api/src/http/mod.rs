//! The HTTP plumbing every resource shares: authentication and versions (`auth`), the error
//! type and its problem body (`error`), the JSON body and query extractors (`json`, `query`),
//! field checks and their schemas (`checks`), paging (`paging`), strict query strings
//! (`parameters`), absolute links (`links`), the OpenAPI document's versions (`versions`, and
//! `shapes` for what generators need of it) and the connection loop with its limits
//! (`server`). None of it knows a resource: the documents and routes that gather them are
//! `docs.rs` and `ops.rs` beside this folder.

pub(crate) mod auth;
pub(crate) mod checks;
pub(crate) mod error;
pub(crate) mod json;
pub(crate) mod links;
pub(crate) mod paging;
pub(crate) mod parameters;
pub(crate) mod query;
pub(crate) mod server;
pub(crate) mod shapes;
pub(crate) mod versions;
