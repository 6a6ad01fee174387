//! Running statements on a rusqlite connection with the SQL and row types the sqlx path uses.

use chrono::{DateTime, NaiveDate, NaiveDateTime, SecondsFormat, Utc};
use rusqlite::{Connection, Row, ToSql};
use serde::de::DeserializeOwned;
use sqlx::types::Json;

use crate::StoreError;

/// Statement arguments: `args![a, b]` for `$1` and `$2`, each anything rusqlite can bind.
#[macro_export]
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        &[$(&$arg as &dyn rusqlite::ToSql),*]
    };
}

/// Binds `args[i]` to `$<i+1>` wherever it appears: the SQL is the same text the PostgreSQL path
/// runs, and SQLite numbers `$n` parameters by first appearance, not by their digits.
fn bind(statement: &mut rusqlite::CachedStatement, args: &[&dyn ToSql]) -> rusqlite::Result<()> {
    // Usually `$<n>` is the n-th parameter (each first appears in order): then the lookup by
    // name, which builds and hashes a string, is not needed.
    let count = statement.parameter_count();
    for (i, arg) in args.iter().enumerate() {
        let n = i + 1;
        let numbered = n <= count
            && statement
                .parameter_name(n)
                .and_then(|name| name.strip_prefix('$'))
                .and_then(|digits| digits.parse::<usize>().ok())
                == Some(n);
        let index = if numbered {
            Some(n)
        } else {
            statement.parameter_index(&format!("${n}"))?
        };
        if let Some(index) = index {
            statement.raw_bind_parameter(index, arg)?;
        }
    }
    Ok(())
}

/// Runs a statement prepared once for many rows; returns how many rows it changed. Its `$n`
/// must first appear in order (`$1`, `$2`...: SQLite's parameter n), so that arguments bind by
/// position without looking names up.
pub fn run(
    statement: &mut rusqlite::CachedStatement,
    args: &[&dyn ToSql],
) -> Result<usize, StoreError> {
    debug_assert_eq!(statement.parameter_count(), args.len());
    for (i, arg) in args.iter().enumerate() {
        debug_assert_eq!(
            statement.parameter_name(i + 1),
            Some(format!("${}", i + 1).as_str())
        );
        statement.raw_bind_parameter(i + 1, arg)?;
    }
    Ok(statement.raw_execute()?)
}

/// Runs a statement; returns how many rows it changed.
pub fn execute(
    connection: &Connection,
    sql: &str,
    args: &[&dyn ToSql],
) -> Result<usize, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    bind(&mut statement, args)?;
    Ok(statement.raw_execute()?)
}

/// Every row a query returns.
pub fn rows<T: FromRow>(
    connection: &Connection,
    sql: &str,
    args: &[&dyn ToSql],
) -> Result<Vec<T>, StoreError> {
    let mut out = Vec::new();
    rows_while(connection, sql, args, |row| {
        out.push(row);
        true
    })?;
    Ok(out)
}

/// Hands rows to `more` one at a time until it returns false or the rows run out; the rest
/// are never read.
pub fn rows_while<T: FromRow>(
    connection: &Connection,
    sql: &str,
    args: &[&dyn ToSql],
    mut more: impl FnMut(T) -> bool,
) -> Result<(), StoreError> {
    each_row(connection, sql, args, |row| Ok(more(T::from_row(row)?)))
}

/// Like `rows_while`, handing `more` each row as SQLite holds it: what reads millions of rows
/// copies their values out without a value of its own per column.
pub fn each_row(
    connection: &Connection,
    sql: &str,
    args: &[&dyn ToSql],
    mut more: impl FnMut(&Row) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    bind(&mut statement, args)?;
    let mut rows = statement.raw_query();
    while let Some(row) = rows.next()? {
        if !more(row)? {
            break;
        }
    }
    Ok(())
}

/// The first row a query returns, if any.
pub fn row<T: FromRow>(
    connection: &Connection,
    sql: &str,
    args: &[&dyn ToSql],
) -> Result<Option<T>, StoreError> {
    let mut statement = connection.prepare_cached(sql)?;
    bind(&mut statement, args)?;
    let mut rows = statement.raw_query();
    match rows.next()? {
        Some(row) => Ok(Some(T::from_row(row)?)),
        None => Ok(None),
    }
}

/// A time as sqlx writes it to SQLite (RFC 3339 with a `+00:00` offset and as many fraction
/// digits as needed), so stored times compare and sort the same whichever path wrote them.
pub fn time(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::AutoSi, false)
}

/// A JSON value as sqlx writes it to SQLite: text.
pub fn json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("JSON values serialize")
}

/// One column of a result row, decoded as sqlx decodes it from SQLite.
pub trait Column: Sized {
    fn column(row: &Row, index: usize) -> rusqlite::Result<Self>;
}

macro_rules! plain_columns {
    ($($t:ty),*) => {$(
        impl Column for $t {
            fn column(row: &Row, index: usize) -> rusqlite::Result<Self> {
                row.get(index)
            }
        }
    )*};
}
plain_columns!(String, i64, f64, bool, Vec<u8>);

impl<T: Column> Column for Option<T> {
    fn column(row: &Row, index: usize) -> rusqlite::Result<Self> {
        match row.get_ref(index)? {
            rusqlite::types::ValueRef::Null => Ok(None),
            _ => T::column(row, index).map(Some),
        }
    }
}

fn conversion(
    index: usize,
    err: impl std::error::Error + Send + Sync + 'static,
) -> rusqlite::Error {
    rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(err))
}

impl Column for DateTime<Utc> {
    fn column(row: &Row, index: usize) -> rusqlite::Result<Self> {
        let text = row
            .get_ref(index)?
            .as_str()
            .map_err(|e| conversion(index, e))?;
        parse_time(text).map_err(|e| conversion(index, e))
    }
}

/// A stored time: RFC 3339 as sqlx and `time` write it, or SQLite's own `YYYY-MM-DD HH:MM:SS`.
pub fn parse_time(text: &str) -> Result<DateTime<Utc>, chrono::ParseError> {
    DateTime::parse_from_rfc3339(text)
        .map(|t| t.with_timezone(&Utc))
        .or_else(|_| {
            NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S%.f").map(|t| t.and_utc())
        })
}

impl Column for NaiveDate {
    fn column(row: &Row, index: usize) -> rusqlite::Result<Self> {
        let text: String = row.get(index)?;
        NaiveDate::parse_from_str(&text, "%Y-%m-%d").map_err(|e| conversion(index, e))
    }
}

impl<T: DeserializeOwned> Column for Json<T> {
    fn column(row: &Row, index: usize) -> rusqlite::Result<Self> {
        let text: String = row.get(index)?;
        serde_json::from_str(&text)
            .map(Json)
            .map_err(|e| conversion(index, e))
    }
}

/// A whole result row: the same tuples the sqlx path decodes.
pub trait FromRow: Sized {
    fn from_row(row: &Row) -> rusqlite::Result<Self>;
}

macro_rules! tuple_rows {
    ($(($($t:ident $i:tt),+))*) => {$(
        impl<$($t: Column),+> FromRow for ($($t,)+) {
            fn from_row(row: &Row) -> rusqlite::Result<Self> {
                Ok(($($t::column(row, $i)?,)+))
            }
        }
    )*};
}
tuple_rows! {
    (A 0)
    (A 0, B 1)
    (A 0, B 1, C 2)
    (A 0, B 1, C 2, D 3)
    (A 0, B 1, C 2, D 3, E 4)
    (A 0, B 1, C 2, D 3, E 4, F 5)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14)
    (A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7, I 8, J 9, K 10, L 11, M 12, N 13, O 14, P 15)
}
