//! Placing a hold, under its wallet's lock: a repeat of its `externalId` answered, what the
//! wallet may spend checked, then its tokens taken from the oldest lots as a burn takes them
//! (a debt the wallet owes paid first, see `spend::repay`), the balance left as it is.

use chrono::{DateTime, Utc};

use super::{
    Hold, HoldPlaced, HoldRow, HoldStatus, NewHold, hold_columns, hold_from_row, hold_key,
};
use crate::backend::{Arg, Steps, ToArg, Tx};
use crate::common::ids::{Fingerprint, new_id};
use crate::refusals;
use crate::spend::{position, record_spends, repay, take_moving_later};
use crate::{Campaign, StoreError, Tokens};

/// What wallet `$1` may spend (its balance less what is held), its position and its debt; and
/// whether a hold or a refusal holds the key `$2` (each read only then), in the statement that
/// locks the wallet.
const WALLET: &str = "SELECT balance - held, fifo_date, fifo_id, fifo_taken, owed, \
     EXISTS (SELECT 1 FROM holds WHERE idem_key = $2), \
     EXISTS (SELECT 1 FROM refusals WHERE idem_key = $2) FROM wallets WHERE id = $1";
type WalletRow = (
    i64,
    Option<DateTime<Utc>>,
    Option<String>,
    i64,
    i64,
    bool,
    bool,
);
const SELECT_BY_KEY: &str = concat!(
    "SELECT ",
    hold_columns!(),
    " FROM holds WHERE idem_key = $1"
);
const INSERT: &str = "INSERT INTO holds (id, org_id, campaign_id, wallet_id, external_id, \
     idem_key, fingerprint, amount, currency, description, comment, meta, status, expires_at, \
     created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
     $14, $15, $15) ON CONFLICT (idem_key) DO NOTHING";
/// The wallet once the hold reserved `$2` at `$3`, its position moved to (`$4`, `$5`, `$6`)
/// when the hold's tokens moved it.
const RESERVE: &str = "UPDATE wallets SET held = held + $2, updated_at = $3, \
     fifo_date = COALESCE($4, fifo_date), fifo_id = COALESCE($5, fifo_id), \
     fifo_taken = COALESCE($6, fifo_taken) WHERE id = $1";

pub struct Placing {
    pub(super) org_id: String,
    campaign_id: String,
    hold: NewHold,
    /// The wallet's id and currency.
    wallet: String,
    currency: String,
    fingerprint: Fingerprint,
    pub(super) min_balance: i64,
    /// When it is placed, as the store's clock says.
    at: DateTime<Utc>,
}

impl Placing {
    /// The placing of `hold` on the wallet `wallet` (its id) of `campaign`, which must keep
    /// `min_balance`.
    pub fn new(
        campaign: &Campaign,
        hold: NewHold,
        wallet: String,
        currency: String,
        min_balance: Tokens,
        at: DateTime<Utc>,
    ) -> Placing {
        Placing {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            fingerprint: Fingerprint::of_request(&hold),
            hold,
            wallet,
            currency,
            min_balance: min_balance.micros(),
            at,
        }
    }

    /// `place`, keeping a refusal for the balance under the hold's key (`Ok(Err(_))`: the
    /// refusal is all that is written).
    async fn run_keeping(
        &self,
        tx: &mut impl Tx,
    ) -> Result<Result<HoldPlaced, StoreError>, StoreError> {
        match self.place(tx).await {
            Err(err @ StoreError::InsufficientBalance { .. }) => {
                let key = hold_key(&self.org_id, &self.hold.spend.external_id);
                refusals::keep(tx, &key, &self.fingerprint, &err, self.at).await?;
                Ok(Err(err))
            }
            other => other.map(Ok),
        }
    }

    /// Places the hold inside the caller's transaction; `InsufficientBalance` before anything
    /// is written.
    pub async fn place(&self, tx: &mut impl Tx) -> Result<HoldPlaced, StoreError> {
        let (h, wallet) = (&self.hold, &self.wallet);
        let key = hold_key(&self.org_id, &h.spend.external_id);
        let (free, date, id, taken, owed, held_before, refused_before): WalletRow = tx
            .row_locked(WALLET, params![wallet, key])
            .await?
            .ok_or(StoreError::NotFound { what: "wallet" })?;
        // Under the wallet's lock, twins of one request come one after the other.
        if held_before && let Some(earlier) = tx.row::<HoldRow>(SELECT_BY_KEY, params![key]).await?
        {
            let stored = earlier.fingerprint.clone();
            if self.fingerprint.matches(&stored).is_err() {
                return Err(self.fingerprint.conflict("externalId", &stored));
            }
            let hold = hold_from_row(earlier)?;
            return Ok(HoldPlaced {
                hold,
                replayed: true,
            });
        }
        if refused_before {
            refusals::answer_earlier(tx, &key, &self.fingerprint, "externalId").await?;
        }
        let amount = h.spend.amount.micros();
        if free - amount < self.min_balance {
            return Err(StoreError::InsufficientBalance {
                available: Tokens::from_micros((free - self.min_balance).max(0)),
            });
        }
        let hold = self.hold_row();
        let args = self.insert_args(&hold, &key);
        if tx.execute(INSERT, &args).await? == 0 {
            // A twin on another wallet (not behind this one's lock) took the id meanwhile: a
            // retry replays it or names the difference.
            return Err(StoreError::Conflict {
                field: "externalId",
            });
        }
        let at_position = position((date, id, taken));
        let at_position = match owed {
            0 => at_position,
            owed => repay(tx, wallet, at_position, owed).await?,
        };
        let (spent, left) = take_moving_later(tx, wallet, at_position, amount, None).await?;
        if left > 0 {
            return Err(StoreError::NotCommitted(format!(
                "wallet {wallet}'s lots hold less than its balance less what is held"
            )));
        }
        let (moved_date, moved_id, moved_taken) = spent.moved_to();
        let args = params![wallet, amount, self.at, moved_date, moved_id, moved_taken];
        tx.execute(RESERVE, args).await?;
        record_spends(tx, &hold.id, &spent.takes).await?;
        Ok(HoldPlaced {
            hold,
            replayed: false,
        })
    }
}

impl Placing {
    /// The hold to write: new, open, placed now.
    pub(super) fn hold_row(&self) -> Hold {
        let (h, at) = (&self.hold, self.at);
        Hold {
            id: new_id(),
            wallet_id: self.wallet.clone(),
            external_id: h.spend.external_id.clone(),
            amount: h.spend.amount,
            currency: self.currency.clone(),
            description: Some(h.spend.description.clone()),
            comment: h.spend.comment.clone(),
            meta: h.spend.meta.clone(),
            status: HoldStatus::Held,
            expires_at: h.expires_at,
            captured: None,
            transaction_id: None,
            created_at: at,
            updated_at: at,
        }
    }

    /// `hold`'s values for `INSERT`'s parameters, `key` its `hold_key`.
    pub(super) fn insert_args<'a>(&'a self, hold: &'a Hold, key: &'a [u8]) -> [Arg<'a>; 15] {
        [
            hold.id.to_arg(),
            self.org_id.to_arg(),
            self.campaign_id.to_arg(),
            self.wallet.to_arg(),
            hold.external_id.to_arg(),
            key.to_arg(),
            self.fingerprint.text.to_arg(),
            Arg::Int(Some(hold.amount.micros())),
            hold.currency.to_arg(),
            hold.description.to_arg(),
            hold.comment.to_arg(),
            hold.meta.to_arg(),
            HoldStatus::Held.as_str().to_arg(),
            hold.expires_at.to_arg(),
            self.at.to_arg(),
        ]
    }
}

impl Steps for Placing {
    type Output = Result<HoldPlaced, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.run_keeping(tx).await
    }
}
