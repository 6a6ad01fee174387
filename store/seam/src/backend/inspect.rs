//! What tests ask of the database beyond the store's own operations: a statement's plan, the
//! work a statement does, raw statements that put the database in a state the store never
//! makes, and the bytes a column stores. Each backend answers in its own terms; the tests that
//! use these assert the same thing on both.

use sqlx::{AssertSqlSafe, Row as _};

use super::Arg;
use super::tx::{pg_args, sqlite_args};
use super::{Db, Pool, direct};
use crate::StoreError;
use sqlx::Arguments;

/// The highest `$n` placeholder in `sql`: the number of arguments the statement takes.
fn placeholders(sql: &str) -> usize {
    sql.split('$')
        .skip(1)
        .filter_map(|rest| {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// How a plan is asked for.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Plan {
    /// As the planner would run it.
    AsRun,
    /// On PostgreSQL with sorts and sequential scans priced out, so that an order no index
    /// gives shows up as a Sort node even on the nearly empty tables of a test.
    SortsPricedOut,
}

impl Db {
    /// The plan `sql` gets with `args` (as many as it takes; on SQLite missing ones are NULL), one
    /// line a node: SQLite's `EXPLAIN QUERY PLAN` details, PostgreSQL's `EXPLAIN` text. With
    /// `keys`, `sql` holds `{key}`/`{keys}` and is planned as `read_each` runs it: on SQLite for
    /// the first key, on PostgreSQL for all of them as one array.
    pub async fn query_plan(
        &self,
        sql: &str,
        args: &[Arg<'_>],
        keys: Option<&[String]>,
        how: Plan,
    ) -> String {
        let mut args: Vec<Arg<'_>> = args.to_vec();
        let lines: Result<Vec<String>, StoreError> = match &self.pool {
            Pool::Sqlite(direct) => {
                let sql = match keys {
                    Some(keys) => {
                        args.push(Arg::Text(Some(&keys[0])));
                        super::statements::keyed(sql, args.len(), false)
                    }
                    None => sql.to_string(),
                };
                direct.read(|c| {
                    let mut statement = c.prepare(&format!("EXPLAIN QUERY PLAN {sql}"))?;
                    args.resize(statement.parameter_count(), Arg::Text(None));
                    let lines = statement
                        .query_map(&*sqlite_args(&args), |row| row.get(3))?
                        .collect::<Result<_, _>>()?;
                    Ok(lines)
                })
            }
            Pool::Postgres(pool) => {
                let sql = match keys {
                    Some(_) => super::statements::keyed(sql, args.len() + 1, true),
                    None => sql.to_string(),
                };
                args.truncate(placeholders(&sql));
                async {
                    let mut arguments = pg_args(&args)?;
                    if let Some(keys) = keys {
                        arguments
                            .add(keys)
                            .map_err(|e| StoreError::NotCommitted(e.to_string()))?;
                    }
                    let mut tx = pool.begin().await?;
                    if how == Plan::SortsPricedOut {
                        sqlx::raw_sql(
                            "SET LOCAL enable_sort = off; SET LOCAL enable_seqscan = off",
                        )
                        .execute(&mut *tx)
                        .await?;
                    }
                    let explain = AssertSqlSafe(format!("EXPLAIN {sql}"));
                    let rows: Vec<(String,)> = sqlx::query_as_with(explain, arguments)
                        .fetch_all(&mut *tx)
                        .await?;
                    Ok(rows.into_iter().map(|(line,)| line).collect())
                }
                .await
            }
        };
        lines
            .unwrap_or_else(|e| panic!("the plan of {sql}: {e}"))
            .join("\n")
    }

    /// How much work `sql` (no arguments) does when run to its end, as each backend counts it:
    /// SQLite's virtual machine steps, or the rows PostgreSQL's plan nodes looked at (those they
    /// produced and those their filters threw away, times their loops).
    pub async fn query_work(&self, sql: &str) -> u64 {
        let work = match &self.pool {
            Pool::Sqlite(direct) => direct.read(|c| {
                let mut statement = c.prepare(sql)?;
                let mut rows = statement.query([])?;
                while rows.next()?.is_some() {}
                drop(rows);
                Ok(statement.get_status(rusqlite::StatementStatus::VmStep) as u64)
            }),
            Pool::Postgres(pool) => {
                let explain = AssertSqlSafe(format!("EXPLAIN (ANALYZE, FORMAT JSON) {sql}"));
                fn looked_at(node: &serde_json::Value) -> f64 {
                    let rows: f64 = ["Actual Rows", "Rows Removed by Filter"]
                        .iter()
                        .filter_map(|field| node[*field].as_f64())
                        .sum();
                    let below = node["Plans"]
                        .as_array()
                        .map_or(0.0, |plans| plans.iter().map(looked_at).sum());
                    rows * node["Actual Loops"].as_f64().unwrap_or(0.0) + below
                }
                sqlx::query_as(explain)
                    .fetch_one(pool)
                    .await
                    .map(|(plan,): (serde_json::Value,)| looked_at(&plan[0]["Plan"]) as u64)
                    .map_err(StoreError::from)
            }
        };
        work.unwrap_or_else(|e| panic!("the work of {sql}: {e}"))
    }
}

impl Db {
    /// Runs `sql` as it is, for tests that must put the database in a state the store's own
    /// operations never make (damaged or future data), and for benches that checkpoint it. On
    /// SQLite it runs outside any transaction, after the writes queued before it.
    pub async fn execute_raw(&self, sql: &str) -> Result<(), StoreError> {
        match &self.pool {
            Pool::Sqlite(direct) => {
                let sql = sql.to_string();
                direct
                    .outside_transaction(move |c| Ok(c.execute_batch(&sql)?))
                    .await
            }
            Pool::Postgres(pool) => {
                sqlx::raw_sql(AssertSqlSafe(sql.to_string()))
                    .execute(pool)
                    .await?;
                Ok(())
            }
        }
    }

    /// The first column of every row `sql` selects, as bytes (text columns by their UTF-8), for
    /// tests that read what is stored rather than what the store shows.
    pub async fn stored_bytes(&self, sql: &str) -> Vec<Vec<u8>> {
        let values: Result<Vec<Option<Vec<u8>>>, StoreError> = match &self.pool {
            Pool::Sqlite(direct) => direct.read(|c| {
                let mut values = Vec::new();
                direct::each_row(c, sql, &[], |row| {
                    values.push(match row.get_ref(0)? {
                        rusqlite::types::ValueRef::Text(v) | rusqlite::types::ValueRef::Blob(v) => {
                            Some(v.to_vec())
                        }
                        _ => None,
                    });
                    Ok(true)
                })?;
                Ok(values)
            }),
            Pool::Postgres(pool) => sqlx::query(AssertSqlSafe(sql.to_string()))
                .fetch_all(pool)
                .await
                .and_then(|rows| {
                    rows.iter()
                        .map(|row| {
                            row.try_get::<Option<Vec<u8>>, _>(0).or_else(|_| {
                                row.try_get::<Option<String>, _>(0)
                                    .map(|text| text.map(String::into_bytes))
                            })
                        })
                        .collect()
                })
                .map_err(StoreError::from),
        };
        values
            .unwrap_or_else(|e| panic!("{sql}: {e}"))
            .into_iter()
            .flatten()
            .collect()
    }
}
