//! Burns: spending tokens, synchronously. A burn never takes a wallet below the programme's
//! minimum balance, even when many arrive at once (the wallet is locked for the burn), and a
//! repeated `externalId` never debits twice.

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::backend::Forked;
use crate::common::ids::Fingerprint;
use crate::spend::Spend;
use crate::transactions::{SELECT_BY_KEY, TransactionRow, idem_key};
use crate::{Campaign, Ledger, StoreError, Tokens, Transaction, TransactionKind};

mod debit;
mod postgres;
mod sqlite;

use debit::replay_or_conflict;
pub use debit::{Burned, Debit, Debited};

/// Its serialization is what a repeat must match (`Fingerprint::of_request`): each field under
/// the name a client sends it by, the key itself left out.
#[derive(Debug, Clone, Serialize)]
pub struct NewBurn {
    #[serde(flatten)]
    pub spend: Spend,
    /// When absent, now.
    pub date: Option<DateTime<Utc>>,
}

/// Burns: tokens spent from a wallet, oldest lots first (scope: `&Campaign`).
impl Ledger {
    /// Spends `burn.amount` from the wallet. `InsufficientBalance` when the balance less the
    /// campaign's minimum cannot cover it; `Refused` (`already_exists`, naming the first field that differs) when that id was used for
    /// a different burn; the earlier transaction (`replayed`) when it was used for this one.
    #[tracing::instrument(skip_all)]
    pub async fn burn(&self, campaign: &Campaign, burn: NewBurn) -> Result<Burned, StoreError> {
        crate::limits::check_client_key(&burn.spend.external_id)?;
        if let Some(Err(refused)) = burn.date.map(|date| self.date_window(None).check(date)) {
            return Err(StoreError::invalid("date", refused.message()));
        }
        // Before a connection is held: a policy not cached would take another from the pool.
        let min_balance = self.programme().policy(campaign).await?.min_balance;
        let fingerprint = Fingerprint::of_request(&burn);
        let burning = Burning {
            store: self,
            campaign,
            burn,
            fingerprint,
            min_balance,
        };
        self.fork(burning).await
    }
}

/// One burn, for the backend's half (`sqlite.rs`, `postgres.rs`): each finds the wallet, has
/// it debited and answers with `Burning::answer`.
struct Burning<'a> {
    store: &'a Ledger,
    campaign: &'a Campaign,
    burn: NewBurn,
    fingerprint: Fingerprint,
    min_balance: Tokens,
}

impl Forked for Burning<'_> {
    type Output = Burned;
}

impl Burning<'_> {
    /// The BURN transaction from the wallet `wallet_id` and the debit that writes it.
    fn debit(&self, wallet_id: String, currency: String) -> (Transaction, Debit) {
        let burn = &self.burn;
        let at = self.store.now();
        let s = &burn.spend;
        let key = s.external_id.clone();
        let mut transaction = Transaction::new(
            TransactionKind::Burn,
            wallet_id,
            s.amount,
            key,
            currency,
            at,
        )
        .saying(
            Some(s.description.clone()),
            s.comment.clone(),
            s.meta.clone(),
        );
        transaction.date = burn.date.unwrap_or(at);
        let fingerprint = self.fingerprint.clone();
        let debit = Debit::new(
            self.campaign,
            transaction.clone(),
            fingerprint,
            self.min_balance,
        );
        (transaction, debit)
    }

    /// The burn's answer once its debit of `transaction` ended with `result`, or (`None`) once
    /// no wallet was found. A repeat is found by the debit itself (its claim of the
    /// externalId), so a burn costs no lookup before it; only a repeat naming a wallet by a
    /// reference it no longer has, or one that lost a race to its twin, looks it up here.
    async fn answer(
        &self,
        store: &Ledger,
        debited: Option<(Transaction, Result<Option<Burned>, StoreError>)>,
    ) -> Result<Burned, StoreError> {
        let (campaign, burn, fingerprint) = (self.campaign, &self.burn, &self.fingerprint);
        let Some((transaction, result)) = debited else {
            return store
                .earlier_burn(campaign, burn, fingerprint)
                .await?
                .ok_or(StoreError::NotFound { what: "wallet" });
        };
        match result {
            Ok(Some(earlier)) => Ok(earlier),
            Ok(None) => Ok(Burned {
                transaction,
                replayed: false,
            }),
            // Another request with this externalId won the race: answer as if it came first.
            Err(err) if err.is_unique_violation() => store
                .earlier_burn(campaign, burn, fingerprint)
                .await?
                .ok_or(StoreError::Conflict {
                    field: "externalId",
                }),
            Err(err) => Err(err),
        }
    }
}

impl Ledger {
    async fn earlier_burn(
        &self,
        campaign: &Campaign,
        burn: &NewBurn,
        fingerprint: &Fingerprint,
    ) -> Result<Option<Burned>, StoreError> {
        let key = idem_key(
            &campaign.org_id,
            TransactionKind::Burn,
            &burn.spend.external_id,
        );
        let row: Option<TransactionRow> = self.read_row(SELECT_BY_KEY, params![key]).await?;
        row.map(|row| replay_or_conflict(row, fingerprint))
            .transpose()
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A burn's fingerprint, derived from its serialization, is the one earlier releases stored
    /// (six digests in the order of the fields a client sends): a repeat of a burn they made
    /// still replays, and another body names the field that differs.
    #[test]
    fn a_burn_fingerprint_is_what_earlier_releases_stored() {
        let burn = NewBurn {
            spend: Spend {
                wallet: "w-1".into(),
                external_id: "b-1".into(),
                amount: Tokens::from_micros(1_500_000),
                description: "coffee".into(),
                comment: None,
                meta: Some(json!({"store": "s-1"})),
            },
            date: Some("2026-01-02T03:04:05Z".parse().unwrap()),
        };
        let fingerprint = Fingerprint::of_request(&burn);
        assert_eq!(
            fingerprint.text,
            "f:c3b5f4ef15a9.490d7c887c80.0f52baaa23b0.74234e98afe7.c1a31218cabe.4964b29e565b"
        );
        let another = NewBurn {
            spend: Spend {
                wallet: "w-2".into(),
                external_id: "b-2".into(),
                ..(burn.clone()).spend
            },
            ..burn.clone()
        };
        assert_eq!(
            Fingerprint::of_request(&another).matches(&fingerprint.text),
            Err(Some("walletId"))
        );
        let later = NewBurn { date: None, ..burn };
        assert_eq!(
            Fingerprint::of_request(&later).matches(&fingerprint.text),
            Err(Some("date"))
        );
    }
}
