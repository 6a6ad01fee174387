//! What every answer of the console carries, and what it refuses.

use reqwest::StatusCode;
use store::Role;

use crate::console_tests;
use crate::helpers::Console;

/// The `src` and `href` values of a page.
fn links(html: &str) -> Vec<String> {
    let mut found = Vec::new();
    for attribute in ["src=\"", "href=\"", "action=\""] {
        let mut rest = html;
        while let Some(at) = rest.find(attribute) {
            rest = &rest[at + attribute.len()..];
            let end = rest.find('"').unwrap();
            found.push(rest[..end].to_owned());
        }
    }
    found
}

console_tests! {
    pages_carry_a_strict_policy_and_load_nothing_from_outside => |app: Console| async move {
        let mut browser = app.signed_in("owner@example.com", Role::Owner, &[]).await;
        let page = browser.get("/console/").await;
        page.expect(StatusCode::OK);
        let policy = page.headers["content-security-policy"].to_str().unwrap();
        assert!(policy.contains("script-src 'self'"), "{policy}");
        assert!(!policy.contains("unsafe-inline") && !policy.contains("unsafe-eval"), "{policy}");
        assert!(policy.contains("frame-ancestors 'none'"), "{policy}");
        assert_eq!(page.headers["cache-control"], "no-store");
        assert_eq!(page.headers["x-content-type-options"], "nosniff");
        assert!(!page.text.contains("<script>") && !page.text.contains("style=\""), "inline script or style");
        // Every link is relative to the page's base, which leads back to the console's root.
        assert!(page.text.contains("<base href=\"./\">"));
        for link in links(&page.text) {
            assert!(!link.starts_with('/') && !link.contains("://"), "{link} is not relative");
        }
        // The assets are inside the binary, under hashed names, kept for a year.
        let mut scripts: Vec<String> = links(&page.text).into_iter().filter(|l| l.starts_with("assets/")).collect();
        scripts.sort();
        scripts.dedup();
        assert_eq!(scripts.len(), 4, "{scripts:?}");
        for asset in &scripts {
            let got = browser.get(&format!("/console/{asset}")).await;
            got.expect(StatusCode::OK);
            assert_eq!(got.headers["cache-control"], "public, max-age=31536000, immutable");
            assert!(!got.text.is_empty());
        }
        assert!(scripts.iter().any(|s| s.starts_with("assets/htmx-2.0.11.")));
        let unknown = browser.get("/console/assets/console.0000000000.js").await;
        assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    };

    a_deeper_page_leads_back_with_its_base => |app: Console| async move {
        let mut browser = app.signed_in("owner@example.com", Role::Owner, &[]).await;
        let page = browser.get("/console/account/two-factor").await;
        page.expect(StatusCode::OK);
        assert!(page.text.contains("<base href=\"../\">"), "{}", page.text);
        let bare = browser.get("/console").await;
        assert_eq!(bare.status, StatusCode::SEE_OTHER);
        assert_eq!(bare.location(), Some("console/"));
    };

    a_form_without_its_token_is_refused => |app: Console| async move {
        let mut browser = app.signed_in("owner@example.com", Role::Owner, &[]).await;
        browser.get("/console/account").await.expect(StatusCode::OK);
        let good = browser.csrf.clone();
        browser.csrf = "forged".into();
        let refused = browser.submit("/console/sign-out", &[]).await;
        assert!(refused.expect(StatusCode::FORBIDDEN).contains("reload the page"), "{}", refused.text);
        // Still signed in.
        browser.get("/console/account").await.expect(StatusCode::OK);
        // From another site, even with the token.
        browser.csrf = good.clone();
        let form = [("csrf", good.as_str())];
        let cross = browser
            .request(reqwest::Method::POST, "/console/sign-out", Some(&form), &[("sec-fetch-site", "cross-site")])
            .await;
        assert_eq!(cross.status, StatusCode::FORBIDDEN);
        // htmx sends it as a header.
        let by_header = browser
            .request(reqwest::Method::POST, "/console/sign-out", None, &[("x-csrf-token", good.as_str())])
            .await;
        assert_eq!(by_header.status, StatusCode::SEE_OTHER);
        assert_eq!(by_header.location(), Some("./sign-in"));
        let gone = browser.get("/console/account").await;
        assert_eq!(gone.location(), Some("./sign-in"), "signed out");
    };

    cookies_are_http_only_strict_and_secure_behind_tls => |app: Console| async move {
        let one_time = app.add_operator("ada@example.com", Role::Viewer, &[&app.acme]).await;
        let mut browser = app.browser();
        browser.get("/console/sign-in").await.expect(StatusCode::OK);
        let csrf = browser.csrf.clone();
        let form = [("csrf", csrf.as_str()), ("email", "ada@example.com"), ("password", one_time.as_str())];
        let page = browser
            .request(reqwest::Method::POST, "/console/sign-in", Some(&form), &[("x-forwarded-proto", "https")])
            .await;
        assert_eq!(page.status, StatusCode::SEE_OTHER, "{}", page.text);
        let session = page.set_cookies().into_iter().find(|c| c.starts_with("rewards_console=")).unwrap();
        assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict") && session.contains("Secure"), "{session}");
        assert!(!session.contains("Path="), "scoped to the console's folder by the browser: {session}");
        let plain = app.browser().get("/console/sign-in").await;
        let cookie = plain.set_cookies().into_iter().next().unwrap();
        assert!(cookie.contains("HttpOnly") && !cookie.contains("Secure"), "{cookie}");
    };
}
