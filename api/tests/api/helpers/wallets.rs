//! Wallets, as a client makes and reads them.

use api::views::WalletView;
use reqwest::StatusCode;
use serde_json::json;
use store::Tokens;

use super::TestApp;

impl TestApp {
    /// Creates wallet `reference` for member `owner` (an id or external id); its id.
    pub async fn create_wallet(&self, owner: &str, reference: &str) -> String {
        let body = json!({"owner": owner, "externalId": reference});
        let wallet: WalletView = self
            .post("/v1/wallets", body)
            .await
            .expect(StatusCode::CREATED);
        wallet.id
    }

    /// A member `card-1` with wallet `w-1`; the wallet's id.
    pub async fn member_with_wallet(&self) -> String {
        self.create_member("card-1").await;
        self.create_wallet("card-1", "w-1").await
    }

    /// Wallet `id_or_reference` as the API shows it (it must exist).
    pub async fn wallet(&self, id_or_reference: &str) -> WalletView {
        let path = format!("/v1/wallets/{id_or_reference}");
        self.get(&path).await.expect(StatusCode::OK)
    }

    /// The balance of wallet `id_or_reference`.
    pub async fn balance(&self, id_or_reference: &str) -> Tokens {
        self.wallet(id_or_reference).await.balance
    }
}
