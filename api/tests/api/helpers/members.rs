//! Members, as a client makes them.

use reqwest::StatusCode;
use serde_json::{Value, json};

use super::TestApp;

impl TestApp {
    /// Creates member `external_id` (first name Ada, user id `user-<external_id>`); its body.
    pub async fn create_member(&self, external_id: &str) -> Value {
        self.create_member_from(json!({"firstName": "Ada",
            "userId": format!("user-{external_id}"), "externalId": external_id}))
            .await
    }

    /// Creates the member `body` describes; its body.
    pub async fn create_member_from(&self, body: Value) -> Value {
        let reply = self.post("/v1/members", body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }

    /// Creates the member `body` describes; its id.
    pub async fn member_id(&self, body: Value) -> String {
        self.create_member_from(body).await["id"]
            .as_str()
            .expect("a member has an id")
            .to_string()
    }
}
