//! The schema's history, once for both backends: each migration exists as a file under
//! `migrations/sqlite/` and `migrations/postgres/`, and the two trees must build the same schema
//! (a test compares them: `both_backends_build_the_same_schema`).

use std::borrow::Cow;

use sqlx::SqlSafeStr;
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
