//! The audit: for every wallet, the balance must equal EARN - BURN - EXPIRY, the lifetime
//! earned total must equal the EARN sum, and the unspent remainders of its lots must add up to
//! the balance.

use crate::{Store, StoreError, Tokens};

/// One wallet whose figures do not agree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discrepancy {
    pub wallet_id: String,
    /// `balance`, `earned` or `lots`.
    pub check: &'static str,
    /// What the wallet says.
    pub recorded: Tokens,
    /// What its transactions (or lots) add up to.
    pub computed: Tokens,
}

impl Store {
    /// Checks every wallet; an empty list means the ledger agrees with itself.
    pub async fn audit(&self) -> Result<Vec<Discrepancy>, StoreError> {
        // SUM of BIGINT is NUMERIC on PostgreSQL: cast back, so both backends give an i64.
        const SQL: &str = "SELECT w.id, w.balance, w.earned, \
             CAST(COALESCE((SELECT SUM(CASE t.kind WHEN 'EARN' THEN t.amount ELSE -t.amount END) \
                 FROM transactions t WHERE t.wallet_id = w.id), 0) AS BIGINT), \
             CAST(COALESCE((SELECT SUM(t.amount) FROM transactions t \
                 WHERE t.wallet_id = w.id AND t.kind = 'EARN'), 0) AS BIGINT), \
             CAST(COALESCE((SELECT SUM(l.remaining) FROM lots l WHERE l.wallet_id = w.id), 0) AS BIGINT) \
             FROM wallets w ORDER BY w.id";
        let rows: Vec<(String, i64, i64, i64, i64, i64)> =
            with_pool!(self, |pool| sqlx::query_as(SQL).fetch_all(pool).await)?;
        let mut found = Vec::new();
        for (wallet, balance, earned, net, earns, lots) in rows {
            for (check, recorded, computed) in [
                ("balance", balance, net),
                ("earned", earned, earns),
                ("lots", balance, lots),
            ] {
                if recorded != computed {
                    found.push(Discrepancy {
                        wallet_id: wallet.clone(),
                        check,
                        recorded: Tokens::from_micros(recorded),
                        computed: Tokens::from_micros(computed),
                    });
                }
            }
        }
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A wallet whose balance was changed behind the ledger's back is reported.
    async fn a_tampered_balance_is_found(store: Store) {
        let (_, wallet) = crate::testing::wallet_fixture(&store).await;
        assert!(store.audit().await.unwrap().is_empty());
        with_writer!(store, |pool| {
            sqlx::query("UPDATE wallets SET balance = 7000000 WHERE id = $1")
                .bind(&wallet.id)
                .execute(pool)
                .await
                .map(|_| ())
        })
        .unwrap();
        let found = store.audit().await.unwrap();
        let checks: Vec<_> = found
            .iter()
            .map(|d| (d.wallet_id.as_str(), d.check))
            .collect();
        assert_eq!(
            checks,
            [
                (wallet.id.as_str(), "balance"),
                (wallet.id.as_str(), "lots")
            ]
        );
        assert_eq!(found[0].recorded, Tokens::whole(7));
    }

    crate::backend_tests!(a_tampered_balance_is_found);
}
