//! Steps every console journey takes, shared by this suite and the whole service's
//! (`tests/browser/`): checking a page a browser shows, and an operator's first sign-in.

use std::path::{Path, PathBuf};

use crate::webdriver::Browser;

/// Where the screenshots go: the workspace's `target/console-screenshots/`, whichever crate's
/// tests ask.
fn screenshots() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let workspace = here
        .ancestors()
        .find(|dir| dir.join("Cargo.lock").exists())
        .unwrap_or(here);
    workspace.join("target/console-screenshots")
}

/// Checks the page the browser shows (no console error, nothing loaded from outside `base`,
/// dates made local by the console's script) and saves its screenshot as `name`.
pub async fn visit(browser: &Browser, base: &str, name: &str) {
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
            "{name} loaded {address} from outside the service"
        );
    }
    if browser.has("time[datetime]").await {
        let time = browser.find("time[datetime]").await;
        let title = browser.attribute(&time, "title").await.unwrap_or_default();
        assert!(
            title.ends_with(" UTC"),
            "{name}: the console's script did not run ({title:?})"
        );
    }
    browser
        .screenshot(&screenshots().join(format!("{name}.png")))
        .await;
}

/// Signs in at the console under `base` with a one-time password and chooses `chosen` instead
/// (once the page says so).
pub async fn first_sign_in(
    browser: &Browser,
    base: &str,
    email: &str,
    one_time: &str,
    chosen: &str,
) {
    browser.goto(&format!("{base}/console/")).await;
    browser.fill("#email", email).await;
    browser.fill("#password", one_time).await;
    browser
        .click(&browser.find("form[action='sign-in'] button").await)
        .await;
    browser.wait_for_text("h1", "Change your password").await;
    browser.fill("#current", one_time).await;
    browser.fill("#new", chosen).await;
    browser.fill("#again", chosen).await;
    browser
        .click(&browser.find("form[action='account/password'] button").await)
        .await;
    browser
        .wait_for_text("main", "Your password is changed.")
        .await;
}
