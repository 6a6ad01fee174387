//! Wallets: the sign-up check, owners, versions' list shapes, duplicates and isolation.

use api::views::{BalanceView, ExpiringView, WalletView};
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Tokens;

use crate::app_tests;
use crate::helpers::TestApp;

async fn the_sign_up_flow_finds_or_creates_a_wallet(app: TestApp) {
    let member = app.create_member("card-1").await;
    // The client checks whether a wallet exists for its reference...
    assert_eq!(
        app.get("/v1/wallets/policy-77").await.status,
        StatusCode::NOT_FOUND
    );
    // ...and creates one: without `owner`, the member with the same external id owns it.
    let created = app
        .post(
            "/v1/wallets",
            json!({"externalId": "card-1", "name": "Main"}),
        )
        .await;
    let created: WalletView = created.expect(StatusCode::CREATED);
    assert_eq!(created.owner_id, member.id);
    assert_eq!(created.currency, "PTS", "the key's campaign currency");
    assert_eq!(created.balance, Tokens::ZERO);
    assert_eq!(created.tier, None);

    let by_reference = app.wallet("card-1").await;
    assert_eq!(by_reference, created);
    assert_eq!(app.wallet(&created.id).await, by_reference);

    let with_owner = app
        .post(
            "/v1/wallets",
            json!({"owner": "card-1", "externalId": "policy-77"}),
        )
        .await;
    let with_owner: WalletView = with_owner.expect(StatusCode::CREATED);
    assert_eq!(with_owner.owner_id, member.id);
    let duplicate = app
        .post(
            "/v1/wallets",
            json!({"owner": "card-1", "externalId": "policy-77"}),
        )
        .await;
    assert_eq!(duplicate.status, StatusCode::CONFLICT);
    assert_eq!(duplicate.body["field"], "externalId");
}

async fn a_wallet_needs_an_owner(app: TestApp) {
    let neither = app.post("/v1/wallets", json!({"name": "x"})).await;
    assert_eq!(neither.status, StatusCode::BAD_REQUEST);
    assert_eq!(neither.body["field"], "owner");
    // A body naming no member that exists is a bad request (the seed lists no 404 here),
    // naming the field that stood for the owner; on the member guide's alias too.
    for path in ["/v1/wallets", "/api/wallets"] {
        let nobody = app.post(path, json!({"externalId": "card-9"})).await;
        assert_eq!(nobody.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(nobody.body["field"], "externalId", "{path}");
        let unknown = app.post(path, json!({"owner": "no-such-member"})).await;
        assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{path}");
        assert_eq!(unknown.body["field"], "owner", "{path}");
        assert!(
            unknown.body["detail"]
                .as_str()
                .unwrap()
                .contains("no-such-member"),
            "{}",
            unknown.body
        );
    }
    let bad = app
        .post("/v1/wallets", json!({"owner": 12, "name": "x"}))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.body["field"], "owner");
}

async fn lists_filter_and_take_each_versions_shape(app: TestApp) {
    app.create_member("card-1").await;
    app.create_member("card-2").await;
    for (owner, reference) in [("card-1", "w-1"), ("card-1", "w-2"), ("card-2", "w-3")] {
        app.create_wallet(owner, reference).await;
    }
    let all = app.get("/v1/wallets").await;
    assert_eq!(all.body["total"], 3);
    let one = app.get("/v1/wallets?externalId=w-2").await;
    assert_eq!(one.body["data"][0]["externalId"], "w-2");
    let owned = app.get("/v1/wallets?ownerId=card-1").await;
    assert_eq!(owned.body["total"], 2);

    let old = app
        .send(
            Method::GET,
            "/v1/wallets?externalId=w-3",
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(old.status, StatusCode::OK);
    assert_eq!(
        old.body[0]["total"], 1,
        "1.6.2 wraps the page in an array: {}",
        old.body
    );
    assert_eq!(old.body[0]["data"][0]["externalId"], "w-3");
    let old_owner = app
        .send(
            Method::GET,
            "/v1/wallets?ownerId=card-1",
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(
        old_owner.status,
        StatusCode::BAD_REQUEST,
        "ownerId is 1.9.5 only"
    );
    assert_eq!(
        app.get("/v1/wallets?limit=101").await.status,
        StatusCode::BAD_REQUEST
    );
}

async fn wallets_are_renamed_and_isolated(app: TestApp) {
    app.create_member("card-1").await;
    let id = app
        .post(
            "/v1/wallets",
            json!({"owner": "card-1", "externalId": "w-1"}),
        )
        .await
        .body["id"]
        .as_str()
        .unwrap()
        .to_string();
    let path = format!("/v1/wallets/{id}");
    let renamed = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            None,
            Some(json!({"name": "Travel"})),
        )
        .await;
    assert_eq!(renamed.status, StatusCode::OK);
    assert_eq!(renamed.body["name"], "Travel");
    let blank = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            None,
            Some(json!({"name": " "})),
        )
        .await;
    assert_eq!(blank.status, StatusCode::BAD_REQUEST);

    let other = app.other_tenant().await;
    for (method, target) in [
        (Method::GET, path.clone()),
        (Method::GET, "/v1/wallets/w-1".into()),
        (Method::PATCH, path.clone()),
    ] {
        let body = (method == Method::PATCH).then(|| json!({"name": "Mine"}));
        let reply = app.send(method, &target, Some(&other), None, body).await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{target}");
    }
    let list = app
        .send(Method::GET, "/v1/wallets", Some(&other), None, None)
        .await;
    assert_eq!(list.body["total"], 0);
    assert_eq!(app.get(&path).await.body["name"], "Travel");
}

async fn the_member_guide_creates_wallets_by_member_reference(app: TestApp) {
    let member = app
        .post(
            "/api/members",
            json!({"name": "Ada", "externalID": "card-5", "userId": "u5"}),
        )
        .await;
    let reply = app
        .post(
            "/api/wallets",
            json!({"owner": "card-5", "externalId": "card-5", "name": "Ada's"}),
        )
        .await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    assert_eq!(reply.body["ownerId"], member.body["id"]);
}

/// What expires over the days ahead, per day, from what the lots hold now.
async fn the_tokens_expiring_soon_are_listed_per_day(app: TestApp) {
    let campaign = app.campaign().await;
    let policy = store::Policy {
        expiry: store::Expiry::Days(30),
        ..Default::default()
    };
    app.store
        .programme()
        .set_policy(&campaign, policy)
        .await
        .unwrap();
    app.member_with_wallet().await;
    let now = chrono::Utc::now();
    for (id, amount, days_ago) in [("e-1", 10, 25), ("e-2", 20, 10)] {
        let date = (now - chrono::Duration::days(days_ago)).to_rfc3339();
        let body = json!({"id": id, "walletId": "w-1", "amount": amount, "date": date});
        app.earn_and_wait(body).await;
    }
    app.burn("b-1", "w-1", json!(4)).await;
    let soon: ExpiringView = app
        .get("/v1/wallets/w-1/expiring?within=P1W")
        .await
        .expect(StatusCode::OK);
    assert_eq!(soon.total, Tokens::whole(6));
    let day = |days: i64| (now + chrono::Duration::days(days)).date_naive();
    let days: Vec<_> = soon.days.iter().map(|d| (d.date, d.tokens)).collect();
    assert_eq!(days, [(day(5), Tokens::whole(6))]);
    let month: ExpiringView = app
        .get("/v1/wallets/w-1/expiring")
        .await
        .expect(StatusCode::OK);
    assert_eq!(month.total, Tokens::whole(26), "P30D by default");
    for bad in ["P0D", "P3661D", "30", "P1M"] {
        let reply = app
            .get(&format!("/v1/wallets/w-1/expiring?within={bad}"))
            .await;
        assert_eq!(reply.fields(), ["within"], "{bad}");
    }
    assert_eq!(
        app.get("/v1/wallets/nope/expiring").await.status,
        StatusCode::NOT_FOUND
    );
}

/// A balance at an instant is what the transactions dated by then say: before the earn's date
/// nothing, from it what it brought (an offset read as such), after a burn dated back what the
/// burn left from its date on, now what the wallet shows; a malformed instant is a 400 naming
/// `at`, an unknown wallet a 404.
async fn a_balance_at_an_instant_is_what_the_transactions_dated_by_then_say(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(100)).await; // dated 2026-11-18T10:15:00Z
    app.burn("b-1", "w-1", json!(30))
        .await
        .expect::<serde_json::Value>(StatusCode::OK);
    let body = json!({"externalId": "b-2", "walletId": "w-1", "amount": 10,
        "description": "Reward", "date": "2026-11-19T00:00:00Z"});
    app.post("/v1/transactions/burn", body)
        .await
        .expect::<serde_json::Value>(StatusCode::OK);
    let balance = |at: &str| format!("/v1/wallets/w-1/balance?at={}", at.replace('+', "%2B"));
    for version in ["1.6.2", "1.9.5"] {
        for (at, tokens) in [
            ("2026-11-18T10:14:59Z", 0),
            ("2026-11-18T10:15:00Z", 100),
            ("2026-11-18T11:14:59+01:00", 0),
            ("2026-11-18T23:59:59Z", 100),
            ("2026-11-19T00:00:00Z", 90),
            ("2026-11-20T00:00:00Z", 90),
        ] {
            let then: BalanceView = app
                .send(
                    Method::GET,
                    &balance(at),
                    Some(&app.key),
                    Some(version),
                    None,
                )
                .await
                .expect(StatusCode::OK);
            assert_eq!(then.balance, Tokens::whole(tokens), "{version} at {at}");
            assert_eq!(
                then.at,
                at.parse::<chrono::DateTime<chrono::Utc>>().unwrap()
            );
        }
    }
    let now: BalanceView = app
        .get("/v1/wallets/w-1/balance")
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        (now.balance, now.held, now.pending),
        (Tokens::whole(60), Tokens::ZERO, Tokens::ZERO)
    );
    let later = (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339();
    let later: BalanceView = app.get(&balance(&later)).await.expect(StatusCode::OK);
    assert_eq!(later.balance, Tokens::whole(60));
    for bad in ["yesterday", "2026-10-01", "2026-13-01T00:00:00Z"] {
        let reply = app.get(&format!("/v1/wallets/w-1/balance?at={bad}")).await;
        assert_eq!(reply.fields(), ["at"], "{bad}");
    }
    assert_eq!(
        app.get("/v1/wallets/nope/balance").await.status,
        StatusCode::NOT_FOUND
    );
}

app_tests!(
    a_balance_at_an_instant_is_what_the_transactions_dated_by_then_say,
    the_tokens_expiring_soon_are_listed_per_day,
    the_sign_up_flow_finds_or_creates_a_wallet,
    a_wallet_needs_an_owner,
    lists_filter_and_take_each_versions_shape,
    wallets_are_renamed_and_isolated,
    the_member_guide_creates_wallets_by_member_reference,
);
