//! Earning, burning and reading the ledger, as a client does.

use std::time::{Duration, Instant};

use api::views::{EarnAccepted, EarnStatusView, PagedList, TransactionView};
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::{Reply, TestApp};

impl TestApp {
    /// Submits an earn and returns its status once it is no longer accepted or processing.
    pub async fn earn_and_wait(&self, body: Value) -> EarnStatusView {
        let accepted: EarnAccepted = self
            .post("/v1/transactions/earn", body)
            .await
            .expect(StatusCode::ACCEPTED);
        self.wait_earn(&accepted.status_check_url).await
    }

    /// Earns `amount` into `wallet` as earn `id` (dated 2026-11-18) and waits until it is
    /// completed; its status.
    pub async fn earn(&self, id: &str, wallet: &str, amount: Value) -> EarnStatusView {
        let body = json!({"id": id, "walletId": wallet, "amount": amount,
            "date": "2026-11-18T10:15:00Z", "description": "Coffee"});
        let done = self.earn_and_wait(body).await;
        assert_eq!(done.status, "completed", "{done:?}");
        done
    }

    /// Follows an earn's `statusCheckUrl` until it is no longer accepted or processing.
    pub async fn wait_earn(&self, url: &str) -> EarnStatusView {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let status: EarnStatusView = self.get(url).await.expect(StatusCode::OK);
            if !matches!(&*status.status, "accepted" | "processing") {
                return status;
            }
            assert!(Instant::now() < deadline, "earn still {}", status.status);
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
    pub async fn transactions(&self, query: &str) -> PagedList<TransactionView> {
        let path = format!("/v1/transactions?{query}");
        self.get(&path).await.expect(StatusCode::OK)
    }
}
