//! Reading a published snapshot: a page is a range of ranks, found through the entries' primary
//! key whatever the page's number, so the last page of a million costs what the first does.
//! Names come from `members` at read time (see the migration).

use crate::Campaign;
use crate::OrgScope;
use chrono::{DateTime, Utc};

use super::{Neighbourhood, Snapshot, Standing, display_name};
use crate::{Community, Page, Paged, StoreError, Tokens};

/// The entries with ranks in `($3, $4]` of generation `$2` of campaign `$1`, with the names of
/// their members in organisation `$5`.
const RANKS: &str = "SELECT e.rank, e.member_id, e.points, m.first_name, m.last_name \
     FROM leaderboard_entries e LEFT JOIN members m ON m.id = e.member_id AND m.org_id = $5 \
     WHERE e.campaign_id = $1 AND e.generation = $2 AND e.rank > $3 AND e.rank <= $4 \
     ORDER BY e.rank";

row_struct! {
    struct SnapshotRow {
        generation: i64,
        built_at: Option<DateTime<Utc>>,
        entries: i64,
        due_at: DateTime<Utc>,
    }
}

row_struct! {
    struct EntryRow {
        rank: i64,
        member_id: String,
        points: i64,
        first_name: Option<String>,
        last_name: Option<String>,
    }
}

impl From<EntryRow> for Standing {
    fn from(r: EntryRow) -> Standing {
        Standing {
            rank: r.rank.max(0) as u64,
            display_name: display_name(r.first_name.as_deref(), r.last_name.as_deref()),
            member_id: r.member_id,
            points: Tokens::from_micros(r.points),
        }
    }
}

/// The leaderboard, read: pages and neighbourhoods of a campaign's snapshot (scope: `&Campaign` /
/// `OrgScope`).
impl Community {
    /// The campaign's published snapshot; `None` until the first is built.
    #[tracing::instrument(skip_all)]
    pub async fn leaderboard_snapshot(
        &self,
        campaign: &Campaign,
    ) -> Result<Option<Snapshot>, StoreError> {
        let campaign_id = campaign.id.as_str();
        const SQL: &str = "SELECT generation, built_at, entries, due_at FROM leaderboards \
             WHERE campaign_id = $1 AND generation > 0";
        let row: Option<SnapshotRow> = self.read_row(SQL, params![campaign_id]).await?;
        Ok(row.and_then(|r| {
            Some(Snapshot {
                campaign_id: campaign_id.to_string(),
                generation: r.generation,
                built_at: r.built_at?,
                entries: r.entries.max(0) as u64,
                due_at: r.due_at,
            })
        }))
    }

    /// One page of `snapshot` (of a campaign of `org_id`), best first.
    #[tracing::instrument(skip_all)]
    pub async fn leaderboard_page(
        &self,
        org: &OrgScope,
        snapshot: &Snapshot,
        page: Page,
    ) -> Result<Paged<Standing>, StoreError> {
        let org_id = org.id();
        let items = if page.limit == 0 {
            Vec::new()
        } else {
            let (from, to) = (page.offset(), page.offset() + page.limit());
            self.ranks(org_id, snapshot, from, to).await?
        };
        Ok(Paged {
            items,
            total: snapshot.entries,
            page,
        })
    }

    /// Member `member_id`'s place in `snapshot` with up to `neighbours` entries on each side;
    /// `None` when the snapshot does not rank the member.
    #[tracing::instrument(skip_all)]
    pub async fn leaderboard_neighbourhood(
        &self,
        org: &OrgScope,
        snapshot: &Snapshot,
        member_id: &str,
        neighbours: u32,
    ) -> Result<Option<Neighbourhood>, StoreError> {
        let org_id = org.id();
        const SQL: &str = "SELECT rank FROM leaderboard_members \
             WHERE campaign_id = $1 AND generation = $2 AND member_id = $3";
        let found: Option<(i64,)> = self
            .read_row(
                SQL,
                params![snapshot.campaign_id, snapshot.generation, member_id],
            )
            .await?;
        let Some((rank,)) = found else {
            return Ok(None);
        };
        let around = i64::from(neighbours);
        let from = (rank - 1 - around).max(0);
        let mut entries = self.ranks(org_id, snapshot, from, rank + around).await?;
        let Some(at) = entries.iter().position(|e| e.rank as i64 == rank) else {
            return Ok(None);
        };
        let below = entries.split_off(at + 1);
        let Some(standing) = entries.pop() else {
            return Ok(None);
        };
        Ok(Some(Neighbourhood {
            standing,
            above: entries,
            below,
        }))
    }

    /// The entries ranked `from + 1` to `to`.
    async fn ranks(
        &self,
        org_id: &str,
        snapshot: &Snapshot,
        from: i64,
        to: i64,
    ) -> Result<Vec<Standing>, StoreError> {
        let rows: Vec<EntryRow> = self
            .read_rows(
                RANKS,
                params![snapshot.campaign_id, snapshot.generation, from, to, org_id],
            )
            .await?;
        Ok(rows.into_iter().map(Standing::from).collect())
    }
}
