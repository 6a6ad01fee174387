//! What tests ask of the ledger beyond its operations (feature `testing`): a ledger on a fresh
//! database, a wallet to work on, earns stored unchecked, and a wallet's lots as they stand.

use seam::testing::TestDb;
use tenancy::{Campaign, NewCampaign, Tenancy};

use crate::common::ids::new_id;
use crate::{EarnRequest, Ledger, NewWallet, PendingEarn, StoreError, Wallet};

/// The ledger on a test database, with the programme and members beside it.
pub fn ledger_on(db: &TestDb) -> Ledger {
    let db = db.db.clone();
    Ledger::on(
        db.clone(),
        programme::Programme::on(db.clone()),
        members::Members::on(db),
    )
}

/// A new organisation `Acme` with a campaign `Main` in `PTS`.
pub async fn campaign_fixture(tenancy: &Tenancy) -> Campaign {
    let made = async {
        let org = tenancy.create_org("Acme").await?;
        let campaign = NewCampaign {
            name: "Main".into(),
            currency: "PTS".into(),
            ..Default::default()
        };
        tenancy.create_campaign(&org.scope(), campaign).await
    };
    made.await
        .unwrap_or_else(|e| panic!("campaign fixture: {e}"))
}

/// An organisation with a campaign (`PTS`), a member `card-1` and that member's wallet `w-1`.
pub async fn wallet_fixture(ledger: &Ledger) -> (Campaign, Wallet) {
    let (campaign, mut wallets) = fixture(ledger, &["w-1"], false).await;
    (campaign, wallets.remove(0))
}

/// `wallet_fixture` with the member's wallets `references`, on a database whose schema is older
/// than the ledger (a migration's test): the wallets are written by hand, since creating one
/// records what a later migration's table holds (the member's sign-up).
pub async fn old_schema_fixture(ledger: &Ledger, references: &[&str]) -> (Campaign, Vec<Wallet>) {
    fixture(ledger, references, true).await
}

async fn fixture(ledger: &Ledger, references: &[&str], by_hand: bool) -> (Campaign, Vec<Wallet>) {
    let campaign = campaign_fixture(&Tenancy::on(ledger.db().clone())).await;
    let made = async {
        let member = members::NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "card-1".into(),
            ..Default::default()
        };
        let member = if by_hand {
            // Only the columns of the oldest schema a migration's test starts from.
            const MEMBER: &str = "INSERT INTO members (id, org_id, first_name, status, idp, \
                 user_id, external_id, created_at, updated_at) \
                 VALUES ($1, $2, $3, 'active', $4, $5, $6, $7, $7)";
            let (id, at) = (new_id(), ledger.now());
            let args = params![
                id,
                campaign.org_id,
                member.first_name,
                member.idp,
                member.user_id
            ];
            let mut args = args.to_vec();
            args.extend(params![member.external_id, at]);
            ledger.execute(MEMBER, &args).await?;
            id
        } else {
            let org = campaign.org();
            ledger.members().create_member(&org, member).await?.id
        };
        let mut wallets = Vec::new();
        for reference in references {
            let wallet = if by_hand {
                const INSERT: &str = "INSERT INTO wallets (id, org_id, campaign_id, owner_id, \
                     external_id, currency, created_at, updated_at) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7)";
                let (c, at, id) = (&campaign, ledger.now(), new_id());
                let args = params![id, c.org_id, c.id, member, reference, c.currency, at];
                ledger.execute(INSERT, args).await?;
                ledger.get_wallet(&campaign, reference).await?
            } else {
                let wallet = NewWallet {
                    owner: Some("card-1".into()),
                    external_id: Some(reference.to_string()),
                    name: None,
                };
                ledger.create_wallet(&campaign, wallet).await?
            };
            wallets.push(wallet);
        }
        Ok::<_, StoreError>((campaign, wallets))
    };
    made.await.unwrap_or_else(|e| panic!("wallet fixture: {e}"))
}

/// Stores `pending` as earn requests without looking at what their ids hold, as nodes that
/// each checked an id at the same moment would.
pub async fn store_unchecked(ledger: &Ledger, pending: Vec<PendingEarn>) -> Vec<EarnRequest> {
    ledger.store_new_earns(pending).await.unwrap()
}

/// What tests read of a wallet's lots beyond the ledger's own operations.
impl Ledger {
    /// What spending transaction `id` took from each earn's lot: (earn id, micro-tokens), by
    /// earn id.
    #[tracing::instrument(skip_all)]
    pub async fn spends_of(&self, id: &str) -> Result<Vec<(String, i64)>, StoreError> {
        let sql = "SELECT earn_id, amount FROM spends WHERE transaction_id = $1 ORDER BY earn_id";
        self.read_rows(sql, params![id]).await
    }

    /// What is left in each of wallet `id`'s lots, by its spending position and aside rows
    /// (see `fifo`): (earn id, micro-tokens) for every earn that holds some, by earn id.
    #[tracing::instrument(skip_all)]
    pub async fn lots_of(&self, id: &str) -> Result<Vec<(String, i64)>, StoreError> {
        const SQL: &str = concat!(
            "SELECT t.id, ",
            crate::fifo::lot_left!(),
            " FROM transactions t JOIN wallets w ON w.id = t.wallet_id \
             LEFT JOIN lots_aside a ON a.transaction_id = t.id \
             WHERE t.wallet_id = $1 AND t.kind IN ",
            crate::transactions::lot_kinds!(),
            " ORDER BY t.id"
        );
        let rows: Vec<(String, i64)> = self.read_rows(SQL, params![id]).await?;
        Ok(rows.into_iter().filter(|(_, left)| *left != 0).collect())
    }
}

/// Declares a ledger test once per backend: `ledger_tests!(name)` expects
/// `async fn name(store: Ledger)` in scope.
#[cfg(test)]
macro_rules! ledger_tests {
    ($($name:ident),* $(,)?) => {
        seam::tests_on_both!(crate::testing::ledger_on; $($name),*);
    };
}
#[cfg(test)]
pub(crate) use ledger_tests;
