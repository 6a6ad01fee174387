//! Expiry: each earn's tokens left when its time comes go back as one EXPIRY transaction. The
//! sweep visits the wallets whose earliest expiry has come (`wallets.expires_next`), each under
//! its lock, and works out from its spending position and aside rows what is due (see `fifo`).
//! An EXPIRY carries `lot:<earn id>` as its external id, which the database keeps unique, so
//! however many sweepers run at once, an earn expires once.

use chrono::{DateTime, Utc};

use crate::backend::{WritePool, lock};
use crate::common::ids::{new_id, now};
use crate::ledger::burn::{ASIDE, EARNS, EARNS_FROM, apply_spent, position};
use crate::ledger::fifo::{self, Aside, Earn, LotRow};
use crate::ledger::transactions::{Entry, INSERT_TRANSACTION, bind_entry};
use crate::{Store, StoreError, TransactionKind};

const BATCH: i64 = 500;

impl Store {
    /// Expires every lot due at `at`; returns how many EXPIRY transactions this call wrote.
    pub async fn expire(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut written = 0;
        loop {
            const DUE: &str = "SELECT id FROM wallets WHERE expires_next <= $1 \
                 ORDER BY expires_next LIMIT $2";
            let due: Vec<(String,)> = with_pool!(self, |pool| sqlx::query_as(DUE)
                .bind(at)
                .bind(BATCH)
                .fetch_all(pool)
                .await)?;
            if due.is_empty() {
                return Ok(written);
            }
            // Each visit moves the wallet's next expiry past `at` (here or in another sweeper),
            // so the loop ends.
            for (wallet,) in &due {
                written += self.expire_wallet(wallet, at).await?;
            }
        }
    }

    /// Expires what is due in one wallet, if its next expiry has come; how many EXPIRY
    /// transactions that wrote.
    async fn expire_wallet(&self, wallet: &str, at: DateTime<Utc>) -> Result<usize, StoreError> {
        const WALLET: &str = "SELECT org_id, campaign_id, currency, expires_next, fifo_date, \
             fifo_id, fifo_taken FROM wallets WHERE id = $1";
        const DEBIT: &str = "UPDATE wallets SET balance = balance - $2, updated_at = $3, \
             expires_next = $4 WHERE id = $1";
        type WalletRow = (
            String,
            String,
            String,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
            Option<String>,
            i64,
        );
        type Lot = LotRow<DateTime<Utc>>;
        with_writer!(self, |pool| async {
            let mut tx = pool.begin_write().await?;
            let (org, campaign, currency, next, date, id, taken): WalletRow =
                sqlx::query_as(lock(pool, WALLET))
                    .bind(wallet)
                    .fetch_one(&mut *tx)
                    .await?;
            if next.is_none_or(|next| next > at) {
                return Ok(0);
            }
            let at_position = position((date, id, taken));
            let aside: Vec<Lot> = sqlx::query_as(ASIDE)
                .bind(wallet)
                .fetch_all(&mut *tx)
                .await?;
            let earns: Vec<Lot> = match &at_position {
                Some(p) => {
                    sqlx::query_as(EARNS_FROM)
                        .bind(wallet)
                        .bind(p.date)
                        .bind(&p.id)
                        .fetch_all(&mut *tx)
                        .await?
                }
                None => {
                    sqlx::query_as(EARNS)
                        .bind(wallet)
                        .fetch_all(&mut *tx)
                        .await?
                }
            };
            let aside = aside.into_iter().map(Aside::from).collect();
            let earns: Vec<Earn<_>> = earns.into_iter().map(Earn::from).collect();
            let expired = fifo::expire(&at, at_position, aside, &earns);
            let mut debit = 0;
            let mut written = 0;
            for due in &expired.due {
                let (id, external_id) = (new_id(), format!("lot:{}", due.id));
                let entry = Entry {
                    id: &id,
                    org_id: &org,
                    campaign_id: &campaign,
                    wallet_id: wallet,
                    kind: TransactionKind::Expiry,
                    amount: due.remaining,
                    external_id: &external_id,
                    source_amount: None,
                    currency: &currency,
                    description: Some("Tokens expired"),
                    comment: None,
                    meta: None,
                    date: due.expires_at,
                    trace: None,
                    rule_version: None,
                    created_at: now(),
                    batch_id: None,
                    fingerprint: None,
                    expires_at: None,
                };
                let rows = bind_entry!(sqlx::query(INSERT_TRANSACTION), entry)
                    .execute(&mut *tx)
                    .await?
                    .rows_affected();
                if rows == 1 {
                    debit += due.remaining;
                    written += 1;
                }
            }
            apply_spent!(tx, wallet, &expired.spent);
            sqlx::query(DEBIT)
                .bind(wallet)
                .bind(debit)
                .bind(now())
                .bind(expired.next)
                .execute(&mut *tx)
                .await?;
            tx.commit().await?;
            Ok::<_, StoreError>(written)
        }
        .await)
    }
}
