//! Holds: tokens reserved on a wallet (a checkout waiting for its payment) until a capture
//! spends them as a BURN, a void releases them, or they lapse at the hold's expiry. A hold takes
//! its tokens from the wallet's lots as a burn does, oldest first (recorded in `spends` under
//! the hold's id while it is open), so no spend can take them and the expiry sweep does not
//! expire them meanwhile; the balance keeps them until the capture, and the wallet's `held`
//! says how much of it is reserved: what a spend or another hold may take is the balance less
//! `held` (and less the campaign's minimum). A capture spends the oldest of the hold's tokens
//! and gives the rest back to their lots, as a void or a lapse gives back all of them (each lot
//! keeps its expiry: one already past it expires at the next sweep). Each step runs under the
//! wallet's lock (`place.rs`, `settle.rs`), so no interleaving with burns, other holds, expiry
//! or reversals lets a hold overdraw the wallet, and a hold is settled once; on PostgreSQL a
//! hold and a whole capture are first tried without the lock, in one statement that checks what
//! it read (`at_once.rs`).
use chrono::{DateTime, Utc};
use sqlx::PgPool;

use crate::backend::direct::Direct;
use crate::backend::{Forked, OnPostgres, OnSqlite};
use crate::holds::place::Placing;
use crate::holds::settle::HoldRef;
use crate::spend::at_once::{or_locked, read as at_once_read};
use crate::{Campaign, Ledger, Page, Paged, StoreError, Tokens};

mod at_once;
pub mod place;
mod record;
pub mod settle;

pub use record::{Hold, HoldFilter, HoldPlaced, HoldSettled, HoldStatus, NewHold, Settle};
pub(crate) use record::{HoldRow, SELECT_IN_CAMPAIGN, hold_columns, hold_from_row, hold_key};

/// Open holds whose expiry has come (`$1`), soonest first, at most `$2`.
const LAPSING: &str = "SELECT id FROM holds WHERE status = 'held' AND expires_at <= $1 \
     ORDER BY expires_at LIMIT $2";
/// How many holds a lapse sweep reads at a time.
const LAPSE_BATCH: i64 = 500;

/// Holds: tokens reserved, then captured, voided or lapsed (scope: `&Campaign`).
impl Ledger {
    /// Reserves `hold.amount` of the wallet's tokens. `InsufficientBalance` when the balance
    /// less what is held and the campaign's minimum cannot cover it (kept: the same request
    /// again is refused the same way); `Refused` (`already_exists`) when its `externalId` was
    /// used for another hold; the earlier hold (`replayed`) when used for this one.
    #[tracing::instrument(skip_all)]
    pub async fn hold(&self, campaign: &Campaign, hold: NewHold) -> Result<HoldPlaced, StoreError> {
        crate::limits::check_client_key(&hold.spend.external_id)?;
        // Before a connection is held: a policy not cached would take another from the pool.
        let min_balance = self.programme().policy(campaign).await?.min_balance;
        let holding = Holding {
            store: self,
            campaign,
            hold,
            min_balance,
        };
        self.fork(holding).await
    }

    /// The campaign's hold with id or `externalId` `reference`.
    #[tracing::instrument(skip_all)]
    pub async fn get_hold(&self, campaign: &Campaign, reference: &str) -> Result<Hold, StoreError> {
        let key = hold_key(&campaign.org_id, reference);
        let args = params![campaign.org_id, campaign.id, reference, key];
        let row: Option<HoldRow> = self.read_row(SELECT_IN_CAMPAIGN, args).await?;
        row.ok_or(StoreError::NotFound { what: "hold" })
            .and_then(hold_from_row)
    }

    /// The campaign's holds, newest first, filtered.
    #[tracing::instrument(skip_all)]
    pub async fn list_holds(
        &self,
        campaign: &Campaign,
        filter: &HoldFilter,
        page: Page,
    ) -> Result<Paged<Hold>, StoreError> {
        let status = filter.status.map(HoldStatus::as_str);
        let rows = self
            .read_page(
                page,
                hold_columns!(),
                "FROM holds WHERE org_id = $1 AND campaign_id = $2 \
                 AND ($3 IS NULL OR wallet_id = $3) AND ($4 IS NULL OR status = $4)",
                "created_at DESC, id DESC",
                params![campaign.org_id, campaign.id, filter.wallet_id, status],
            )
            .await?;
        Paged::of(rows, page, hold_from_row)
    }

    /// Captures `amount` of the hold (None: all of it) as a BURN, releasing the rest.
    /// `Refused`: `capture_exceeds_hold` (naming `amount`), `hold_closed` for a hold voided,
    /// lapsed (its expiry come: it lapses now if the sweep has not released it yet) or captured
    /// for another amount; a capture of the same amount again answers the first
    /// (`settled_now` false).
    #[tracing::instrument(skip_all)]
    pub async fn capture_hold(
        &self,
        campaign: &Campaign,
        reference: &str,
        amount: Option<Tokens>,
    ) -> Result<HoldSettled, StoreError> {
        if amount.is_some_and(|a| !a.is_positive()) {
            return Err(StoreError::invalid("amount", "must be more than 0"));
        }
        let capturing = Capturing {
            store: self,
            campaign,
            reference,
            amount,
            at: self.now(),
        };
        self.fork(capturing).await
    }

    /// Releases the hold's tokens. A hold already released (voided or lapsed) is answered as
    /// it is; a captured one is `Refused` (`hold_closed`).
    #[tracing::instrument(skip_all)]
    pub async fn void_hold(
        &self,
        campaign: &Campaign,
        reference: &str,
    ) -> Result<HoldSettled, StoreError> {
        let hold = in_campaign(campaign, reference);
        self.settle_at(hold, Settle::Void, self.now()).await
    }

    /// Releases every open hold whose expiry has come by `at` (operator-wide); how many this
    /// call released. Each is released in a transaction of its own under its wallet's lock, so
    /// however many nodes sweep at once a hold lapses once, and one that a node was releasing
    /// when it died (its transaction undone) is released by the next sweep.
    #[tracing::instrument(skip_all)]
    pub async fn lapse_holds(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let mut lapsed = 0;
        loop {
            let due: Vec<(String,)> = self.read_rows(LAPSING, params![at, LAPSE_BATCH]).await?;
            let mut now_lapsed = 0;
            for (id,) in &due {
                match self
                    .settle_at(HoldRef::Id(id.clone()), Settle::Lapse, at)
                    .await
                {
                    Ok(settled) if settled.settled_now => now_lapsed += 1,
                    Ok(_) => {}
                    Err(err) => tracing::warn!(hold = %id, %err, "a hold's lapse failed"),
                }
            }
            lapsed += now_lapsed;
            // A batch that released none (each failed, or another node got there) ends the
            // sweep: the next one tries again.
            if (due.len() as i64) < LAPSE_BATCH || now_lapsed == 0 {
                return Ok(lapsed);
            }
        }
    }

    async fn settle_at(
        &self,
        hold: HoldRef,
        how: Settle,
        at: DateTime<Utc>,
    ) -> Result<HoldSettled, StoreError> {
        self.write(settle::Settling { hold, how, at }).await?
    }
}

/// One hold to place, for the backend's half: SQLite places it under the wallet's lock on the
/// writer; PostgreSQL first tries without a lock (`at_once`).
struct Holding<'a> {
    store: &'a Ledger,
    campaign: &'a Campaign,
    hold: NewHold,
    min_balance: Tokens,
}

impl Forked for Holding<'_> {
    type Output = HoldPlaced;
}

impl Holding<'_> {
    fn placing(self, wallet: String, currency: String) -> Placing {
        let at = self.store.now();
        Placing::new(
            self.campaign,
            self.hold,
            wallet,
            currency,
            self.min_balance,
            at,
        )
    }
}

impl OnSqlite for Holding<'_> {
    async fn sqlite(self, _: &Direct) -> Result<HoldPlaced, StoreError> {
        let store = self.store;
        let wallet = store
            .get_wallet(self.campaign, &self.hold.spend.wallet)
            .await?;
        store
            .write(self.placing(wallet.id, wallet.currency))
            .await?
    }
}

impl OnPostgres for Holding<'_> {
    /// The wallet is found by the unlocked hold's own read, which brings what it needs: one
    /// round trip for both. A hold the unlocked write cannot make (or a repeat, which its
    /// unique key refuses there) is the locked step's, which answers a repeat.
    async fn postgres(self, pool: &PgPool) -> Result<HoldPlaced, StoreError> {
        let store = self.store;
        let mut conn = pool.acquire().await?;
        let read = at_once_read(&mut conn, self.campaign, &self.hold.spend.wallet).await?;
        let (wallet, currency, snapshot) = read.ok_or(StoreError::NotFound { what: "wallet" })?;
        let placing = self.placing(wallet, currency);
        if let Some(placed) = or_locked(placing.at_once(&mut conn, snapshot).await)? {
            return Ok(placed);
        }
        // The locked step takes a connection of its own.
        drop(conn);
        store.write(placing).await?
    }
}

/// A client's capture of a hold, for the backend's half: PostgreSQL first tries a whole
/// capture without a lock (`at_once`).
struct Capturing<'a> {
    store: &'a Ledger,
    campaign: &'a Campaign,
    reference: &'a str,
    amount: Option<Tokens>,
    at: DateTime<Utc>,
}

impl Forked for Capturing<'_> {
    type Output = HoldSettled;
}

impl Capturing<'_> {
    async fn locked(self) -> Result<HoldSettled, StoreError> {
        let hold = in_campaign(self.campaign, self.reference);
        let how = Settle::Capture(self.amount);
        self.store.settle_at(hold, how, self.at).await
    }
}

impl OnSqlite for Capturing<'_> {
    async fn sqlite(self, _: &Direct) -> Result<HoldSettled, StoreError> {
        self.locked().await
    }
}

impl OnPostgres for Capturing<'_> {
    async fn postgres(self, pool: &PgPool) -> Result<HoldSettled, StoreError> {
        let mut conn = pool.acquire().await?;
        let (campaign, reference) = (self.campaign, self.reference);
        let tried = at_once::capture(&mut conn, campaign, reference, self.amount, self.at).await;
        if let Some(settled) = or_locked(tried)? {
            return Ok(settled);
        }
        drop(conn);
        self.locked().await
    }
}

/// The campaign's hold with id or `externalId` `reference`.
fn in_campaign(campaign: &Campaign, reference: &str) -> HoldRef {
    HoldRef::InCampaign {
        org_id: campaign.org_id.clone(),
        campaign_id: campaign.id.clone(),
        reference: reference.to_string(),
    }
}
