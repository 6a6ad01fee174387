//! Signing in over HTTP: wrong passwords, the one-time password's demand, the lockout and the
//! owner's way back, second factors, sessions listed and ended, and the audit trail of it all.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::{Role, operators_totp as totp};

use crate::admin_tests;
use crate::helpers::{AdminApp, CHOSEN};

async fn a_wrong_password_is_401_and_no_token_is_401(app: AdminApp) {
    let body = json!({"email": "owner@example.com", "password": "not it"});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(body))
        .await;
    assert_eq!(reply.code(StatusCode::UNAUTHORIZED), "wrong_credentials");
    let unknown = json!({"email": "nobody@example.com", "password": "not it"});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(unknown))
        .await;
    assert_eq!(reply.code(StatusCode::UNAUTHORIZED), "wrong_credentials");
    for token in [None, Some("rwo_made-up"), Some("rwt_made-up")] {
        let reply = app.send(Method::GET, "/admin/v1/me", token, None).await;
        assert_eq!(
            reply.code(StatusCode::UNAUTHORIZED),
            "unauthorized",
            "{token:?}"
        );
    }
    // The body names what is missing.
    let reply = app
        .send(
            Method::POST,
            "/admin/v1/sessions",
            None,
            Some(json!({"email": "x"})),
        )
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "password");
}

async fn a_one_time_password_must_be_changed_before_anything_else(app: AdminApp) {
    let (_, password) = app
        .store
        .operators()
        .add(store::NewOperator {
            email: "new@example.com".into(),
            role: Role::Admin,
            orgs: vec![],
            allowed_addresses: vec![],
        })
        .await
        .unwrap();
    let body = json!({"email": "new@example.com", "password": password.reveal()});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(body))
        .await;
    let signed_in = reply.expect(StatusCode::CREATED);
    assert_eq!(signed_in["mustChangePassword"], true);
    let token = signed_in["token"].as_str().unwrap().to_owned();
    let reply = app.get("/admin/v1/orgs", &token).await;
    assert_eq!(
        reply.code(StatusCode::FORBIDDEN),
        "password_change_required"
    );
    app.get("/admin/v1/me", &token).await.expect(StatusCode::OK);
    // Nor may it make a token that would outlive the demand.
    let expires = (app.store.now() + chrono::Duration::days(1)).to_rfc3339();
    let body = json!({"name": "x", "scopes": ["read"], "expiresAt": expires});
    let reply = app.post("/admin/v1/tokens", &token, body).await;
    assert_eq!(
        reply.code(StatusCode::FORBIDDEN),
        "password_change_required"
    );
    // A wrong current password, a short new one.
    let wrong = json!({"currentPassword": "not it", "newPassword": CHOSEN});
    let reply = app
        .send(
            Method::PUT,
            "/admin/v1/me/password",
            Some(&token),
            Some(wrong),
        )
        .await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "wrong_credentials");
    let short = json!({"currentPassword": password.reveal(), "newPassword": "short"});
    let reply = app
        .send(
            Method::PUT,
            "/admin/v1/me/password",
            Some(&token),
            Some(short),
        )
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    let good = json!({"currentPassword": password.reveal(), "newPassword": CHOSEN});
    app.send(
        Method::PUT,
        "/admin/v1/me/password",
        Some(&token),
        Some(good),
    )
    .await
    .expect(StatusCode::OK);
    app.get("/admin/v1/orgs", &token)
        .await
        .expect(StatusCode::OK);
    // The old password no longer signs in; the new one does.
    let old = json!({"email": "new@example.com", "password": password.reveal()});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(old))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    app.sign_in("new@example.com", CHOSEN).await;
}

async fn many_failures_lock_the_account_and_its_owner_gets_back_in_after(app: AdminApp) {
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let guess = json!({"email": "admin@example.com", "password": "guess"});
    let mut statuses = Vec::new();
    for _ in 0..7 {
        let reply = app
            .send(
                Method::POST,
                "/admin/v1/sessions",
                None,
                Some(guess.clone()),
            )
            .await;
        statuses.push(reply.status.as_u16());
    }
    assert_eq!(statuses, [401, 401, 401, 401, 429, 429, 429]);
    // Locked: even the right password is refused, and says until when.
    let right = json!({"email": "admin@example.com", "password": CHOSEN});
    let reply = app
        .send(
            Method::POST,
            "/admin/v1/sessions",
            None,
            Some(right.clone()),
        )
        .await;
    assert_eq!(reply.code(StatusCode::TOO_MANY_REQUESTS), "locked");
    assert!(
        reply.body["detail"]
            .as_str()
            .unwrap()
            .contains("locked until")
    );
    // Sessions opened before go on; the others are not locked.
    app.get("/admin/v1/me", &admin).await.expect(StatusCode::OK);
    app.sign_in("owner@example.com", CHOSEN).await;
    // After the lock, the owner of the account signs in.
    app.store.clock().advance(chrono::Duration::minutes(16));
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(right))
        .await;
    reply.expect(StatusCode::CREATED);
    // Every failure up to the lock is in the trail (attempts while locked are refused before
    // anything is checked, the lock itself recorded), no password in it.
    let trail = app
        .get(
            "/admin/v1/audit-log?operation=session.sign-in&limit=100",
            &app.owner,
        )
        .await;
    let entries = trail.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .clone();
    let failed = entries.iter().filter(|e| e["outcome"] != "ok").count();
    assert_eq!(failed, 5, "{entries:?}");
    assert!(
        entries
            .iter()
            .any(|e| e["outcome"].as_str().unwrap().contains("locked until"))
    );
    assert!(!trail.body.to_string().contains(CHOSEN));
}

async fn a_second_factor_is_enrolled_and_then_asked_for(app: AdminApp) {
    let token = app.operator("admin@example.com", Role::Admin, &[]).await;
    let begun = app.post("/admin/v1/me/two-factor", &token, json!({})).await;
    let begun = begun.expect(StatusCode::CREATED).clone();
    assert!(
        begun["uri"]
            .as_str()
            .unwrap()
            .starts_with("otpauth://totp/")
    );
    let secret = totp::from_base32(begun["secret"].as_str().unwrap()).unwrap();
    let now = app.store.now().timestamp();
    let wrong = format!(
        "{:06}",
        (totp::code_at(&secret, totp::step_of(now)) + 1) % 1_000_000
    );
    let reply = app
        .post(
            "/admin/v1/me/two-factor/confirm",
            &token,
            json!({"code": wrong}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CONFLICT);
    let code = format!("{:06}", totp::code_at(&secret, totp::step_of(now)));
    let confirmed = app
        .post(
            "/admin/v1/me/two-factor/confirm",
            &token,
            json!({"code": code}),
        )
        .await;
    let codes = confirmed.expect(StatusCode::OK)["recoveryCodes"].clone();
    assert_eq!(codes.as_array().unwrap().len(), 10);
    // Now a sign-in asks for it.
    let password_only = json!({"email": "admin@example.com", "password": CHOSEN});
    let reply = app
        .send(
            Method::POST,
            "/admin/v1/sessions",
            None,
            Some(password_only),
        )
        .await;
    assert_eq!(
        reply.code(StatusCode::UNAUTHORIZED),
        "second_factor_required"
    );
    // The code used to confirm is not taken again; the next step's is, and a recovery code.
    app.store.clock().advance(chrono::Duration::seconds(30));
    let next = format!(
        "{:06}",
        totp::code_at(&secret, totp::step_of(app.store.now().timestamp()))
    );
    for factor in [next, codes[0].as_str().unwrap().to_owned()] {
        let body =
            json!({"email": "admin@example.com", "password": CHOSEN, "secondFactor": factor});
        let reply = app
            .send(Method::POST, "/admin/v1/sessions", None, Some(body.clone()))
            .await;
        reply.expect(StatusCode::CREATED);
        let again = app
            .send(Method::POST, "/admin/v1/sessions", None, Some(body))
            .await;
        assert_eq!(again.code(StatusCode::UNAUTHORIZED), "wrong_second_factor");
    }
    // Recovery codes and secrets never reach the trail.
    let trail = app.get("/admin/v1/audit-log?limit=100", &app.owner).await;
    let text = trail.expect(StatusCode::OK).to_string();
    assert!(!text.contains(codes[1].as_str().unwrap()));
    assert!(!text.contains(begun["secret"].as_str().unwrap()));
}

async fn an_owner_requires_a_second_factor_of_everyone(app: AdminApp) {
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    app.send(
        Method::PUT,
        "/admin/v1/settings",
        Some(&app.owner),
        Some(json!({"twoFactorRequired": true})),
    )
    .await
    .expect(StatusCode::OK);
    let reply = app.get("/admin/v1/orgs", &viewer).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "two_factor_required");
    // It may still enrol; signing in says so.
    app.post("/admin/v1/me/two-factor", &viewer, json!({}))
        .await
        .expect(StatusCode::CREATED);
    let body = json!({"email": "viewer@example.com", "password": CHOSEN});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(body))
        .await;
    assert_eq!(
        reply.expect(StatusCode::CREATED)["mustEnrolTwoFactor"],
        true
    );
}

async fn sessions_are_listed_and_ended_one_by_one(app: AdminApp) {
    let first = app.operator("admin@example.com", Role::Admin, &[]).await;
    let second = app.sign_in("admin@example.com", CHOSEN).await;
    let list = app.get("/admin/v1/sessions", &first).await;
    let sessions = list.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .clone();
    assert_eq!(sessions.len(), 2);
    let current: Vec<bool> = sessions.iter().map(|s| s["current"] == true).collect();
    assert_eq!(current.iter().filter(|c| **c).count(), 1);
    let other = sessions.iter().find(|s| s["current"] == false).unwrap();
    let path = format!("/admin/v1/sessions/{}", other["id"].as_str().unwrap());
    app.send(Method::DELETE, &path, Some(&first), None)
        .await
        .expect(StatusCode::NO_CONTENT);
    let reply = app.get("/admin/v1/me", &second).await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    // Another operator's session is not this one's to end.
    let owner_sessions = app.get("/admin/v1/sessions", &app.owner).await;
    let owner_session = owner_sessions.body["data"][0]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let path = format!("/admin/v1/sessions/{owner_session}");
    let reply = app.send(Method::DELETE, &path, Some(&first), None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    // Signing out ends this one.
    app.send(
        Method::DELETE,
        "/admin/v1/sessions/current",
        Some(&first),
        None,
    )
    .await
    .expect(StatusCode::NO_CONTENT);
    assert_eq!(
        app.get("/admin/v1/me", &first).await.status,
        StatusCode::UNAUTHORIZED
    );
    // An idle session ends after 30 minutes.
    let idle = app.sign_in("admin@example.com", CHOSEN).await;
    app.store.clock().advance(chrono::Duration::minutes(31));
    assert_eq!(
        app.get("/admin/v1/me", &idle).await.status,
        StatusCode::UNAUTHORIZED
    );
}

async fn the_admin_api_is_not_on_the_client_listener(app: AdminApp) {
    // The client API's router knows no admin route: its 404, whatever the credentials.
    let client = api::app(api::AppState::new(
        app.store.clone(),
        store::CodeKey::new(&[7u8; 32]),
    ));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, client).await });
    let reply = app
        .http
        .get(format!("{base}/admin/v1/me"))
        .bearer_auth(&app.owner)
        .send()
        .await
        .unwrap();
    assert_eq!(reply.status(), StatusCode::NOT_FOUND);
    // And the admin document is at its own listener's /openapi.json.
    let document = app
        .http
        .get(format!("{}/openapi.json", app.base))
        .send()
        .await
        .unwrap();
    let document: serde_json::Value = document.json().await.unwrap();
    assert_eq!(document["info"]["title"], "Rewards admin");
}

/// A flood of guesses at one account from one address: it is locked, and so is the address,
/// each refusal cheap; every answer a 401 or a 429, never an error; sessions opened before are
/// served throughout, and someone else signs in from another address. Once the lock has run
/// out, the account's owner signs in.
async fn a_thousand_guesses_lock_one_account_and_leave_the_rest_served(app: AdminApp) {
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    app.operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let guesses = guess_at_the_owner(&app, 1_000, 10).await;
    let mut statuses: Vec<u16> = guesses.clone();
    statuses.sort_unstable();
    statuses.dedup();
    assert_eq!(statuses, [401, 429], "only refusals");
    assert!(guesses.iter().filter(|s| **s == 401).count() <= 20);
    app.get("/admin/v1/me", &admin).await.expect(StatusCode::OK);
    // Another address: someone else signs in; the flooded account stays locked from there too.
    let elsewhere = reqwest::Client::builder()
        .local_address(std::net::IpAddr::from([127, 0, 0, 2]))
        .build()
        .unwrap();
    let sign_in = |email: &str, password: &str| {
        elsewhere
            .post(format!("{}/admin/v1/sessions", app.base))
            .json(&json!({"email": email, "password": password}))
            .send()
    };
    let viewer = sign_in("viewer@example.com", CHOSEN).await.unwrap();
    assert_eq!(viewer.status(), StatusCode::CREATED);
    let owner = sign_in("owner@example.com", CHOSEN).await.unwrap();
    assert_eq!(owner.status(), StatusCode::TOO_MANY_REQUESTS);
    // The lock runs out: the owner is back in, from where the flood came.
    app.store.clock().advance(chrono::Duration::minutes(16));
    app.sign_in("owner@example.com", CHOSEN).await;
}

/// `count` wrong guesses at the owner's password, `at_once` at a time: each answer's status.
async fn guess_at_the_owner(app: &AdminApp, count: usize, at_once: usize) -> Vec<u16> {
    let mut statuses = Vec::with_capacity(count);
    let guess = json!({"email": "owner@example.com", "password": "guess"});
    for _ in 0..count / at_once {
        let mut round = tokio::task::JoinSet::new();
        for _ in 0..at_once {
            let request = app
                .http
                .post(format!("{}/admin/v1/sessions", app.base))
                .json(&guess);
            round.spawn(async move { request.send().await.unwrap().status().as_u16() });
        }
        while let Some(status) = round.join_next().await {
            statuses.push(status.unwrap());
        }
    }
    statuses
}

admin_tests!(
    a_thousand_guesses_lock_one_account_and_leave_the_rest_served,
    a_wrong_password_is_401_and_no_token_is_401,
    a_one_time_password_must_be_changed_before_anything_else,
    many_failures_lock_the_account_and_its_owner_gets_back_in_after,
    a_second_factor_is_enrolled_and_then_asked_for,
    an_owner_requires_a_second_factor_of_everyone,
    sessions_are_listed_and_ended_one_by_one,
    the_admin_api_is_not_on_the_client_listener,
);
