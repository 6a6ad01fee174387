//! What an attacker or a careless client sends: control characters, bytes that are not UTF-8,
//! and other values no operation takes. Each is a 400 problem naming what it refuses, never a
//! 5xx, on either database.

use reqwest::StatusCode;
use serde_json::json;

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

fn refused(reply: &Reply, what: &str, field: &str) {
    assert_eq!(
        reply.status,
        StatusCode::BAD_REQUEST,
        "{what}: {}",
        reply.body
    );
    let kind = reply.headers[reqwest::header::CONTENT_TYPE]
        .to_str()
        .unwrap();
    assert_eq!(kind, "application/problem+json", "{what}");
    assert_eq!(
        reply.fields(),
        vec![field.to_string()],
        "{what}: {}",
        reply.body
    );
}

/// A NUL (or another control character) in a path id or a filter is a 400 naming it, which
/// PostgreSQL answered with a 500 when it reached the database.
async fn control_characters_in_ids_and_filters_are_400(app: TestApp) {
    app.member_with_wallet().await;
    for (path, field) in [
        ("/v1/members/%00", "id"),
        ("/v1/members/card%0A1", "id"),
        ("/v1/wallets/w%00", "id"),
        ("/v1/transactions/%00", "id"),
        ("/v1/orders/%00", "id"),
        ("/v1/products/%00", "id"),
        ("/v1/wallets?externalId=%00", "externalId"),
        ("/v1/wallets?ownerId=a%1Bb", "ownerId"),
        ("/v1/orders?ownerId=%00", "ownerId"),
        ("/v1/transactions?walletId=%7F", "walletId"),
        ("/v1/members/%FF%FE", "id"),
    ] {
        refused(&app.get(path).await, path, field);
    }
    assert_eq!(app.get("/v1/wallets/w-1").await.status, StatusCode::OK);
}

/// A NUL in a body's text or meta (at any depth) is a 400 naming the field.
async fn nul_in_a_body_is_400(app: TestApp) {
    app.member_with_wallet().await;
    let earn = |meta| json!({"id": "e-1", "amount": 1, "date": "2026-11-18T10:15:00Z", "walletId": "w-1", "meta": meta});
    for meta in [
        json!({"note": "a\u{0}b"}),
        json!({"deep": [{"er": ["x\u{0}"]}]}),
        json!({"k\u{0}ey": 1}),
    ] {
        let what = meta.to_string();
        refused(
            &app.post("/v1/transactions/earn", earn(meta)).await,
            &what,
            "meta",
        );
    }
    let text = json!({"id": "e-1", "amount": 1, "date": "2026-11-18T10:15:00Z", "walletId": "w-1", "description": "a\u{0}"});
    refused(
        &app.post("/v1/transactions/earn", text).await,
        "description",
        "description",
    );
    let fine = app
        .post(
            "/v1/transactions/earn",
            earn(json!({"note": "a\nb", "a": [[[[[[1]]]]]]})),
        )
        .await;
    assert_eq!(fine.status, StatusCode::ACCEPTED, "{}", fine.body);
}

app_tests!(
    control_characters_in_ids_and_filters_are_400,
    nul_in_a_body_is_400,
);
