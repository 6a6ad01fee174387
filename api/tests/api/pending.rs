//! Pending points over HTTP: an earn the campaign keeps pending shows in the wallet's `pending`
//! (not its balance or what is available) and as a pending EARN with its vesting day in both
//! versions; a return meanwhile takes it off what is pending; once vested it spends.

use api::views::TransactionView;
use chrono::{Duration, SecondsFormat, Utc};
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::{Policy, Tokens};

use crate::app_tests;
use crate::helpers::TestApp;

async fn a_pending_earn_is_shown_and_spends_once_vested(app: TestApp) {
    app.member_with_wallet().await;
    let campaign = app.campaign().await;
    let policy = Policy {
        pending_days: 30,
        ..Policy::default()
    };
    app.store
        .programme()
        .set_policy(&campaign, policy)
        .await
        .unwrap();
    let date = Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true);
    let body = json!({"id": "e-1", "walletId": "w-1", "amount": 100, "date": date});
    let done = app.earn_and_wait(body).await;
    assert_eq!(done.status, "completed", "{done:?}");
    let earn_id = done.transaction_id.unwrap();
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.pending, wallet.available),
        (Tokens::ZERO, Tokens::whole(100), Tokens::ZERO)
    );
    let path = format!("/v1/transactions/{earn_id}");
    for version in ["1.6.2", "1.9.5"] {
        let earn: TransactionView = app
            .send(Method::GET, &path, Some(&app.key), Some(version), None)
            .await
            .expect(StatusCode::OK);
        assert_eq!((earn.kind.as_ref(), earn.pending), ("EARN", Some(true)));
        let vests_at = earn.vests_at.expect("its vesting day");
        assert_eq!(vests_at - earn.date, Duration::days(30), "{version}");
    }
    let refused = app.burn("b-1", "w-1", json!(1)).await;
    assert_eq!(refused.status, StatusCode::PAYMENT_REQUIRED);

    let reversal = format!("/v1/transactions/{earn_id}/reversals");
    let returned: TransactionView = app
        .post(&reversal, json!({"externalId": "r-1", "amount": 40}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(returned.amount, Tokens::whole(40));
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.pending),
        (Tokens::ZERO, Tokens::whole(60))
    );

    let vested = app
        .store
        .ledger()
        .vest_pending(Utc::now() + Duration::days(31))
        .await
        .unwrap();
    assert_eq!(vested, 1);
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.pending, wallet.available),
        (Tokens::whole(60), Tokens::ZERO, Tokens::whole(60))
    );
    let earn: TransactionView = app.get(&path).await.expect(StatusCode::OK);
    assert_eq!(earn.pending, Some(false));
    let burned: TransactionView = app
        .burn("b-2", "w-1", json!(60))
        .await
        .expect(StatusCode::OK);
    assert_eq!(burned.pending, None, "only an earn is pending or not");
    assert!(app.store.ledger().audit().await.unwrap().is_empty());
}

app_tests!(a_pending_earn_is_shown_and_spends_once_vested);
