//! The transaction seam: work that reads and writes inside one database transaction, written
//! once against `Tx` and run by `Db::write` on either backend.
//!
//! On SQLite the work runs on the writer thread (see `direct`), where every statement completes
//! before it returns, so its future is driven to the end in one poll (`ready`); on PostgreSQL it
//! runs on the caller's task, statement by statement through sqlx. Statements take their
//! arguments as `Arg`s (`params![...]`) and decode rows as `Row`s (tuples or `row_struct!`
//! types), the same on both.
//!
//! Where the dialects really differ (PostgreSQL's one-round-trip forms of several statements),
//! a domain declares a trait of its own with the differing steps and implements it for
//! `SqliteTx` in a `sqlite.rs` and for `PgTx` in a `postgres.rs` beside its shared code.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use chrono::{DateTime, NaiveDate, Utc};
use serde_json::Value;
use sqlx::encode::{Encode, IsNull};
use sqlx::error::BoxDynError;
use sqlx::postgres::{PgArgumentBuffer, PgArguments, PgRow, PgTypeInfo, Postgres};
use sqlx::types::Json;
use sqlx::{Arguments, PgConnection};

use super::direct;
use crate::StoreError;

/// A statement's argument: a value of one of the types the schema stores, or NULL of that type
/// (PostgreSQL types every parameter, NULL included).
#[derive(Debug, Clone, Copy)]
pub enum Arg<'a> {
    Int(Option<i64>),
    Real(Option<f64>),
    Bool(Option<bool>),
    Text(Option<&'a str>),
    Bytes(Option<&'a [u8]>),
    Time(Option<DateTime<Utc>>),
    Date(Option<NaiveDate>),
    Json(Option<&'a Value>),
    /// JSON already serialized (a batch row's meta, rendered before its write's turn).
    JsonText(Option<&'a str>),
    /// A time already in SQLite's stored form (`direct::time`), rendered once for many rows.
    /// PostgreSQL reads the same text as a `timestamptz`.
    TimeText(Option<&'a str>),
}

/// An `Arg` that owns its value: for work that runs after its caller's borrows have ended (on
/// the writer thread, or in a `Work`).
#[derive(Debug, Clone)]
pub enum OwnedArg {
    Int(Option<i64>),
    Real(Option<f64>),
    Bool(Option<bool>),
    Text(Option<String>),
    Bytes(Option<Vec<u8>>),
    Time(Option<DateTime<Utc>>),
    Date(Option<NaiveDate>),
    Json(Option<Value>),
    JsonText(Option<String>),
    TimeText(Option<String>),
}

impl Arg<'_> {
    pub fn to_owned_arg(self) -> OwnedArg {
        match self {
            Arg::Int(v) => OwnedArg::Int(v),
            Arg::Real(v) => OwnedArg::Real(v),
            Arg::Bool(v) => OwnedArg::Bool(v),
            Arg::Text(v) => OwnedArg::Text(v.map(str::to_owned)),
            Arg::Bytes(v) => OwnedArg::Bytes(v.map(<[u8]>::to_vec)),
            Arg::Time(v) => OwnedArg::Time(v),
            Arg::Date(v) => OwnedArg::Date(v),
            Arg::Json(v) => OwnedArg::Json(v.cloned()),
            Arg::JsonText(v) => OwnedArg::JsonText(v.map(str::to_owned)),
            Arg::TimeText(v) => OwnedArg::TimeText(v.map(str::to_owned)),
        }
    }
}

/// `args` owned.
pub fn owned(args: &[Arg<'_>]) -> Vec<OwnedArg> {
    args.iter().map(|arg| arg.to_owned_arg()).collect()
}

/// Owned arguments borrowed again, to bind.
pub fn borrowed(args: &[OwnedArg]) -> Vec<Arg<'_>> {
    args.iter().map(|arg| arg.to_arg()).collect()
}

impl ToArg for OwnedArg {
    fn to_arg(&self) -> Arg<'_> {
        match self {
            OwnedArg::Int(v) => Arg::Int(*v),
            OwnedArg::Real(v) => Arg::Real(*v),
            OwnedArg::Bool(v) => Arg::Bool(*v),
            OwnedArg::Text(v) => Arg::Text(v.as_deref()),
            OwnedArg::Bytes(v) => Arg::Bytes(v.as_deref()),
            OwnedArg::Time(v) => Arg::Time(*v),
            OwnedArg::Date(v) => Arg::Date(*v),
            OwnedArg::Json(v) => Arg::Json(v.as_ref()),
            OwnedArg::JsonText(v) => Arg::JsonText(v.as_deref()),
            OwnedArg::TimeText(v) => Arg::TimeText(v.as_deref()),
        }
    }
    fn null() -> Arg<'static> {
        Arg::Text(None)
    }
}

/// What can be bound as an `Arg`.
pub trait ToArg {
    fn to_arg(&self) -> Arg<'_>;
    /// NULL of this type.
    fn null() -> Arg<'static>;
}

macro_rules! to_arg {
    ($t:ty, $variant:ident, |$v:ident| $value:expr) => {
        impl ToArg for $t {
            fn to_arg(&self) -> Arg<'_> {
                let $v = self;
                Arg::$variant(Some($value))
            }
            fn null() -> Arg<'static> {
                Arg::$variant(None)
            }
        }
    };
}
to_arg!(str, Text, |v| v);
to_arg!(String, Text, |v| v);
to_arg!(i64, Int, |v| *v);
to_arg!(i32, Int, |v| i64::from(*v));
to_arg!(u32, Int, |v| i64::from(*v));
to_arg!(f64, Real, |v| *v);
to_arg!(bool, Bool, |v| *v);
to_arg!(DateTime<Utc>, Time, |v| *v);
to_arg!(NaiveDate, Date, |v| *v);
to_arg!([u8], Bytes, |v| v);
to_arg!(Vec<u8>, Bytes, |v| v);
to_arg!(Value, Json, |v| v);

impl<T: ToArg + ?Sized> ToArg for &T {
    fn to_arg(&self) -> Arg<'_> {
        (**self).to_arg()
    }
    fn null() -> Arg<'static> {
        T::null()
    }
}

impl<T: ToArg> ToArg for Option<T> {
    fn to_arg(&self) -> Arg<'_> {
        match self {
            Some(value) => value.to_arg(),
            None => T::null(),
        }
    }
    fn null() -> Arg<'static> {
        T::null()
    }
}

impl ToArg for Arg<'_> {
    fn to_arg(&self) -> Arg<'_> {
        *self
    }
    fn null() -> Arg<'static> {
        Arg::Text(None)
    }
}

/// A statement's arguments: `params![a, b]` binds `$1` and `$2`.
/// An argument borrows what it names: a loop's reference binding is bound as `*binding`, so
/// that the argument borrows what the binding refers to rather than the binding itself.
#[macro_export]
macro_rules! params {
    ($($arg:expr),* $(,)?) => {
        &[$($crate::backend::ToArg::to_arg(&$arg)),*]
    };
}

impl rusqlite::ToSql for Arg<'_> {
    fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
        use rusqlite::types::{ToSqlOutput, Value as Owned, ValueRef};
        let null = ToSqlOutput::Borrowed(ValueRef::Null);
        Ok(match *self {
            Arg::Int(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Integer(v))),
            Arg::Real(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Real(v))),
            Arg::Bool(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Integer(v.into()))),
            Arg::Text(v) | Arg::JsonText(v) | Arg::TimeText(v) => v.map_or(null, |v| {
                ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes()))
            }),
            Arg::Bytes(v) => v.map_or(null, |v| ToSqlOutput::Borrowed(ValueRef::Blob(v))),
            Arg::Time(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Text(direct::time(v)))),
            Arg::Date(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Text(v.to_string()))),
            Arg::Json(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Text(direct::json(v)))),
        })
    }
}

/// PostgreSQL: each argument as the type of its column (`produces`), so one `Arg` binds
/// anywhere sqlx takes a value (a query's arguments, a `QueryBuilder`'s rows).
impl sqlx::Type<Postgres> for Arg<'_> {
    fn type_info() -> PgTypeInfo {
        <&str as sqlx::Type<Postgres>>::type_info()
    }
    fn compatible(_: &PgTypeInfo) -> bool {
        true
    }
}

impl<'q> Encode<'q, Postgres> for Arg<'_> {
    fn encode_by_ref(&self, buf: &mut PgArgumentBuffer) -> Result<IsNull, BoxDynError> {
        fn put<'v, T: Encode<'v, Postgres>>(
            value: T,
            buf: &mut PgArgumentBuffer,
        ) -> Result<IsNull, BoxDynError> {
            value.encode_by_ref(buf)
        }
        match *self {
            Arg::Int(v) => put(v, buf),
            Arg::Real(v) => put(v, buf),
            Arg::Bool(v) => put(v, buf),
            Arg::Text(v) => put(v, buf),
            Arg::Bytes(v) => put(v, buf),
            Arg::Time(v) => put(v, buf),
            Arg::Date(v) => put(v, buf),
            Arg::Json(v) => put(v.map(Json), buf),
            Arg::JsonText(v) => {
                let value: Option<Value> = v.map(serde_json::from_str).transpose()?;
                put(value.map(Json), buf)
            }
            Arg::TimeText(v) => put(v.map(direct::parse_time).transpose()?, buf),
        }
    }

    fn produces(&self) -> Option<PgTypeInfo> {
        fn of<T: sqlx::Type<Postgres>>() -> Option<PgTypeInfo> {
            Some(T::type_info())
        }
        match self {
            Arg::Int(_) => of::<i64>(),
            Arg::Real(_) => of::<f64>(),
            Arg::Bool(_) => of::<bool>(),
            Arg::Text(_) => of::<&str>(),
            Arg::Bytes(_) => of::<&[u8]>(),
            Arg::Time(_) | Arg::TimeText(_) => of::<DateTime<Utc>>(),
            Arg::Date(_) => of::<NaiveDate>(),
            Arg::Json(_) | Arg::JsonText(_) => of::<Json<Value>>(),
        }
    }
}

/// `args` as PostgreSQL arguments.
pub fn pg_args(args: &[Arg<'_>]) -> Result<PgArguments, StoreError> {
    let mut out = PgArguments::default();
    for &arg in args {
        out.add(arg).map_err(|e| {
            StoreError::NotCommitted(format!("an argument could not be bound: {e}"))
        })?;
    }
    Ok(out)
}

/// A row a statement returns, decoded the same way on both backends: a tuple, or a type
/// declared with `row_struct!`.
pub trait Row: direct::FromRow + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin + 'static {}
impl<T> Row for T where
    T: direct::FromRow + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

/// Which database engine a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// A database transaction the work runs in. Each call is one statement with `$1`, `$2`...
/// bound to `args` in order.
pub trait Tx {
    /// The backend the statements run on: where a step's statements differ between the two
    /// (a dialect), it matches on this, and the step stays one generic function.
    const BACKEND: Backend;
    /// The first row the statement returns, if any.
    async fn row<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<R>, StoreError>;
    /// The first row the `SELECT` returns, locked against other writers until the transaction
    /// ends (`FOR UPDATE` on PostgreSQL; SQLite's one writer holds the whole database).
    async fn row_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError>;
    /// Every row the `SELECT` returns, each locked as `row_locked` locks one (in the order
    /// returned, on PostgreSQL: an `ORDER BY` keeps two writers from deadlocking).
    async fn rows_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError>;
    /// Every row the statement returns.
    async fn rows<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<R>, StoreError>;
    /// Runs the statement; how many rows it changed.
    async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, StoreError>;
    /// Inserts rows of `width` values each (`values`, row after row): `{head} VALUES (...)
    /// {tail}`, `tail` being empty or an `ON CONFLICT` clause. On SQLite one prepared statement
    /// per row, on PostgreSQL multi-row statements. How many rows it changed.
    async fn insert_rows(
        &mut self,
        head: &str,
        tail: &str,
        width: usize,
        values: &[Arg<'_>],
    ) -> Result<u64, StoreError>;
    /// Runs `sql` for each of `keys`, bound after `args` where `sql` says `{key}` (as in `AND id
    /// {key}`): on SQLite once per key (`= $n`), on PostgreSQL once for all (`= ANY($n)`).
    async fn execute_each<K>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        keys: &[K],
    ) -> Result<u64, StoreError>
    where
        K: ToArg + Sync,
        for<'q> &'q [K]: Encode<'q, Postgres> + sqlx::Type<Postgres>;
}

/// `{head} VALUES ($1, ...), ... {tail}` for `rows` rows of `width` values.
fn values_sql(head: &str, tail: &str, width: usize, rows: usize) -> String {
    let mut sql = format!("{head} VALUES ");
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for column in 0..width {
            if column > 0 {
                sql.push_str(", ");
            }
            let _ =
                std::fmt::Write::write_fmt(&mut sql, format_args!("${}", row * width + column + 1));
        }
        sql.push(')');
    }
    if !tail.is_empty() {
        sql.push(' ');
        sql.push_str(tail);
    }
    sql
}

/// PostgreSQL binds at most 65,535 parameters to a statement; rows go in statements of at most
/// this many values.
const PG_VALUES_AT_MOST: usize = 16_000;

/// SQLite: the writer thread's connection, inside its transaction.
pub struct SqliteTx<'c>(pub &'c rusqlite::Connection);

impl Tx for SqliteTx<'_> {
    const BACKEND: Backend = Backend::Sqlite;

    async fn row<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<R>, StoreError> {
        direct::row(self.0, sql, &sqlite_args(args))
    }

    async fn row_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        self.row(select, args).await
    }

    async fn rows_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        self.rows(select, args).await
    }

    async fn rows<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<R>, StoreError> {
        direct::rows(self.0, sql, &sqlite_args(args))
    }

    async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        Ok(direct::execute(self.0, sql, &sqlite_args(args))? as u64)
    }

    async fn insert_rows(
        &mut self,
        head: &str,
        tail: &str,
        width: usize,
        values: &[Arg<'_>],
    ) -> Result<u64, StoreError> {
        let sql = values_sql(head, tail, width, 1);
        let mut changed = 0;
        for row in values.chunks(width) {
            changed += direct::execute(self.0, &sql, &sqlite_args(row))? as u64;
        }
        Ok(changed)
    }

    async fn execute_each<K>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        keys: &[K],
    ) -> Result<u64, StoreError>
    where
        K: ToArg + Sync,
        for<'q> &'q [K]: Encode<'q, Postgres> + sqlx::Type<Postgres>,
    {
        let sql = sql.replace("{key}", &format!("= ${}", args.len() + 1));
        let mut bound = args.to_vec();
        let mut changed = 0;
        for key in keys {
            bound.push(key.to_arg());
            changed += direct::execute(self.0, &sql, &sqlite_args(&bound))? as u64;
            bound.pop();
        }
        Ok(changed)
    }
}

pub fn sqlite_args<'a>(args: &'a [Arg<'a>]) -> Vec<&'a dyn rusqlite::ToSql> {
    args.iter().map(|a| a as &dyn rusqlite::ToSql).collect()
}

/// PostgreSQL: a connection inside a transaction `Db::write` began.
pub struct PgTx<'c>(pub &'c mut PgConnection);

impl Tx for PgTx<'_> {
    const BACKEND: Backend = Backend::Postgres;

    async fn row<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Option<R>, StoreError> {
        Ok(
            sqlx::query_as_with(sqlx::AssertSqlSafe(sql), pg_args(args)?)
                .fetch_optional(&mut *self.0)
                .await?,
        )
    }

    async fn row_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!("{select} FOR UPDATE"));
        Ok(sqlx::query_as_with(sql, pg_args(args)?)
            .fetch_optional(&mut *self.0)
            .await?)
    }

    async fn rows_locked<R: Row>(
        &mut self,
        select: &str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!("{select} FOR UPDATE"));
        Ok(sqlx::query_as_with(sql, pg_args(args)?)
            .fetch_all(&mut *self.0)
            .await?)
    }

    async fn rows<R: Row>(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<Vec<R>, StoreError> {
        Ok(
            sqlx::query_as_with(sqlx::AssertSqlSafe(sql), pg_args(args)?)
                .fetch_all(&mut *self.0)
                .await?,
        )
    }

    async fn execute(&mut self, sql: &str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        let done = sqlx::query_with(sqlx::AssertSqlSafe(sql), pg_args(args)?)
            .execute(&mut *self.0)
            .await?;
        Ok(done.rows_affected())
    }

    async fn insert_rows(
        &mut self,
        head: &str,
        tail: &str,
        width: usize,
        values: &[Arg<'_>],
    ) -> Result<u64, StoreError> {
        let mut changed = 0;
        let per_statement = (PG_VALUES_AT_MOST / width.max(1)).max(1) * width;
        for chunk in values.chunks(per_statement) {
            let sql = values_sql(head, tail, width, chunk.len() / width);
            changed += self.execute(&sql, chunk).await?;
        }
        Ok(changed)
    }

    async fn execute_each<K>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
        keys: &[K],
    ) -> Result<u64, StoreError>
    where
        K: ToArg + Sync,
        for<'q> &'q [K]: Encode<'q, Postgres> + sqlx::Type<Postgres>,
    {
        if keys.is_empty() {
            return Ok(0);
        }
        let sql = sql.replace("{key}", &format!("= ANY(${})", args.len() + 1));
        let mut arguments = pg_args(args)?;
        arguments
            .add(keys)
            .map_err(|e| StoreError::NotCommitted(format!("the keys could not be bound: {e}")))?;
        let done = sqlx::query_with(sqlx::AssertSqlSafe(sql), arguments)
            .execute(&mut *self.0)
            .await?;
        Ok(done.rows_affected())
    }
}

/// Work done in one transaction (`Db::write`): the two methods hand it each backend's
/// transaction. Work whose steps are written once implements `Steps` instead.
pub trait Work: Send + 'static {
    type Output: Send + 'static;
    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError>;
    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError>;
}

/// Work whose steps are written once as `run`, generic over `Tx` (where statements differ
/// between the backends, a step matches on `Tx::BACKEND`).
pub trait Steps: Send + 'static {
    type Output: Send + 'static;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError>;
}

impl<S: Steps> Work for S {
    type Output = S::Output;
    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }
    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        self.run(tx).await
    }
}

/// The output of a future that completes without waiting: SQLite work on the writer thread,
/// whose every statement runs to its end inside the call.
pub fn ready<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    match future
        .as_mut()
        .poll(&mut Context::from_waker(Waker::noop()))
    {
        Poll::Ready(output) => output,
        // A programming error: the work awaited something other than its SQLite statements.
        Poll::Pending => panic!("SQLite work waited on something other than the database"),
    }
}

/// Work whose steps differ between the backends beyond the statements of one transaction (a
/// bulk credit: `COPY` and arrays on PostgreSQL, the writer thread's bulk writes on SQLite):
/// `Db::fork` runs its `OnSqlite` half or its `OnPostgres` half, each written in the
/// domain's `sqlite.rs` or `postgres.rs`.
pub trait Forked {
    type Output;
}

pub trait OnSqlite: Forked {
    async fn sqlite(self, direct: &direct::Direct) -> Result<Self::Output, StoreError>;
}

pub trait OnPostgres: Forked {
    async fn postgres(self, pool: &sqlx::PgPool) -> Result<Self::Output, StoreError>;
}
