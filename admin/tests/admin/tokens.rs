//! Automation tokens: made by a signed-in operator with scopes and an expiry, shown once,
//! acting as their operator within both its role and their scopes, recorded as theirs, and
//! stopped by revocation, expiry and the operator's disabling.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

fn in_days(app: &AdminApp, days: i64) -> String {
    (app.store.now() + chrono::Duration::days(days)).to_rfc3339()
}

async fn a_token_acts_within_its_scopes_and_is_recorded_as_its_operators(app: AdminApp) {
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let body =
        json!({"name": "nightly report", "scopes": ["read"], "expiresAt": in_days(&app, 30)});
    let made = app.post("/admin/v1/tokens", &admin, body).await;
    let made = made.expect(StatusCode::CREATED).clone();
    let token = made["token"].as_str().unwrap().to_owned();
    assert!(token.starts_with("rwt_"));
    assert_eq!(made["scopes"], json!(["read"]));
    // It reads; it may not configure (outside its scopes), nor act as a session.
    app.get("/admin/v1/orgs", &token)
        .await
        .expect(StatusCode::OK);
    let me = app.get("/admin/v1/me", &token).await;
    assert_eq!(me.expect(StatusCode::OK)["via"], "token");
    let campaigns = format!("/admin/v1/orgs/{}/campaigns", app.acme.id());
    let reply = app
        .post(
            &campaigns,
            &token,
            json!({"name": "Summer", "currency": "PTS"}),
        )
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    assert!(reply.body["detail"].as_str().unwrap().contains("scopes"));
    for (method, path) in [
        (Method::DELETE, "/admin/v1/sessions/current"),
        (Method::GET, "/admin/v1/tokens"),
    ] {
        let reply = app.send(method, path, Some(&token), None).await;
        assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted", "{path}");
    }
    // A configuring token changes, as its operator, recorded as a token's action.
    let body =
        json!({"name": "deploy", "scopes": ["configure", "read"], "expiresAt": in_days(&app, 1)});
    let configuring = app.post("/admin/v1/tokens", &admin, body).await;
    let configuring = configuring.expect(StatusCode::CREATED)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    app.post(
        &campaigns,
        &configuring,
        json!({"name": "Summer", "currency": "PTS"}),
    )
    .await
    .expect(StatusCode::CREATED);
    let trail = app
        .get("/admin/v1/audit-log?operation=campaign.create", &app.owner)
        .await;
    let entry = trail.expect(StatusCode::OK)["data"][0].clone();
    assert_eq!(entry["actorKind"], "token");
    assert_eq!(entry["actorName"], "admin@example.com");
    assert_eq!(entry["orgId"], app.acme.id());
    // A scope beyond the role is refused when the token is made.
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let body = json!({"name": "x", "scopes": ["configure"], "expiresAt": in_days(&app, 1)});
    let reply = app.post("/admin/v1/tokens", &viewer, body).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "scopes[0]");
}

async fn a_token_stops_when_revoked_expired_or_its_operator_disabled(app: AdminApp) {
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let make =
        |days: i64| json!({"name": "script", "scopes": ["read"], "expiresAt": in_days(&app, days)});
    let mut tokens = Vec::new();
    for _ in 0..3 {
        let made = app.post("/admin/v1/tokens", &admin, make(2)).await;
        let made = made.expect(StatusCode::CREATED).clone();
        tokens.push((
            made["id"].as_str().unwrap().to_owned(),
            made["token"].as_str().unwrap().to_owned(),
        ));
    }
    // Revoked: 401 at once, and listed as revoked.
    let path = format!("/admin/v1/tokens/{}", tokens[0].0);
    let revoked = app.send(Method::DELETE, &path, Some(&admin), None).await;
    assert!(revoked.expect(StatusCode::OK)["revokedAt"].is_string());
    assert_eq!(
        app.get("/admin/v1/orgs", &tokens[0].1).await.status,
        StatusCode::UNAUTHORIZED
    );
    app.get("/admin/v1/orgs", &tokens[1].1)
        .await
        .expect(StatusCode::OK);
    let listed = app.get("/admin/v1/tokens", &admin).await;
    assert_eq!(listed.expect(StatusCode::OK)["total"], 3);
    // Expired.
    app.store.clock().advance(chrono::Duration::days(3));
    assert_eq!(
        app.get("/admin/v1/orgs", &tokens[1].1).await.status,
        StatusCode::UNAUTHORIZED
    );
    // Bad expiries are refused.
    let admin = app
        .sign_in("admin@example.com", crate::helpers::CHOSEN)
        .await;
    for days in [-1, 400] {
        let reply = app.post("/admin/v1/tokens", &admin, make(days)).await;
        assert_eq!(
            reply.code(StatusCode::BAD_REQUEST),
            "validation_failed",
            "{days}"
        );
        assert_eq!(reply.body["field"], "expiresAt");
    }
    let made = app.post("/admin/v1/tokens", &admin, make(2)).await;
    let token = made.expect(StatusCode::CREATED)["token"]
        .as_str()
        .unwrap()
        .to_owned();
    // Its operator disabled: it stops.
    let owner = app
        .sign_in("owner@example.com", crate::helpers::CHOSEN)
        .await;
    app.post(
        "/admin/v1/operators/admin@example.com/disable",
        &owner,
        json!({}),
    )
    .await
    .expect(StatusCode::OK);
    assert_eq!(
        app.get("/admin/v1/orgs", &token).await.status,
        StatusCode::UNAUTHORIZED
    );
}

admin_tests!(
    a_token_acts_within_its_scopes_and_is_recorded_as_its_operators,
    a_token_stops_when_revoked_expired_or_its_operator_disabled,
);
