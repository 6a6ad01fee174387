//! Expiry: each lot whose time has come gives its remaining tokens back as one EXPIRY
//! transaction. A lot's EXPIRY carries the lot's id as its external id, which the database keeps
//! unique, so however many sweepers run at once, a lot expires exactly once.

use chrono::{DateTime, Utc};

use crate::backend::{WritePool, lock};
use crate::common::ids::{new_id, now};
use crate::ledger::transactions::{Entry, INSERT_TRANSACTION, bind_entry};
use crate::{Store, StoreError, TransactionKind};

const BATCH: i64 = 500;

impl Store {
    /// Expires every lot due at `at`; returns how many EXPIRY transactions this call wrote.
    pub async fn expire(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut written = 0;
        loop {
            const DUE: &str = "SELECT id, wallet_id FROM lots WHERE remaining > 0 AND expires_at <= $1 \
                 ORDER BY expires_at, id LIMIT $2";
            let due: Vec<(String, String)> = with_pool!(self, |pool| sqlx::query_as(DUE)
                .bind(at)
                .bind(BATCH)
                .fetch_all(pool)
                .await)?;
            if due.is_empty() {
                return Ok(written);
            }
            let mut progressed = false;
            for (lot, wallet) in &due {
                if self.expire_lot(lot, wallet, at).await? {
                    written += 1;
                    progressed = true;
                }
            }
            // Another sweeper took them all: whatever is left is theirs or done.
            if !progressed && (due.len() as i64) < BATCH {
                return Ok(written);
            }
        }
    }

    /// Expires one lot if it is still due; false when another sweeper or a burn got there first.
    async fn expire_lot(
        &self,
        lot: &str,
        wallet: &str,
        at: DateTime<Utc>,
    ) -> Result<bool, StoreError> {
        // The wallet is locked before the lot, in the order burns lock them, so the two never
        // wait on each other in a circle.
        const WALLET: &str = "SELECT org_id, campaign_id, currency FROM wallets WHERE id = $1";
        const LOT: &str = "SELECT remaining, expires_at FROM lots WHERE id = $1 AND remaining > 0 AND expires_at <= $2";
        const SPEND: &str = "UPDATE lots SET remaining = 0 WHERE id = $1";
        const DEBIT: &str =
            "UPDATE wallets SET balance = balance - $2, updated_at = $3 WHERE id = $1";
        with_writer!(self, |pool| async {
            let mut tx = pool.begin_write().await?;
            let (org, campaign, currency): (String, String, String) =
                sqlx::query_as(lock(pool, WALLET))
                    .bind(wallet)
                    .fetch_one(&mut *tx)
                    .await?;
            let due: Option<(i64, DateTime<Utc>)> = sqlx::query_as(lock(pool, LOT))
                .bind(lot)
                .bind(at)
                .fetch_optional(&mut *tx)
                .await?;
            let Some((remaining, expires_at)) = due else {
                return Ok(false);
            };
            let (id, external_id) = (new_id(), format!("lot:{lot}"));
            let entry = Entry {
                id: &id,
                org_id: &org,
                campaign_id: &campaign,
                wallet_id: wallet,
                kind: TransactionKind::Expiry,
                amount: remaining,
                external_id: &external_id,
                source_amount: None,
                currency: &currency,
                description: Some("Tokens expired"),
                comment: None,
                meta: None,
                date: expires_at,
                trace: None,
                rule_version: None,
                created_at: now(),
                batch_id: None,
                fingerprint: None,
            };
            let written = bind_entry!(sqlx::query(INSERT_TRANSACTION), entry)
                .execute(&mut *tx)
                .await?
                .rows_affected();
            if written == 1 {
                sqlx::query(SPEND).bind(lot).execute(&mut *tx).await?;
                sqlx::query(DEBIT)
                    .bind(wallet)
                    .bind(remaining)
                    .bind(now())
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            Ok::<_, StoreError>(written == 1)
        }
        .await)
    }
}
