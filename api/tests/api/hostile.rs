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

/// A body field no operation takes (a typo, most often) is a 400 naming it, on every operation
/// alike, instead of being ignored by some.
async fn unknown_body_fields_are_400_naming_them(app: TestApp) {
    app.member_with_wallet().await;
    let earn = json!({"id": "e-1", "amount": 1, "date": "2026-11-18T10:15:00Z", "walletId": "w-1", "walletid": "w-2"});
    refused(
        &app.post("/v1/transactions/earn", earn).await,
        "earn",
        "walletid",
    );
    let burn = json!({"externalId": "b-1", "amount": 1, "walletId": "w-1", "description": "x", "ammount": 5});
    refused(
        &app.post("/v1/transactions/burn", burn).await,
        "burn",
        "ammount",
    );
    let wallet = json!({"owner": "card-1", "externalId": "w-9", "colour": "red"});
    refused(&app.post("/v1/wallets", wallet).await, "wallet", "colour");
    let member =
        json!({"firstName": "A", "userId": "u-2", "externalId": "card-2", "nickname": "x"});
    refused(&app.post("/v1/members", member).await, "member", "nickname");
    // The member guide's own spellings stay accepted.
    let guide = json!({"name": "B", "userId": "u-3", "externalID": "card-3"});
    let created = app.post("/api/members", guide).await;
    assert!(created.status.is_success(), "{}", created.body);
}

/// What the HTTP layer itself refuses (a URI past hyper's limit, a head too large, bytes that
/// are not HTTP, a path parameter that is not UTF-8) is a problem like every other answer.
async fn requests_the_server_cannot_read_are_problems(app: TestApp) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let addr = app.base.trim_start_matches("http://").to_string();
    let send = |request: Vec<u8>| {
        let addr = addr.clone();
        async move {
            let mut stream = tokio::net::TcpStream::connect(&addr).await.unwrap();
            stream.write_all(&request).await.unwrap();
            let mut answer = Vec::new();
            let _ = stream.read_to_end(&mut answer).await;
            String::from_utf8_lossy(&answer).into_owned()
        }
    };
    let long_uri = format!(
        "GET /v1/members/{} HTTP/1.1\r\nhost: x\r\n\r\n",
        "a".repeat(70_000)
    );
    let huge_head = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-big: {}\r\n\r\n",
        "b".repeat(1_500_000)
    );
    for (request, status, code) in [
        (long_uri.into_bytes(), "414", "uri_too_long"),
        (huge_head.into_bytes(), "431", "headers_too_large"),
        (b"NOT HTTP AT ALL\r\n\r\n".to_vec(), "400", "bad_request"),
    ] {
        let answer = send(request).await;
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{answer}"
        );
        assert!(
            answer.contains("content-type: application/problem+json"),
            "{answer}"
        );
        assert!(answer.contains(&format!(r#""code":"{code}""#)), "{answer}");
    }
    let reply = app.get("/v1/wallets/%FF").await;
    refused(&reply, "not UTF-8", "id");
}

app_tests!(
    requests_the_server_cannot_read_are_problems,
    control_characters_in_ids_and_filters_are_400,
    nul_in_a_body_is_400,
    unknown_body_fields_are_400_naming_them,
);
