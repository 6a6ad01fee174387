//! Building a campaign's snapshot, once per interval for all the nodes of one database.
//!
//! A node claims the build by moving `leaderboards.claimed_until` forward in one conditional
//! update, which succeeds only while the build is due and nobody holds it; the others see the
//! claim and pass. The builder deletes the generations other than the published one (the
//! previous snapshot, or what a build that died left), writes the new generation beside the
//! published one, and publishes it by moving `generation`: a reader sees one whole snapshot or
//! the other, never a mix.
//!
//! On SQLite the ranking is read on a reader connection (WAL: it does not hold writers back)
//! and written in chunks, each a short transaction, so the single writer is never held for
//! long; on PostgreSQL one `INSERT ... SELECT` ranks and writes it (MVCC holds nobody back).

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::backend::Pool;
use crate::backend::direct::{self, Direct};
use crate::common::ids::now;
use crate::{Store, StoreError};

/// How long a claimed build is the claimer's alone: another node takes it over only after this
/// (when the claimer died).
const LEASE: chrono::Duration = chrono::Duration::minutes(10);

/// Entries per write on SQLite, and per delete of an old generation.
const CHUNK: usize = 5_000;

/// Each member ranked in campaign `$2` of organisation `$1`: the lifetime earnings of their
/// wallets in it and when those last grew. Deleted and inactive members are left out.
const RANKED: &str = "SELECT w.owner_id, CAST(SUM(w.earned) AS BIGINT) AS points, \
     MAX(w.earned_at) AS reached FROM wallets w JOIN members m ON m.id = w.owner_id \
     WHERE w.org_id = $1 AND w.campaign_id = $2 AND w.earned > 0 \
     AND m.deleted_at IS NULL AND m.status = 'active' GROUP BY w.owner_id";

/// Most points first; a tie goes to whoever reached the score first, then to the lower id.
const ORDER: &str = "points DESC, reached ASC NULLS LAST, owner_id";

/// Each member's place, from the entries of generation `$2` of campaign `$1`, in the members
/// table's key order.
const PLACES: &str = "INSERT INTO leaderboard_members (campaign_id, generation, member_id, rank) \
     SELECT campaign_id, generation, member_id, rank FROM leaderboard_entries \
     WHERE campaign_id = $1 AND generation = $2 ORDER BY member_id";

/// What one build did.
#[derive(Debug, Clone, PartialEq)]
pub struct Built {
    pub campaign_id: String,
    pub generation: i64,
    pub entries: u64,
    /// When it read the ledger: the snapshot's time.
    pub built_at: DateTime<Utc>,
    pub took: Duration,
}

impl Store {
    /// The campaigns (with their organisations) whose snapshot is due and unclaimed, or that
    /// have none yet.
    pub async fn due_leaderboards(&self) -> Result<Vec<(String, String)>, StoreError> {
        const SQL: &str = "SELECT c.id, c.org_id FROM campaigns c \
             LEFT JOIN leaderboards l ON l.campaign_id = c.id \
             WHERE l.campaign_id IS NULL \
             OR (l.due_at <= $1 AND (l.claimed_until IS NULL OR l.claimed_until < $1)) \
             ORDER BY c.id";
        let at = now();
        Ok(with_pool!(self, |pool| sqlx::query_as(SQL)
            .bind(at)
            .fetch_all(pool)
            .await)?)
    }

    /// Builds and publishes campaign `campaign_id`'s snapshot if it is due and no other node is
    /// building it; the next is then due `interval` after this one's time. `None`: not due, or
    /// another node has it.
    pub async fn refresh_leaderboard(
        &self,
        org_id: &str,
        campaign_id: &str,
        interval: Duration,
    ) -> Result<Option<Built>, StoreError> {
        const START: &str = "INSERT INTO leaderboards (campaign_id, generation, entries, due_at) \
             VALUES ($1, 0, 0, $2) ON CONFLICT (campaign_id) DO NOTHING";
        const CLAIM: &str = "UPDATE leaderboards SET claimed_until = $2 WHERE campaign_id = $1 \
             AND due_at <= $3 AND (claimed_until IS NULL OR claimed_until < $3) \
             RETURNING generation";
        const RELEASE: &str = "UPDATE leaderboards SET claimed_until = NULL \
             WHERE campaign_id = $1 AND claimed_until = $2";
        let started = Instant::now();
        let at = now();
        let lease = at + LEASE;
        let claimed: Option<(i64,)> = with_writer!(self, |pool| async {
            sqlx::query(START)
                .bind(campaign_id)
                .bind(at)
                .execute(pool)
                .await?;
            sqlx::query_as(CLAIM)
                .bind(campaign_id)
                .bind(lease)
                .bind(at)
                .fetch_optional(pool)
                .await
        }
        .await)?;
        let Some((published,)) = claimed else {
            return Ok(None);
        };
        let built = self
            .build(org_id, campaign_id, published, at, interval)
            .await;
        if built.is_err() {
            // Due again at the next look, here or on another node.
            let _ = with_writer!(self, |pool| sqlx::query(RELEASE)
                .bind(campaign_id)
                .bind(lease)
                .execute(pool)
                .await
                .map(|r| r.rows_affected()));
        }
        let (generation, entries) = built?;
        Ok(Some(Built {
            campaign_id: campaign_id.to_string(),
            generation,
            entries,
            built_at: at,
            took: started.elapsed(),
        }))
    }

    /// Writes generation `published + 1` and publishes it; its number and size.
    async fn build(
        &self,
        org_id: &str,
        campaign_id: &str,
        published: i64,
        at: DateTime<Utc>,
        interval: Duration,
    ) -> Result<(i64, u64), StoreError> {
        const PUBLISH: &str = "UPDATE leaderboards SET generation = $2, built_at = $3, \
             entries = $4, due_at = $5, claimed_until = NULL \
             WHERE campaign_id = $1 AND generation = $6";
        self.drop_generations_but(campaign_id, published).await?;
        let generation = published + 1;
        let entries = match &self.pool {
            Pool::Sqlite { direct, .. } => {
                rank_sqlite(direct.clone(), org_id, campaign_id, generation).await?
            }
            Pool::Postgres(pool) => {
                let sql = format!(
                    "INSERT INTO leaderboard_entries (campaign_id, generation, rank, member_id, \
                     points) SELECT $2, $3, ROW_NUMBER() OVER (ORDER BY {ORDER}), owner_id, \
                     points FROM ({RANKED}) AS ranked"
                );
                let ranked = sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(org_id)
                    .bind(campaign_id)
                    .bind(generation)
                    .execute(pool)
                    .await?
                    .rows_affected();
                sqlx::query(PLACES)
                    .bind(campaign_id)
                    .bind(generation)
                    .execute(pool)
                    .await?;
                ranked
            }
        };
        let due = chrono::Duration::from_std(interval)
            .ok()
            .and_then(|interval| at.checked_add_signed(interval))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let published_now = with_writer!(self, |pool| sqlx::query(PUBLISH)
            .bind(campaign_id)
            .bind(generation)
            .bind(at)
            .bind(entries as i64)
            .bind(due)
            .bind(published)
            .execute(pool)
            .await
            .map(|r| r.rows_affected()))?;
        if published_now == 0 {
            return Err(StoreError::NotCommitted(format!(
                "leaderboard of campaign {campaign_id}: another node published a snapshot \
                 while this one was built (its claim had run out)"
            )));
        }
        Ok((generation, entries))
    }

    /// Deletes every generation of the campaign's snapshot except `keep`. On SQLite a chunk at
    /// a time (each a range of the primary key), so no delete holds the single writer for long;
    /// on PostgreSQL in one statement per table, which holds no other writer back (and chunks
    /// there would each walk the dead index entries the ones before left).
    async fn drop_generations_but(&self, campaign_id: &str, keep: i64) -> Result<(), StoreError> {
        const TABLES: [(&str, &str); 2] = [
            ("leaderboard_members", "member_id"),
            ("leaderboard_entries", "rank"),
        ];
        if let Pool::Postgres(pool) = &self.pool {
            for (table, _) in TABLES {
                let delete =
                    format!("DELETE FROM {table} WHERE campaign_id = $1 AND generation <> $2");
                sqlx::query(sqlx::AssertSqlSafe(delete))
                    .bind(campaign_id)
                    .bind(keep)
                    .execute(pool)
                    .await?;
            }
            return Ok(());
        }
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
                    let found: Option<(i64,)> = with_pool!(self, |pool| sqlx::query_as(
                        sqlx::AssertSqlSafe(other.clone())
                    )
                    .bind(campaign_id)
                    .bind(keep)
                    .fetch_optional(pool)
                    .await)?;
                    let Some((generation,)) = found else { break };
                    while with_writer!(self, |pool| sqlx::query(sqlx::AssertSqlSafe(
                        delete.clone()
                    ))
                    .bind(campaign_id)
                    .bind(generation)
                    .execute(pool)
                    .await
                    .map(|r| r.rows_affected()))?
                        > 0
                    {}
                }
            }
        }
        Ok(())
    }
}

/// SQLite: ranks the campaign's members into the entries of `generation`, then writes each
/// member's place from those entries; how many are ranked.
async fn rank_sqlite(
    direct: Arc<Direct>,
    org_id: &str,
    campaign_id: &str,
    generation: i64,
) -> Result<u64, StoreError> {
    const ENTRY: &str = "INSERT INTO leaderboard_entries (campaign_id, generation, rank, \
         member_id, points) VALUES ($1, $2, $3, $4, $5)";
    const BY_MEMBER: &str = "SELECT member_id, rank FROM leaderboard_entries \
         WHERE campaign_id = $1 AND generation = $2 ORDER BY member_id";
    const PLACE: &str = "INSERT INTO leaderboard_members (campaign_id, generation, member_id, \
         rank) VALUES ($1, $2, $3, $4)";
    let (org, campaign) = (org_id.to_string(), campaign_id.to_string());
    let ranking = format!("{RANKED} ORDER BY {ORDER}");
    let campaign_too = campaign.clone();
    let ranked = in_chunks(
        direct.clone(),
        move |c, each| direct::rows_while(c, &ranking, args![org, campaign_too], each),
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
    let campaign = campaign_id.to_string();
    let campaign_too = campaign.clone();
    in_chunks(
        direct,
        move |c, each| direct::rows_while(c, BY_MEMBER, args![campaign_too, generation], each),
        move |c, _, chunk: Vec<(String, i64)>| {
            let mut insert = c.prepare_cached(PLACE)?;
            for (member, rank) in &chunk {
                direct::run(&mut insert, args![campaign, generation, member, rank])?;
            }
            Ok(())
        },
    )
    .await?;
    Ok(ranked)
}

/// SQLite: hands the rows `read` finds (on a reader, in a blocking task: it may read millions)
/// to `write` a chunk at a time, each chunk a transaction of its own on the writer thread, with
/// the number of rows before it; how many rows there were. Rows are written as they are read,
/// so memory holds a few chunks whatever the count.
async fn in_chunks<R, Read, Write>(
    direct: Arc<Direct>,
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
    let reader = {
        let direct = direct.clone();
        tokio::task::spawn_blocking(move || {
            direct.read(|c| {
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
            })
        })
    };
    let mut written = 0i64;
    while let Some(chunk) = chunks.recv().await {
        let (first, write) = (written, write.clone());
        written += chunk.len() as i64;
        direct.write(move |c| write(c, first, chunk)).await?;
    }
    reader
        .await
        .map_err(|e| StoreError::NotCommitted(format!("reading for the leaderboard: {e}")))??;
    Ok(written.max(0) as u64)
}
