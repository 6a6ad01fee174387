//! The transaction seam: work that reads and writes inside one database transaction, written
//! once against `Tx` and run by `Store::write` on either backend.
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

use chrono::{DateTime, Utc};
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
pub(crate) enum Arg<'a> {
    Int(Option<i64>),
    Bool(Option<bool>),
    Text(Option<&'a str>),
    Bytes(Option<&'a [u8]>),
    Time(Option<DateTime<Utc>>),
    Json(Option<&'a Value>),
    /// JSON already serialized (a batch row's meta, rendered before its write's turn).
    JsonText(Option<&'a str>),
    /// A time already in SQLite's stored form (`direct::time`), rendered once for many rows.
    /// PostgreSQL reads the same text as a `timestamptz`.
    TimeText(Option<&'a str>),
}

/// What can be bound as an `Arg`.
pub(crate) trait ToArg {
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
to_arg!(bool, Bool, |v| *v);
to_arg!(DateTime<Utc>, Time, |v| *v);
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
            Arg::Bool(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Integer(v.into()))),
            Arg::Text(v) | Arg::JsonText(v) | Arg::TimeText(v) => v.map_or(null, |v| {
                ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes()))
            }),
            Arg::Bytes(v) => v.map_or(null, |v| ToSqlOutput::Borrowed(ValueRef::Blob(v))),
            Arg::Time(v) => v.map_or(null, |v| ToSqlOutput::Owned(Owned::Text(direct::time(v)))),
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
            Arg::Bool(v) => put(v, buf),
            Arg::Text(v) => put(v, buf),
            Arg::Bytes(v) => put(v, buf),
            Arg::Time(v) => put(v, buf),
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
            Arg::Bool(_) => of::<bool>(),
            Arg::Text(_) => of::<&str>(),
            Arg::Bytes(_) => of::<&[u8]>(),
            Arg::Time(_) | Arg::TimeText(_) => of::<DateTime<Utc>>(),
            Arg::Json(_) | Arg::JsonText(_) => of::<Json<Value>>(),
        }
    }
}

/// `args` as PostgreSQL arguments.
fn pg_args(args: &[Arg<'_>]) -> Result<PgArguments, StoreError> {
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
pub(crate) trait Row:
    direct::FromRow + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin + 'static
{
}
impl<T> Row for T where
    T: direct::FromRow + for<'r> sqlx::FromRow<'r, PgRow> + Send + Unpin + 'static
{
}

/// A database transaction the work runs in. Each call is one statement with `$1`, `$2`...
/// bound to `args` in order.
pub(crate) trait Tx {
    /// The first row the statement returns, if any.
    async fn row<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError>;
    /// The first row the `SELECT` returns, locked against other writers until the transaction
    /// ends (`FOR UPDATE` on PostgreSQL; SQLite's one writer holds the whole database).
    async fn row_locked<R: Row>(
        &mut self,
        select: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError>;
    /// Every row the statement returns.
    async fn rows<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError>;
    /// Runs the statement; how many rows it changed.
    async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, StoreError>;
}

/// SQLite: the writer thread's connection, inside its transaction.
pub(crate) struct SqliteTx<'c>(pub(crate) &'c rusqlite::Connection);

impl Tx for SqliteTx<'_> {
    async fn row<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        direct::row(self.0, sql, &sqlite_args(args))
    }

    async fn row_locked<R: Row>(
        &mut self,
        select: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        self.row(select, args).await
    }

    async fn rows<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        direct::rows(self.0, sql, &sqlite_args(args))
    }

    async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        Ok(direct::execute(self.0, sql, &sqlite_args(args))? as u64)
    }
}

fn sqlite_args<'a>(args: &'a [Arg<'a>]) -> Vec<&'a dyn rusqlite::ToSql> {
    args.iter().map(|a| a as &dyn rusqlite::ToSql).collect()
}

/// PostgreSQL: a connection inside a transaction `Store::write` began.
pub(crate) struct PgTx<'c>(pub(crate) &'c mut PgConnection);

impl Tx for PgTx<'_> {
    async fn row<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        Ok(sqlx::query_as_with(sql, pg_args(args)?)
            .fetch_optional(&mut *self.0)
            .await?)
    }

    async fn row_locked<R: Row>(
        &mut self,
        select: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Option<R>, StoreError> {
        let sql = sqlx::AssertSqlSafe(format!("{select} FOR UPDATE"));
        Ok(sqlx::query_as_with(sql, pg_args(args)?)
            .fetch_optional(&mut *self.0)
            .await?)
    }

    async fn rows<R: Row>(
        &mut self,
        sql: &'static str,
        args: &[Arg<'_>],
    ) -> Result<Vec<R>, StoreError> {
        Ok(sqlx::query_as_with(sql, pg_args(args)?)
            .fetch_all(&mut *self.0)
            .await?)
    }

    async fn execute(&mut self, sql: &'static str, args: &[Arg<'_>]) -> Result<u64, StoreError> {
        let done = sqlx::query_with(sql, pg_args(args)?)
            .execute(&mut *self.0)
            .await?;
        Ok(done.rows_affected())
    }
}

/// Work done in one transaction (`Store::write`): its steps written once, generic over `Tx`
/// (and over the domain's own dialect trait, where it has one); the two methods hand it each
/// backend's transaction.
pub(crate) trait Work: Send + 'static {
    type Output: Send + 'static;
    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError>;
    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError>;
}

/// The output of a future that completes without waiting: SQLite work on the writer thread,
/// whose every statement runs to its end inside the call.
pub(crate) fn ready<F: Future>(future: F) -> F::Output {
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
/// `Store::fork` runs its `OnSqlite` half or its `OnPostgres` half, each written in the
/// domain's `sqlite.rs` or `postgres.rs`.
pub(crate) trait Forked {
    type Output;
}

pub(crate) trait OnSqlite: Forked {
    async fn sqlite(
        self,
        store: &crate::Store,
        direct: &direct::Direct,
    ) -> Result<Self::Output, StoreError>;
}

pub(crate) trait OnPostgres: Forked {
    async fn postgres(
        self,
        store: &crate::Store,
        pool: &sqlx::PgPool,
    ) -> Result<Self::Output, StoreError>;
}
