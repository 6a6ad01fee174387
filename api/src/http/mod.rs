//! The HTTP plumbing every resource shares: authentication and versions (`auth`), the error
//! type and its problem body (`error`), the JSON body and query extractors (`json`, `query`),
//! field checks and their schemas (`checks`), paging (`paging`), strict query strings
//! (`parameters`), absolute links (`links`), the OpenAPI document (`docs`, `versions`, and
//! `shapes` for what generators need of it), the operational
//! routes and middleware (`ops`) and the connection loop with its limits (`server`).

pub(crate) mod auth;
pub(crate) mod checks;
pub(crate) mod docs;
pub(crate) mod error;
pub(crate) mod json;
pub(crate) mod links;
pub(crate) mod ops;
pub(crate) mod paging;
pub(crate) mod parameters;
pub(crate) mod query;
pub(crate) mod server;
pub(crate) mod shapes;
pub(crate) mod versions;
