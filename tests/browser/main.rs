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
#[path = "../support/running.rs"]
mod running;
#[path = "../../console/tests/browser/steps.rs"]
mod steps;
#[allow(dead_code)]
#[path = "../../console/tests/browser/webdriver.rs"]
mod webdriver;

use std::path::{Path, PathBuf};
use std::process::Command;

use store::{NewOperator, Role};

use running::Running;
use steps::{first_sign_in, visit};
use webdriver::Driver;

/// The password the owner chooses instead of its one-time one.
const CHOSEN: &str = "correct horse battery staple";

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

/// Starts the whole service with an owner; the service, and the owner's one-time password.
async fn start(data_dir: PathBuf, tweak: impl FnOnce(&mut rewards::Config)) -> (Running, String) {
    let service = Running::start(data_dir, tweak).await;
    let owner = NewOperator {
        email: "owner@example.com".into(),
        role: Role::Owner,
        orgs: Vec::new(),
        allowed_addresses: Vec::new(),
    };
    let (_, one_time) = service.store.operators().add(owner).await.unwrap();
    (service, one_time.reveal().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Chromium, chromedriver and OpenSSH's sftp (.ci/run installs them)"]
async fn an_owner_opens_the_door_and_watches_a_file_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let (service, one_time) = start(dir.path().join("data"), |_| {}).await;
    let base = &format!("http://{}", service.admin);
    let (org, config) = (&service.org, &service.config);
    let sftp_port = service.sftp.port();
    let driver = Driver::start().await;
    let browser = driver.session().await;
    first_sign_in(&browser, base, "owner@example.com", &one_time, CHOSEN).await;

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
    let (service, one_time) = start(dir.path().join("data"), |c| {
        // The receiver is on this host; no retry comes by itself while the test runs.
        c.api.webhooks.rules.allow_http = true;
        c.api.webhooks.rules.allowed = vec!["127.0.0.1/32".parse().unwrap()];
        c.api.webhooks.first_retry = std::time::Duration::from_secs(3_600);
    })
    .await;
    let base = &format!("http://{}", service.admin);
    let org = &service.org;
    let driver = Driver::start().await;
    let browser = driver.session().await;
    first_sign_in(&browser, base, "owner@example.com", &one_time, CHOSEN).await;

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
    let key = service.api_key().await;
    let earn = serde_json::json!({"id": "e-1", "walletId": "card-1", "amount": 25,
        "date": "2026-11-18T10:15:00Z"});
    assert_eq!(service.earn(&key, &earn).await, 202);

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
