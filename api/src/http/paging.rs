//! Paging: the `page` and `limit` query parameters and the `PagedList` envelope.

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use serde::{Deserialize, Serialize};
use store::{Page, Paged};
use utoipa::{IntoParams, ToSchema};

use crate::http::error::{ApiError, FieldError};
use crate::http::query::{QueryParams, Whole};

/// `page` (>= 1, default 1) and `limit` (0..=100, default 10; 0 returns only the count).
#[derive(Debug, Clone, Copy)]
pub struct Paging(pub Page);

/// The paging parameters, as read from the query and documented.
#[derive(Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PagingParams {
    /// Page number, from 1.
    #[param(value_type = Option<u32>, minimum = 1, maximum = 2147483647, default = 1)]
    page: Whole,
    /// Records per page, 0 to 100; 0 returns only `total`.
    #[param(value_type = Option<u32>, minimum = 0, maximum = 100, default = 10)]
    limit: Whole,
}

/// The largest page number: the largest 32-bit signed integer, so that clients with 32-bit
/// integers can ask for any page.
const MAX_PAGE: u32 = i32::MAX as u32;

impl<S: Send + Sync> FromRequestParts<S> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let QueryParams(params) =
            QueryParams::<PagingParams>::from_request_parts(parts, state).await?;
        let mut errors = Vec::new();
        let mut check = |name: &str, result: Result<u32, String>| {
            result.unwrap_or_else(|message| {
                errors.push(FieldError::new(name, "invalid_value", message));
                0
            })
        };
        let page = Page {
            page: check("page", params.page.within(1..=MAX_PAGE, 1)),
            limit: check(
                "limit",
                params
                    .limit
                    .within(0..=Page::MAX_LIMIT, Page::DEFAULT_LIMIT),
            ),
        };
        if errors.is_empty() {
            Ok(Paging(page))
        } else {
            Err(ApiError::validation(errors))
        }
    }
}

/// One page of a list: `data`, the `total` across all pages, and where this page sits.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PagedList<T> {
    pub data: Vec<T>,
    pub total: u64,
    pub current_page: u32,
    pub page_size: u32,
    pub total_pages: u64,
}

impl PagedList<()> {
    /// A page's JSON with each item written by `write` (as one complete JSON value): the
    /// envelope is this type's own serialization, with the items put between its brackets.
    pub fn rendered<U>(paged: Paged<U>, mut write: impl FnMut(&mut Vec<u8>, U)) -> Vec<u8> {
        let mut items = Vec::new();
        let mut envelope = PagedList::from_page(paged, |item| items.push(item));
        envelope.data.clear();
        let envelope = serde_json::to_vec(&envelope).expect("an envelope serializes");
        // `data` is the first field: `{"data":[],"total":…}`.
        let open = br#"{"data":["#.len();
        let mut out = Vec::with_capacity(16 * 1024);
        out.extend_from_slice(&envelope[..open]);
        for (n, item) in items.into_iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write(&mut out, item);
        }
        out.extend_from_slice(&envelope[open..]);
        out
    }
}

impl<T> PagedList<T> {
    /// One page of a list the caller holds whole (a handful of keys, users or sessions).
    pub fn of<U>(all: Vec<U>, page: Page, view: impl FnMut(U) -> T) -> Self {
        PagedList::from_page(Paged::slice(all, page, view), std::convert::identity)
    }

    pub fn from_page<U>(paged: Paged<U>, view: impl FnMut(U) -> T) -> Self {
        let total_pages = paged.total_pages();
        let (page, total) = (paged.page, paged.total);
        PagedList {
            data: paged.items.into_iter().map(view).collect(),
            total,
            current_page: page.page,
            page_size: page.limit,
            total_pages,
        }
    }
}
