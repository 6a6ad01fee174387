//! Paging shared by every list: which slice a caller asks for and what comes back.

/// A validated page request: `page` >= 1, `limit` 0..=100 (0 asks only for the count).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    pub page: u32,
    pub limit: u32,
}

impl Page {
    pub const MAX_LIMIT: u32 = 100;
    pub const DEFAULT_LIMIT: u32 = 10;

    pub fn offset(&self) -> i64 {
        i64::from(self.page.saturating_sub(1)) * i64::from(self.limit)
    }

    pub fn limit(&self) -> i64 {
        i64::from(self.limit)
    }
}

impl Default for Page {
    fn default() -> Self {
        Page {
            page: 1,
            limit: Self::DEFAULT_LIMIT,
        }
    }
}

/// One page of records and the number of records in the whole list.
#[derive(Debug, Clone)]
pub struct Paged<T> {
    pub items: Vec<T>,
    pub total: u64,
    pub page: Page,
}

impl<T> Paged<T> {
    pub fn total_pages(&self) -> u64 {
        match self.page.limit {
            0 => 0,
            limit => self.total.div_ceil(u64::from(limit)),
        }
    }
}

impl<T> Paged<T> {
    /// The page of `rows` (as `Db::read_page` read them), each turned into a record by `record`.
    pub fn of<R>(
        (total, rows): (u64, Vec<R>),
        page: Page,
        record: impl FnMut(R) -> Result<T, crate::StoreError>,
    ) -> Result<Paged<T>, crate::StoreError> {
        Ok(Paged {
            items: rows.into_iter().map(record).collect::<Result<_, _>>()?,
            total,
            page,
        })
    }

    /// The page of a whole list held in memory, each of its records made by `record` (only
    /// those of the page).
    pub fn slice<U>(all: Vec<U>, page: Page, record: impl FnMut(U) -> T) -> Paged<T> {
        let total = all.len() as u64;
        let start = usize::try_from(page.offset()).unwrap_or(usize::MAX);
        let items = all
            .into_iter()
            .skip(start)
            .take(page.limit as usize)
            .map(record)
            .collect();
        Paged { items, total, page }
    }
}
