//! The schema a store's migrations built, read back from the database's own catalogue in one
//! backend-neutral form, so that a test can show the two migration trees agree.

use std::collections::{BTreeMap, BTreeSet};

use sqlx::Row;

use crate::backend::Pool;
use crate::{Db, StoreError};

/// Tables by name.
pub type Schema = BTreeMap<String, Table>;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Table {
    /// Column name to its type class and whether it may be NULL.
    pub columns: BTreeMap<String, (&'static str, bool)>,
    pub primary_key: Vec<String>,
    /// Unique constraints and indexes, each by its columns (`(expr)` for an expression), with
    /// the index's name when it was created by name (`CREATE INDEX`), and whether it is partial.
    pub indexes: BTreeSet<Index>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Index {
    pub columns: Vec<String>,
    pub unique: bool,
    pub partial: bool,
    pub name: Option<String>,
}

/// The type classes both backends share: SQLite keeps times and JSON as text.
fn class(declared: &str) -> &'static str {
    let declared = declared.to_ascii_lowercase();
    match declared.as_str() {
        "text"
        | "varchar"
        | "character varying"
        | "timestamp with time zone"
        | "timestamptz"
        | "date"
        | "jsonb"
        | "json" => "text",
        "integer" | "bigint" | "smallint" | "int" | "int8" | "int4" => "integer",
        "blob" | "bytea" => "blob",
        "boolean" | "bool" => "boolean",
        "real" | "double precision" | "numeric" => "number",
        _ => "unknown",
    }
}

impl Db {
    /// This store's tables as its migrations left them (the migrator's own table left out).
    pub async fn schema(&self) -> Result<Schema, StoreError> {
        match &self.pool {
            Pool::Sqlite(_) => sqlite_schema(self).await,
            Pool::Postgres(pool) => postgres_schema(pool).await,
        }
    }
}

async fn sqlite_schema(store: &Db) -> Result<Schema, StoreError> {
    let tables: Vec<(String,)> = store
        .read_rows(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' \
             AND name NOT LIKE '_sqlx%'",
            &[],
        )
        .await?;
    let mut schema = Schema::new();
    for (name,) in tables {
        let mut table = Table::default();
        let mut primary: Vec<(i64, String)> = Vec::new();
        let columns: Vec<(String, String, bool, i64)> = store
            .read_rows(
                "SELECT name, type, \"notnull\", pk FROM pragma_table_info($1)",
                params![name],
            )
            .await?;
        for (column, declared, not_null, pk) in columns {
            if pk > 0 {
                primary.push((pk, column.clone()));
            }
            // A primary key column is never NULL, whatever its declaration says.
            table
                .columns
                .insert(column, (class(&declared), !not_null && pk == 0));
        }
        primary.sort();
        table.primary_key = primary.into_iter().map(|(_, c)| c).collect();
        let indexes: Vec<(String, String, bool, bool)> = store
            .read_rows(
                "SELECT name, origin, \"unique\", partial FROM pragma_index_list($1)",
                params![name],
            )
            .await?;
        for (index, origin, unique, partial) in indexes {
            if origin == "pk" {
                continue;
            }
            let columns: Vec<(Option<String>,)> = store
                .read_rows("SELECT name FROM pragma_index_info($1)", params![index])
                .await?;
            table.indexes.insert(Index {
                columns: columns
                    .into_iter()
                    .map(|(c,)| c.unwrap_or_else(|| "(expr)".into()))
                    .collect(),
                unique,
                partial,
                name: (origin == "c").then_some(index),
            });
        }
        schema.insert(name, table);
    }
    Ok(schema)
}

async fn postgres_schema(pool: &sqlx::PgPool) -> Result<Schema, StoreError> {
    let mut schema = Schema::new();
    let columns = sqlx::query(
        "SELECT table_name::TEXT AS table_name, column_name::TEXT AS column_name, \
         data_type::TEXT AS data_type, is_nullable = 'YES' AS nullable \
         FROM information_schema.columns WHERE table_schema = current_schema() \
         AND table_name NOT LIKE '_sqlx%'",
    )
    .fetch_all(pool)
    .await?;
    for row in columns {
        let table: String = row.get("table_name");
        let declared: String = row.get("data_type");
        schema.entry(table).or_default().columns.insert(
            row.get("column_name"),
            (class(&declared), row.get("nullable")),
        );
    }
    // Each index with its columns in order (0 stands for an expression), and whether it backs
    // a constraint (then it has no name of its own to compare).
    let indexes = sqlx::query(
        "SELECT t.relname::TEXT AS table_name, i.relname::TEXT AS index_name, \
           x.indisprimary AS primary, x.indisunique AS unique, x.indpred IS NOT NULL AS partial, \
           EXISTS (SELECT 1 FROM pg_constraint c WHERE c.conindid = x.indexrelid) AS constraint, \
           ARRAY(SELECT COALESCE(a.attname::TEXT, '(expr)') \
                 FROM unnest(x.indkey::INT2[]) WITH ORDINALITY AS k(attnum, n) \
                 LEFT JOIN pg_attribute a ON a.attrelid = x.indrelid AND a.attnum = k.attnum \
                 ORDER BY k.n) AS columns \
         FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid \
         JOIN pg_class t ON t.oid = x.indrelid \
         JOIN pg_namespace n ON n.oid = t.relnamespace \
         WHERE n.nspname = current_schema() AND t.relname NOT LIKE '_sqlx%'",
    )
    .fetch_all(pool)
    .await?;
    for row in indexes {
        let table = schema.entry(row.get("table_name")).or_default();
        let columns: Vec<String> = row.get("columns");
        if row.get("primary") {
            table.primary_key = columns;
            continue;
        }
        let backs_constraint: bool = row.get("constraint");
        table.indexes.insert(Index {
            columns,
            unique: row.get("unique"),
            partial: row.get("partial"),
            name: (!backs_constraint).then(|| row.get("index_name")),
        });
    }
    Ok(schema)
}

/// Every difference between `sqlite` and `postgres`, one line each; empty when they agree.
pub fn differences(sqlite: &Schema, postgres: &Schema) -> Vec<String> {
    let mut out = Vec::new();
    let names: BTreeSet<&String> = sqlite.keys().chain(postgres.keys()).collect();
    for name in names {
        let (Some(s), Some(p)) = (sqlite.get(name), postgres.get(name)) else {
            let only = if sqlite.contains_key(name) {
                "SQLite"
            } else {
                "PostgreSQL"
            };
            out.push(format!("table {name}: only on {only}"));
            continue;
        };
        let columns: BTreeSet<&String> = s.columns.keys().chain(p.columns.keys()).collect();
        for column in columns {
            let (sc, pc) = (s.columns.get(column), p.columns.get(column));
            if sc != pc {
                out.push(format!(
                    "{name}.{column}: SQLite {sc:?}, PostgreSQL {pc:?} (type class, nullable)"
                ));
            }
        }
        if s.primary_key != p.primary_key {
            out.push(format!(
                "{name} primary key: SQLite {:?}, PostgreSQL {:?}",
                s.primary_key, p.primary_key
            ));
        }
        for index in s.indexes.difference(&p.indexes) {
            out.push(format!("{name}: index only on SQLite: {index:?}"));
        }
        for index in p.indexes.difference(&s.indexes) {
            out.push(format!("{name}: index only on PostgreSQL: {index:?}"));
        }
    }
    out
}
