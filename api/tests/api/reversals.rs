//! Returns and refunds over HTTP: `POST /v1/transactions/{id}/reversals` on an EARN or a BURN,
//! shown in the seed's types in both versions, linked, idempotent and validated.

use api::views::TransactionView;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Tokens;

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

async fn reverse(app: &TestApp, id: &str, body: Value) -> Reply {
    app.post(&format!("/v1/transactions/{id}/reversals"), body)
        .await
}

async fn a_return_and_a_refund_are_linked_and_listed_as_burn_and_earn(app: TestApp) {
    app.member_with_wallet().await;
    let earn = app
        .earn("e-1", "w-1", json!(100))
        .await
        .transaction_id
        .unwrap();
    let burned: TransactionView = app
        .burn("b-1", "w-1", json!(30))
        .await
        .expect(StatusCode::OK);

    let body = json!({"externalId": "r-1", "amount": 25, "description": "Returned shoes"});
    let returned: TransactionView = reverse(&app, &earn, body.clone())
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        returned.kind, "BURN",
        "a reversal of an earn takes tokens away"
    );
    assert_eq!(returned.amount, Tokens::whole(25));
    assert_eq!(returned.reversal_of.as_deref(), Some(earn.as_str()));
    assert_eq!(
        returned
            .source_amount
            .as_ref()
            .map(api::views::ExactNumber::get),
        Some("25"),
        "the value returned"
    );
    assert_eq!(returned.reversed, None);
    let replay: TransactionView = reverse(&app, &earn, body).await.expect(StatusCode::OK);
    assert_eq!(replay.id, returned.id);
    let conflict = reverse(&app, &earn, json!({"externalId": "r-1", "amount": 26})).await;
    assert_eq!(conflict.status, StatusCode::CONFLICT);
    assert_eq!(conflict.problem().field.as_deref(), Some("amount"));

    let refunded: TransactionView =
        reverse(&app, &burned.id, json!({"externalId": "r-2", "amount": 10}))
            .await
            .expect(StatusCode::OK);
    assert_eq!(
        refunded.kind, "EARN",
        "a refund of a burn gives tokens back"
    );
    assert_eq!(refunded.reversal_of.as_deref(), Some(burned.id.as_str()));
    assert_eq!(app.balance("w-1").await, Tokens::whole(55));

    // The originals show what has been taken or given back so far, in both versions.
    for version in ["1.6.2", "1.9.5"] {
        let app = &app;
        let get = |id: &str| {
            let path = format!("/v1/transactions/{id}");
            async move {
                app.send(Method::GET, &path, Some(&app.key), Some(version), None)
                    .await
                    .expect::<TransactionView>(StatusCode::OK)
            }
        };
        assert_eq!(get(&earn).await.reversed, Some(Tokens::whole(25)));
        assert_eq!(get(&burned.id).await.reversed, Some(Tokens::whole(10)));
        assert_eq!(get(&returned.id).await.kind, "BURN", "{version}");
        assert_eq!(get(&refunded.id).await.kind, "EARN", "{version}");
    }
    // The type filter works on what is shown.
    assert_eq!(app.transactions("").await.total, 4);
    let burns = app.transactions("type=BURN").await;
    let ids: Vec<&str> = burns.data.iter().map(|t| t.id.as_str()).collect();
    assert_eq!(
        ids,
        [returned.id.as_str(), burned.id.as_str()],
        "newest first"
    );
    assert_eq!(app.transactions("type=EARN").await.total, 2);
    assert_eq!(app.transactions("type=EXPIRY").await.total, 0);

    // More than is left of the purchase, then the rest: 75 tokens, 20 of them already spent,
    // owed under the default policy; burns wait until later earns pay it.
    let over = reverse(&app, &earn, json!({"externalId": "r-3", "amount": 75.01})).await;
    assert_eq!(over.status, StatusCode::CONFLICT);
    assert_eq!(over.problem().code, "reversal_exceeds_earn");
    assert_eq!(over.problem().field.as_deref(), Some("amount"));
    // A refusal is kept: the same request again is refused the same way.
    let over = reverse(&app, &earn, json!({"externalId": "r-3", "amount": 75.01})).await;
    assert_eq!(over.problem().code, "reversal_exceeds_earn");
    let rest: TransactionView = reverse(&app, &earn, json!({"externalId": "r-3b"}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(rest.amount, Tokens::whole(75));
    assert_eq!(app.balance("w-1").await, Tokens::whole(-20));
    assert_eq!(
        app.burn("b-2", "w-1", json!(1)).await.status,
        StatusCode::PAYMENT_REQUIRED
    );
    app.earn("e-2", "w-1", json!(21)).await;
    assert_eq!(app.balance("w-1").await, Tokens::whole(1));
    // The refused burn stays refused under its key, though the balance now covers it.
    let replayed = app.burn("b-2", "w-1", json!(1)).await;
    assert_eq!(replayed.status, StatusCode::PAYMENT_REQUIRED);
    assert_eq!(replayed.problem().code, "insufficient_balance");
    assert_eq!(
        app.burn("b-3", "w-1", json!(1)).await.status,
        StatusCode::OK
    );
    let again = reverse(&app, &earn, json!({"externalId": "r-4"})).await;
    assert_eq!(again.problem().code, "reversal_exceeds_earn");
}

async fn bad_reversals_are_400_naming_the_field_and_others_404(app: TestApp) {
    app.member_with_wallet().await;
    let earn = app
        .earn("e-1", "w-1", json!(10))
        .await
        .transaction_id
        .unwrap();
    let burned: TransactionView = app
        .burn("b-1", "w-1", json!(5))
        .await
        .expect(StatusCode::OK);
    for (id, body, field) in [
        (&earn, json!({}), "externalId"),
        (&earn, json!({"externalId": "r", "amount": 0}), "amount"),
        (&earn, json!({"externalId": "r", "amount": -1}), "amount"),
        (&earn, json!({"externalId": "r", "amount": "1"}), "amount"),
        (&earn, json!({"externalId": "r", "tokens": 1}), "tokens"),
        (
            &burned.id,
            json!({"externalId": "r", "amount": 1.1234567}),
            "amount",
        ),
        (
            &earn,
            json!({"externalId": "r", "amount": 1.5e-7}),
            "amount",
        ),
        (
            &earn,
            json!({"externalId": "r", "amount": 5e-324}),
            "amount",
        ),
    ] {
        let reply = reverse(&app, id, body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(
            reply.problem().field.as_deref(),
            Some(field),
            "{body}: {}",
            reply.body
        );
    }
    let unknown = reverse(&app, "no-such", json!({"externalId": "r"})).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let other = app.other_tenant().await;
    let theirs = app
        .send(
            Method::POST,
            &format!("/v1/transactions/{earn}/reversals"),
            Some(&other),
            None,
            Some(json!({"externalId": "r"})),
        )
        .await;
    assert_eq!(
        theirs.status,
        StatusCode::NOT_FOUND,
        "another organisation's earn"
    );
    assert!(!theirs.body.to_string().contains(&earn), "{}", theirs.body);
    let too_much = reverse(&app, &burned.id, json!({"externalId": "r-9", "amount": 6})).await;
    assert_eq!(too_much.problem().code, "refund_exceeds_burn");
    assert_eq!(app.balance("w-1").await, Tokens::whole(5), "nothing moved");
}

/// 100 returns of one purchase at once: the tokens taken add up to exactly the earn's.
async fn concurrent_returns_take_exactly_the_earn(app: TestApp) {
    app.member_with_wallet().await;
    let earn = app
        .earn("e-1", "w-1", json!(150))
        .await
        .transaction_id
        .unwrap();
    let app = std::sync::Arc::new(app);
    let mut tasks = Vec::new();
    for i in 0..100 {
        let (app, earn) = (app.clone(), earn.clone());
        tasks.push(tokio::spawn(async move {
            reverse(
                &app,
                &earn,
                json!({"externalId": format!("r-{i}"), "amount": 1.5}),
            )
            .await
        }));
    }
    let mut taken = Tokens::ZERO;
    for task in tasks {
        let reply = task.await.unwrap();
        let view: TransactionView = reply.expect(StatusCode::OK);
        taken = taken.checked_add(view.amount).unwrap();
    }
    assert_eq!(
        taken,
        Tokens::whole(150),
        "each 1.5 of the 150 takes 1 token (rounded down), the last the 51 left"
    );
    assert_eq!(app.balance("w-1").await, Tokens::ZERO);
    let none_left = reverse(&app, &earn, json!({"externalId": "r-last"})).await;
    assert_eq!(none_left.problem().code, "reversal_exceeds_earn");
}

app_tests!(
    a_return_and_a_refund_are_linked_and_listed_as_burn_and_earn,
    bad_reversals_are_400_naming_the_field_and_others_404,
    concurrent_returns_take_exactly_the_earn,
);
