//! SQLite's half of a burn: the wallet found by the cached lookup every request uses, then the
//! debit's steps a statement each, on the writer thread (no round trips to save).

use super::{Burned, Burning};
use crate::StoreError;
use crate::backend::OnSqlite;
use crate::backend::direct::Direct;

impl OnSqlite for Burning<'_> {
    async fn sqlite(self, _: &Direct) -> Result<Burned, StoreError> {
        let store = self.store;
        let wallet = match store
            .get_wallet(self.campaign, &self.burn.spend.wallet)
            .await
        {
            Ok(wallet) => wallet,
            Err(StoreError::NotFound { .. }) => return self.answer(store, None).await,
            Err(err) => return Err(err),
        };
        let (transaction, debit) = self.debit(wallet.id, wallet.currency);
        let result = store.write(debit).await.and_then(|r| r);
        self.answer(store, Some((transaction, result))).await
    }
}
