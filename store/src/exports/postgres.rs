//! PostgreSQL: an export's query streamed by sqlx as it is consumed.

use sqlx::{AssertSqlSafe, PgPool};

use super::{ExportChunk, Exporting, Record};
use crate::StoreError;
use crate::backend::tx::pg_args;
use crate::backend::{OnPostgres, borrowed};

impl OnPostgres for Exporting {
    async fn postgres(self, pool: &PgPool) -> Result<u64, StoreError> {
        let arguments = pg_args(&borrowed(&self.bound))?;
        let mut stream =
            sqlx::query_as_with::<_, Record, _>(AssertSqlSafe(self.sql), arguments).fetch(pool);
        let (mut rows, mut count) = (ExportChunk::default(), 0u64);
        while let Some(row) = std::future::poll_fn(|cx| stream.as_mut().poll_next(cx)).await {
            rows.push(&row?);
            count += 1;
            if rows.len() == self.chunk && self.out.send(std::mem::take(&mut rows)).await.is_err() {
                return Ok(count);
            }
        }
        if !rows.is_empty() {
            let _ = self.out.send(rows).await;
        }
        Ok(count)
    }
}
