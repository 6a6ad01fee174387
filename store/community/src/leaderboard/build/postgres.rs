//! PostgreSQL: a snapshot ranked and written by the database in one statement per table.

use sqlx::{AssertSqlSafe, PgPool};

use super::{Dropping, ORDER, RANKED, Ranking, TABLES};
use crate::StoreError;
use crate::backend::OnPostgres;

/// Each member's place, from the entries of generation `$2` of campaign `$1`, in the members
/// table's key order.
const PLACES: &str = "INSERT INTO leaderboard_members (campaign_id, generation, member_id, rank) \
     SELECT campaign_id, generation, member_id, rank FROM leaderboard_entries \
     WHERE campaign_id = $1 AND generation = $2 ORDER BY member_id";

impl OnPostgres for Ranking {
    async fn postgres(self, pool: &PgPool) -> Result<u64, StoreError> {
        let sql = format!(
            "INSERT INTO leaderboard_entries (campaign_id, generation, rank, member_id, points) \
             SELECT $2, $3, ROW_NUMBER() OVER (ORDER BY {ORDER}), owner_id, points \
             FROM ({RANKED}) AS ranked"
        );
        let ranked = sqlx::query(AssertSqlSafe(sql))
            .bind(&self.org_id)
            .bind(&self.campaign_id)
            .bind(self.generation)
            .execute(pool)
            .await?
            .rows_affected();
        sqlx::query(PLACES)
            .bind(&self.campaign_id)
            .bind(self.generation)
            .execute(pool)
            .await?;
        Ok(ranked)
    }
}

impl OnPostgres for Dropping {
    async fn postgres(self, pool: &PgPool) -> Result<(), StoreError> {
        for (table, _) in TABLES {
            let delete = format!("DELETE FROM {table} WHERE campaign_id = $1 AND generation <> $2");
            sqlx::query(AssertSqlSafe(delete))
                .bind(&self.campaign_id)
                .bind(self.keep)
                .execute(pool)
                .await?;
        }
        Ok(())
    }
}
