//! Signing in and out, a first sign-in's demands, two-step sign-in and the operator's sessions.

use reqwest::StatusCode;
use store::{Role, operators_totp as totp};

use crate::console_tests;
use crate::helpers::{CHOSEN, Console};

/// The current code of a base-32 secret.
fn code_of(secret: &str) -> String {
    let secret = totp::from_base32(secret).unwrap();
    format!(
        "{:06}",
        totp::code_at(&secret, totp::step_of(chrono::Utc::now().timestamp()))
    )
}

/// The text between `start` and the next `end` in `html`.
fn between<'a>(html: &'a str, start: &str, end: &str) -> &'a str {
    let at = html
        .find(start)
        .unwrap_or_else(|| panic!("{start} not in {html}"))
        + start.len();
    &html[at..at + html[at..].find(end).unwrap()]
}

console_tests! {
    a_first_sign_in_changes_the_one_time_password_then_lists_the_organisations => |app: Console| async move {
        let one_time = app.add_operator("ada@example.com", Role::Owner, &[]).await;
        let mut browser = app.browser();
        let wrong = browser.sign_in("ada@example.com", "not the password", None).await;
        assert!(wrong.expect(StatusCode::OK).contains("The e-mail or password is not right."));
        assert!(wrong.text.contains("value=\"ada@example.com\""), "the e-mail is kept");
        let page = browser.sign_in("ada@example.com", &one_time, None).await;
        assert_eq!(page.location(), Some("./account/password"));
        // Until the password is changed, every page leads back to changing it.
        let home = browser.get("/console/").await;
        assert_eq!(home.location(), Some("./account/password"));
        let form = browser.get("/console/account/password").await;
        assert!(form.expect(StatusCode::OK).contains("one-time"));
        let differ = browser
            .submit("/console/account/password", &[("current", &one_time), ("new", CHOSEN), ("again", "something else entirely")])
            .await;
        let text = differ.expect(StatusCode::OK);
        assert!(text.contains("id=\"again-error\">the two new passwords differ"), "{text}");
        let short = browser
            .submit("/console/account/password", &[("current", &one_time), ("new", "short"), ("again", "short")])
            .await;
        assert!(short.expect(StatusCode::OK).contains("id=\"new-error\""), "{}", short.text);
        let changed = browser
            .submit("/console/account/password", &[("current", &one_time), ("new", CHOSEN), ("again", CHOSEN)])
            .await;
        assert_eq!(changed.location(), Some("../account?done=password"));
        let account = browser.get("/console/account?done=password").await;
        assert!(account.expect(StatusCode::OK).contains("Your password is changed."));
        let home = browser.get("/console/").await;
        let text = home.expect(StatusCode::OK);
        assert!(text.contains("Acme") && text.contains("Other") && text.contains("Main"), "{text}");
        assert!(text.contains("(PTS)"));
    };

    two_step_sign_in_is_enrolled_with_a_qr_code_and_then_asked_for => |app: Console| async move {
        let mut browser = app.signed_in("ada@example.com", Role::Admin, &[]).await;
        let page = browser.get("/console/account/two-factor").await;
        assert!(page.expect(StatusCode::OK).contains("Set up two-step sign-in"));
        let begun = browser.submit("/console/account/two-factor", &[]).await;
        let text = begun.expect(StatusCode::OK).to_owned();
        assert!(text.contains("<svg") && !text.contains("<?xml"), "a QR code drawn in the page");
        let secret = between(&text, "id=\"totp-secret\">", "<").to_owned();
        let uri = between(&text, "name=\"uri\" value=\"", "\"").replace("&amp;", "&");
        let wrong = browser
            .submit("/console/account/two-factor/confirm", &[("code", "000000"), ("secret", &secret), ("uri", &uri)])
            .await;
        let shown = wrong.expect(StatusCode::OK);
        assert!(shown.contains("id=\"code-error\"") && shown.contains("<svg"), "the error beside the field, the code again");
        let code = code_of(&secret);
        let confirmed = browser
            .submit("/console/account/two-factor/confirm", &[("code", &code), ("secret", &secret), ("uri", &uri)])
            .await;
        let text = confirmed.expect(StatusCode::OK).to_owned();
        assert!(text.contains("Two-step sign-in is on."));
        let codes = between(&text, "id=\"recovery-codes\">", "</ul>").matches("<li>").count();
        assert_eq!(codes, 10);
        let recovery = between(&text, "id=\"recovery-codes\"><li>", "</li>").to_owned();

        let mut again = app.browser();
        let asked = again.sign_in("ada@example.com", CHOSEN, None).await;
        let text = asked.expect(StatusCode::OK);
        assert!(text.contains("id=\"code-error\">Enter the 6-digit code"), "{text}");
        let signed_in = again.sign_in("ada@example.com", CHOSEN, Some(&recovery)).await;
        assert_eq!(signed_in.location(), Some("./"), "{}", signed_in.text);
        again.get("/console/").await.expect(StatusCode::OK);
    };

    too_many_failures_lock_signing_in_with_a_message => |app: Console| async move {
        app.add_operator("ada@example.com", Role::Viewer, &[&app.acme]).await;
        let mut browser = app.browser();
        for _ in 0..4 {
            browser.sign_in("ada@example.com", "wrong password", None).await.expect(StatusCode::OK);
        }
        let locked = browser.sign_in("ada@example.com", "wrong password", None).await;
        let text = locked.expect(StatusCode::OK);
        assert!(text.contains("Too many failed sign-ins: signing in is locked. Try again in 15 minutes."), "{text}");
    };

    an_operator_sees_its_sessions_and_signs_out_elsewhere => |app: Console| async move {
        let mut here = app.signed_in("ada@example.com", Role::Support, &[&app.acme]).await;
        let mut there = app.browser();
        there.sign_in("ada@example.com", CHOSEN, None).await;
        there.get("/console/").await.expect(StatusCode::OK);
        let account = here.get("/console/account").await;
        let text = account.expect(StatusCode::OK);
        assert!(text.contains("this one") && text.contains("Sign out everywhere else"), "{text}");
        let ended = here.submit("/console/account/sessions/end-others", &[]).await;
        assert_eq!(ended.location(), Some("../../account?done=signed-out-elsewhere"));
        assert_eq!(there.get("/console/").await.location(), Some("./sign-in"));
        here.get("/console/").await.expect(StatusCode::OK);
        let out = here.submit("/console/sign-out", &[]).await;
        assert_eq!(out.location(), Some("./sign-in"));
        assert!(!here.cookies.contains_key("rewards_console"));
        assert_eq!(here.get("/console/account").await.location(), Some("./sign-in"));
    };

    a_role_sees_only_what_it_may_use => |app: Console| async move {
        let mut owner = app.signed_in("owner@example.com", Role::Owner, &[]).await;
        let text = owner.get("/console/").await.text;
        assert!(text.contains("href=\"operators\"") && text.contains("href=\"audit\""), "{text}");
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get("/console/").await.text;
        assert!(!text.contains("href=\"operators\"") && !text.contains("href=\"audit\""), "{text}");
        assert!(text.contains("Acme") && !text.contains("Other"), "a viewer of Acme sees only Acme: {text}");
        let _ = &app.other;
    };
}
