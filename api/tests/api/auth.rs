//! Credentials, permissions and version negotiation.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::{ApiVersion, NewKey, Permission};

use crate::app_tests;
use crate::helpers::{Credentials, TestApp, small_catalogue};

async fn missing_or_wrong_credentials_are_401(app: TestApp) {
    let none = app.send(Method::GET, "/v1/members", None, None, None).await;
    assert_eq!(none.status, StatusCode::UNAUTHORIZED);
    assert_eq!(none.problem().code, "unauthorized");
    assert_eq!(none.headers["content-type"], "application/problem+json");

    let wrong_secret = Credentials {
        secret: "rs_not-the-secret".into(),
        ..app.key.clone()
    };
    let unknown_key = Credentials {
        api_key: "rk_unknown".into(),
        ..app.key.clone()
    };
    let swapped = Credentials {
        api_key: app.key.secret.clone(),
        secret: app.key.api_key.clone(),
        ..app.key.clone()
    };
    for key in [&wrong_secret, &unknown_key, &swapped] {
        let reply = app
            .send(Method::GET, "/v1/members", Some(key), None, None)
            .await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{key:?}");
    }
    // The member guide's routes are guarded too.
    let alias = app
        .send(Method::POST, "/api/members", None, None, Some(json!({})))
        .await;
    assert_eq!(alias.status, StatusCode::UNAUTHORIZED);
}

async fn a_revoked_key_is_401(app: TestApp) {
    assert_eq!(app.get("/v1/members").await.status, StatusCode::OK);
    app.store.tenancy().revoke_key(&app.key.id).await.unwrap();
    let reply = app.get("/v1/members").await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
}

async fn a_read_only_key_may_read_but_not_write(app: TestApp) {
    let reader = app
        .issue_key(
            &app.org,
            &app.campaign,
            NewKey {
                read_only: true,
                ..Default::default()
            },
        )
        .await;
    let list = app
        .send(Method::GET, "/v1/members", Some(&reader), None, None)
        .await;
    assert_eq!(list.status, StatusCode::OK);
    let body = json!({"firstName": "Ada", "userId": "u1", "externalId": "c1"});
    let create = app
        .send(Method::POST, "/v1/members", Some(&reader), None, Some(body))
        .await;
    assert_eq!(create.status, StatusCode::FORBIDDEN);
    assert_eq!(create.problem().code, "read_only_key");
    assert_eq!(
        app.get("/v1/members").await.body["total"],
        0,
        "nothing was created"
    );

    // Read-only is judged by what an operation does: the vector search is sent with POST (a
    // vector is too long for a query string) but only reads.
    app.import_catalogue(small_catalogue()).await;
    let searcher = app
        .issue_key(
            &app.org,
            &app.campaign,
            NewKey {
                read_only: true,
                permissions: vec![Permission::VectorSearch],
                ..Default::default()
            },
        )
        .await;
    let search = json!({"limit": 2, "text": "dinner for two"});
    let found = app
        .send(
            Method::POST,
            "/v1/products/vector-search",
            Some(&searcher),
            None,
            Some(search.clone()),
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_eq!(found.body[0]["id"], "dinner");
    let without = app
        .send(
            Method::POST,
            "/v1/products/vector-search",
            Some(&reader),
            None,
            Some(search),
        )
        .await;
    assert_eq!(without.status, StatusCode::FORBIDDEN);
    assert_eq!(without.problem().code, "permission_required");
}

async fn the_key_summary_never_shows_the_key(app: TestApp) {
    let vector = app
        .issue_key(
            &app.org,
            &app.campaign,
            NewKey {
                permissions: vec![Permission::VectorSearch],
                ..Default::default()
            },
        )
        .await;
    let reply = app
        .send(Method::GET, "/v1/api-key", Some(&vector), None, None)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    let summary = &reply.body;
    assert_eq!(summary["id"], vector.id);
    assert_eq!(summary["org"], app.org.id());
    assert_eq!(summary["campaignId"], app.campaign);
    assert_eq!(summary["currency"], "PTS");
    assert_eq!(summary["logo"], "https://acme.example/logo.png");
    assert_eq!(summary["access"]["permissions"], json!(["vector-search"]));
    let shown = summary["apiKey"].as_str().unwrap();
    assert_ne!(shown, vector.api_key);
    assert!(
        shown.starts_with(&vector.api_key[..7])
            && shown.ends_with(&vector.api_key[vector.api_key.len() - 4..])
    );
    let text = summary.to_string();
    assert!(!text.contains(&vector.api_key) && !text.contains(&vector.secret));
}

async fn versions_come_from_the_header_or_the_key(app: TestApp) {
    let default = app.get("/v1/api-key").await;
    assert_eq!(default.headers["x-api-version"], "1.9.5");
    let asked = app
        .send(
            Method::GET,
            "/v1/api-key",
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(asked.headers["x-api-version"], "1.6.2");
    assert_eq!(asked.body["access"]["version"], "1.6.2");

    let pinned = app
        .issue_key(
            &app.org,
            &app.campaign,
            NewKey {
                version: Some(ApiVersion::V1_6_2),
                ..Default::default()
            },
        )
        .await;
    let reply = app
        .send(Method::GET, "/v1/api-key", Some(&pinned), None, None)
        .await;
    assert_eq!(reply.headers["x-api-version"], "1.6.2");
    assert_eq!(reply.body["access"]["defaultVersion"], "1.6.2");
    let overridden = app
        .send(
            Method::GET,
            "/v1/api-key",
            Some(&pinned),
            Some("1.9.5"),
            None,
        )
        .await;
    assert_eq!(overridden.headers["x-api-version"], "1.9.5");

    let unknown = app
        .send(
            Method::GET,
            "/v1/api-key",
            Some(&app.key),
            Some("2.0.0"),
            None,
        )
        .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.problem().code, "unsupported_version");
    assert_eq!(unknown.body["field"], "x-api-version");
}

app_tests!(
    missing_or_wrong_credentials_are_401,
    a_revoked_key_is_401,
    a_read_only_key_may_read_but_not_write,
    the_key_summary_never_shows_the_key,
    versions_come_from_the_header_or_the_key,
);
