//! Members, as a client makes them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::TestApp;

impl TestApp {
    /// Creates member `external_id` (first name Ada, user id `user-<external_id>`); its body.
    pub async fn create_member(&self, external_id: &str) -> Value {
        let body = json!({"firstName": "Ada", "userId": format!("user-{external_id}"),
            "externalId": external_id});
        let reply = self.post("/v1/members", body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }
}
