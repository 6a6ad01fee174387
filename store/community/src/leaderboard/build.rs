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
//! long (`build/sqlite.rs`); on PostgreSQL one `INSERT ... SELECT` ranks and writes it (MVCC
//! holds nobody back: `build/postgres.rs`).

mod postgres;
mod sqlite;

use crate::Campaign;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use crate::backend::Forked;
use crate::{Community, StoreError};
use tenancy::{CampaignRow, campaign_from_row};

/// How long a claimed build is the claimer's alone: another node takes it over only after this
/// (when the claimer died).
const LEASE: chrono::Duration = chrono::Duration::minutes(10);

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

/// The leaderboard, built: each campaign's snapshot, rebuilt on an interval by one node.
impl Community {
    /// The campaigns whose snapshot is due and unclaimed, or that have none yet.
    #[tracing::instrument(skip_all)]
    pub async fn due_leaderboards(&self) -> Result<Vec<Campaign>, StoreError> {
        const SQL: &str = "SELECT c.id, c.org_id, c.name, c.currency, c.logo, c.favicon, \
             c.created_at FROM campaigns c \
             LEFT JOIN leaderboards l ON l.campaign_id = c.id \
             WHERE l.campaign_id IS NULL \
             OR (l.due_at <= $1 AND (l.claimed_until IS NULL OR l.claimed_until < $1)) \
             ORDER BY c.id";
        let at = self.now();
        let rows: Vec<CampaignRow> = self.read_rows(SQL, params![at]).await?;
        Ok(rows.into_iter().map(campaign_from_row).collect())
    }

    /// Builds and publishes the campaign's snapshot if it is due and no other node is
    /// building it; the next is then due `interval` after this one's time. `None`: not due, or
    /// another node has it.
    #[tracing::instrument(skip_all)]
    pub async fn refresh_leaderboard(
        &self,
        campaign: &Campaign,
        interval: Duration,
    ) -> Result<Option<Built>, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        const START: &str = "INSERT INTO leaderboards (campaign_id, generation, entries, due_at) \
             VALUES ($1, 0, 0, $2) ON CONFLICT (campaign_id) DO NOTHING";
        const CLAIM: &str = "UPDATE leaderboards SET claimed_until = $2 WHERE campaign_id = $1 \
             AND due_at <= $3 AND (claimed_until IS NULL OR claimed_until < $3) \
             RETURNING generation";
        const RELEASE: &str = "UPDATE leaderboards SET claimed_until = NULL \
             WHERE campaign_id = $1 AND claimed_until = $2";
        let started = Instant::now();
        let at = self.now();
        let lease = at + LEASE;
        self.execute(START, params![campaign_id, at]).await?;
        let claimed: Option<(i64,)> = self
            .write_row(CLAIM, params![campaign_id, lease, at])
            .await?;
        let Some((published,)) = claimed else {
            return Ok(None);
        };
        let built = self
            .build(org_id, campaign_id, published, at, interval)
            .await;
        if built.is_err() {
            // Due again at the next look, here or on another node.
            let _ = self.execute(RELEASE, params![campaign_id, lease]).await;
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
        let entries = self
            .fork(Ranking {
                org_id: org_id.to_string(),
                campaign_id: campaign_id.to_string(),
                generation,
            })
            .await?;
        let due = chrono::Duration::from_std(interval)
            .ok()
            .and_then(|interval| at.checked_add_signed(interval))
            .unwrap_or(DateTime::<Utc>::MAX_UTC);
        let published_now = self
            .execute(
                PUBLISH,
                params![campaign_id, generation, at, entries as i64, due, published],
            )
            .await?;
        if published_now == 0 {
            return Err(StoreError::NotCommitted(format!(
                "leaderboard of campaign {campaign_id}: another node published a snapshot \
                 while this one was built (its claim had run out)"
            )));
        }
        Ok((generation, entries))
    }

    /// Deletes every generation of the campaign's snapshot except `keep` (see `Dropping`).
    async fn drop_generations_but(&self, campaign_id: &str, keep: i64) -> Result<(), StoreError> {
        self.fork(Dropping {
            db: self.db.clone(),
            campaign_id: campaign_id.to_string(),
            keep,
        })
        .await
    }
}

/// Ranks campaign `campaign_id`'s members into the entries of `generation`, and writes each
/// member's place from those entries; gives how many are ranked.
struct Ranking {
    org_id: String,
    campaign_id: String,
    generation: i64,
}

impl Forked for Ranking {
    type Output = u64;
}

/// Deletes every generation of the campaign's snapshot except `keep`. On SQLite a chunk at a
/// time (each a range of the primary key), so no delete holds the single writer for long; on
/// PostgreSQL in one statement per table, which holds no other writer back (and chunks there
/// would each walk the dead index entries the ones before left).
struct Dropping {
    /// SQLite's chunks find each one's last key with a read of its own.
    db: crate::Db,
    campaign_id: String,
    keep: i64,
}

impl Forked for Dropping {
    type Output = ();
}

/// The tables of a snapshot, each with the last column of its primary key.
const TABLES: [(&str, &str); 2] = [
    ("leaderboard_members", "member_id"),
    ("leaderboard_entries", "rank"),
];
