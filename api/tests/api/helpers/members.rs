//! Members, as a client makes them.

use api::views::MemberView;
use reqwest::StatusCode;
use serde_json::{Value, json};

use super::TestApp;

impl TestApp {
    /// Creates member `external_id` (first name Ada, user id `user-<external_id>`).
    pub async fn create_member(&self, external_id: &str) -> MemberView {
        self.create_member_from(json!({"firstName": "Ada",
            "userId": format!("user-{external_id}"), "externalId": external_id}))
            .await
    }

    /// Creates the member `body` describes.
    pub async fn create_member_from(&self, body: Value) -> MemberView {
        self.post("/v1/members", body).await.expect(StatusCode::OK)
    }

    /// A key of the app's campaign that may read members' own data (`member-data`).
    pub async fn member_data_key(&self) -> super::Credentials {
        let new = store::NewKey {
            permissions: vec![store::Permission::MemberData],
            ..Default::default()
        };
        self.issue_key(&self.org, &self.campaign, new).await
    }

    /// Creates the member `body` describes; its id.
    pub async fn member_id(&self, body: Value) -> String {
        self.create_member_from(body).await.id
    }
}
