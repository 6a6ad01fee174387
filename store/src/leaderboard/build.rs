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
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(org_id)
                    .bind(campaign_id)
                    .bind(generation)
                    .execute(pool)
                    .await?
                    .rows_affected()
            }
        };
        let due = at + chrono::Duration::from_std(interval).unwrap_or(chrono::Duration::MAX);
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

    /// Deletes every generation of the campaign's entries except `keep`, a chunk at a time
    /// (each a range of the primary key, so no delete holds SQLite's writer for long).
    async fn drop_generations_but(&self, campaign_id: &str, keep: i64) -> Result<(), StoreError> {
        const OLDER: &str = "SELECT generation FROM leaderboard_entries WHERE campaign_id = $1 \
             AND generation < $2 ORDER BY generation DESC LIMIT 1";
        const NEWER: &str = "SELECT generation FROM leaderboard_entries WHERE campaign_id = $1 \
             AND generation > $2 ORDER BY generation DESC LIMIT 1";
        const LAST: &str = "SELECT rank FROM leaderboard_entries WHERE campaign_id = $1 \
             AND generation = $2 ORDER BY rank DESC LIMIT 1";
        const DELETE: &str = "DELETE FROM leaderboard_entries WHERE campaign_id = $1 \
             AND generation = $2 AND rank > $3";
        for other in [OLDER, NEWER] {
            loop {
                let found: Option<(i64,)> = read_row!(self, other, [campaign_id, keep])?;
                let Some((generation,)) = found else { break };
                loop {
                    let last: Option<(i64,)> = read_row!(self, LAST, [campaign_id, generation])?;
                    let Some((last,)) = last else { break };
                    with_writer!(self, |pool| sqlx::query(DELETE)
                        .bind(campaign_id)
                        .bind(generation)
                        .bind(last - CHUNK as i64)
                        .execute(pool)
                        .await
                        .map(|r| r.rows_affected()))?;
                }
            }
        }
        Ok(())
    }
}

/// SQLite: ranks the campaign's members on a reader (in a blocking task: it reads them all)
/// and writes the entries of `generation` a chunk per transaction as they come; how many.
async fn rank_sqlite(
    direct: Arc<Direct>,
    org_id: &str,
    campaign_id: &str,
    generation: i64,
) -> Result<u64, StoreError> {
    const INSERT: &str = "INSERT INTO leaderboard_entries (campaign_id, generation, rank, \
         member_id, points) VALUES ($1, $2, $3, $4, $5)";
    let (send, mut chunks) = tokio::sync::mpsc::channel::<Vec<(String, i64)>>(2);
    let reader = {
        let (direct, org, campaign) = (direct.clone(), org_id.to_string(), campaign_id.to_string());
        tokio::task::spawn_blocking(move || {
            let sql = format!("{RANKED} ORDER BY {ORDER}");
            direct.read(|c| {
                let mut chunk = Vec::with_capacity(CHUNK);
                let mut wanted = true;
                direct::rows_while(c, &sql, args![org, campaign], |row: (String, i64)| {
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
    let mut ranked = 0i64;
    while let Some(chunk) = chunks.recv().await {
        let (first, campaign) = (ranked, campaign_id.to_string());
        ranked += chunk.len() as i64;
        direct
            .write(move |c| {
                let mut insert = c.prepare_cached(INSERT)?;
                for (i, (member, points)) in chunk.iter().enumerate() {
                    let rank = first + 1 + i as i64;
                    direct::run(
                        &mut insert,
                        args![campaign, generation, rank, member, points],
                    )?;
                }
                Ok(())
            })
            .await?;
    }
    reader
        .await
        .map_err(|e| StoreError::NotCommitted(format!("ranking the leaderboard: {e}")))??;
    Ok(ranked.max(0) as u64)
}
