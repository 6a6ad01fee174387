//! Just enough of the W3C WebDriver protocol to drive Chromium through chromedriver: open pages,
//! find elements, click and type, read text, take screenshots, read the browser's console log
//! and the addresses a page loaded. (Chromium and chromedriver come from the distribution's
//! packages: `apt-get install chromium chromium-driver`.)

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use base64::Engine;
use serde_json::{Value, json};

const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
/// How long a page may take to show what a test waits for.
const PATIENCE: Duration = Duration::from_secs(15);

/// A running chromedriver, stopped when dropped.
pub struct Driver {
    child: Child,
    url: String,
    http: reqwest::Client,
}

impl Driver {
    pub async fn start() -> Driver {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let driver =
            std::env::var("REWARDS_TEST_CHROMEDRIVER").unwrap_or_else(|_| "chromedriver".into());
        let child = Command::new(&driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("{driver} did not start ({e}): install chromium-driver"));
        let driver = Driver {
            child,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        let started = Instant::now();
        loop {
            let ready = driver
                .http
                .get(format!("{}/status", driver.url))
                .send()
                .await;
            if let Ok(answer) = ready
                && let Ok(status) = answer.json::<Value>().await
                && status["value"]["ready"] == true
            {
                break;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "chromedriver never became ready"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        driver
    }

    /// A new headless browser window of 1280 by 900.
    pub async fn session(&self) -> Browser {
        let binary =
            std::env::var("REWARDS_TEST_CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": binary,
                "args": ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--lang=en-US",
                         "--window-size=1280,900", "--no-first-run", "--disable-extensions"]
            },
            "goog:loggingPrefs": {"browser": "ALL"},
            "unhandledPromptBehavior": "ignore"
        }}});
        let answer: Value = self
            .http
            .post(format!("{}/session", self.url))
            .json(&capabilities)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        let id = answer["value"]["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no browser session: {answer}"))
            .to_owned();
        Browser {
            url: format!("{}/session/{id}", self.url),
            http: self.http.clone(),
        }
    }
}

impl Drop for Driver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One browser window.
pub struct Browser {
    url: String,
    http: reqwest::Client,
}

/// An element of the current page.
#[derive(Clone)]
pub struct Element(String);

impl Browser {
    async fn command(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, Value> {
        let mut request = self.http.request(method, format!("{}{path}", self.url));
        if let Some(body) = body {
            request = request.json(&body);
        }
        let answer: Value = request.send().await.unwrap().json().await.unwrap();
        let value = answer["value"].clone();
        if value.get("error").is_some() {
            Err(value)
        } else {
            Ok(value)
        }
    }

    async fn post(&self, path: &str, body: Value) -> Value {
        self.command(reqwest::Method::POST, path, Some(body))
            .await
            .unwrap_or_else(|e| panic!("POST {path}: {e}"))
    }

    async fn get(&self, path: &str) -> Value {
        self.command(reqwest::Method::GET, path, None)
            .await
            .unwrap_or_else(|e| panic!("GET {path}: {e}"))
    }

    pub async fn goto(&self, url: &str) {
        self.post("/url", json!({"url": url})).await;
    }

    pub async fn current_url(&self) -> String {
        self.get("/url").await.as_str().unwrap().to_owned()
    }

    /// Waits until the page shown is one whose address holds `part`: a form's answer, not the
    /// page it was sent from.
    pub async fn wait_for_url(&self, part: &str) -> String {
        let started = Instant::now();
        loop {
            let url = self.current_url().await;
            if url.contains(part) {
                return url;
            }
            assert!(
                started.elapsed() < PATIENCE,
                "never went to `{part}`: {url}"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The first element `css` selects, once the page has one.
    pub async fn find(&self, css: &str) -> Element {
        let started = Instant::now();
        loop {
            let found = self
                .command(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if let Ok(element) = found {
                return Element(element[ELEMENT].as_str().unwrap().to_owned());
            }
            assert!(
                started.elapsed() < PATIENCE,
                "no element `{css}` on {}",
                self.current_url().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Whether the page has an element `css` selects now.
    pub async fn has(&self, css: &str) -> bool {
        let found = self
            .post("/elements", json!({"using": "css selector", "value": css}))
            .await;
        !found.as_array().unwrap().is_empty()
    }

    /// Waits until the text of the element `css` selects contains `text` (through reloads and
    /// swaps of the page).
    pub async fn wait_for_text(&self, css: &str, text: &str) -> String {
        let started = Instant::now();
        let mut seen = String::new();
        loop {
            let found = self
                .command(
                    reqwest::Method::POST,
                    "/element",
                    Some(json!({"using": "css selector", "value": css})),
                )
                .await;
            if let Ok(element) = found {
                let id = element[ELEMENT].as_str().unwrap_or_default().to_owned();
                if let Ok(now) = self
                    .command(reqwest::Method::GET, &format!("/element/{id}/text"), None)
                    .await
                {
                    seen = now.as_str().unwrap_or_default().to_owned();
                    if seen.contains(text) {
                        return seen;
                    }
                }
            }
            assert!(
                started.elapsed() < PATIENCE,
                "`{css}` never said `{text}` on {}: {seen}",
                self.current_url().await
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// Opens `url` again and again until `css` says `text`: what a page shows only once work in
    /// the background is done, on a page that does not follow it by itself.
    #[allow(dead_code)] // the service's own browser suite (`tests/browser`) uses it
    pub async fn reload_until(&self, url: &str, css: &str, text: &str) -> String {
        let started = Instant::now();
        loop {
            self.goto(url).await;
            if self.has(css).await {
                let now = self.text(&self.find(css).await).await;
                if now.contains(text) {
                    return now;
                }
            }
            assert!(
                started.elapsed() < PATIENCE,
                "`{css}` never said `{text}` on {url}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    pub async fn click(&self, element: &Element) {
        self.post(&format!("/element/{}/click", element.0), json!({}))
            .await;
    }

    pub async fn type_in(&self, element: &Element, text: &str) {
        self.post(&format!("/element/{}/clear", element.0), json!({}))
            .await;
        self.post(
            &format!("/element/{}/value", element.0),
            json!({"text": text}),
        )
        .await;
    }

    /// Chooses the file at `path` in the file field `css` selects.
    pub async fn choose_file(&self, css: &str, path: &Path) {
        let element = self.find(css).await;
        let path = path.display().to_string();
        self.post(
            &format!("/element/{}/value", element.0),
            json!({"text": path}),
        )
        .await;
    }

    /// Fills in the field `css` selects.
    pub async fn fill(&self, css: &str, text: &str) {
        let element = self.find(css).await;
        self.type_in(&element, text).await;
    }

    pub async fn text(&self, element: &Element) -> String {
        self.get(&format!("/element/{}/text", element.0))
            .await
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    pub async fn attribute(&self, element: &Element, name: &str) -> Option<String> {
        self.get(&format!("/element/{}/attribute/{name}", element.0))
            .await
            .as_str()
            .map(str::to_owned)
    }

    /// Accepts the page's `confirm()` question, once it asks.
    pub async fn accept_confirmation(&self) {
        let started = Instant::now();
        while self
            .command(reqwest::Method::POST, "/alert/accept", Some(json!({})))
            .await
            .is_err()
        {
            assert!(started.elapsed() < PATIENCE, "no confirmation was asked");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    pub async fn execute(&self, script: &str) -> Value {
        self.post("/execute/sync", json!({"script": script, "args": []}))
            .await
    }

    /// Resizes the window to `width` by `height` CSS pixels.
    pub async fn resize(&self, width: u32, height: u32) {
        self.post("/window/rect", json!({"width": width, "height": height}))
            .await;
    }

    /// Whether the page is wider than the window: a reader would have to scroll sideways
    /// (a wide table scrolls within its own box instead).
    pub async fn scrolls_sideways(&self) -> bool {
        let script = "return document.documentElement.scrollWidth > window.innerWidth;";
        self.execute(script).await.as_bool().unwrap_or(true)
    }

    /// Saves a PNG of the window.
    pub async fn screenshot(&self, path: &Path) {
        let data = self.get("/screenshot").await;
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(data.as_str().unwrap())
            .unwrap();
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, bytes).unwrap();
    }

    /// The browser console's messages since the last call, as `LEVEL message`.
    pub async fn console_log(&self) -> Vec<String> {
        let entries = self.post("/se/log", json!({"type": "browser"})).await;
        entries
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                format!(
                    "{} {}",
                    e["level"].as_str().unwrap_or(""),
                    e["message"].as_str().unwrap_or("")
                )
            })
            .collect()
    }

    /// The addresses the current page loaded (itself and every resource).
    pub async fn loaded(&self) -> Vec<String> {
        let names = self
            .execute("return [location.href].concat(performance.getEntriesByType('resource').map(e => e.name));")
            .await;
        names
            .as_array()
            .unwrap()
            .iter()
            .map(|n| n.as_str().unwrap().to_owned())
            .collect()
    }

    pub async fn quit(self) {
        let _ = self.command(reqwest::Method::DELETE, "", None).await;
    }
}
