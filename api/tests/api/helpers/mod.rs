//! A real server on a random port with a fresh database, and a typed client for it: the
//! plumbing here (`TestApp`, `send`, `Reply`, whose `view` reads an answer into the API's own
//! response type from `api::views`), one file of helpers per resource (`members`, `wallets`,
//! `ledger`, `catalogue`, `orders`), so that tests read as stories.

mod catalogue;
mod ledger;
mod members;
mod orders;
pub mod receiver;
mod wallets;

pub use catalogue::small_catalogue;
pub use orders::{lines, next_friday};

use api::views::Problem;
use reqwest::{Method, StatusCode};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use store::testing::TestStore;
use store::{NewCampaign, NewKey, OrgScope, Store, Tokens};

/// `text` as tokens (`"87.5"`), to compare with what the API answered.
pub fn tokens(text: &str) -> Tokens {
    Tokens::from_text(text).unwrap()
}

/// A running server, the organisation and campaign it was seeded with, and a key for them.
pub struct TestApp {
    pub base: String,
    pub store: Store,
    pub org: OrgScope,
    pub campaign: String,
    pub key: Credentials,
    pub http: reqwest::Client,
    _db: TestStore,
    /// The secret of the codes key (a restart seals and opens with the same one).
    codes: [u8; 32],
    workers: bool,
    serving: Option<Serving>,
}

/// A server running: its stop signal (a SIGTERM's, in a test) and its task.
struct Serving {
    stop: tokio::sync::oneshot::Sender<()>,
    task: tokio::task::JoinHandle<()>,
}

/// Serves the API on a random port; its address.
async fn serve(
    store: &Store,
    codes: &[u8; 32],
    settings: api::Settings,
    workers: bool,
) -> (String, Serving) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let codes = store::CodeKey::new(codes);
    let grace = settings.http.grace;
    let state = api::AppState::new(store.clone(), codes).with_settings(settings);
    let task = tokio::spawn(async move {
        let (stopping, stop) = tokio::sync::watch::channel(false);
        let runtime = runtime::start(&state, workers, &stop);
        api::serve(listener, state, async move {
            let _ = stopped.await;
            let _ = stopping.send(true);
        })
        .await
        .unwrap();
        runtime.finish(tokio::time::Instant::now() + grace).await;
    });
    (base, Serving { stop, task })
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
    /// The body as the API's response type `T` (one of `api::views`). The body must be exactly
    /// what `T` writes, so a field the type does not know, a missing one or a value it would
    /// write differently fails here, and the test checks the values.
    pub fn view<T: DeserializeOwned + Serialize>(&self) -> T {
        let name = std::any::type_name::<T>();
        let view: T = serde_json::from_value(self.body.clone())
            .unwrap_or_else(|e| panic!("not a {name}: {e}: {}", self.body));
        let written = serde_json::to_value(&view).unwrap();
        assert_eq!(written, self.body, "the body is not what a {name} writes");
        view
    }

    /// The body as a problem (the status must be an error's).
    pub fn problem(&self) -> Problem {
        assert!(!self.status.is_success(), "{}: {}", self.status, self.body);
        self.view()
    }

    /// The body as `T`, once the status is `expected`.
    pub fn expect<T: DeserializeOwned + Serialize>(&self, expected: StatusCode) -> T {
        assert_eq!(self.status, expected, "{}", self.body);
        self.view()
    }

    /// A page's items.
    pub fn data(&self) -> &[Value] {
        self.body["data"]
            .as_array()
            .map_or_else(|| panic!("not a page: {}", self.body), Vec::as_slice)
    }

    /// The problem's offending fields, in order.
    pub fn fields(&self) -> Vec<String> {
        self.problem().errors.into_iter().map(|e| e.field).collect()
    }
}

impl TestApp {
    pub async fn spawn(db: TestStore) -> TestApp {
        TestApp::spawn_with(db, api::Settings::default(), true).await
    }

    /// `spawn` with `settings`, and with the background workers only when `workers`.
    pub async fn spawn_with(db: TestStore, settings: api::Settings, workers: bool) -> TestApp {
        let store = db.store.clone();
        let org = store.tenancy().create_org("Acme").await.unwrap().scope();
        let campaign = store
            .tenancy()
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
        let mut codes = [0u8; 32];
        codes[..16].copy_from_slice(&store::new_id().as_bytes()[..16]);
        let (base, serving) = serve(&store, &codes, settings, workers).await;
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
            codes,
            workers,
            serving: Some(serving),
        };
        app.key = app.issue_key(&org, &campaign, NewKey::default()).await;
        app
    }

    /// Stops the server as a SIGTERM stops a node, and waits until it has returned: how long
    /// that took.
    pub async fn stop(&mut self) -> std::time::Duration {
        let serving = self.serving.take().expect("the server is running");
        let started = std::time::Instant::now();
        let _ = serving.stop.send(());
        serving.task.await.unwrap();
        started.elapsed()
    }

    /// Serves again on the same database (a restart), at a new address.
    pub async fn restart(&mut self, settings: api::Settings) {
        assert!(self.serving.is_none(), "stop it first");
        let (base, serving) = serve(&self.store, &self.codes, settings, self.workers).await;
        self.base = base;
        self.serving = Some(serving);
    }

    pub async fn issue_key(&self, org: &OrgScope, campaign: &str, mut new: NewKey) -> Credentials {
        new.campaign_id = campaign.to_string();
        let issued = self.store.tenancy().issue_key(org, new).await.unwrap();
        Credentials {
            id: issued.key.id,
            api_key: issued.key.api_key,
            secret: issued.secret,
        }
    }

    /// A second organisation with its own campaign and key.
    pub async fn other_tenant(&self) -> Credentials {
        self.other_tenant_with(NewKey::default()).await
    }

    /// `other_tenant`, its key made as `new` says.
    pub async fn other_tenant_with(&self, new: NewKey) -> Credentials {
        let org = self
            .store
            .tenancy()
            .create_org("Other")
            .await
            .unwrap()
            .scope();
        let campaign = self
            .store
            .tenancy()
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
        self.issue_key(&org, &campaign, new).await
    }

    /// Sends a request with `key` (or none), an optional version and an optional JSON body.
    /// `path` is under the server's base, or an absolute URL the server gave.
    pub async fn send(
        &self,
        method: Method,
        path: &str,
        key: Option<&Credentials>,
        version: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let url = if path.starts_with("http") {
            path.to_string()
        } else {
            format!("{}{path}", self.base)
        };
        let mut request = self.http.request(method, url);
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
        // A pooled connection the server closed after an answer that left a body unread (a
        // 404 before the body, as hostile paths get) fails on the next write: that request never
        // reached the server whole, so it is sent once more on a fresh connection.
        let again = request.try_clone();
        let response = match (request.send().await, again) {
            (Ok(response), _) => response,
            (Err(err), Some(again)) if err.is_request() => again.send().await.unwrap(),
            (Err(err), _) => panic!("{err}"),
        };
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

    /// The campaign the app's key belongs to.
    pub async fn campaign(&self) -> store::Campaign {
        let tenancy = self.store.tenancy();
        tenancy.campaign_by_id(&self.campaign).await.unwrap()
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(Method::GET, path, Some(&self.key), None, None)
            .await
    }

    pub async fn post(&self, path: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(&self.key), None, Some(body))
            .await
    }
}

/// Declares each test once per backend, like `store::backend_tests!`, handing it a `TestApp`
/// (with `settings: EXPR;` first, one spawned with those settings).
#[macro_export]
macro_rules! app_tests {
    (settings: $settings:expr; $($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = store::testing::TestStore::sqlite().await;
                    let app = $crate::helpers::TestApp::spawn_with(db, $settings, true).await;
                    super::$name(app).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
                async fn $name() {
                    let db = store::testing::TestStore::postgres().await;
                    let app = $crate::helpers::TestApp::spawn_with(db, $settings, true).await;
                    super::$name(app).await;
                }
            )*
        }
    };
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
