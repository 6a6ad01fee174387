//! Paging on a page: which page of how many, and the links to the pages beside it (the API
//! does the paging; a page of a list of 100,000 costs what a page of 100 does).

use api::plumbing::PagedList;

/// Rows a list page shows.
pub const PAGE_ROWS: u32 = 25;

/// Where a list is, and the links to its neighbours.
pub struct Pager {
    pub page: u32,
    pub pages: u64,
    pub total: u64,
    pub previous: Option<String>,
    pub next: Option<String>,
}

impl Pager {
    /// The pager of `list`, whose links are `link` with `page=N` added (`link` ends in `?` or
    /// `&`).
    pub fn of<T>(list: &PagedList<T>, link: &str) -> Pager {
        Pager::new(list.current_page, list.total_pages, list.total, link)
    }

    /// Page `page` of `pages` over `total` rows.
    pub fn new(page: u32, pages: u64, total: u64, link: &str) -> Pager {
        Pager {
            page,
            pages,
            total,
            previous: (page > 1).then(|| format!("{link}page={}", page - 1)),
            next: (u64::from(page) < pages).then(|| format!("{link}page={}", page + 1)),
        }
    }
}

impl Pager {
    /// The pager of nothing.
    pub fn none() -> Pager {
        Pager {
            page: 1,
            pages: 0,
            total: 0,
            previous: None,
            next: None,
        }
    }
}

/// A `page` query value as a page number (1 when absent or not a number).
pub fn page_number(text: Option<&str>) -> u32 {
    text.and_then(|t| t.trim().parse().ok())
        .filter(|p| (1..=i32::MAX as u32).contains(p))
        .unwrap_or(1)
}
