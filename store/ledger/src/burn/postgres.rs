//! PostgreSQL's half of a burn: first without a lock (`at_once`), then locked; the locked
//! debit's steps each in one round trip: on a loaded server a round trip costs more than the
//! work of most of a burn's statements.

use sqlx::PgPool;

use super::{Burned, Burning};
use crate::StoreError;
use crate::backend::OnPostgres;

mod at_once;

impl OnPostgres for Burning<'_> {
    /// The wallet is found by the burn's own first read (`at_once`), which brings what an
    /// unlocked burn needs: one round trip for both. When the unlocked burn cannot be made, the
    /// locked one is (`Ledger::write`).
    async fn postgres(self, pool: &PgPool) -> Result<Burned, StoreError> {
        let store = self.store;
        let mut conn = pool.acquire().await?;
        let Some((wallet_id, currency, read)) =
            crate::spend::at_once::read(&mut conn, self.campaign, &self.burn.spend.wallet).await?
        else {
            drop(conn);
            return self.answer(store, None).await;
        };
        let (transaction, debit) = self.debit(wallet_id, currency);
        let result = match debit.at_once(&mut conn, read).await {
            Ok(true) => Ok(None),
            Ok(false) => {
                // The locked path takes a connection of its own.
                drop(conn);
                store.write(debit).await.and_then(|r| r)
            }
            Err(err) => Err(err),
        };
        self.answer(store, Some((transaction, result))).await
    }
}
