//! The console on the whole service (`rewards::Application`: the admin listener with the
//! console, the SFTP door and the batch pipeline), driven in headless Chromium: an owner adds
//! an SFTP user with a public key and issues an API key (its secret shown once); a client
//! uploads a file with OpenSSH's `sftp`; the console shows the file, its report and its
//! rejected rows; an endpoint that answers errors shows as failing, its delivery log says what
//! the receiver answered, and once the receiver is mended an event is delivered again from the
//! log. Ignored by a plain `cargo test` (it needs Chromium, chromedriver and
//! OpenSSH's client, which `.ci/run` installs); `.ci/run` runs it with the other ignored tests.
//! The console's other journeys are in `console/tests/browser/`, whose WebDriver client this
//! borrows.

#[allow(dead_code)]
#[path = "../../console/tests/browser/webdriver.rs"]
mod webdriver;

use std::path::{Path, PathBuf};
use std::process::Command;

use store::{NewCampaign, NewMember, NewOperator, NewWallet, Role};

use webdriver::{Browser, Driver};

/// A password the owner chooses instead of its one-time one.
const CHOSEN: &str = "correct horse battery staple";

fn screenshots() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/console-screenshots")
}

/// Checks the page shown (no console error, nothing from elsewhere) and saves its screenshot.
async fn visit(browser: &Browser, base: &str, name: &str) {
    browser.find("main").await;
    let log = browser.console_log().await;
    let errors: Vec<&String> = log
        .iter()
        .filter(|l| l.starts_with("SEVERE") || l.starts_with("WARNING"))
        .collect();
    assert!(errors.is_empty(), "{name}: the browser logged {errors:?}");
    for address in browser.loaded().await {
        assert!(
            address.starts_with(base),
            "{name} loaded {address} from outside"
        );
    }
    browser
        .screenshot(&screenshots().join(format!("{name}.png")))
        .await;
}

/// A new ed25519 key pair in `dir`: the public key file's path.
fn keygen(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    let made = Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    dir.join(format!("{name}.pub"))
}

/// `ssh-keygen -l`'s SHA256 fingerprint of a key file.
fn fingerprint(key: &Path) -> String {
    let out = Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(key)
        .output()
        .unwrap();
    let text = String::from_utf8(out.stdout).unwrap();
    text.split_whitespace().nth(1).unwrap().to_owned()
}

/// The whole service on loopback ports, with Acme's campaign `Main`, member `cust-1` with
/// wallet `card-1`, and an owner: the service, and the owner's one-time password.
struct Service {
    config: rewards::Config,
    store: store::Store,
    org: store::Organisation,
    campaign: store::Campaign,
    admin: String,
    client: String,
    sftp_port: u16,
    one_time: String,
    stop: tokio::sync::oneshot::Sender<()>,
    running: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Service {
    async fn start(data_dir: PathBuf, tweak: impl FnOnce(&mut rewards::Config)) -> Service {
        let mut config = rewards::Config {
            data_dir,
            http_addr: ([127, 0, 0, 1], 0).into(),
            sftp_addr: ([127, 0, 0, 1], 0).into(),
            admin_addr: ([127, 0, 0, 1], 0).into(),
            ..Default::default()
        };
        tweak(&mut config);
        let store = rewards::open_store(&config).await.unwrap();
        let org = store.tenancy().create_org("Acme").await.unwrap();
        let main = NewCampaign {
            name: "Main".into(),
            currency: "PTS".into(),
            ..Default::default()
        };
        let campaign = store
            .tenancy()
            .create_campaign(&org.scope(), main)
            .await
            .unwrap();
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "cust-1".into(),
            ..Default::default()
        };
        store
            .members()
            .create_member(&org.scope(), member)
            .await
            .unwrap();
        let wallet = NewWallet {
            owner: Some("cust-1".into()),
            external_id: Some("card-1".into()),
            name: None,
        };
        store
            .ledger()
            .create_wallet(&campaign, wallet)
            .await
            .unwrap();
        let owner = NewOperator {
            email: "owner@example.com".into(),
            role: Role::Owner,
            orgs: Vec::new(),
            allowed_addresses: Vec::new(),
        };
        let (_, one_time) = store.operators().add(owner).await.unwrap();
        let application = rewards::Application::build(config.clone(), store.clone())
            .await
            .unwrap();
        let admin = format!("http://{}", application.admin_addr().unwrap());
        let client = format!("http://{}", application.http_addr().unwrap());
        let sftp_port = application.sftp_addr().unwrap().port();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let running = tokio::spawn(application.run(async {
            let _ = stopped.await;
        }));
        Service {
            config,
            store,
            org,
            campaign,
            admin,
            client,
            sftp_port,
            one_time: one_time.reveal().to_owned(),
            stop,
            running,
        }
    }

    /// Signs the owner in with its one-time password and chooses `CHOSEN` instead.
    async fn sign_in_owner(&self, browser: &Browser) {
        browser.goto(&format!("{}/console/", self.admin)).await;
        browser.fill("#email", "owner@example.com").await;
        browser.fill("#password", &self.one_time).await;
        browser
            .click(&browser.find("form[action='sign-in'] button").await)
            .await;
        browser.wait_for_text("h1", "Change your password").await;
        browser.fill("#current", &self.one_time).await;
        browser.fill("#new", CHOSEN).await;
        browser.fill("#again", CHOSEN).await;
        browser
            .click(&browser.find("form[action='account/password'] button").await)
            .await;
        browser
            .wait_for_text("main", "Your password is changed.")
            .await;
    }

    async fn stop(self) {
        self.stop.send(()).unwrap();
        self.running.await.unwrap().unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium, chromedriver and OpenSSH's sftp (.ci/run installs them)"]
async fn an_owner_opens_the_door_and_watches_a_file_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let service = Service::start(dir.path().join("data"), |_| {}).await;
    let (base, org, config) = (&service.admin, &service.org, &service.config);
    let sftp_port = service.sftp_port;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    service.sign_in_owner(&browser).await;

    // The SFTP door: a user with the client's public key, beside the host key's fingerprint.
    let client_key = keygen(dir.path(), "client");
    let public_key = std::fs::read_to_string(&client_key).unwrap();
    browser
        .goto(&format!("{base}/console/orgs/{}/sftp", org.id))
        .await;
    let shown = browser.wait_for_text("#host-fingerprint", "SHA256:").await;
    let host_key = config.data_dir.join("sftp_host_ed25519_key");
    assert_eq!(
        shown,
        fingerprint(&host_key),
        "the fingerprint a client sees"
    );
    browser.fill("#username", "acme-drop").await;
    browser.fill("#publicKey", public_key.trim()).await;
    browser
        .click(
            &browser
                .find("form[action$='/sftp'] button[type='submit']")
                .await,
        )
        .await;
    browser.wait_for_text("main", "may log in now").await;
    visit(&browser, base, "sftp-users").await;

    // An API key: its secret on the page that issued it, and never again.
    browser
        .goto(&format!("{base}/console/orgs/{}/keys", org.id))
        .await;
    browser
        .find("input[name='permissions'][value='webhooks']")
        .await;
    browser
        .click(
            &browser
                .find("input[name='permissions'][value='webhooks']")
                .await,
        )
        .await;
    browser
        .click(
            &browser
                .find("form[action$='/keys'] button[type='submit']")
                .await,
        )
        .await;
    let secret = browser.wait_for_text("#new-api-secret", "").await;
    assert!(!secret.is_empty());
    visit(&browser, base, "key-issued").await;
    browser
        .goto(&format!("{base}/console/orgs/{}/keys", org.id))
        .await;
    browser.wait_for_text("main", "active").await;
    assert!(
        !browser.has("#new-api-secret").await,
        "the secret is shown once"
    );

    // A client uploads a file with OpenSSH's sftp; the console shows it loaded and reported.
    let rows: String = (1..=2_000)
        .map(|i| match i % 500 {
            0 => format!("e-{i},card-1,lots,2026-11-20\n"),
            _ => format!("e-{i},card-1,{}.25,2026-11-20\n", i % 40 + 1),
        })
        .collect();
    std::fs::write(
        dir.path().join("earns.csv"),
        format!("id,walletId,amount,date\n{rows}"),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("batch.txt"),
        "put earns.csv inbox/earns.csv\n",
    )
    .unwrap();
    let upload = Command::new("sftp")
        .current_dir(dir.path())
        .args(["-P", &sftp_port.to_string(), "-i"])
        .arg(dir.path().join("client"))
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"])
        .args(["-b", "batch.txt", "acme-drop@127.0.0.1"])
        .output()
        .unwrap();
    assert!(
        upload.status.success(),
        "{}",
        String::from_utf8_lossy(&upload.stderr)
    );
    browser
        .goto(&format!("{base}/console/orgs/{}/batches", org.id))
        .await;
    browser.wait_for_text("#batch-rows", "earns.csv").await;
    browser.click(&browser.find("#batch-rows a").await).await;
    // Loading, the page follows it; done, it shows the report.
    browser.wait_for_text("#rows", "2,000").await;
    browser.wait_for_text("#loaded", "1,996").await;
    browser.wait_for_text("#rejected-rows", "lots").await;
    visit(&browser, base, "batch-report").await;
    // The overview counts the file's tokens in today's figures.
    browser
        .goto(&format!("{base}/console/orgs/{}/", org.id))
        .await;
    browser.wait_for_text("#outstanding", "PTS").await;
    assert!(browser.has("svg.chart polyline.series-earned").await);
    visit(&browser, base, "overview-after-a-file").await;
    browser.quit().await;
    service.stop().await;
}

/// A receiver of webhooks on this host: it answers 503 with its reason until mended, then 200.
/// How many deliveries it was sent since it was mended.
#[derive(Clone, Default)]
struct Receiver {
    mended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    received_since: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Receiver {
    /// Serves it; its address.
    async fn start(&self) -> std::net::SocketAddr {
        use std::sync::atomic::Ordering;
        let receiver = self.clone();
        let app = axum::Router::new().route(
            "/hooks",
            axum::routing::post(move || {
                let receiver = receiver.clone();
                async move {
                    if receiver.mended.load(Ordering::SeqCst) {
                        receiver.received_since.fetch_add(1, Ordering::SeqCst);
                        (axum::http::StatusCode::OK, "thanks")
                    } else {
                        let down = "warehouse is down for maintenance";
                        (axum::http::StatusCode::SERVICE_UNAVAILABLE, down)
                    }
                }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await });
        address
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium and chromedriver (.ci/run installs them)"]
async fn an_owner_finds_why_an_endpoint_fails_and_delivers_again() {
    use std::sync::atomic::Ordering;
    let receiver = Receiver::default();
    let address = receiver.start().await;
    let dir = tempfile::tempdir().unwrap();
    let service = Service::start(dir.path().join("data"), |c| {
        // The receiver is on this host; no retry comes by itself while the test runs.
        c.api.webhooks.rules.allow_http = true;
        c.api.webhooks.rules.allowed = vec!["127.0.0.1/32".parse().unwrap()];
        c.api.webhooks.first_retry = std::time::Duration::from_secs(3_600);
    })
    .await;
    let (base, org) = (&service.admin, &service.org);
    let driver = Driver::start().await;
    let browser = driver.session().await;
    service.sign_in_owner(&browser).await;

    // The endpoint, for completed earns.
    browser
        .goto(&format!("{base}/console/orgs/{}/webhooks", org.id))
        .await;
    browser
        .fill("#url", &format!("http://{address}/hooks"))
        .await;
    browser.fill("#description", "warehouse").await;
    browser
        .click(
            &browser
                .find("input[name='eventTypes'][value='earn.completed']")
                .await,
        )
        .await;
    browser
        .click(
            &browser
                .find("form[action$='/webhooks'] button[type='submit']")
                .await,
        )
        .await;
    browser.wait_for_text("#new-webhook-secret", "whsec_").await;

    // A member earns through the client API; the receiver refuses the event.
    let new = store::NewKey {
        campaign_id: service.campaign.id.clone(),
        ..Default::default()
    };
    let key = service
        .store
        .tenancy()
        .issue_key(&org.scope(), new)
        .await
        .unwrap();
    let earn = serde_json::json!({"id": "e-1", "walletId": "card-1", "amount": 25,
        "date": "2026-11-18T10:15:00Z"});
    let answer = reqwest::Client::new()
        .post(format!("{}/v1/transactions/earn", service.client))
        .header("x-api-key", &key.key.api_key)
        .header("x-api-secret", &key.secret)
        .json(&earn)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 202);

    // The overview names the failing endpoint; its page shows what the receiver said.
    let overview = format!("{base}/console/orgs/{}/", org.id);
    browser
        .reload_until(&overview, "#failing-endpoints", "failing")
        .await;
    browser
        .click(&browser.find("#failing-endpoints a").await)
        .await;
    browser.wait_for_text("main", "failing").await;
    browser.wait_for_text("main table", "503").await;
    browser
        .wait_for_text("main table", "warehouse is down")
        .await;
    visit(&browser, base, "webhook-failing").await;

    // Mended, the event is delivered again from the log.
    receiver.mended.store(true, Ordering::SeqCst);
    browser
        .click(
            &browser
                .find("main table form[action$='/redeliver'] button")
                .await,
        )
        .await;
    browser.wait_for_text("main", "queued").await;
    let endpoint = browser.current_url().await;
    let endpoint = endpoint.split('?').next().unwrap().to_owned();
    browser.reload_until(&endpoint, "main table", "200").await;
    assert_eq!(receiver.received_since.load(Ordering::SeqCst), 1);
    browser.wait_for_text("main", "delivering").await;
    visit(&browser, base, "webhook-delivered-again").await;
    browser.quit().await;
    service.stop().await;
}
