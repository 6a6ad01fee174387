//! Wallets: a member's balance in one campaign, with the tier its lifetime earnings reach.
//! A client knows a wallet by its own reference (`externalId`: a card or policy number), unique
//! in the organisation; `GET /v1/wallets/{idOrReference}` finds it by either.

use chrono::{DateTime, Utc};
use sqlx::types::Json;

use crate::backend::{Steps, Tx};
use crate::common::ids::new_id;
use crate::error::conflict_on;
use crate::{Campaign, Ledger, Page, Paged, StoreError, Tier, Tokens};
use members::activities;
use programme::tiers::joined_tier;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wallet {
    pub id: String,
    pub campaign_id: String,
    /// The owning member's id.
    pub owner_id: String,
    pub external_id: Option<String>,
    pub name: Option<String>,
    pub currency: String,
    pub balance: Tokens,
    /// Of the balance, tokens open holds reserve: not to be spent but by their capture.
    pub held: Tokens,
    /// Tokens earned but not yet vested: not in the balance until they vest.
    pub pending: Tokens,
    /// Tokens earned over the wallet's life (what tiers follow).
    pub earned: Tokens,
    pub tier: Option<Tier>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default)]
pub struct NewWallet {
    /// A member id or a member's external id. When absent, the member whose external id equals
    /// `external_id` owns the wallet.
    pub owner: Option<String>,
    pub external_id: Option<String>,
    pub name: Option<String>,
}

/// Filters of the wallet list.
#[derive(Debug, Clone, Default)]
pub struct WalletFilter {
    pub external_id: Option<String>,
    /// A member id or external id.
    pub owner: Option<String>,
}

macro_rules! wallet_columns {
    () => {
        "w.id, w.campaign_id, w.owner_id, w.external_id, w.name, w.currency, w.balance, \
         w.held, w.pending, w.earned, w.created_at, w.updated_at, t.id, t.name, t.precedence, t.threshold, \
         t.benefits, t.image_url, t.handle"
    };
}

/// A wallet with its tier.
macro_rules! wallet_from {
    () => {
        "FROM wallets w LEFT JOIN tiers t ON t.id = w.tier_id "
    };
}

macro_rules! wallet_select {
    () => {
        concat!("SELECT ", wallet_columns!(), " ", wallet_from!())
    };
}

/// The id of the wallet of organisation `$1` and campaign `$2` whose id is `$3`, else of the
/// one whose external id is `$3` (NULL when neither). Two probes of unique keys rather than
/// `id = $3 OR external_id = $3`, whose generic plan in PostgreSQL (the one a prepared statement
/// keeps) walked every wallet of the campaign and filtered.
macro_rules! wallet_id_of_reference {
    () => {
        "COALESCE((SELECT id FROM wallets WHERE id = $3 AND org_id = $1 AND campaign_id = $2), \
           (SELECT id FROM wallets WHERE org_id = $1 AND external_id = $3 AND campaign_id = $2))"
    };
}
pub(crate) use wallet_id_of_reference;

row_struct! {
    /// The columns of `wallet_columns!`, in order: the wallet and, when it holds one, its tier.
    struct WalletRow {
        id: String,
        campaign_id: String,
        owner_id: String,
        external_id: Option<String>,
        name: Option<String>,
        currency: String,
        balance: i64,
        held: i64,
        pending: i64,
        earned: i64,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        tier_id: Option<String>,
        tier_name: Option<String>,
        tier_precedence: Option<i64>,
        tier_threshold: Option<i64>,
        tier_benefits: Option<Json<Vec<String>>>,
        tier_image_url: Option<String>,
        tier_handle: Option<String>,
    }
}

fn wallet_from_row(r: WalletRow) -> Wallet {
    let tier = joined_tier(
        r.tier_id,
        r.tier_name,
        r.tier_precedence,
        r.tier_threshold,
        r.tier_benefits,
        r.tier_image_url,
        r.tier_handle,
    );
    Wallet {
        id: r.id,
        campaign_id: r.campaign_id,
        owner_id: r.owner_id,
        external_id: r.external_id,
        name: r.name,
        currency: r.currency,
        balance: Tokens::from_micros(r.balance),
        held: Tokens::from_micros(r.held),
        pending: Tokens::from_micros(r.pending),
        earned: Tokens::from_micros(r.earned),
        tier,
        created_at: r.created_at,
        updated_at: r.updated_at,
    }
}

/// Wallets: a campaign's wallets, their owners and balances (scope: `&Campaign`).
impl Ledger {
    /// Creates a wallet in `campaign` (its currency). The owner is `new.owner` (a member id or
    /// external id), else the member whose external id is the wallet's `external_id`. A body
    /// that names no member of the organisation is a bad request (`Invalid`): on `owner` when
    /// it names none or an unknown one, on `externalId` when that stood for the owner. A taken
    /// `external_id` is `Conflict`.
    #[tracing::instrument(skip_all)]
    pub async fn create_wallet(
        &self,
        campaign: &Campaign,
        new: NewWallet,
    ) -> Result<Wallet, StoreError> {
        let org_id = &campaign.org_id;
        let reference = new.owner.as_deref().or(new.external_id.as_deref());
        let owner = match reference {
            Some(reference) => self.members().member_id_of(org_id, reference).await?,
            None => None,
        };
        let Some(owner_id) = owner else {
            return Err(match (&new.owner, &new.external_id) {
                (Some(owner), _) => StoreError::Invalid {
                    field: "owner",
                    message: format!("no member has the id or external id `{owner}`"),
                },
                (None, Some(external)) => StoreError::Invalid {
                    field: "externalId",
                    message: format!(
                        "no member has the external id `{external}` to own the wallet; name \
                         its owner in `owner`"
                    ),
                },
                (None, None) => StoreError::Invalid {
                    field: "owner",
                    message: "is required: a member id or external id".to_string(),
                },
            });
        };
        let at = self.now();
        let wallet = Wallet {
            id: new_id(),
            campaign_id: campaign.id.clone(),
            owner_id,
            external_id: new.external_id,
            name: new.name,
            currency: campaign.currency.clone(),
            balance: Tokens::ZERO,
            held: Tokens::ZERO,
            pending: Tokens::ZERO,
            earned: Tokens::ZERO,
            tier: None,
            created_at: at,
            updated_at: at,
        };
        self.write(Opening {
            org_id: org_id.clone(),
            wallet,
        })
        .await
    }

    /// The campaign's wallet with id `reference`, else the one with that external id.
    #[tracing::instrument(skip_all)]
    pub async fn get_wallet(
        &self,
        campaign: &Campaign,
        reference: &str,
    ) -> Result<Wallet, StoreError> {
        // Three index probes whatever the campaign's size (see `wallet_id_of_reference!`), so
        // nearly every request that names a wallet costs no planning.
        const SQL: &str = concat!(wallet_select!(), "WHERE w.id = ", wallet_id_of_reference!());
        let row: Option<WalletRow> = self
            .read_row(SQL, params![campaign.org_id, campaign.id, reference])
            .await?;
        row.map(wallet_from_row)
            .ok_or(StoreError::NotFound { what: "wallet" })
    }

    /// The campaign's wallets in creation order, filtered.
    #[tracing::instrument(skip_all)]
    pub async fn list_wallets(
        &self,
        campaign: &Campaign,
        filter: &WalletFilter,
        page: Page,
    ) -> Result<Paged<Wallet>, StoreError> {
        // An owner filter matches the member's id or external id. Its wallets are found
        // through the owner index first: behind `$4 IS NULL OR ...`, or beside the campaign's
        // index, a planner walks every wallet of the campaign instead.
        let from = match filter.owner {
            Some(_) => concat!(
                wallet_from!(),
                "WHERE w.org_id = $1 AND w.campaign_id = $2 \
                 AND ($3 IS NULL OR w.external_id = $3) \
                 AND w.id IN (SELECT o.id FROM wallets o WHERE o.org_id = $1 AND o.owner_id IN \
                 (SELECT m.id FROM members m WHERE m.org_id = $1 \
                 AND (m.id = $4 OR m.external_id = $4)))"
            ),
            None => concat!(
                wallet_from!(),
                "WHERE w.org_id = $1 AND w.campaign_id = $2 \
                 AND ($3 IS NULL OR w.external_id = $3) \
                 AND ($4 IS NULL OR w.owner_id IN (SELECT m.id FROM members m \
                 WHERE m.org_id = $1 AND (m.id = $4 OR m.external_id = $4)))"
            ),
        };
        let rows = self
            .read_page(
                page,
                wallet_columns!(),
                from,
                "w.id",
                params![
                    &campaign.org_id,
                    &campaign.id,
                    &filter.external_id,
                    &filter.owner
                ],
            )
            .await?;
        Paged::of(rows, page, |row| Ok(wallet_from_row(row)))
    }

    /// Renames wallet `id` (an id, not a reference) and returns it.
    #[tracing::instrument(skip_all)]
    pub async fn rename_wallet(
        &self,
        campaign: &Campaign,
        id: &str,
        name: Option<String>,
    ) -> Result<Wallet, StoreError> {
        const SQL: &str = "UPDATE wallets SET name = $4, updated_at = $5 WHERE org_id = $1 AND campaign_id = $2 AND id = $3";
        let changed = self
            .execute(
                SQL,
                params![&campaign.org_id, &campaign.id, id, &name, self.now()],
            )
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "wallet" });
        }
        self.get_wallet(campaign, id).await
    }
}

/// A new wallet; the member's first in the campaign records its `member.signed_up` activity.
struct Opening {
    org_id: String,
    wallet: Wallet,
}

impl Steps for Opening {
    type Output = Wallet;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Wallet, StoreError> {
        const INSERT: &str = "INSERT INTO wallets (id, org_id, campaign_id, owner_id, \
             external_id, name, currency, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8)";
        let w = &self.wallet;
        let args = params![
            w.id,
            self.org_id,
            w.campaign_id,
            w.owner_id,
            w.external_id,
            w.name,
            w.currency,
            w.created_at
        ];
        tx.execute(INSERT, args)
            .await
            .map_err(|e| conflict_on(e, &[("external_id", "externalId")]))?;
        // Keyed by member and campaign: a second wallet records nothing.
        let key = format!("{}:{}", w.campaign_id, w.owner_id);
        activities::record_built_in(
            tx,
            (&self.org_id, &w.campaign_id),
            &w.owner_id,
            (activities::SIGNED_UP, &key),
            serde_json::json!({ "walletId": w.id }),
            w.created_at,
        )
        .await?;
        Ok(self.wallet)
    }
}
