//! What a database that is acting for someone appends to each of its writes: the audit trail's
//! entry (`crate::audit::Trail` is the one hook), in the write's own transaction. The seam
//! knows only this contract, so that the trail can be written against `Tx` like any domain.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use chrono::{DateTime, Utc};

use super::tx::{PgTx, SqliteTx, Work};
use crate::StoreError;

/// A step added to every write of a database `acting` with it, after the write's own steps.
pub trait WriteHook: Send + Sync + std::fmt::Debug + 'static {
    /// On SQLite's writer thread, where statements complete as they are called.
    fn sqlite(&self, tx: &mut SqliteTx<'_>, at: DateTime<Utc>) -> Result<(), StoreError>;
    /// On PostgreSQL, in the write's transaction.
    fn postgres<'a>(
        &'a self,
        tx: &'a mut PgTx<'_>,
        at: DateTime<Utc>,
    ) -> Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;
}

/// A write made by an acting database: the work, then the hook's step when the work's output
/// says it changed something (`changed`), in one transaction.
pub(super) struct Hooked<W: Work> {
    pub work: W,
    pub hook: Arc<dyn WriteHook>,
    pub at: DateTime<Utc>,
    pub changed: fn(&W::Output) -> bool,
}

impl<W: Work> Work for Hooked<W> {
    type Output = W::Output;

    async fn sqlite(self, tx: &mut SqliteTx<'_>) -> Result<Self::Output, StoreError> {
        let output = self.work.sqlite(tx).await?;
        if (self.changed)(&output) {
            self.hook.sqlite(tx, self.at)?;
        }
        Ok(output)
    }

    async fn postgres(self, tx: &mut PgTx<'_>) -> Result<Self::Output, StoreError> {
        let output = self.work.postgres(tx).await?;
        if (self.changed)(&output) {
            self.hook.postgres(tx, self.at).await?;
        }
        Ok(output)
    }
}
