//! Earning, burning and reading the ledger, as a client does.

use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Reply, TestApp};

impl TestApp {
    /// Submits an earn and returns its status once it is no longer accepted or processing.
    pub async fn earn_and_wait(&self, body: Value) -> Value {
        let accepted = self.post("/v1/transactions/earn", body).await;
        assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
        self.wait_earn(accepted.body["statusCheckUrl"].as_str().unwrap())
            .await
    }

    /// Earns `amount` into `wallet` as earn `id` (dated 2026-11-18) and waits until it is
    /// completed; its status.
    pub async fn earn(&self, id: &str, wallet: &str, amount: Value) -> Value {
        let body = json!({"id": id, "walletId": wallet, "amount": amount,
            "date": "2026-11-18T10:15:00Z", "description": "Coffee"});
        let done = self.earn_and_wait(body).await;
        assert_eq!(done["status"], "completed", "{done}");
        done
    }

    /// Follows an earn's `statusCheckUrl` until it is no longer accepted or processing.
    pub async fn wait_earn(&self, url: &str) -> Value {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let reply = self.get(url).await;
            assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
            if !matches!(
                reply.body["status"].as_str(),
                Some("accepted" | "processing")
            ) {
                return reply.body;
            }
            assert!(
                Instant::now() < deadline,
                "earn still {}",
                reply.body["status"]
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Burns `amount` from `wallet` as burn `external_id`; the reply, whatever it is.
    pub async fn burn(&self, external_id: &str, wallet: &str, amount: Value) -> Reply {
        let body = json!({"externalId": external_id, "walletId": wallet, "amount": amount,
            "description": "Reward"});
        self.post("/v1/transactions/burn", body).await
    }

    /// A page of `GET /v1/transactions?<query>` (it must answer 200).
    pub async fn transactions(&self, query: &str) -> Value {
        let reply = self.get(&format!("/v1/transactions?{query}")).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }
}
