//! An owner's pages: operators added (the one-time password once), their role changed,
//! disabled, reset and removed; the sign-in settings; the audit trail filtered, read field by
//! field and verified. Other roles see neither page.

use reqwest::StatusCode;
use store::Role;

use crate::console_tests;
use crate::helpers::{CHOSEN, Console, by_id};

console_tests! {
    an_owner_manages_operators_and_reads_the_trail => |app: Console| async move {
        let mut owner = app.signed_in("owner@example.com", Role::Owner, &[]).await;
        let page = owner.get("/console/operators").await;
        assert!(page.expect(StatusCode::OK).contains("owner@example.com"));
        let bad = owner.submit("/console/operators", &[("email", "not an address"), ("role", "viewer")]).await;
        assert!(bad.expect(StatusCode::OK).contains("id=\"email-error\""), "{}", bad.text);
        let acme = app.acme.id().to_owned();
        let added = owner.submit("/console/operators", &[("email", "grace@example.com"), ("role", "support"), ("orgs", &acme)]).await;
        let text = added.expect(StatusCode::OK).to_owned();
        let password = by_id(&text, "one-time-password").to_owned();
        // The password shown works, once, as a one-time password.
        let mut grace = app.browser();
        let first = grace.sign_in("grace@example.com", &password, None).await;
        assert_eq!(first.location(), Some("./account/password"));
        let listed = owner.get("/console/operators").await.text;
        assert!(listed.contains("grace@example.com") && !listed.contains(&password));
        let id = app.store.operators().list().await.unwrap().into_iter().find(|o| o.email == "grace@example.com").unwrap().id;
        let role = owner.submit(&format!("/console/operators/{id}/role"), &[("role", "viewer"), ("orgs", &acme)]).await;
        assert_eq!(role.status, StatusCode::SEE_OTHER, "{}", role.text);
        let disabled = owner.submit(&format!("/console/operators/{id}/disable"), &[]).await;
        assert_eq!(disabled.status, StatusCode::SEE_OTHER);
        assert_eq!(grace.get("/console/account/password").await.location(), Some("../sign-in"), "a disabled operator's session ends");

        // The trail: filtered by operation, each entry's fields before and after.
        let trail = owner.get("/console/audit?operation=operator.").await;
        let text = trail.expect(StatusCode::OK).to_owned();
        assert!(text.contains("operator.add") && text.contains("operator.set-role") && !text.contains("settings.set"), "{text}");
        assert!(text.contains("<td>role</td><td>—</td><td>viewer</td>"), "the role set, read out: {text}");
        assert!(text.contains(&format!("<td>orgs</td><td>—</td><td>{acme}</td>")), "a list read out: {text}");
        let verified = owner.get("/console/audit?verify=1").await.text;
        assert!(by_id(&verified, "verdict").starts_with("The chain is intact"), "{verified}");
        let wrong = owner.get("/console/audit?since=yesterday").await;
        assert!(wrong.expect(StatusCode::OK).contains("`since`: give a date and time"));
        // Two-step sign-in required of everyone: the owner, without one, is sent to set it up.
        let settings = owner.submit("/console/operators/settings", &[("twoFactorRequired", "true")]).await;
        assert_eq!(settings.status, StatusCode::SEE_OTHER);
        assert!(app.store.operators().two_factor_required().await.unwrap());
        assert_eq!(owner.get("/console/operators").await.location(), Some("./account/two-factor"));
        let _ = CHOSEN;
    };

    other_roles_do_not_reach_the_owner_pages => |app: Console| async move {
        let mut admin = app.signed_in("admin@example.com", Role::Admin, &[]).await;
        let home = admin.get("/console/").await.text;
        assert!(!home.contains("href=\"operators\"") && home.contains("href=\"audit\""), "an admin reads the trail: {home}");
        assert_eq!(admin.get("/console/operators").await.status, StatusCode::FORBIDDEN);
        admin.get("/console/audit").await.expect(StatusCode::OK);
        let mut support = app.signed_in("support@example.com", Role::Support, &[&app.acme]).await;
        assert_eq!(support.get("/console/audit").await.status, StatusCode::FORBIDDEN);
        let sent = support.submit("/console/operators", &[("email", "x@example.com"), ("role", "owner")]).await;
        assert_eq!(sent.status, StatusCode::FORBIDDEN);
    };
}
