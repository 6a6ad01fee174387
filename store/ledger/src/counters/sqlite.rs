//! SQLite: the writer thread holds the whole database, so nothing is locked; each counter is
//! read with one prepared statement.

use std::collections::{HashMap, HashSet};

use chrono::NaiveDate;
use rules::Tally;

use super::{CounterRows, Wanted};
use crate::backend::{SqliteTx, Tx};
use crate::{StoreError, Tokens};

impl CounterRows for SqliteTx<'_> {
    async fn lock(&mut self, _keys: &[(&str, &rules::CounterKey)]) -> Result<(), StoreError> {
        Ok(())
    }

    async fn load(&mut self, wanted: &[Wanted]) -> Result<HashMap<String, Tally>, StoreError> {
        const BUCKETS: &str = "SELECT bucket, times, tokens FROM limit_counters \
             WHERE campaign_id = $1 AND counter = $2 AND scope = $3 AND bucket BETWEEN $4 AND $5";
        let mut tallies: HashMap<String, Tally> = HashMap::new();
        for w in wanted {
            let args = params![w.campaign, w.key.counter, w.key.scope, w.from, w.to];
            let rows: Vec<(NaiveDate, i64, i64)> = self.rows(BUCKETS, args).await?;
            let tally = tallies.entry(w.campaign.clone()).or_default();
            for (bucket, times, tokens) in rows {
                tally.set_more(
                    &w.key,
                    bucket,
                    times,
                    Tokens::from_micros(tokens).to_decimal(),
                );
            }
        }
        Ok(tallies)
    }

    async fn existing(&mut self, keys: &[Vec<u8>]) -> Result<HashSet<Vec<u8>>, StoreError> {
        const HELD: &str = "SELECT idem_key FROM transactions WHERE idem_key = $1";
        let mut held = HashSet::new();
        for key in keys {
            let found: Option<(Vec<u8>,)> = self.row(HELD, params![key.as_slice()]).await?;
            held.extend(found.map(|(k,)| k));
        }
        Ok(held)
    }
}
