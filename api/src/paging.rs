//! Paging: the `page` and `limit` query parameters and the `PagedList` envelope.

use axum::extract::{FromRequestParts, Query};
use axum::http::request::Parts;
use serde::Serialize;
use store::{Page, Paged};
use utoipa::{IntoParams, ToSchema};

use crate::error::{ApiError, FieldError};

/// `page` (>= 1, default 1) and `limit` (0..=100, default 10; 0 returns only the count).
#[derive(Debug, Clone, Copy)]
pub struct Paging(pub Page);

/// The paging parameters as documented in the OpenAPI description.
#[derive(IntoParams)]
#[into_params(parameter_in = Query)]
#[allow(dead_code)]
pub struct PagingParams {
    /// Page number, from 1.
    #[param(minimum = 1, default = 1)]
    page: Option<u32>,
    /// Records per page, 0 to 100; 0 returns only `total`.
    #[param(minimum = 0, maximum = 100, default = 10)]
    limit: Option<u32>,
}

impl<S: Send + Sync> FromRequestParts<S> for Paging {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        let Query(pairs) = Query::<Vec<(String, String)>>::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::invalid("query", "invalid_query", e.body_text()))?;
        let mut page = Page::default();
        let mut errors = Vec::new();
        for (name, value) in pairs {
            let (range, target) = match name.as_str() {
                "page" => (1..=u32::MAX, &mut page.page),
                "limit" => (0..=Page::MAX_LIMIT, &mut page.limit),
                _ => continue,
            };
            match value.trim().parse::<u32>() {
                Ok(n) if range.contains(&n) => *target = n,
                _ => errors.push(FieldError::new(
                    name.as_str(),
                    "invalid_value",
                    match name.as_str() {
                        "page" => format!("must be a whole number >= 1, not `{value}`"),
                        _ => format!("must be a whole number from 0 to 100, not `{value}`"),
                    },
                )),
            }
        }
        if errors.is_empty() {
            Ok(Paging(page))
        } else {
            Err(ApiError::validation(errors))
        }
    }
}

/// One page of a list: `data`, the `total` across all pages, and where this page sits.
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PagedList<T> {
    pub data: Vec<T>,
    pub total: u64,
    pub current_page: u32,
    pub page_size: u32,
    pub total_pages: u64,
}

impl<T> PagedList<T> {
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
