//! SQLite: an export's query on a reader connection, off the async workers (WAL: writers
//! carry on), its rows copied into chunks as SQLite holds them.

use rusqlite::types::ValueRef;
use tokio::sync::mpsc;

use super::{ExportChunk, Exporting};
use crate::StoreError;
use crate::backend::direct::{self, Direct};
use crate::backend::tx::sqlite_args;
use crate::backend::{OnSqlite, borrowed};

impl OnSqlite for Exporting {
    async fn sqlite(self, direct: &Direct) -> Result<u64, StoreError> {
        let Exporting {
            sql,
            bound,
            chunk,
            out,
        } = self;
        direct
            .read_blocking(move |c| {
                let args = borrowed(&bound);
                // Read through SQLite's small page cache rather than a map of the file: a map
                // would hold every page of the ledger in this process's memory.
                c.pragma_update(None, "mmap_size", 0)?;
                let read = read_chunks(c, &sql, &sqlite_args(&args), chunk, &out);
                c.pragma_update(None, "mmap_size", direct::READER_MMAP)?;
                read
            })
            .await
    }
}

/// SQLite: sends the rows of `sql` to `out` in chunks; how many there were.
fn read_chunks(
    c: &rusqlite::Connection,
    sql: &str,
    args: &[&dyn rusqlite::ToSql],
    chunk: usize,
    out: &mpsc::Sender<ExportChunk>,
) -> Result<u64, StoreError> {
    let (mut rows, mut count) = (ExportChunk::default(), 0u64);
    let mut open = true;
    direct::each_row(c, sql, args, |row| {
        rows.push_sqlite(row)?;
        count += 1;
        if rows.len() == chunk {
            open = out.blocking_send(std::mem::take(&mut rows)).is_ok();
        }
        Ok(open)
    })?;
    if open && !rows.is_empty() {
        let _ = out.blocking_send(rows);
    }
    Ok(count)
}

impl ExportChunk {
    /// A row of the query as SQLite holds it, copied without a value of its own per column.
    fn push_sqlite(&mut self, row: &rusqlite::Row) -> Result<(), StoreError> {
        let text = |i: usize| -> Result<Option<&str>, StoreError> {
            match row.get_ref(i)? {
                ValueRef::Null => Ok(None),
                ValueRef::Text(bytes) => std::str::from_utf8(bytes)
                    .map(Some)
                    .map_err(|e| rusqlite::Error::Utf8Error(i, e).into()),
                other => Err(rusqlite::Error::InvalidColumnType(
                    i,
                    format!("column {i}"),
                    other.data_type(),
                )
                .into()),
            }
        };
        let micros = |i: usize| -> Result<i64, StoreError> {
            direct::parse_time(text(i)?.unwrap_or_default())
                .map(|t| t.timestamp_micros())
                .map_err(|e| {
                    let failed = rusqlite::Error::FromSqlConversionFailure(
                        i,
                        rusqlite::types::Type::Text,
                        Box::new(e),
                    );
                    failed.into()
                })
        };
        // The SELECT's order: id, campaign, wallet, reference, member, kind, amount, currency,
        // date, external id, source amount, description, comment, meta, trace, version, batch,
        // created.
        self.push_texts([
            text(0)?,
            text(1)?,
            text(2)?,
            text(3)?,
            text(4)?,
            text(5)?,
            text(7)?,
            text(9)?,
            text(10)?,
            text(11)?,
            text(12)?,
            text(13)?,
            text(14)?,
            text(16)?,
        ]);
        self.amount.push(row.get(6)?);
        self.date.push(micros(8)?);
        self.rules_version.push(row.get(15)?);
        self.created_at.push(micros(17)?);
        Ok(())
    }
}
