//! The store's entry points for single statements, reads and writes: what every domain file
//! calls when its work is one statement, or reads that need no transaction of their own.
//! Multi-statement work goes through `Db::write` / `Db::read` with a `Work` (see `tx.rs`).
//!
//! On SQLite a lookup of one row by key (`read_row`) runs on the calling thread: one index probe
//! over mapped pages takes a few microseconds, less than handing it to another thread and back.
//! Everything that may read more (lists, pages, keyed lookups of many rows, `Work`) runs on
//! tokio's blocking pool, so a long read never holds an async worker; writes go to the writer
//! thread. On PostgreSQL each runs through the sqlx pool.

use sqlx::postgres::Postgres;
use sqlx::{Arguments, AssertSqlSafe, Encode, Type};

use super::tx::{
    OwnedArg, PgTx, Row, SqliteTx, Steps, Tx, Work, borrowed, owned, pg_args, ready, sqlite_args,
};
use super::{Arg, Db, Pool, ToArg, direct};
use crate::{Page, StoreError};

/// `values` as the arguments rusqlite binds.
fn bound(values: &[OwnedArg]) -> Vec<Arg<'_>> {
    borrowed(values)
}

/// Where a read's keys are: `{key}` compares a column with one key (`l.order_id {key}`),
/// `{keys}` reads them as a one-column table (`w.id IN ({keys})`); the keys bind as parameter
/// `n`, after the statement's own arguments.
pub fn keyed(sql: &str, n: usize, on_postgres: bool) -> String {
    if on_postgres {
        sql.replace("{key}", &format!("= ANY(${n})"))
            .replace("{keys}", &format!("SELECT unnest(${n})"))
    } else {
        sql.replace("{key}", &format!("= ${n}"))
            .replace("{keys}", &format!("SELECT ${n}"))
    }
}

impl Db {
    /// The one row (if any) that a read by id or key finds.
    pub async fn read_row<R: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => direct.read(|c| direct::row(c, sql, &sqlite_args(args))),
            Pool::Postgres(pool) => Ok(sqlx::query_as_with(AssertSqlSafe(sql), pg_args(args)?)
                .fetch_optional(pool)
                .await?),
        }
    }

    /// Every row a read finds.
    pub async fn read_rows<R: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => {
                let (sql, values) = (sql.to_owned(), owned(args));
                direct
                    .read_blocking(move |c| direct::rows(c, &sql, &sqlite_args(&bound(&values))))
                    .await
            }
            Pool::Postgres(pool) => Ok(sqlx::query_as_with(AssertSqlSafe(sql), pg_args(args)?)
                .fetch_all(pool)
                .await?),
        }
    }

    /// Every row `sql` finds for any of `keys`, with `{key}` or `{keys}` in `sql` (see `keyed`):
    /// the lookup of many rows by key that a batch of work needs. On SQLite one prepared lookup
    /// per key, which beats a statement whose text changes with each batch; on PostgreSQL one
    /// statement with `= ANY(...)` or `unnest(...)` of all keys. `{key}` is for the first
    /// column of an index: PostgreSQL (before 17) compares each entry it scans with every key
    /// of an `= ANY` it cannot seek with, so a lookup by two columns, or one the planner might
    /// serve from another index, joins `{keys}` instead (each key one index probe).
    pub async fn read_each<R: Row, K>(
        &self,
        sql: &'static str,
        args: &[Arg<'_>],
        keys: &[K],
    ) -> Result<Vec<R>, StoreError>
    where
        K: super::ToArg + Sync,
        for<'q> &'q [K]: Encode<'q, Postgres> + Type<Postgres>,
    {
        let n = args.len() + 1;
        match &self.pool {
            Pool::Sqlite(direct) => {
                let sql = keyed(sql, n, false);
                let (sql, values) = (sql.clone(), owned(args));
                let keys: Vec<OwnedArg> = keys.iter().map(|k| k.to_arg().to_owned_arg()).collect();
                direct
                    .read_blocking(move |c| {
                        let mut rows = Vec::new();
                        let mut args = bound(&values);
                        for key in &keys {
                            args.push(key.to_arg());
                            rows.extend(direct::rows(c, &sql, &sqlite_args(&args))?);
                            args.pop();
                        }
                        Ok(rows)
                    })
                    .await
            }
            Pool::Postgres(pool) => {
                let sql = keyed(sql, n, true);
                let mut arguments = pg_args(args)?;
                arguments.add(keys).map_err(|e| {
                    StoreError::NotCommitted(format!("the keys could not be bound: {e}"))
                })?;
                Ok(sqlx::query_as_with(AssertSqlSafe(sql), arguments)
                    .fetch_all(pool)
                    .await?)
            }
        }
    }

    /// Counts and reads one page of a list: the one paging code every list uses. `from` is the
    /// `FROM ... WHERE ...` both statements share, with `$1`... bound to `args` in order; the
    /// page's `LIMIT` and `OFFSET` take the next two numbers. A page of `limit` 0 reads only the
    /// count. Gives `(total, rows)` for `Paged::of`.
    pub async fn read_page<R: Row>(
        &self,
        page: Page,
        select: &str,
        from: &str,
        order: &str,
        args: &[Arg<'_>],
    ) -> Result<(u64, Vec<R>), StoreError> {
        let taken = args.len();
        let count = format!("SELECT COUNT(*) {from}");
        let list = (page.limit > 0).then(|| {
            format!(
                "SELECT {select} {from} ORDER BY {order} LIMIT ${} OFFSET ${}",
                taken + 1,
                taken + 2
            )
        });
        self.read_counted(page, count, list, args).await
    }

    /// `read_page` for a list of one table ordered by its key (`key`, unique), whose `filter`
    /// (`WHERE ...`) an index with the key answers: the page's keys are found in that index
    /// alone, and only the page's rows are read. A deep page skips index entries, not rows
    /// (PostgreSQL read every row before the page's: 64 ms for the last of 100,000 members,
    /// 24 ms this way).
    pub async fn read_page_by_key<R: Row>(
        &self,
        page: Page,
        select: &str,
        table: &str,
        filter: &str,
        key: &str,
        args: &[Arg<'_>],
    ) -> Result<(u64, Vec<R>), StoreError> {
        let taken = args.len();
        let count = format!("SELECT COUNT(*) FROM {table} {filter}");
        let list = (page.limit > 0).then(|| {
            format!(
                "SELECT {select} FROM {table} WHERE {key} IN (SELECT {key} FROM {table} {filter} \
                 ORDER BY {key} LIMIT ${} OFFSET ${}) ORDER BY {key}",
                taken + 1,
                taken + 2
            )
        });
        self.read_counted(page, count, list, args).await
    }

    /// Runs a page's `count` (bound to `args`) and `list` (to `args`, then the page's `LIMIT`
    /// and `OFFSET`).
    async fn read_counted<R: Row>(
        &self,
        page: Page,
        count: String,
        list: Option<String>,
        args: &[Arg<'_>],
    ) -> Result<(u64, Vec<R>), StoreError> {
        let taken = args.len();
        let mut args = args.to_vec();
        args.extend([Arg::Int(Some(page.limit())), Arg::Int(Some(page.offset()))]);
        let (total, rows) = match &self.pool {
            Pool::Sqlite(direct) => {
                let values = owned(&args);
                direct
                    .read_blocking(move |c| {
                        let bound = bound(&values);
                        let args = sqlite_args(&bound);
                        let (total,): (i64,) =
                            direct::row(c, &count, &args[..taken])?.unwrap_or((0,));
                        let rows = match list {
                            Some(list) => direct::rows(c, &list, &args)?,
                            None => Vec::new(),
                        };
                        Ok((total, rows))
                    })
                    .await?
            }
            Pool::Postgres(pool) => {
                let (total,): (i64,) =
                    sqlx::query_as_with(AssertSqlSafe(count), pg_args(&args[..taken])?)
                        .fetch_one(pool)
                        .await?;
                let rows = match list {
                    Some(list) => {
                        sqlx::query_as_with(AssertSqlSafe(list), pg_args(&args)?)
                            .fetch_all(pool)
                            .await?
                    }
                    None => Vec::new(),
                };
                (total, rows)
            }
        };
        Ok((total.max(0) as u64, rows))
    }

    /// Runs one statement that changes data; how many rows it changed.
    pub async fn execute(&self, sql: &str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        if self.is_acting() {
            let statement = Statement::<u64>::new(sql, args);
            return Box::pin(self.write_changing(statement, |rows| *rows > 0)).await;
        }
        match &self.pool {
            Pool::Sqlite(direct) => {
                let (sql, values) = (sql.to_owned(), owned(args));
                let changed = direct
                    .write(move |c| direct::execute(c, &sql, &sqlite_args(&bound(&values))))
                    .await?;
                Ok(changed as u64)
            }
            Pool::Postgres(pool) => Ok(sqlx::query_with(AssertSqlSafe(sql), pg_args(args)?)
                .execute(pool)
                .await?
                .rows_affected()),
        }
    }

    /// Runs one statement that changes data and returns a row (`RETURNING`).
    pub async fn write_row<R: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        Ok(self.write_rows(sql, args).await?.into_iter().next())
    }

    /// Runs one statement that changes data and returns every row it changed (`RETURNING`).
    pub async fn write_rows<R: Row>(
        &self,
        sql: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        if self.is_acting() {
            return Box::pin(self.write(Statement::<Vec<R>>::new(sql, args))).await;
        }
        match &self.pool {
            Pool::Sqlite(direct) => {
                let (sql, values) = (sql.to_owned(), owned(args));
                direct
                    .write(move |c| direct::rows(c, &sql, &sqlite_args(&bound(&values))))
                    .await
            }
            Pool::Postgres(pool) => Ok(sqlx::query_as_with(AssertSqlSafe(sql), pg_args(args)?)
                .fetch_all(pool)
                .await?),
        }
    }

    /// Runs `statements` in order in one transaction; how many rows each changed.
    pub async fn execute_all(
        &self,
        statements: &[(&'static str, &[Arg<'_>])],
    ) -> Result<Vec<u64>, StoreError> {
        let statements = statements
            .iter()
            .map(|(sql, args)| (*sql, owned(args)))
            .collect();
        self.write_changing(Statements(statements), |rows| rows.iter().any(|n| *n > 0))
            .await
    }

    /// Runs `work` to read, in one snapshot: every statement sees the database as it was when
    /// the first began. On SQLite in a read transaction on a reader connection, off the async
    /// workers; on PostgreSQL in a read-only repeatable-read transaction. It must not write.
    pub async fn read<W: Work>(&self, work: W) -> Result<W::Output, StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => {
                direct
                    .read_blocking(move |c| {
                        direct::execute(c, "BEGIN", &[])?;
                        let output = ready(work.sqlite(&mut SqliteTx(c)));
                        direct::execute(c, "COMMIT", &[])?;
                        output
                    })
                    .await
            }
            Pool::Postgres(pool) => {
                let mut tx = pool
                    .begin_with("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
                    .await?;
                let output = work.postgres(&mut PgTx(&mut tx)).await;
                tx.commit().await?;
                output
            }
        }
    }
}

/// Statements run in order in one transaction (`Db::execute_all`).
struct Statements(Vec<(&'static str, Vec<OwnedArg>)>);

impl Steps for Statements {
    type Output = Vec<u64>;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Vec<u64>, StoreError> {
        let mut changed = Vec::with_capacity(self.0.len());
        for (sql, args) in &self.0 {
            changed.push(tx.execute(sql, &borrowed(args)).await?);
        }
        Ok(changed)
    }
}

/// One statement as a transaction's work, so that a write made for an operator's action carries
/// its audit entry (`Db::acting`): `Output` is `u64` (rows changed) or `Vec<R>` (rows returned).
struct Statement<O> {
    sql: String,
    args: Vec<OwnedArg>,
    output: std::marker::PhantomData<fn() -> O>,
}

impl<O> Statement<O> {
    fn new(sql: &str, args: &[Arg<'_>]) -> Statement<O> {
        Statement {
            sql: sql.to_owned(),
            args: owned(args),
            output: std::marker::PhantomData,
        }
    }
}

impl Steps for Statement<u64> {
    type Output = u64;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<u64, StoreError> {
        tx.execute(&self.sql, &borrowed(&self.args)).await
    }
}

impl<R: Row> Steps for Statement<Vec<R>> {
    type Output = Vec<R>;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Vec<R>, StoreError> {
        tx.rows(&self.sql, &borrowed(&self.args)).await
    }
}
