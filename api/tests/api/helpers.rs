//! A real server on a random port with a fresh database, and a small typed client for it.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::testing::TestStore;
use store::{NewCampaign, NewKey, Store};

/// A running server, the organisation and campaign it was seeded with, and a key for them.
pub struct TestApp {
    pub base: String,
    pub store: Store,
    pub org: String,
    pub campaign: String,
    pub key: Credentials,
    http: reqwest::Client,
    _db: TestStore,
    _stop: tokio::sync::oneshot::Sender<()>,
}

#[derive(Clone, Debug)]
pub struct Credentials {
    pub id: String,
    pub api_key: String,
    pub secret: String,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: reqwest::header::HeaderMap,
    pub body: Value,
}

impl Reply {
    /// The problem's offending fields, in order.
    pub fn fields(&self) -> Vec<String> {
        self.body["errors"]
            .as_array()
            .map(|errors| {
                errors
                    .iter()
                    .map(|e| e["field"].as_str().unwrap_or("").to_string())
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl TestApp {
    pub async fn spawn(db: TestStore) -> TestApp {
        let store = db.store.clone();
        let org = store.create_org("Acme").await.unwrap().id;
        let campaign = store
            .create_campaign(
                &org,
                NewCampaign {
                    name: "Main".into(),
                    currency: "PTS".into(),
                    logo: Some("https://acme.example/logo.png".into()),
                    favicon: None,
                },
            )
            .await
            .unwrap()
            .id;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let state = api::AppState::new(store.clone());
        tokio::spawn(async move {
            api::serve(listener, state, true, async {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        let mut app = TestApp {
            base,
            key: Credentials {
                id: String::new(),
                api_key: String::new(),
                secret: String::new(),
            },
            store,
            org: org.clone(),
            campaign: campaign.clone(),
            http: reqwest::Client::new(),
            _db: db,
            _stop: stop,
        };
        app.key = app.issue_key(&org, &campaign, NewKey::default()).await;
        app
    }

    pub async fn issue_key(&self, org: &str, campaign: &str, mut new: NewKey) -> Credentials {
        new.campaign_id = campaign.to_string();
        let issued = self.store.issue_key(org, new).await.unwrap();
        Credentials {
            id: issued.key.id,
            api_key: issued.key.api_key,
            secret: issued.secret,
        }
    }

    /// A second organisation with its own campaign and key.
    pub async fn other_tenant(&self) -> Credentials {
        let org = self.store.create_org("Other").await.unwrap().id;
        let campaign = self
            .store
            .create_campaign(
                &org,
                NewCampaign {
                    name: "X".into(),
                    currency: "EUR".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap()
            .id;
        self.issue_key(&org, &campaign, NewKey::default()).await
    }

    /// Sends a request with `key` (or none), an optional version and an optional JSON body.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&Credentials>,
        version: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(key) = key {
            request = request
                .header("x-api-key", &key.api_key)
                .header("x-api-secret", &key.secret);
        }
        if let Some(version) = version {
            request = request.header("x-api-version", version);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request.send().await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let text = response.text().await.unwrap();
        let body = serde_json::from_str(&text).unwrap_or(Value::String(text));
        Reply {
            status,
            headers,
            body,
        }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, Some(&self.key), None, None)
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(&self.key), None, Some(body))
            .await
    }

    pub async fn create_member(&self, external_id: &str) -> Value {
        let reply = self
            .post(
                "/v1/members",
                json!({"firstName": "Ada", "userId": format!("user-{external_id}"), "externalId": external_id}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        reply.body
    }
}

impl TestApp {
    /// A member `card-1` with wallet `w-1`.
    pub async fn member_with_wallet(&self) -> String {
        self.create_member("card-1").await;
        let wallet = self
            .post(
                "/v1/wallets",
                json!({"owner": "card-1", "externalId": "w-1"}),
            )
            .await;
        assert_eq!(wallet.status, StatusCode::CREATED, "{}", wallet.body);
        wallet.body["id"].as_str().unwrap().to_string()
    }

    /// Submits an earn and returns its status once it is no longer accepted or processing.
    pub async fn earn_and_wait(&self, body: Value) -> Value {
        let accepted = self.post("/v1/transactions/earn", body).await;
        assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
        self.wait_earn(accepted.body["statusCheckUrl"].as_str().unwrap())
            .await
    }

    pub async fn wait_earn(&self, url: &str) -> Value {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
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
                std::time::Instant::now() < deadline,
                "earn still {}",
                reply.body["status"]
            );
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    }
}

/// Declares each test once per backend, like `store::backend_tests!`, handing it a `TestApp`.
#[macro_export]
macro_rules! app_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = store::testing::TestStore::sqlite().await;
                    super::$name($crate::helpers::TestApp::spawn(db).await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
                async fn $name() {
                    let db = store::testing::TestStore::postgres().await;
                    super::$name($crate::helpers::TestApp::spawn(db).await).await;
                }
            )*
        }
    };
}
