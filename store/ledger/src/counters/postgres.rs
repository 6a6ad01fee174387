//! PostgreSQL: one advisory lock per counter (transaction-scoped, taken in key order, so that
//! nodes sharing the database take turns on a counter), and each step one statement of arrays
//! whatever the number of counters.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use rules::{CounterKey, Tally};

use super::{CounterRows, Wanted};
use crate::backend::PgTx;
use crate::common::ids::sha256;
use crate::{StoreError, Tokens};

/// The advisory lock of a counter: 64 bits of its digest (two counters that share one only
/// take turns when they need not).
fn lock_id(campaign: &str, key: &CounterKey) -> i64 {
    let digest = sha256(&format!(
        "limit\0{campaign}\0{}\0{}",
        key.counter, key.scope
    ));
    let mut bytes = [0_u8; 8];
    bytes.copy_from_slice(&digest[..8]);
    i64::from_le_bytes(bytes)
}

impl CounterRows for PgTx<'_> {
    async fn lock(&mut self, keys: &[(&str, &CounterKey)]) -> Result<(), StoreError> {
        let mut ids: Vec<i64> = keys.iter().map(|(c, k)| lock_id(c, k)).collect();
        ids.sort_unstable();
        ids.dedup();
        // UNNEST keeps the array's order: every writer takes its locks lowest first.
        sqlx::query("SELECT pg_advisory_xact_lock(k) FROM UNNEST($1::BIGINT[]) AS k")
            .bind(&ids)
            .execute(&mut *self.0)
            .await?;
        Ok(())
    }

    async fn load(&mut self, wanted: &[Wanted]) -> Result<HashMap<String, Tally>, StoreError> {
        const BUCKETS: &str = "SELECT c.campaign_id, c.counter, c.scope, c.bucket, c.times, \
             c.tokens FROM UNNEST($1::TEXT[], $2::TEXT[], $3::TEXT[], $4::DATE[], $5::DATE[]) \
             AS w (campaign_id, counter, scope, first, last) JOIN limit_counters c \
             ON c.campaign_id = w.campaign_id AND c.counter = w.counter AND c.scope = w.scope \
             AND c.bucket BETWEEN w.first AND w.last";
        let campaigns: Vec<&str> = wanted.iter().map(|w| w.campaign.as_str()).collect();
        let counters: Vec<&str> = wanted.iter().map(|w| w.key.counter.as_str()).collect();
        let scopes: Vec<&str> = wanted.iter().map(|w| w.key.scope.as_str()).collect();
        let firsts: Vec<NaiveDate> = wanted.iter().map(|w| w.from).collect();
        let lasts: Vec<NaiveDate> = wanted.iter().map(|w| w.to).collect();
        let rows: Vec<(String, String, String, NaiveDate, i64, i64)> = sqlx::query_as(BUCKETS)
            .bind(&campaigns)
            .bind(&counters)
            .bind(&scopes)
            .bind(&firsts)
            .bind(&lasts)
            .fetch_all(&mut *self.0)
            .await?;
        let mut tallies: HashMap<String, Tally> = HashMap::new();
        for (campaign, counter, scope, bucket, times, tokens) in rows {
            let key = CounterKey { counter, scope };
            let tokens = Tokens::from_micros(tokens).to_decimal();
            tallies
                .entry(campaign)
                .or_default()
                .set_more(&key, bucket, times, tokens);
        }
        Ok(tallies)
    }

    async fn existing(&mut self, keys: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, StoreError> {
        let rows: Vec<(Vec<u8>,)> =
            sqlx::query_as("SELECT idem_key FROM transactions WHERE idem_key = ANY($1)")
                .bind(keys)
                .fetch_all(&mut *self.0)
                .await?;
        Ok(rows.into_iter().map(|(k,)| k).collect())
    }
}
