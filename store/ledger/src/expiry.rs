//! Expiry: each earn's tokens left when its time comes go back as one EXPIRY transaction. The
//! sweep visits the wallets whose earliest expiry has come (`wallets.expires_next`), each under
//! its lock, and works out from its spending position and aside rows what is due (see `fifo`).
//! An EXPIRY carries `lot:<earn id>` as its external id, which the database keeps unique, so
//! however many sweepers run at once, an earn expires once.

use std::collections::HashSet;

use chrono::{DateTime, Utc};

use crate::backend::{Steps, ToArg, Tx};
use crate::common::ids::new_id;
use crate::fifo::{self, Aside, Earn, LotRow};
use crate::spend::{ASIDE, EARNS, EARNS_FROM, apply, position, repay};
use crate::transactions::{Entry, INSERT_TRANSACTION, unsum};
use crate::{Ledger, StoreError, TransactionKind};

const BATCH: i64 = 500;

/// Expiry: lots past their date expire as transactions of their own (operator-wide).
impl Ledger {
    /// Expires every lot due at `at`; returns how many EXPIRY transactions this call wrote.
    /// Each visit moves a wallet's next expiry past `at`, so the call ends; a wallet that stays
    /// due after its visit (a visit that failed, or data this version cannot read) is logged
    /// and left to the next sweep, and the others go on.
    #[tracing::instrument(skip_all)]
    pub async fn expire(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut written = 0;
        // Wallets whose visit did not settle them (maybe another sweeper had), and of those
        // the ones that came back due: skipped from then on.
        let mut unsettled = HashSet::new();
        let mut stuck: Vec<String> = Vec::new();
        loop {
            let mut sql = String::from("SELECT id FROM wallets WHERE expires_next <= $1");
            if !stuck.is_empty() {
                let skipped: Vec<String> = (3..stuck.len() + 3).map(|i| format!("${i}")).collect();
                sql.push_str(&format!(" AND id NOT IN ({})", skipped.join(", ")));
            }
            sql.push_str(" ORDER BY expires_next LIMIT $2");
            let mut args = params![at, BATCH].to_vec();
            args.extend(stuck.iter().map(|wallet| wallet.to_arg()));
            let due: Vec<(String,)> = self.read_rows(&sql, &args).await?;
            if due.is_empty() {
                return Ok(written);
            }
            for (wallet,) in due {
                if unsettled.contains(&wallet) {
                    tracing::warn!(%wallet, "a wallet stays due after its visit; left for the next sweep");
                    stuck.push(wallet);
                    continue;
                }
                match self.expire_wallet(&wallet, at).await {
                    Ok(Some(expired)) => written += expired,
                    Ok(None) => {
                        unsettled.insert(wallet);
                    }
                    Err(err) => {
                        tracing::warn!(%wallet, %err, "a wallet's expiry failed");
                        unsettled.insert(wallet);
                    }
                }
            }
        }
    }

    /// Expires what is due in one wallet, if its next expiry has come; how many EXPIRY
    /// transactions that wrote (`None`: its next expiry, read, has not come).
    async fn expire_wallet(
        &self,
        wallet: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<usize>, StoreError> {
        let wallet = wallet.to_string();
        let written = self.now();
        self.write(Expiring {
            wallet,
            at,
            written,
        })
        .await
    }
}

/// What a wallet's visit needs, read under its lock.
const WALLET: &str = "SELECT org_id, campaign_id, currency, expires_next, fifo_date, fifo_id, \
     fifo_taken, owed FROM wallets WHERE id = $1";
/// The wallet less `$2` expired at `$3`, its next expiry `$4`, the first EXPIRY dated `$5`.
const DEBIT: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, updated_at = $3, expires_next = $4, ",
    unsum!("$5"),
    " WHERE id = $1"
);

/// One wallet's visit by the sweep.
struct Expiring {
    wallet: String,
    at: DateTime<Utc>,
    /// When it is written, as the store's clock says (`at` is the instant expired up to).
    written: DateTime<Utc>,
}

impl Expiring {
    async fn expire(&self, tx: &mut impl Tx) -> Result<Option<usize>, StoreError> {
        type WalletRow = (
            String,
            String,
            String,
            Option<DateTime<Utc>>,
            Option<DateTime<Utc>>,
            Option<String>,
            i64,
            i64,
        );
        type Lot = LotRow<DateTime<Utc>>;
        let (wallet, at) = (self.wallet.as_str(), self.at);
        let (org, campaign, currency, next, date, id, taken, owed): WalletRow = tx
            .row_locked(WALLET, params![wallet])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        if next.is_none_or(|next| next > at) {
            return Ok(None);
        }
        // Tokens a debt is owed are not the member's to lose: the debt is paid first.
        let at_position = match owed {
            0 => position((date, id, taken)),
            owed => repay(tx, wallet, position((date, id, taken)), owed).await?,
        };
        let aside: Vec<Lot> = tx.rows(ASIDE, params![wallet]).await?;
        let earns: Vec<Lot> = match &at_position {
            Some(p) => tx.rows(EARNS_FROM, params![wallet, p.date, p.id]).await?,
            None => tx.rows(EARNS, params![wallet]).await?,
        };
        let aside = aside.into_iter().map(Aside::from).collect();
        let earns: Vec<Earn<_>> = earns.into_iter().map(Earn::from).collect();
        let expired = fifo::expire(&at, at_position, aside, &earns);
        let mut debit = 0;
        let mut written = 0;
        let mut dated = None;
        for due in &expired.due {
            let id = new_id();
            // A lot expires once under `lot:{earn}`; one that expires again (tokens a refund
            // gave back after it had expired) under a key of its own. The wallet's lock keeps
            // two sweeps from expiring the same tokens twice.
            let first = format!("lot:{}", due.id);
            let again = format!("{first}:{id}");
            let mut entry = Entry {
                id: &id,
                org_id: &org,
                campaign_id: &campaign,
                wallet_id: wallet,
                kind: TransactionKind::Expiry,
                amount: due.remaining,
                external_id: &first,
                source_amount: None,
                currency: &currency,
                description: Some("Tokens expired"),
                comment: None,
                meta: None,
                date: due.expires_at,
                trace: None,
                rule_version: None,
                created_at: self.written,
                batch_id: None,
                fingerprint: None,
                expires_at: None,
            };
            let mut inserted = 0;
            for external_id in [&first, &again] {
                entry.external_id = external_id;
                let key = entry.idem_key();
                inserted = tx
                    .execute(INSERT_TRANSACTION, &entry.args(&key, None))
                    .await?;
                if inserted == 1 {
                    break;
                }
            }
            if inserted == 1 {
                let expiry = entry.transaction();
                crate::transactions::transaction_created(tx, &org, &campaign, &expiry).await?;
                debit += due.remaining;
                written += 1;
                dated =
                    Some(dated.map_or(due.expires_at, |d: DateTime<Utc>| d.min(due.expires_at)));
            }
        }
        apply(tx, wallet, &expired.spent).await?;
        let args = params![wallet, debit, self.written, expired.next, dated];
        tx.execute(DEBIT, args).await?;
        Ok(Some(written))
    }
}

impl Steps for Expiring {
    type Output = Option<usize>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.expire(tx).await
    }
}

#[cfg(test)]
mod tests {
    use chrono::Duration;

    use super::*;
    use crate::{Backend, EarnInput, Policy, RuleBook, Tokens};
    use programme::Expiry;

    /// A wallet whose next expiry the sweep cannot settle (here one stored past the year 9999,
    /// as an earlier version could: on SQLite its text sorts before today's) neither holds the
    /// sweep in a loop nor keeps another wallet's due lot from expiring.
    async fn a_wallet_that_stays_due_does_not_hold_the_sweep(store: Ledger) {
        let book = RuleBook::new(store.programme().clone());
        let mut wallets = Vec::new();
        for _ in 0..2 {
            let (campaign, wallet) = crate::testing::wallet_fixture(&store).await;
            let policy = Policy {
                expiry: Expiry::Days(30),
                ..Default::default()
            };
            store
                .programme()
                .set_policy(&campaign, policy)
                .await
                .unwrap();
            let earn = EarnInput {
                activity: None,
                earn_id: "old".into(),
                wallet: wallet.id.clone(),
                amount: "10".into(),
                date: store.now() - Duration::days(40),
                description: None,
                comment: None,
                meta: None,
            };
            store.submit_earn(&campaign, earn).await.unwrap();
            wallets.push((campaign, wallet));
        }
        while store.process_earns(&book, 100).await.unwrap() > 0 {}
        let far = match store.backend() {
            Backend::Sqlite => "+10000-01-01T00:00:00+00:00",
            Backend::Postgres => "10000-01-01T00:00:00Z",
        };
        let damaged = wallets[0].1.id.clone();
        let sql = match store.backend() {
            Backend::Sqlite => "UPDATE wallets SET expires_next = $1 WHERE id = $2",
            Backend::Postgres => "UPDATE wallets SET expires_next = $1::TIMESTAMPTZ WHERE id = $2",
        };
        store.execute(sql, params![far, damaged]).await.unwrap();

        let sweep = tokio::time::timeout(
            std::time::Duration::from_secs(60),
            store.expire(store.now()),
        );
        assert_eq!(sweep.await.expect("the sweep ends").unwrap(), 1);
        let (campaign, wallet) = &wallets[1];
        let balance = store
            .get_wallet(campaign, &wallet.id)
            .await
            .unwrap()
            .balance;
        assert_eq!(balance, Tokens::ZERO, "the other wallet's lot expired");
        assert_eq!(store.expire(store.now()).await.unwrap(), 0);
    }

    crate::testing::ledger_tests!(a_wallet_that_stays_due_does_not_hold_the_sweep);
}
