//! SQLite: the ranking is read on a reader connection (WAL: it does not hold writers back) and
//! written in chunks, each a short transaction, so the single writer is never held for long.

use super::{Dropping, ORDER, RANKED, Ranking, TABLES};
use crate::StoreError;
use crate::backend::OnSqlite;
use crate::backend::direct::{self, Direct};

/// Entries per write, and per delete of an old generation.
const CHUNK: usize = 5_000;

impl OnSqlite for Ranking {
    async fn sqlite(self, direct: &Direct) -> Result<u64, StoreError> {
        const ENTRY: &str = "INSERT INTO leaderboard_entries (campaign_id, generation, rank, \
             member_id, points) VALUES ($1, $2, $3, $4, $5)";
        const BY_MEMBER: &str = "SELECT member_id, rank FROM leaderboard_entries \
             WHERE campaign_id = $1 AND generation = $2 ORDER BY member_id";
        const PLACE: &str = "INSERT INTO leaderboard_members (campaign_id, generation, \
             member_id, rank) VALUES ($1, $2, $3, $4)";
        let Ranking {
            org_id,
            campaign_id,
            generation,
        } = self;
        let ranking = format!("{RANKED} ORDER BY {ORDER}");
        let (campaign, campaign_too) = (campaign_id.clone(), campaign_id.clone());
        let ranked = in_chunks(
            direct,
            move |c, each| direct::rows_while(c, &ranking, args![org_id, campaign_too], each),
            move |c, first, chunk: Vec<(String, i64)>| {
                let mut insert = c.prepare_cached(ENTRY)?;
                for (i, (member, points)) in chunk.iter().enumerate() {
                    let rank = first + 1 + i as i64;
                    direct::run(
                        &mut insert,
                        args![campaign, generation, rank, member, points],
                    )?;
                }
                Ok(())
            },
        )
        .await?;
        let campaign_too = campaign_id.clone();
        in_chunks(
            direct,
            move |c, each| direct::rows_while(c, BY_MEMBER, args![campaign_too, generation], each),
            move |c, _, chunk: Vec<(String, i64)>| {
                let mut insert = c.prepare_cached(PLACE)?;
                for (member, rank) in &chunk {
                    direct::run(&mut insert, args![campaign_id, generation, member, rank])?;
                }
                Ok(())
            },
        )
        .await?;
        Ok(ranked)
    }
}

impl OnSqlite for Dropping {
    async fn sqlite(self, _: &Direct) -> Result<(), StoreError> {
        let store = &self.db;
        let (campaign_id, keep) = (&self.campaign_id, self.keep);
        for (table, key) in TABLES {
            let this = format!("{table} WHERE campaign_id = $1 AND generation = $2");
            // The first CHUNK keys of the generation (or all of them when fewer are left).
            let delete = format!(
                "DELETE FROM {this} AND {key} <= COALESCE(\
                 (SELECT {key} FROM {this} ORDER BY {key} LIMIT 1 OFFSET {}), \
                 (SELECT MAX({key}) FROM {this}))",
                CHUNK - 1
            );
            for comparison in ["<", ">"] {
                let other = format!(
                    "SELECT generation FROM {table} WHERE campaign_id = $1 \
                     AND generation {comparison} $2 ORDER BY generation DESC LIMIT 1"
                );
                loop {
                    let found: Option<(i64,)> =
                        store.read_row(&other, params![campaign_id, keep]).await?;
                    let Some((generation,)) = found else { break };
                    while store
                        .execute(&delete, params![campaign_id, generation])
                        .await?
                        > 0
                    {}
                }
            }
        }
        Ok(())
    }
}

/// Hands the rows `read` finds (on a reader, off the async workers: it may read millions) to
/// `write` a chunk at a time, each chunk a transaction of its own on the writer thread, with
/// the number of rows before it; how many rows there were. Rows are written as they are read,
/// so memory holds a few chunks whatever the count.
async fn in_chunks<R, Read, Write>(
    direct: &Direct,
    read: Read,
    write: Write,
) -> Result<u64, StoreError>
where
    R: Send + 'static,
    Read: FnOnce(&rusqlite::Connection, &mut dyn FnMut(R) -> bool) -> Result<(), StoreError>
        + Send
        + 'static,
    Write:
        Fn(&rusqlite::Connection, i64, Vec<R>) -> Result<(), StoreError> + Clone + Send + 'static,
{
    let (send, mut chunks) = tokio::sync::mpsc::channel::<Vec<R>>(2);
    let reader = direct.read_blocking(move |c| {
        let mut chunk = Vec::with_capacity(CHUNK);
        let mut wanted = true;
        read(c, &mut |row| {
            chunk.push(row);
            if chunk.len() == CHUNK {
                wanted = send.blocking_send(std::mem::take(&mut chunk)).is_ok();
            }
            wanted
        })?;
        if wanted && !chunk.is_empty() {
            let _ = send.blocking_send(chunk);
        }
        Ok(())
    });
    let writer = async {
        let mut written = 0i64;
        while let Some(chunk) = chunks.recv().await {
            let (first, write) = (written, write.clone());
            written += chunk.len() as i64;
            direct.write(move |c| write(c, first, chunk)).await?;
        }
        Ok::<_, StoreError>(written)
    };
    let (read, written) = tokio::join!(reader, writer);
    // A failed write drops the channel, which stops the read; the write's error tells why.
    let written = written?;
    read?;
    Ok(written.max(0) as u64)
}
