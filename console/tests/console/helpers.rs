//! A real admin listener with the console, a fresh database with an organisation `Acme` (a
//! campaign `Main`) and `Other`, and a browser-like client: it keeps cookies, follows no
//! redirect by itself, and sends forms with the page's CSRF token.

use std::collections::BTreeMap;

use ingest::batch::live::LiveBatches;
use ingest::batch::pipeline::Progress;
use reqwest::header::{COOKIE, HeaderMap, LOCATION, SET_COOKIE};
use reqwest::{Method, StatusCode};
use store::testing::TestStore;
use store::{Batch, NewCampaign, NewOperator, OrgScope, Role, RuleBook, Store};

/// Runs `body` on SQLite, and as an ignored test on PostgreSQL.
#[macro_export]
macro_rules! console_tests {
    ($($name:ident => $body:expr;)+) => {
        mod sqlite {
            use super::*;
            $(
                #[tokio::test]
                async fn $name() {
                    let db = store::testing::TestStore::sqlite().await;
                    ($body)($crate::helpers::Console::spawn(db).await).await;
                }
            )+
        }
        mod postgres {
            use super::*;
            $(
                #[tokio::test]
                #[ignore = "needs REWARDS_TEST_POSTGRES_URL"]
                async fn $name() {
                    let db = store::testing::TestStore::postgres().await;
                    ($body)($crate::helpers::Console::spawn(db).await).await;
                }
            )+
        }
    };
}

pub struct Console {
    pub base: String,
    pub store: Store,
    pub acme: OrgScope,
    pub other: OrgScope,
    pub data_dir: std::path::PathBuf,
    /// The batches the server shows as loading (what its pipeline would set).
    pub live: LiveBatches,
    _dir: tempfile::TempDir,
    _db: TestStore,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// A password operators change their one-time one to.
pub const CHOSEN: &str = "correct horse battery staple";

impl Console {
    pub async fn spawn(db: TestStore) -> Console {
        let store = db.store.clone();
        let acme = store.tenancy().create_org("Acme").await.unwrap().scope();
        let other = store.tenancy().create_org("Other").await.unwrap().scope();
        let main = NewCampaign {
            name: "Main".into(),
            currency: "PTS".into(),
            ..Default::default()
        };
        store.tenancy().create_campaign(&acme, main).await.unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let dir = tempfile::tempdir().unwrap();
        let live = LiveBatches::default();
        let state = admin::AdminState {
            live_batches: live.clone(),
            ..admin::AdminState::new(
                api::AppState::new(store.clone(), store::CodeKey::new(&[7u8; 32])),
                dir.path().to_owned(),
            )
        };
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(console::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        Console {
            base,
            store,
            acme,
            other,
            data_dir: dir.path().to_owned(),
            live,
            _dir: dir,
            _db: db,
            _stop: stop,
        }
    }

    /// Receives `content` as Acme's file `name` (as SFTP does): the batch, not yet loaded.
    pub async fn receive(&self, name: &str, content: &str) -> Batch {
        let upload = self.data_dir.join(format!("upload-{name}"));
        std::fs::write(&upload, content).unwrap();
        ingest::intake::receive(
            &self.store,
            &self.data_dir,
            &self.acme,
            &upload,
            name,
            "sftp",
            None,
        )
        .await
        .unwrap()
    }

    /// Claims batch `id` and loads it as the pipeline does, telling `progress` after each chunk.
    pub async fn process(&self, id: &str, progress: &(dyn Fn(Progress) + Sync)) {
        let claimed = self
            .store
            .batches()
            .claim_batches(1, Some(id))
            .await
            .unwrap()
            .remove(0);
        let book = RuleBook::new(self.store.programme().clone());
        ingest::batch::pipeline::process(&self.store, &book, &self.data_dir, &claimed, progress)
            .await
            .unwrap();
    }

    /// Adds an operator as `rewards operator add` does: its one-time password.
    pub async fn add_operator(&self, email: &str, role: Role, orgs: &[&OrgScope]) -> String {
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
        password.reveal().to_owned()
    }

    /// A browser signed in as a new operator of `role` that has chosen its password.
    pub async fn signed_in(&self, email: &str, role: Role, orgs: &[&OrgScope]) -> Browser {
        let one_time = self.add_operator(email, role, orgs).await;
        let mut browser = self.browser();
        let page = browser.sign_in(email, &one_time, None).await;
        assert_eq!(page.location(), Some("./account/password"), "{}", page.text);
        browser
            .get("/console/account/password")
            .await
            .expect(StatusCode::OK);
        let changed = browser
            .submit(
                "/console/account/password",
                &[("current", &one_time), ("new", CHOSEN), ("again", CHOSEN)],
            )
            .await;
        assert_eq!(changed.status, StatusCode::SEE_OTHER, "{}", changed.text);
        browser
    }

    pub fn browser(&self) -> Browser {
        Browser {
            base: self.base.clone(),
            http: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap(),
            cookies: BTreeMap::new(),
            csrf: String::new(),
        }
    }
}

/// A page as the browser received it.
pub struct Page {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub text: String,
}

impl Page {
    pub fn location(&self) -> Option<&str> {
        self.headers.get(LOCATION).and_then(|v| v.to_str().ok())
    }

    /// The `Set-Cookie` headers of the answer.
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers
            .get_all(SET_COOKIE)
            .iter()
            .map(|v| v.to_str().unwrap().to_owned())
            .collect()
    }

    pub fn expect(&self, status: StatusCode) -> &str {
        assert_eq!(self.status, status, "{}", self.text);
        &self.text
    }
}

pub struct Browser {
    pub base: String,
    http: reqwest::Client,
    pub cookies: BTreeMap<String, String>,
    /// The CSRF token of the last page that carried one.
    pub csrf: String,
}

impl Browser {
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        form: Option<&[(&str, &str)]>,
        headers: &[(&str, &str)],
    ) -> Page {
        let body = form.map(|form| ("application/x-www-form-urlencoded", form_body(form)));
        self.send(method, path, body, headers).await
    }

    /// Posts `body` as it is (a file), with the page's CSRF token in the header htmx sends.
    pub async fn post_file(&mut self, path: &str, body: &str) -> Page {
        let csrf = self.csrf.clone();
        let body = Some(("application/octet-stream", body.to_owned()));
        let headers = [("x-csrf-token", csrf.as_str())];
        self.send(Method::POST, path, body, &headers).await
    }

    async fn send(
        &mut self,
        method: Method,
        path: &str,
        body: Option<(&str, String)>,
        headers: &[(&str, &str)],
    ) -> Page {
        let mut request = self.http.request(method, format!("{}{path}", self.base));
        let cookies: Vec<String> = self
            .cookies
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        if !cookies.is_empty() {
            request = request.header(COOKIE, cookies.join("; "));
        }
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some((content_type, body)) = body {
            request = request.header("content-type", content_type).body(body);
        }
        let response = request.send().await.unwrap();
        let page = Page {
            status: response.status(),
            headers: response.headers().clone(),
            text: response.text().await.unwrap(),
        };
        for cookie in page.set_cookies() {
            let pair = cookie.split(';').next().unwrap();
            let (name, value) = pair.split_once('=').unwrap();
            if value.is_empty() {
                self.cookies.remove(name);
            } else {
                self.cookies.insert(name.to_owned(), value.to_owned());
            }
        }
        if let Some(token) = csrf_in(&page.text) {
            self.csrf = token;
        }
        page
    }

    pub async fn get(&mut self, path: &str) -> Page {
        self.request(Method::GET, path, None, &[]).await
    }

    /// Posts `fields` as a form, with the CSRF token of the last page.
    pub async fn submit(&mut self, path: &str, fields: &[(&str, &str)]) -> Page {
        let csrf = self.csrf.clone();
        let mut form = vec![("csrf", csrf.as_str())];
        form.extend_from_slice(fields);
        self.request(Method::POST, path, Some(&form), &[]).await
    }

    /// Opens the sign-in page and signs in: the answer to the form.
    pub async fn sign_in(&mut self, email: &str, password: &str, code: Option<&str>) -> Page {
        self.get("/console/sign-in").await.expect(StatusCode::OK);
        self.submit(
            "/console/sign-in",
            &[
                ("email", email),
                ("password", password),
                ("code", code.unwrap_or("")),
            ],
        )
        .await
    }
}

fn form_body(fields: &[(&str, &str)]) -> String {
    fields
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .collect::<Vec<_>>()
        .join("&")
}

fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The CSRF token a page's forms carry.
fn csrf_in(html: &str) -> Option<String> {
    let at = html.find("name=\"csrf\" value=\"")? + "name=\"csrf\" value=\"".len();
    let end = html[at..].find('"')?;
    Some(html[at..at + end].to_owned())
}

/// The text of the element with id `id` in `html`, up to its first tag.
pub fn by_id<'a>(html: &'a str, id: &str) -> &'a str {
    let start = format!("id=\"{id}\">");
    let at = html
        .find(&start)
        .unwrap_or_else(|| panic!("no #{id} in {html}"))
        + start.len();
    &html[at..at + html[at..].find('<').unwrap()]
}
