//! Transfers over HTTP: both sides shown in the seed's types in both versions, linked;
//! idempotent by `externalId`; bad requests named.

use api::views::{TransactionView, TransferView};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Tokens;

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

async fn send(app: &TestApp, external_id: &str, from: &str, to: &str, amount: Value) -> Reply {
    let body = json!({"externalId": external_id, "fromWalletId": from, "toWalletId": to,
        "amount": amount, "description": "Birthday gift"});
    app.post("/v1/transfers", body).await
}

async fn a_transfer_shows_on_both_sides(app: TestApp) {
    app.member_with_wallet().await;
    app.create_member("card-2").await;
    app.create_wallet("card-2", "w-2").await;
    app.earn("e-1", "w-1", json!(50)).await;
    let made: TransferView = send(&app, "t-1", "w-1", "w-2", json!(20))
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(made.amount, Tokens::whole(20));
    assert_eq!(made.received.len(), 1, "one expiry date: never");
    assert_eq!(made.received[0].expires_at, None);
    let again: TransferView = send(&app, "t-1", "w-1", "w-2", json!(20))
        .await
        .expect(StatusCode::OK);
    assert_eq!(again, made);
    assert_eq!(app.balance("w-1").await, Tokens::whole(30));
    assert_eq!(app.balance("w-2").await, Tokens::whole(20));
    let by_ref: TransferView = app.get("/v1/transfers/t-1").await.expect(StatusCode::OK);
    assert_eq!(by_ref, made);

    for version in ["1.6.2", "1.9.5"] {
        let app = &app;
        let get = |id: String| {
            let path = format!("/v1/transactions/{id}");
            async move {
                app.send(Method::GET, &path, Some(&app.key), Some(version), None)
                    .await
                    .expect::<TransactionView>(StatusCode::OK)
            }
        };
        let out = get(made.id.clone()).await;
        assert_eq!((out.kind.as_ref(), out.amount), ("BURN", Tokens::whole(20)));
        assert_eq!(out.transfer_id.as_deref(), Some(made.id.as_str()));
        assert_eq!(out.reversal_of, None);
        let leg = get(made.received[0].transaction_id.clone()).await;
        assert_eq!((leg.kind.as_ref(), leg.amount), ("EARN", Tokens::whole(20)));
        assert_eq!(
            leg.transfer_id.as_deref(),
            Some(made.id.as_str()),
            "{version}"
        );
        assert_eq!(leg.wallet_id, made.to_wallet_id);
    }
    let earns = app.transactions("walletId=w-2&type=EARN").await;
    assert_eq!(earns.total, 1, "the receiving side is listed as an EARN");
}

async fn bad_transfers_name_the_field(app: TestApp) {
    app.member_with_wallet().await;
    app.create_member("card-2").await;
    app.create_wallet("card-2", "w-2").await;
    app.earn("e-1", "w-1", json!(10)).await;
    let missing = app
        .post("/v1/transfers", json!({"fromWalletId": "w-1"}))
        .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.fields(), ["amount", "toWalletId", "externalId"]);
    let same = send(&app, "t-1", "w-1", "w-1", json!(1)).await;
    assert_eq!(same.status, StatusCode::CONFLICT);
    assert_eq!(same.problem().code, "same_wallet");
    assert_eq!(same.problem().field.as_deref(), Some("toWalletId"));
    let nowhere = send(&app, "t-2", "w-1", "nope", json!(1)).await;
    assert_eq!(nowhere.status, StatusCode::NOT_FOUND);
    assert_eq!(nowhere.problem().field.as_deref(), Some("toWalletId"));
    let short = send(&app, "t-3", "w-1", "w-2", json!(11)).await;
    assert_eq!(short.status, StatusCode::PAYMENT_REQUIRED);
    send(&app, "t-4", "w-1", "w-2", json!(1))
        .await
        .expect::<TransferView>(StatusCode::CREATED);
    let reused = send(&app, "t-4", "w-2", "w-1", json!(1)).await;
    assert_eq!(reused.status, StatusCode::CONFLICT);
    assert_eq!(reused.problem().field.as_deref(), Some("fromWalletId"));
    assert_eq!(
        app.get("/v1/transfers/nope").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.balance("w-1").await, Tokens::whole(9));
}

app_tests!(a_transfer_shows_on_both_sides, bad_transfers_name_the_field);
