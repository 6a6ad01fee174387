//! The catalogue, as a client with the `catalogue-write` permission loads it.

use api::views::ImportReportView;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::{NewKey, Permission};

use super::{Credentials, Reply, TestApp};

impl TestApp {
    /// A key of the app's campaign that may import its catalogue.
    pub async fn catalogue_key(&self) -> Credentials {
        let new = NewKey {
            permissions: vec![Permission::CatalogueWrite],
            ..Default::default()
        };
        self.issue_key(&self.org, &self.campaign, new).await
    }

    /// `PUT /v1/catalogue{query}` with `document`, as `key`.
    pub async fn put_catalogue(&self, key: &Credentials, query: &str, document: Value) -> Reply {
        let path = format!("/v1/catalogue{query}");
        self.send(Method::PUT, &path, Some(key), None, Some(document))
            .await
    }

    /// Imports `document` (it must be accepted); the import's counts.
    pub async fn import_catalogue(&self, document: Value) -> ImportReportView {
        let key = self.catalogue_key().await;
        let reply = self.put_catalogue(&key, "", document).await;
        reply.expect(StatusCode::OK)
    }
}

/// A small catalogue: two categories, two tags, a tier and three products.
pub fn small_catalogue() -> Value {
    json!({
        "categories": [{"id": "food", "name": "Food & drink"}, {"id": "trips", "name": "Trips"}],
        "tags": [{"id": "veg", "name": "Vegetarian"}, {"id": "family", "name": "Family"}],
        "tiers": [{"id": "gold", "name": "Gold", "precedence": 1, "threshold": 1000},
                  {"name": "Silver", "precedence": 2, "threshold": 100}],
        "products": [
            {"id": "dinner", "name": "Dinner for two", "category": "food", "tags": ["veg"],
             "variants": [{"id": "dinner-1", "name": "Standard", "price": 2500, "tier": "gold"}]},
            {"id": "picnic", "name": "Family picnic", "category": "food", "tags": ["family"],
             "variants": [{"id": "picnic-1", "name": "Basket", "price": 800}]},
            {"id": "balloon", "name": "Balloon flight", "category": "trips",
             "variants": [{"id": "balloon-1", "name": "Sunrise", "price": 12000}]}
        ]
    })
}

impl TestApp {
    /// A key of the app's campaign that may use the vector search.
    pub async fn vector_key(&self) -> Credentials {
        let new = NewKey {
            permissions: vec![Permission::VectorSearch],
            ..Default::default()
        };
        self.issue_key(&self.org, &self.campaign, new).await
    }
}
