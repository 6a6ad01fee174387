//! Wallets, as a client makes and reads them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::TestApp;

impl TestApp {
    /// Creates wallet `reference` for member `owner` (an id or external id); its id.
    pub async fn create_wallet(&self, owner: &str, reference: &str) -> String {
        let body = json!({"owner": owner, "externalId": reference});
        let reply = self.post("/v1/wallets", body).await;
        assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
        reply.body["id"].as_str().unwrap().to_string()
    }

    /// A member `card-1` with wallet `w-1`; the wallet's id.
    pub async fn member_with_wallet(&self) -> String {
        self.create_member("card-1").await;
        self.create_wallet("card-1", "w-1").await
    }

    /// Wallet `id_or_reference` as the API shows it (it must exist).
    pub async fn wallet(&self, id_or_reference: &str) -> Value {
        let reply = self.get(&format!("/v1/wallets/{id_or_reference}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }

    /// The balance of wallet `id_or_reference`, as the JSON number the API answers.
    pub async fn balance(&self, id_or_reference: &str) -> Value {
        self.wallet(id_or_reference).await["balance"].clone()
    }
}
