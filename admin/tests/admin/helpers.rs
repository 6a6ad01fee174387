//! A real admin server on a random port with a fresh database, seeded with two organisations
//! (`Acme` with a campaign, and `Other`) and a signed-in owner; operators of any role made on
//! demand, signed in over HTTP as a person would.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::testing::TestStore;
use store::{
    BatchState, NewCampaign, NewMember, NewOperator, NewWallet, OrgScope, Role, RuleBook, Store,
};

pub struct AdminApp {
    pub base: String,
    pub store: Store,
    pub acme: OrgScope,
    pub other: OrgScope,
    /// The owner's session token.
    pub owner: String,
    pub http: reqwest::Client,
    /// The service's data directory (the SFTP host key, the organisations' folders).
    pub data_dir: std::path::PathBuf,
    _dir: tempfile::TempDir,
    _db: TestStore,
    _stop: tokio::sync::oneshot::Sender<()>,
}

pub struct Reply {
    pub status: StatusCode,
    pub body: Value,
}

impl Reply {
    /// The answer to `request`, its body read as JSON (or kept as text).
    async fn of(request: reqwest::RequestBuilder) -> Reply {
        let response = request.send().await.unwrap();
        let status = response.status();
        let text = response.text().await.unwrap();
        let body = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        Reply { status, body }
    }

    /// The body, once the status is `expected`.
    pub fn expect(&self, expected: StatusCode) -> &Value {
        assert_eq!(self.status, expected, "{}", self.body);
        &self.body
    }

    /// The problem's code, once the status is `expected`.
    pub fn code(&self, expected: StatusCode) -> String {
        assert_eq!(self.status, expected, "{}", self.body);
        self.body["code"].as_str().unwrap_or_default().to_owned()
    }
}

/// A password an operator changes its one-time one to.
pub const CHOSEN: &str = "correct horse battery staple";

impl AdminApp {
    pub async fn spawn(db: TestStore) -> AdminApp {
        let store = db.store.clone();
        let acme = store.tenancy().create_org("Acme").await.unwrap().scope();
        let other = store.tenancy().create_org("Other").await.unwrap().scope();
        store
            .tenancy()
            .create_campaign(
                &acme,
                NewCampaign {
                    name: "Main".into(),
                    currency: "PTS".into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let codes = store::CodeKey::new(&[7u8; 32]);
        let dir = tempfile::tempdir().unwrap();
        let data_dir = dir.path().to_owned();
        let state =
            admin::AdminState::new(api::AppState::new(store.clone(), codes), data_dir.clone());
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(admin::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        let mut app = AdminApp {
            base,
            store,
            acme,
            other,
            owner: String::new(),
            http: reqwest::Client::new(),
            data_dir,
            _dir: dir,
            _db: db,
            _stop: stop,
        };
        app.owner = app.operator("owner@example.com", Role::Owner, &[]).await;
        app
    }

    /// Adds an operator (as `rewards operator add` does), signs it in over HTTP and changes its
    /// one-time password: its session token.
    pub async fn operator(&self, email: &str, role: Role, orgs: &[&OrgScope]) -> String {
        let (_, password) = self
            .store
            .operators()
            .add(NewOperator {
                email: email.into(),
                role,
                orgs: orgs.iter().map(|o| o.id().to_owned()).collect(),
                allowed_addresses: Vec::new(),
            })
            .await
            .unwrap();
        let token = self.sign_in(email, password.reveal()).await;
        let body = json!({"currentPassword": password.reveal(), "newPassword": CHOSEN});
        self.send(
            Method::PUT,
            "/admin/v1/me/password",
            Some(&token),
            Some(body),
        )
        .await
        .expect(StatusCode::OK);
        token
    }

    /// Signs in with `email` and `password`: the session's token.
    pub async fn sign_in(&self, email: &str, password: &str) -> String {
        let body = json!({"email": email, "password": password});
        let reply = self
            .send(Method::POST, "/admin/v1/sessions", None, Some(body))
            .await;
        reply.expect(StatusCode::CREATED)["token"]
            .as_str()
            .unwrap()
            .to_owned()
    }

    pub async fn send(
        &self,
        method: Method,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> Reply {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        if let Some(token) = token {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        Reply::of(request).await
    }

    /// Sends `body` as it is, with `content_type`.
    pub async fn send_text(
        &self,
        method: Method,
        path: &str,
        token: &str,
        content_type: &str,
        body: &str,
    ) -> Reply {
        let request = self
            .http
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(token)
            .header("content-type", content_type)
            .body(body.to_owned());
        Reply::of(request).await
    }

    /// Acme's campaign with a member `cust-1` and its wallet `card-1`: the campaign's admin path.
    pub async fn campaign_with_wallet(&self) -> String {
        let campaign = self
            .store
            .tenancy()
            .list_campaigns(&self.acme)
            .await
            .unwrap()[0]
            .clone();
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "cust-1".into(),
            ..Default::default()
        };
        self.store
            .members()
            .create_member(&self.acme, member)
            .await
            .unwrap();
        self.store
            .ledger()
            .create_wallet(
                &campaign,
                NewWallet {
                    owner: Some("cust-1".into()),
                    external_id: Some("card-1".into()),
                    name: None,
                },
            )
            .await
            .unwrap();
        format!(
            "/admin/v1/orgs/{}/campaigns/{}",
            self.acme.id(),
            campaign.id
        )
    }

    /// Receives `content` as `name` from SFTP and processes it: the batch's id.
    pub async fn load(&self, name: &str, content: &str) -> String {
        let upload = self.data_dir.join(format!("upload-{name}"));
        std::fs::write(&upload, content).unwrap();
        let (store, data) = (&self.store, &self.data_dir);
        let batch = ingest::intake::receive(store, data, &self.acme, &upload, name, "sftp", None)
            .await
            .unwrap();
        if batch.state == BatchState::Duplicate {
            return batch.id;
        }
        let claimed = store
            .batches()
            .claim_batches(1, Some(&batch.id))
            .await
            .unwrap()
            .remove(0);
        let book = RuleBook::new(store.programme().clone());
        ingest::batch::pipeline::process(store, &book, data, &claimed, &|_| {})
            .await
            .unwrap();
        batch.id
    }

    pub async fn get(&self, path: &str, token: &str) -> Reply {
        self.send(Method::GET, path, Some(token), None).await
    }

    pub async fn post(&self, path: &str, token: &str, body: Value) -> Reply {
        self.send(Method::POST, path, Some(token), Some(body)).await
    }
}

/// The operations of a page of the audit trail whose outcome is `ok`, in its order.
pub fn ok_operations(trail: &Value) -> Vec<String> {
    trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["outcome"] == "ok")
        .map(|e| e["operation"].as_str().unwrap().to_owned())
        .collect()
}

/// Each test function `name(app: AdminApp)` on SQLite, and on PostgreSQL with `--ignored`.
#[macro_export]
macro_rules! admin_tests {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    let db = store::testing::TestStore::sqlite().await;
                    super::$name($crate::helpers::AdminApp::spawn(db).await).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                #[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
                async fn $name() {
                    let db = store::testing::TestStore::postgres().await;
                    super::$name($crate::helpers::AdminApp::spawn(db).await).await;
                }
            )*
        }
    };
}
