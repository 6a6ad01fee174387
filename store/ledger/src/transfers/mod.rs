//! Transfers: tokens one wallet gives another of the same campaign (a member's gift, a family
//! pooling its points), in one database transaction under both wallets' locks (taken in id
//! order, so two transfers between the same wallets in opposite directions cannot deadlock).
//! The sender's TRANSFER_OUT takes its tokens from the oldest lots, as a burn does; the receiver
//! gets one TRANSFER_IN per expiry date among those lots, each a lot of its own that keeps the
//! date (and names the TRANSFER_OUT in `corrects`). Lifetime earnings, and so tiers, move only
//! when the campaign's policy says so; the policy may forbid transfers or cap what a wallet
//! sends in a day. Idempotent by `externalId` (unique among the organisation's transfers), with
//! refusals for the balance or the cap kept under it.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use sqlx::PgPool;

use crate::backend::direct::Direct;
use crate::backend::{Forked, OnPostgres, OnSqlite, Steps, ToArg, Tx};
use crate::common::ids::{Fingerprint, as_micros};
use crate::credit::{SET_ASIDE, sooner};
use crate::fifo::Spent;
use crate::refusals;
use crate::spend::at_once::{or_locked, read as at_once_read};
use crate::spend::{position, record_spends, repay, take_moving_later};
use crate::transactions::{
    SELECT_BY_KEY, TransactionRow, idem_key, replay_or_conflict, transaction_columns, unsum,
};
use crate::{Campaign, Ledger, StoreError, Tokens, Transaction, TransactionKind, Transfers};

mod at_once;

/// Its serialization is what a repeat must match (`Fingerprint::of_request`): each field under
/// the name a client sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct NewTransfer {
    /// The sending and receiving wallets' ids or external references.
    #[serde(rename = "fromWalletId")]
    pub from: String,
    #[serde(rename = "toWalletId")]
    pub to: String,
    /// The client's id for this transfer: unique among the organisation's transfers.
    #[serde(skip)]
    pub external_id: String,
    #[serde(serialize_with = "as_micros")]
    pub amount: Tokens,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

// What the receiver got: one lot per expiry date among the sender's lots taken (its
// `transaction_id` is the TRANSFER_IN's). The API answers it as it is (`ReceivedView`): its
// documentation is the API's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = ReceivedView))]
#[serde(rename_all = "camelCase")]
pub struct Received {
    pub transaction_id: String,
    #[cfg_attr(feature = "schema", schema(value_type = f64))]
    pub amount: Tokens,
    /// When these tokens expire (absent: never), as they did in the sender's wallet.
    pub expires_at: Option<DateTime<Utc>>,
}

// A transfer (its `id` is the TRANSFER_OUT's, shown as a BURN), as the API answers it
// (`TransferView`): its documentation is the API's.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = TransferView))]
#[serde(rename_all = "camelCase")]
pub struct Transfer {
    /// The sending side's transaction (a BURN in the sender's history).
    pub id: String,
    pub external_id: String,
    pub from_wallet_id: String,
    pub to_wallet_id: String,
    #[cfg_attr(feature = "schema", schema(value_type = f64))]
    pub amount: Tokens,
    pub currency: String,
    pub description: Option<String>,
    /// Internal use.
    pub comment: Option<String>,
    #[cfg_attr(feature = "schema", schema(value_type = Option<Object>))]
    pub meta: Option<Value>,
    pub date: DateTime<Utc>,
    /// Whether lifetime earnings (and so tiers) moved with the tokens: the campaign's policy.
    pub earned_moved: bool,
    /// The receiving side: one EARN per expiry date among the tokens given, soonest first.
    pub received: Vec<Received>,
}

/// A transfer made, and whether an earlier identical request made it.
#[derive(Debug, Clone, PartialEq)]
pub struct Transferred {
    pub transfer: Transfer,
    pub replayed: bool,
}

/// A transfer's TRANSFER_IN transactions: id, wallet, amount, expiry, whether earnings moved.
const LEGS: &str = "SELECT id, wallet_id, amount, expires_at, COALESCE(earned_moved, FALSE) \
     FROM transactions WHERE corrects = $1 AND kind = 'TRANSFER_IN'";
type LegRow = (String, String, i64, Option<DateTime<Utc>>, bool);
/// Both wallets `$1` and `$2`, in id order (the order their locks are taken): what each may
/// spend, its position and its debt.
const WALLETS: &str = "SELECT id, balance - held, fifo_date, fifo_id, fifo_taken, owed \
     FROM wallets WHERE id IN ($1, $2) ORDER BY id";
type WalletRow = (i64, Option<DateTime<Utc>>, Option<String>, i64, i64);
/// What wallet `$1` has transferred out since `$2`, besides transfer `$3` (this one's claim).
const SENT_SINCE: &str = "SELECT CAST(COALESCE(SUM(amount), 0) AS BIGINT) FROM transactions \
     WHERE wallet_id = $1 AND kind = 'TRANSFER_OUT' AND date >= $2 AND id <> $3";
/// The sender after the transfer (dated `$4`): `$2` off its balance, `$3` off its lifetime
/// earnings, its position moved to (`$5`, `$6`, `$7`) when the tokens taken moved it.
const SEND: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, earned = earned - $3, updated_at = $4, ",
    unsum!("$4"),
    ", fifo_date = COALESCE($5, fifo_date), fifo_id = COALESCE($6, fifo_id), \
     fifo_taken = COALESCE($7, fifo_taken), tier_id = ",
    tier_for!("wallets.earned - $3"),
    " WHERE id = $1"
);
/// The receiver after the transfer (dated `$4`): `$2` more in its balance, `$3` in its
/// lifetime earnings, its next expiry moved to `$5` if sooner, unless either would pass `$6`
/// (`Tokens::MAX`).
const RECEIVE: &str = concat!(
    "UPDATE wallets SET balance = balance + $2, earned = earned + $3, updated_at = $4, ",
    unsum!("$4"),
    ", expires_next = ",
    sooner!("$5"),
    ", tier_id = ",
    tier_for!("wallets.earned + $3"),
    " WHERE id = $1 AND balance <= $6 - $2 AND earned <= $6 - $3 RETURNING id"
);
/// One side of a transfer (`INSERT_TRANSACTION`'s parameters, then what it names in `corrects`
/// and whether earnings moved), unless its key (`$20`) holds a transaction or a refusal: under
/// both wallets' locks, a twin of the request sees what the first made of it here.
const INSERT_SIDE: &str = concat!(
    "INSERT INTO transactions (",
    crate::transactions::entry_columns!(),
    ", corrects, earned_moved) SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, \
     $14, $15, $16, $17, $18, $19, $20, $21, $22 \
     WHERE NOT EXISTS (SELECT 1 FROM refusals WHERE idem_key = $20) \
     ON CONFLICT (idem_key) DO NOTHING"
);
/// A refused transfer's claim of its `externalId`, undone.
const UNCLAIM: &str = "DELETE FROM transactions WHERE id = $1";

/// Transfers between a campaign's wallets (scope: `&Campaign`).
impl Ledger {
    /// Moves `transfer.amount` from one wallet of the campaign to another. `UnknownReference`
    /// for a wallet the organisation does not hold; `Refused`: `transfers_forbidden` (the
    /// campaign's policy), `other_campaign` (naming `toWalletId`: a wallet of another campaign,
    /// so perhaps another currency), `transfer_cap_exceeded` (naming `amount`), `already_exists`
    /// (naming the first field that differs) for an `externalId` used for another transfer,
    /// `balance_ceiling`, `same_wallet` (naming `toWalletId`); `InsufficientBalance`
    /// when the sender's balance less what it holds and the minimum cannot cover it. The
    /// earlier transfer (`replayed`) for the same request again.
    #[tracing::instrument(skip_all)]
    pub async fn transfer(
        &self,
        campaign: &Campaign,
        transfer: NewTransfer,
    ) -> Result<Transferred, StoreError> {
        crate::limits::check_client_key(&transfer.external_id)?;
        let policy = self.programme().policy(campaign).await?;
        if policy.transfers == Transfers::Forbidden {
            return Err(StoreError::refused(
                "transfers_forbidden",
                None,
                "the programme does not allow transfers between wallets".into(),
            ));
        }
        let sending = Sending {
            store: self,
            campaign,
            transfer,
            policy,
        };
        self.fork(sending).await
    }

    /// The id of the campaign's wallet `reference`: `UnknownReference` on `field` when the
    /// organisation has none, `Refused` (`other_campaign`) when another campaign holds it.
    async fn transfer_wallet(
        &self,
        campaign: &Campaign,
        reference: &str,
        field: &'static str,
    ) -> Result<String, StoreError> {
        const ELSEWHERE: &str = "SELECT campaign_id FROM wallets WHERE org_id = $1 \
             AND (id = $2 OR external_id = $2) LIMIT 1";
        match self.get_wallet(campaign, reference).await {
            Ok(wallet) => Ok(wallet.id),
            Err(StoreError::NotFound { .. }) => {
                let elsewhere: Option<(String,)> = self
                    .read_row(ELSEWHERE, params![campaign.org_id, reference])
                    .await?;
                Err(match elsewhere {
                    Some(_) => StoreError::refused(
                        "other_campaign",
                        Some(field.into()),
                        format!(
                            "wallet `{reference}` belongs to another campaign: tokens move only \
                             between wallets of one campaign and currency"
                        ),
                    ),
                    None => StoreError::UnknownReference {
                        field,
                        message: format!("no wallet `{reference}` in the organisation"),
                    },
                })
            }
            Err(err) => Err(err),
        }
    }

    /// The campaign's transfer whose id (its TRANSFER_OUT's) or `externalId` is `reference`.
    #[tracing::instrument(skip_all)]
    pub async fn get_transfer(
        &self,
        campaign: &Campaign,
        reference: &str,
    ) -> Result<Transfer, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            transaction_columns!(),
            " FROM transactions WHERE org_id = $1 AND campaign_id = $2 \
             AND kind = 'TRANSFER_OUT' AND id = COALESCE((SELECT id FROM transactions \
             WHERE id = $3), (SELECT id FROM transactions WHERE idem_key = $4))"
        );
        let key = idem_key(&campaign.org_id, TransactionKind::TransferOut, reference);
        let args = params![campaign.org_id, campaign.id, reference, key];
        let row: Option<TransactionRow> = self.read_row(SQL, args).await?;
        let out = crate::transactions::transaction_from_row(
            row.ok_or(StoreError::NotFound { what: "transfer" })?,
        )?;
        let legs: Vec<LegRow> = self.read_rows(LEGS, params![out.id]).await?;
        transfer_of(out, legs)
    }
}

/// A transfer from its TRANSFER_OUT and its TRANSFER_INs.
fn transfer_of(out: Transaction, legs: Vec<LegRow>) -> Result<Transfer, StoreError> {
    let to = legs.first().map(|l| l.1.clone()).ok_or_else(|| {
        StoreError::NotCommitted(format!("transfer {} has no receiving side", out.id))
    })?;
    let earned_moved = legs.first().is_some_and(|l| l.4);
    let mut received: Vec<Received> = legs
        .into_iter()
        .map(|(id, _, amount, expires_at, _)| Received {
            transaction_id: id,
            amount: Tokens::from_micros(amount),
            expires_at,
        })
        .collect();
    received.sort_by_key(|r| (r.expires_at.is_none(), r.expires_at));
    Ok(Transfer {
        id: out.id,
        external_id: out.external_id.unwrap_or_default(),
        from_wallet_id: out.wallet_id,
        to_wallet_id: to,
        amount: out.amount,
        currency: out.currency,
        description: out.description,
        comment: out.comment,
        meta: out.meta,
        date: out.date,
        earned_moved,
        received,
    })
}

/// One transfer, for the backend's half: SQLite makes it under both wallets' locks on the
/// writer; PostgreSQL first tries without a lock (`at_once`).
struct Sending<'a> {
    store: &'a Ledger,
    campaign: &'a Campaign,
    transfer: NewTransfer,
    policy: crate::Policy,
}

impl Forked for Sending<'_> {
    type Output = Transferred;
}

impl Sending<'_> {
    /// The transfer from wallet `from` to the campaign's wallet the request names (its id found
    /// here): `same_wallet` when they are one.
    async fn between(self, from: String) -> Result<Transferring, StoreError> {
        let (store, campaign) = (self.store, self.campaign);
        let to = store
            .transfer_wallet(campaign, &self.transfer.to, "toWalletId")
            .await?;
        if from == to {
            return Err(StoreError::refused(
                "same_wallet",
                Some("toWalletId".into()),
                "the tokens would go to the wallet they come from".into(),
            ));
        }
        let policy = self.policy;
        Ok(Transferring {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            currency: campaign.currency.clone(),
            fingerprint: Fingerprint::of_request(&self.transfer),
            transfer: self.transfer,
            from,
            to,
            min_balance: policy.min_balance.micros(),
            daily_cap: policy.transfer_daily_cap.map(Tokens::micros),
            move_earned: policy.transfers_move_earned,
            at: store.now(),
        })
    }
}

impl OnSqlite for Sending<'_> {
    async fn sqlite(self, _: &Direct) -> Result<Transferred, StoreError> {
        let store = self.store;
        let from = store
            .transfer_wallet(self.campaign, &self.transfer.from, "fromWalletId")
            .await?;
        store.write(self.between(from).await?).await?
    }
}

impl OnPostgres for Sending<'_> {
    /// The sender is found by the unlocked transfer's own read, which brings what it needs. A
    /// transfer the unlocked write cannot make (or a repeat, which its unique key refuses
    /// there) is the locked step's, which answers a repeat.
    async fn postgres(self, pool: &PgPool) -> Result<Transferred, StoreError> {
        let store = self.store;
        let mut conn = pool.acquire().await?;
        let read = at_once_read(&mut conn, self.campaign, &self.transfer.from).await?;
        // Not held while the receiver is looked up: that takes a connection of its own.
        drop(conn);
        let Some((from, _, snapshot)) = read else {
            let from = store
                .transfer_wallet(self.campaign, &self.transfer.from, "fromWalletId")
                .await?;
            return store.write(self.between(from).await?).await?;
        };
        let transferring = self.between(from).await?;
        let mut conn = pool.acquire().await?;
        if let Some(made) = or_locked(transferring.at_once(&mut conn, snapshot).await)? {
            return Ok(made);
        }
        drop(conn);
        store.write(transferring).await?
    }
}

struct Transferring {
    org_id: String,
    campaign_id: String,
    currency: String,
    transfer: NewTransfer,
    fingerprint: Fingerprint,
    /// The wallets' ids.
    from: String,
    to: String,
    min_balance: i64,
    daily_cap: Option<i64>,
    move_earned: bool,
    at: DateTime<Utc>,
}

impl Transferring {
    /// The transaction of one side, with its link; whether it was written (not when its key
    /// holds a transaction or a refusal already).
    async fn write_side(
        &self,
        tx: &mut impl Tx,
        side: &Transaction,
        expires_at: Option<DateTime<Utc>>,
        link: Option<&str>,
    ) -> Result<bool, StoreError> {
        let mut entry = side.entry(&self.org_id, &self.campaign_id, &self.fingerprint.text);
        entry.expires_at = expires_at;
        let key = entry.idem_key();
        let mut args = entry.args(&key, None).to_vec();
        args.extend([link.to_arg(), self.move_earned.to_arg()]);
        Ok(tx.execute(INSERT_SIDE, &args).await? == 1)
    }

    fn transaction(
        &self,
        kind: TransactionKind,
        wallet: &str,
        amount: i64,
        key: String,
    ) -> Transaction {
        let t = &self.transfer;
        let amount = Tokens::from_micros(amount);
        let currency = self.currency.clone();
        Transaction::new(kind, wallet.to_string(), amount, key, currency, self.at).saying(
            t.description.clone(),
            t.comment.clone(),
            t.meta.clone(),
        )
    }

    /// The receiving side of `out`, which took `spent`: a TRANSFER_IN per expiry date among
    /// the lots taken (those that never expire first, then by date), each with that expiry.
    fn legs(
        &self,
        out: &Transaction,
        spent: &Spent<DateTime<Utc>>,
    ) -> Vec<(Transaction, Option<DateTime<Utc>>)> {
        let mut by_expiry: BTreeMap<Option<DateTime<Utc>>, i64> = BTreeMap::new();
        for ((_, took), expires_at) in spent.takes.iter().zip(&spent.expiries) {
            *by_expiry.entry(*expires_at).or_default() += took;
        }
        let to = self.to.as_str();
        by_expiry
            .into_iter()
            .enumerate()
            .map(|(n, (expires_at, amount))| {
                let key = format!("transfer:{}:{n}", out.id);
                let leg = self.transaction(TransactionKind::TransferIn, to, amount, key);
                (leg, expires_at)
            })
            .collect()
    }

    /// `Ok(Err(_))`: refused for the balance or the cap, the refusal kept.
    async fn transfer(
        &self,
        tx: &mut impl Tx,
    ) -> Result<Result<Transferred, StoreError>, StoreError> {
        let t = &self.transfer;
        let (from, to) = (self.from.as_str(), self.to.as_str());
        // Both locks, in id order, in one statement.
        type Locked = (String, i64, Option<DateTime<Utc>>, Option<String>, i64, i64);
        let states: Vec<Locked> = tx.rows_locked(WALLETS, params![from, to]).await?;
        let state = |id: &str| -> Result<WalletRow, StoreError> {
            states
                .iter()
                .find(|s| s.0 == id)
                .map(|(_, free, date, at, taken, owed)| (*free, *date, at.clone(), *taken, *owed))
                .ok_or(StoreError::NotFound { what: "wallet" })
        };
        let (free, date, id, taken, owed) = state(from)?;
        let (_, to_date, to_id, ..) = state(to)?;
        let amount = t.amount.micros();
        let key = &t.external_id;
        let out = self.transaction(TransactionKind::TransferOut, from, amount, key.clone());
        if !self.write_side(tx, &out, None, None).await? {
            // The key holds a transfer (the same request: its answer; another: a conflict) or
            // a refusal (refused again the same way).
            let key = idem_key(&self.org_id, TransactionKind::TransferOut, key);
            let earlier: Option<TransactionRow> = tx.row(SELECT_BY_KEY, params![key]).await?;
            let Some(row) = earlier else {
                refusals::answer_earlier(tx, &key, &self.fingerprint, "externalId").await?;
                // A twin between other wallets (not behind these locks) took the key meanwhile.
                return Err(StoreError::Conflict {
                    field: "externalId",
                });
            };
            let out = replay_or_conflict(row, &self.fingerprint)?;
            let legs: Vec<LegRow> = tx.rows(LEGS, params![out.id]).await?;
            return Ok(Ok(Transferred {
                transfer: transfer_of(out, legs)?,
                replayed: true,
            }));
        }
        let refused = if free - amount < self.min_balance {
            Some(StoreError::InsufficientBalance {
                available: Tokens::from_micros((free - self.min_balance).max(0)),
            })
        } else {
            self.over_cap(tx, amount, &out.id).await?
        };
        if let Some(refused) = refused {
            // The claim is all that was written.
            tx.execute(UNCLAIM, params![out.id]).await?;
            let key = idem_key(&self.org_id, TransactionKind::TransferOut, key);
            refusals::keep(tx, &key, &self.fingerprint, &refused, self.at).await?;
            return Ok(Err(refused));
        }
        let moved = if self.move_earned { amount } else { 0 };
        let at_position = match owed {
            0 => position((date, id, taken)),
            owed => repay(tx, from, position((date, id, taken)), owed).await?,
        };
        let (spent, left) = take_moving_later(tx, from, at_position, amount, None).await?;
        if left > 0 {
            return Err(StoreError::NotCommitted(format!(
                "wallet {from}'s lots hold less than its balance less what is held"
            )));
        }
        record_spends(tx, &out.id, &spent.takes).await?;
        crate::transactions::transaction_created(tx, &self.org_id, &self.campaign_id, &out).await?;
        let (moved_date, moved_id, moved_taken) = spent.moved_to();
        let args = params![
            from,
            amount,
            moved,
            self.at,
            moved_date,
            moved_id,
            moved_taken
        ];
        tx.execute(SEND, args).await?;

        let receiver_at = to_date.zip(to_id);
        let mut legs = Vec::new();
        for (leg, expires_at) in self.legs(&out, &spent) {
            let amount = leg.amount.micros();
            if !self.write_side(tx, &leg, expires_at, Some(&out.id)).await? {
                return Err(StoreError::NotCommitted(format!(
                    "transfer {}'s receiving side {} was written before",
                    out.id,
                    leg.external_id.as_deref().unwrap_or_default()
                )));
            }
            // Behind the receiver's position (it spent tokens dated later): a lot of its own.
            if receiver_at
                .as_ref()
                .is_some_and(|(d, i)| (&leg.date, leg.id.as_str()) < (d, i.as_str()))
            {
                let args = params![leg.id, to, leg.date, amount, expires_at];
                tx.execute(SET_ASIDE, args).await?;
            }
            crate::transactions::transaction_created(tx, &self.org_id, &self.campaign_id, &leg)
                .await?;
            legs.push((leg.id, to.to_string(), amount, expires_at, self.move_earned));
        }
        let soonest = legs.iter().filter_map(|l| l.3).min();
        let ceiling = Tokens::MAX.micros();
        let args = params![to, amount, moved, self.at, soonest, ceiling];
        if tx.row::<(String,)>(RECEIVE, args).await?.is_none() {
            return Err(StoreError::refused(
                "balance_ceiling",
                Some("amount".into()),
                format!(
                    "the receiving wallet would hold more than {} tokens",
                    Tokens::MAX
                ),
            ));
        }
        Ok(Ok(Transferred {
            transfer: transfer_of(out, legs)?,
            replayed: false,
        }))
    }

    /// The refusal of a transfer that would take the sender past the campaign's daily cap.
    async fn over_cap(
        &self,
        tx: &mut impl Tx,
        amount: i64,
        claim: &str,
    ) -> Result<Option<StoreError>, StoreError> {
        let Some(cap) = self.daily_cap else {
            return Ok(None);
        };
        let day = self
            .at
            .date_naive()
            .and_hms_opt(0, 0, 0)
            .map(|d| d.and_utc());
        let (sent,): (i64,) = tx
            .row(SENT_SINCE, params![self.from, day, claim])
            .await?
            .unwrap_or_default();
        Ok((sent + amount > cap).then(|| {
            StoreError::refused(
                "transfer_cap_exceeded",
                Some("amount".into()),
                format!(
                    "the programme lets a wallet transfer {} tokens a day; {} sent today",
                    Tokens::from_micros(cap),
                    Tokens::from_micros(sent)
                ),
            )
        }))
    }
}

impl Steps for Transferring {
    type Output = Result<Transferred, StoreError>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.transfer(tx).await
    }
}
