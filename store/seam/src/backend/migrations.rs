//! The schema's history, once for both backends: each migration exists as a file under
//! `migrations/sqlite/` and `migrations/postgres/`, and the two trees must build the same schema
//! (a test compares them: `both_backends_build_the_same_schema`).

use std::borrow::Cow;

use crate::common::ids::idem_key_of;

use sqlx::SqlSafeStr;
use sqlx::SqlitePool;
use sqlx::migrate::{Migration, MigrationType, Migrator};

type Embedded = &'static [(i64, &'static str, &'static str)];

/// Declares the migrations, in order, once for both backends: each file exists under
/// `migrations/sqlite/` and `migrations/postgres/`. Add new ones at the end; never edit one that
/// has shipped (the migrator checks their checksums).
macro_rules! migrations {
    ($($version:literal $name:literal $file:literal),* $(,)?) => {
        const SQLITE_MIGRATIONS: Embedded =
            &[$(($version, $name, include_str!(concat!("../../migrations/sqlite/", $file)))),*];
        const POSTGRES_MIGRATIONS: Embedded =
            &[$(($version, $name, include_str!(concat!("../../migrations/postgres/", $file)))),*];
    };
}

migrations! {
    1 "foundation" "0001_foundation.sql",
    2 "rule sets" "0002_rule_sets.sql",
    3 "ledger" "0003_ledger.sql",
    4 "batch files" "0004_batch_files.sql",
    5 "batch rows" "0005_batch_rows.sql",
    6 "mappings" "0006_mappings.sql",
    7 "campaign date index" "0007_campaign_date_index.sql",
    8 "catalogue" "0008_catalogue.sql",
    9 "orders" "0009_orders.sql",
    10 "leaderboard and reviews" "0010_leaderboard_reviews.sql",
    11 "exports" "0011_exports.sql",
    12 "spending position" "0012_spending_position.sql",
    13 "idempotency key" "0013_idempotency_key.sql",
    14 "idempotency index" "0014_idempotency_index.sql",
    15 "journal wallet check" "0015_journal_wallet_check.sql",
    16 "tier handle" "0016_tier_handle.sql",
    17 "corrections" "0017_corrections.sql",
    18 "reversals" "0018_reversals.sql",
    19 "idempotent refusals" "0019_idempotent_refusals.sql",
    20 "holds" "0020_holds.sql",
    21 "transfers" "0021_transfers.sql",
    22 "pending" "0022_pending.sql",
    23 "balance days" "0023_balance_days.sql",
    24 "events" "0024_events.sql",
    25 "wallet events" "0025_wallet_events.sql",
    26 "sftp bans" "0026_sftp_bans.sql",
    27 "bounds" "0027_bounds.sql",
    28 "audit log and operators" "0028_audit_log.sql",
    29 "adjustments" "0029_adjustments.sql",
    30 "limits" "0030_limits.sql",
    31 "activities" "0031_activities.sql",
    32 "referrals" "0032_referrals.sql",
}

/// The migration that indexes `transactions.idem_key`: before it runs, the keys of an existing
/// SQLite ledger are filled (`fill_idem_keys`), which SQL alone cannot do there.
pub(super) const IDEM_KEYS_INDEXED: i64 = 14;

/// SQLite: whether migration `version` has run.
pub(super) async fn applied(pool: &SqlitePool, version: i64) -> Result<bool, sqlx::Error> {
    const TABLE: &str = "SELECT COUNT(*) FROM sqlite_master WHERE name = '_sqlx_migrations'";
    const RAN: &str = "SELECT COUNT(*) FROM _sqlx_migrations WHERE version = $1 AND success";
    let (table,): (i64,) = sqlx::query_as(TABLE).fetch_one(pool).await?;
    if table == 0 {
        return Ok(false);
    }
    let (ran,): (i64,) = sqlx::query_as(RAN).bind(version).fetch_one(pool).await?;
    Ok(ran > 0)
}

/// SQLite: computes `transactions.idem_key` of every row that has an external id and no key
/// yet (the ledger before migration 13), in steps of 10,000 rows along the rowid, each step
/// its own transaction: a crash between steps leaves the rest for the next start. (PostgreSQL
/// fills them in migration 13's SQL.)
pub(super) async fn fill_idem_keys(pool: &SqlitePool) -> Result<(), sqlx::Error> {
    const STEP: &str = "SELECT rowid, org_id, kind, external_id FROM transactions \
         WHERE rowid > $1 AND external_id IS NOT NULL AND idem_key IS NULL \
         ORDER BY rowid LIMIT 10000";
    let mut after = 0i64;
    loop {
        let rows: Vec<(i64, String, String, String)> =
            sqlx::query_as(STEP).bind(after).fetch_all(pool).await?;
        let Some((last, ..)) = rows.last() else {
            return Ok(());
        };
        after = *last;
        let mut tx = pool.begin().await?;
        for (rowid, org_id, kind, external_id) in &rows {
            sqlx::query("UPDATE transactions SET idem_key = $1 WHERE rowid = $2")
                .bind(idem_key_of(org_id, kind, external_id))
                .bind(rowid)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
    }
}

/// The SQLite migrations up to `version`.
pub(super) fn sqlite(version: i64) -> Migrator {
    migrator(SQLITE_MIGRATIONS, version)
}

/// The PostgreSQL migrations up to `version`.
pub(super) fn postgres(version: i64) -> Migrator {
    migrator(POSTGRES_MIGRATIONS, version)
}

fn migrator(embedded: Embedded, up_to: i64) -> Migrator {
    let migrations = embedded
        .iter()
        .filter(|(version, _, _)| *version <= up_to)
        .map(|(version, name, sql)| {
            Migration::new(
                *version,
                Cow::Borrowed(*name),
                MigrationType::Simple,
                sql.into_sql_str(),
                false,
            )
        })
        .collect();
    Migrator::with_migrations(migrations)
}
