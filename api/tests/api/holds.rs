//! Holds over HTTP: placed, shown on the wallet (`held`, `available`), captured as a BURN in
//! both versions, voided, lapsed; idempotent by `externalId` and validated.

use api::views::{HoldView, PagedList, TransactionView};
use chrono::SecondsFormat;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Tokens;

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

async fn place(app: &TestApp, external_id: &str, amount: Value) -> Reply {
    let body = json!({"externalId": external_id, "walletId": "w-1", "amount": amount,
        "description": "Checkout 1234"});
    app.post("/v1/holds", body).await
}

async fn a_hold_reserves_tokens_until_it_is_captured(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(100)).await;
    let placed: HoldView = place(&app, "h-1", json!(30))
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(
        (placed.status.as_str(), placed.amount),
        ("held", Tokens::whole(30))
    );
    let again: HoldView = place(&app, "h-1", json!(30)).await.expect(StatusCode::OK);
    assert_eq!(again.id, placed.id, "the same request: the first hold");
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held, wallet.available),
        (Tokens::whole(100), Tokens::whole(30), Tokens::whole(70))
    );
    assert_eq!(
        app.burn("b-1", "w-1", json!(71)).await.status,
        StatusCode::PAYMENT_REQUIRED
    );
    let short = place(&app, "h-2", json!(71)).await;
    assert_eq!(short.status, StatusCode::PAYMENT_REQUIRED);

    let path = format!("/v1/holds/{}/capture", placed.id);
    let captured: HoldView = app
        .post(&path, json!({"amount": 20}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(captured.status.as_str(), "captured");
    assert_eq!(captured.captured, Some(Tokens::whole(20)));
    let burn_id = captured.transaction_id.clone().unwrap();
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held, wallet.available),
        (Tokens::whole(80), Tokens::ZERO, Tokens::whole(80))
    );
    // The capture is a BURN in both versions, named after the hold.
    for version in ["1.6.2", "1.9.5"] {
        let path = format!("/v1/transactions/{burn_id}");
        let burn: TransactionView = app
            .send(Method::GET, &path, Some(&app.key), Some(version), None)
            .await
            .expect(StatusCode::OK);
        assert_eq!(burn.kind, "BURN", "{version}");
        assert_eq!(burn.amount, Tokens::whole(20));
        assert_eq!(burn.external_id.as_deref(), Some("hold:h-1"));
    }
    // By its externalId too; the same capture again answers the hold as captured.
    let replay: HoldView = app
        .post("/v1/holds/h-1/capture", json!({}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(replay.transaction_id.as_deref(), Some(burn_id.as_str()));
    let void = app.post("/v1/holds/h-1/void", json!({})).await;
    assert_eq!(void.status, StatusCode::CONFLICT);
    assert_eq!(void.problem().code, "hold_closed");
    assert_eq!(void.problem().field.as_deref(), Some("id"));

    let second: HoldView = place(&app, "h-3", json!(5))
        .await
        .expect(StatusCode::CREATED);
    let voided: HoldView = app
        .post(&format!("/v1/holds/{}/void", second.id), json!({}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(voided.status.as_str(), "voided");
    assert_eq!(app.wallet("w-1").await.held, Tokens::ZERO);
    let list: PagedList<HoldView> = app
        .get("/v1/holds?walletId=w-1&status=captured")
        .await
        .expect(StatusCode::OK);
    let ids: Vec<&str> = list.data.iter().map(|h| h.external_id.as_str()).collect();
    assert_eq!(ids, ["h-1"]);
    let all: PagedList<HoldView> = app.get("/v1/holds").await.expect(StatusCode::OK);
    assert_eq!(all.total, 2, "the refused h-2 is no hold");
}

async fn bad_hold_requests_name_the_field_and_change_nothing(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(10)).await;
    let cases = [
        (
            json!({"walletId": "w-1", "description": "x", "externalId": "h"}),
            "amount",
        ),
        (
            json!({"walletId": "w-1", "description": "x", "externalId": "h", "amount": 0}),
            "amount",
        ),
        (
            json!({"walletId": "w-1", "description": "x", "amount": 1}),
            "externalId",
        ),
        (
            json!({"walletId": "w-1", "externalId": "h", "amount": 1}),
            "description",
        ),
        (
            json!({"walletId": "w-1", "description": "x", "externalId": "h", "amount": 1,
                "expiresAt": "2020-01-01"}),
            "expiresAt",
        ),
    ];
    for (body, field) in cases {
        let reply = app.post("/v1/holds", body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{field}");
        assert_eq!(reply.fields(), [field]);
    }
    let past = json!({"walletId": "w-1", "description": "x", "externalId": "h", "amount": 1,
        "expiresAt": "2020-01-01T00:00:00Z"});
    let past = app.post("/v1/holds", past).await;
    assert_eq!(past.status, StatusCode::CONFLICT);
    assert_eq!(past.problem().code, "expiry_passed");
    assert_eq!(past.problem().field.as_deref(), Some("expiresAt"));
    let nowhere = json!({"walletId": "nope", "description": "x", "externalId": "h", "amount": 1});
    assert_eq!(
        app.post("/v1/holds", nowhere).await.status,
        StatusCode::NOT_FOUND
    );
    place(&app, "h-1", json!(4))
        .await
        .expect::<HoldView>(StatusCode::CREATED);
    let reused = place(&app, "h-1", json!(5)).await;
    assert_eq!(reused.status, StatusCode::CONFLICT);
    assert_eq!(reused.problem().code, "already_exists");
    assert_eq!(reused.problem().field.as_deref(), Some("amount"));
    let over = app
        .post("/v1/holds/h-1/capture", json!({"amount": 4.5}))
        .await;
    assert_eq!(over.status, StatusCode::CONFLICT);
    assert_eq!(over.problem().code, "capture_exceeds_hold");
    assert_eq!(over.problem().field.as_deref(), Some("amount"));
    let zero = app
        .post("/v1/holds/h-1/capture", json!({"amount": 0}))
        .await;
    assert_eq!(zero.fields(), ["amount"]);
    let unknown = app.post("/v1/holds/nope/capture", json!({})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/v1/holds?status=open").await.fields(), ["status"]);
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (Tokens::whole(10), Tokens::whole(4))
    );
}

/// A hold whose expiry has come is not captured: it lapses, its tokens released.
async fn a_hold_past_its_expiry_lapses(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(10)).await;
    let expires = app.store.now() + chrono::Duration::seconds(1);
    let body = json!({"externalId": "h-1", "walletId": "w-1", "amount": 6,
        "description": "Checkout", "expiresAt": expires.to_rfc3339_opts(SecondsFormat::Millis, true)});
    app.post("/v1/holds", body)
        .await
        .expect::<HoldView>(StatusCode::CREATED);
    assert_eq!(app.wallet("w-1").await.available, Tokens::whole(4));
    // The service's clock moves past the expiry (no test waits for time to pass).
    app.store.clock().advance(chrono::Duration::seconds(2));
    let late = app.post("/v1/holds/h-1/capture", json!({})).await;
    assert_eq!(late.status, StatusCode::CONFLICT);
    assert_eq!(late.problem().code, "hold_closed");
    let hold: HoldView = app.get("/v1/holds/h-1").await.expect(StatusCode::OK);
    assert_eq!(hold.status.as_str(), "lapsed");
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.held, wallet.available),
        (Tokens::ZERO, Tokens::whole(10))
    );
}

app_tests!(
    a_hold_reserves_tokens_until_it_is_captured,
    bad_hold_requests_name_the_field_and_change_nothing,
    a_hold_past_its_expiry_lapses,
);
