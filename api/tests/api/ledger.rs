//! Earning, burning and the transaction list over HTTP.

use api::views::TransactionView;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Tokens;

use crate::app_tests;
use crate::helpers::{TestApp, tokens};

fn earn(id: &str, amount: f64) -> Value {
    json!({"id": id, "amount": amount, "date": "2026-11-18T10:15:00Z", "walletId": "w-1", "description": "Coffee"})
}

async fn an_earn_is_accepted_then_completed(app: TestApp) {
    let wallet = app.member_with_wallet().await;
    let accepted = app.post("/v1/transactions/earn", earn("e-1", 42.5)).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    assert_eq!(accepted.body["status"], "accepted");
    let url = accepted.body["statusCheckUrl"].as_str().unwrap();
    let path = format!(
        "/v1/transactions/earn/{}",
        accepted.body["requestId"].as_str().unwrap()
    );
    assert_eq!(
        url,
        format!("{}{path}", app.base),
        "absolute, at the address used"
    );
    let done = app.wait_earn(url).await;
    assert_eq!(done.status, "completed", "{done:?}");
    assert_eq!(done.tokens, Some(Tokens::whole(42)));
    assert_eq!(done.wallet_id, wallet);
    assert_eq!(
        done.rules_trace.as_deref(),
        Some("one-per-unit:+42.5;~:-0.5"),
        "the status shows the rule trace"
    );

    let path = format!("/v1/transactions/{}", done.transaction_id.unwrap());
    let transaction: TransactionView = app.get(&path).await.expect(StatusCode::OK);
    assert_eq!(transaction.kind, "EARN");
    assert_eq!(transaction.amount, Tokens::whole(42));
    let source = transaction
        .source_amount
        .as_ref()
        .map(api::views::ExactNumber::get);
    assert_eq!(
        source,
        Some("42.5"),
        "the amount as a number, as it was sent"
    );
    assert_eq!(transaction.external_id.as_deref(), Some("e-1"));
    assert_eq!(
        transaction.rules_trace.as_deref(),
        Some("one-per-unit:+42.5;~:-0.5")
    );
    assert_eq!(app.balance("w-1").await, Tokens::whole(42));
}

async fn bad_earns_are_400_naming_the_field_and_unknown_wallets_404(app: TestApp) {
    app.member_with_wallet().await;
    let cases = [
        (json!({}), vec!["amount", "date", "id", "walletId"]),
        (
            json!({"id": "e", "amount": -1, "date": "2026-11-18T10:15:00Z", "walletId": "w-1"}),
            vec!["amount"],
        ),
        (
            json!({"id": "e", "amount": "ten", "date": "2026-11-18T10:15:00Z", "walletId": "w-1"}),
            vec!["amount"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "yesterday", "walletId": "w-1"}),
            vec!["date"],
        ),
        // Outside the window a transaction may be dated in: from 1970 to a day ahead.
        (
            json!({"id": "e", "amount": 1, "date": "0000-12-31T10:00:00Z", "walletId": "w-1"}),
            vec!["date"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "10000-01-01T00:00:00Z", "walletId": "w-1"}),
            vec!["date"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "0226-11-20T08:00:00Z", "walletId": "w-1"}),
            vec!["date"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "1969-12-31T23:59:59Z", "walletId": "w-1"}),
            vec!["date"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "9999-12-31T23:30:00-05:00", "walletId": "w-1"}),
            vec!["date"],
        ),
        (
            json!({"id": "e", "amount": 1, "date": "2026-11-18T10:15:00Z", "walletId": "w-1", "meta": 5}),
            vec!["meta"],
        ),
    ];
    for (body, fields) in cases {
        let reply = app.post("/v1/transactions/earn", body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        let mut got = reply.fields();
        got.sort();
        assert_eq!(got, fields, "{body}: {}", reply.body);
    }
    let unknown = app
        .post(
            "/v1/transactions/earn",
            json!({"id": "e", "amount": 1, "date": "2026-11-18T10:15:00Z", "walletId": "w-404"}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(app.get("/v1/transactions?limit=0").await.body["total"], 0);
}

/// An earn dated at each end of the window (the Unix epoch, and a day ahead of the clock less
/// a minute) is credited, and the wallet's balance is right at every instant around them; a
/// second beyond either end is refused naming `date`, for a burn too; a campaign that allows
/// earns 30 days old refuses an older one.
async fn earns_are_dated_within_the_window(app: TestApp) {
    app.member_with_wallet().await;
    let ahead = chrono::Utc::now() + chrono::Duration::days(1) - chrono::Duration::minutes(1);
    let ends = [
        ("first", "1970-01-01T00:00:00Z".to_string(), 10),
        ("last", ahead.to_rfc3339(), 5),
    ];
    for (id, date, amount) in &ends {
        let done = app
            .earn_and_wait(json!({"id": id, "amount": amount, "date": date, "walletId": "w-1"}))
            .await;
        assert_eq!(done.status, "completed", "{date}: {done:?}");
    }
    let at = |instant: String| {
        let app = &app;
        async move {
            let path = format!("/v1/wallets/w-1/balance?at={}", instant.replace('+', "%2B"));
            let view: api::views::BalanceView = app.get(&path).await.expect(StatusCode::OK);
            view.balance
        }
    };
    let second = chrono::Duration::seconds(1);
    for (instant, balance) in [
        ("1969-12-31T23:59:59Z".to_string(), 0),
        ("1970-01-01T00:00:00Z".to_string(), 10),
        ("1970-01-01T07:00:00Z".to_string(), 10),
        ("2026-11-20T08:00:00Z".to_string(), 10),
        ((ahead - second).to_rfc3339(), 10),
        (ahead.to_rfc3339(), 15),
        ((ahead + chrono::Duration::days(400)).to_rfc3339(), 15),
        // Instants outside chrono's nanosecond range have a day too.
        ("0226-11-20T07:00:00Z".to_string(), 0),
        ("9000-01-01T00:00:00Z".to_string(), 15),
    ] {
        assert_eq!(
            at(instant.clone()).await,
            Tokens::whole(balance),
            "{instant}"
        );
    }
    // Credited when received; in a balance at an instant from its own date on.
    assert_eq!(app.balance("w-1").await, Tokens::whole(15));
    let too_late = (chrono::Utc::now() + chrono::Duration::days(1) + second * 60).to_rfc3339();
    for date in ["1969-12-31T23:59:59Z".to_string(), too_late.clone()] {
        let earn = json!({"id": "out", "amount": 1, "date": date, "walletId": "w-1"});
        let reply = app.post("/v1/transactions/earn", earn).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{date}");
        assert_eq!(reply.fields(), ["date"], "{date}");
        assert!(
            reply.body["errors"][0]["message"]
                .as_str()
                .unwrap()
                .contains("1970-01-01")
        );
        let burn = json!({"walletId": "w-1", "externalId": "b-out", "description": "x",
            "amount": 1, "date": date});
        let reply = app.post("/v1/transactions/burn", burn).await;
        assert_eq!(reply.fields(), ["date"], "{date}");
    }
    let campaign = app
        .store
        .tenancy()
        .find_campaign(&app.campaign, Some(&app.org))
        .await
        .unwrap();
    let mut policy = app.store.programme().policy(&campaign).await.unwrap();
    policy.earn_max_age_days = Some(30);
    app.store
        .programme()
        .set_policy(&campaign, policy)
        .await
        .unwrap();
    let days_ago = |days| (chrono::Utc::now() - chrono::Duration::days(days)).to_rfc3339();
    let old = json!({"id": "old", "amount": 1, "date": days_ago(31), "walletId": "w-1"});
    let reply = app.post("/v1/transactions/earn", old).await;
    assert_eq!(reply.fields(), ["date"]);
    let recent = json!({"id": "recent", "amount": 1, "date": days_ago(29), "walletId": "w-1"});
    assert_eq!(app.earn_and_wait(recent).await.status, "completed");
    let audit = app.store.ledger().audit().await.unwrap();
    assert!(audit.is_empty(), "{audit:?}");
}

async fn the_status_link_is_where_the_client_sees_the_service(app: TestApp) {
    app.member_with_wallet().await;
    let send = |id: &str, headers: &[(&str, &str)]| {
        let mut request = app
            .http
            .post(format!("{}/v1/transactions/earn", app.base))
            .header("x-api-key", &app.key.api_key)
            .header("x-api-secret", &app.key.secret)
            .json(&earn(id, 1.0));
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        async move {
            let reply: Value = request.send().await.unwrap().json().await.unwrap();
            reply["statusCheckUrl"].as_str().unwrap().to_string()
        }
    };
    // Behind a proxy: its forwarded scheme and host (the first of a chain).
    let proxied = send(
        "e-1",
        &[
            ("x-forwarded-proto", "https"),
            ("x-forwarded-host", "rewards.example.com, internal:8080"),
        ],
    )
    .await;
    assert!(
        proxied.starts_with("https://rewards.example.com/v1/transactions/earn/"),
        "{proxied}"
    );
    // A forwarded host that is not one cannot bend the link elsewhere.
    let odd = send("e-2", &[("x-forwarded-host", "evil.example/x?")]).await;
    assert!(odd.starts_with(&format!("{}/v1/", app.base)), "{odd}");
    assert_eq!(app.wait_earn(&odd).await.status, "completed");
}

async fn the_same_earn_sent_twenty_times_credits_once(app: TestApp) {
    app.member_with_wallet().await;
    let app = std::sync::Arc::new(app);
    let mut urls = Vec::new();
    for _ in 0..10 {
        let reply = app.post("/v1/transactions/earn", earn("e-1", 10.0)).await;
        assert_eq!(reply.status, StatusCode::ACCEPTED);
        urls.push(reply.body["statusCheckUrl"].as_str().unwrap().to_string());
    }
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let reply = app.post("/v1/transactions/earn", earn("e-1", 10.0)).await;
            reply.body["statusCheckUrl"].as_str().unwrap().to_string()
        }));
    }
    for task in tasks {
        urls.push(task.await.unwrap());
    }
    // Every repeat is answered with the first request, which credited once.
    assert!(urls.iter().all(|u| *u == urls[0]), "{urls:?}");
    assert_eq!(app.wait_earn(&urls[0]).await.status, "completed");
    let again = app.post("/v1/transactions/earn", earn("e-1", 10.0)).await;
    assert_eq!(again.body["statusCheckUrl"], urls[0].as_str());
    assert_eq!(app.balance("w-1").await, Tokens::whole(10));

    // Another earn under the id: 409 at once, naming what differs.
    let other = app.post("/v1/transactions/earn", earn("e-1", 11.0)).await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    let problem = other.problem();
    assert_eq!(problem.code, "already_exists");
    assert_eq!(problem.field.as_deref(), Some("amount"));
    let mut later = earn("e-1", 10.0);
    later["date"] = json!("2026-11-18T10:16:00Z");
    let other = app.post("/v1/transactions/earn", later).await;
    assert_eq!(other.problem().field.as_deref(), Some("date"));
    assert_eq!(app.balance("w-1").await, Tokens::whole(10));
}

fn burn_body(id: &str, amount: Value) -> Value {
    json!({"externalId": id, "amount": amount, "walletId": "w-1", "description": "Voucher"})
}

async fn burns_spend_once_and_never_overdraw(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(50.0)).await;
    let app = std::sync::Arc::new(app);
    let mut tasks = Vec::new();
    for i in 0..200 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            app.burn(&format!("b-{i}"), "w-1", json!(1)).await
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        let reply = task.await.unwrap();
        if reply.status == StatusCode::PAYMENT_REQUIRED {
            assert_eq!(reply.problem().code, "insufficient_balance");
        }
        statuses.push(reply.status);
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        50,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::PAYMENT_REQUIRED)
            .count(),
        150
    );
    assert_eq!(app.balance("w-1").await, Tokens::ZERO);
}

async fn a_burn_replays_conflicts_and_validates(app: TestApp) {
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(100.0)).await;
    let first = app.burn("b-1", "w-1", json!(12.5)).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    assert_eq!(first.body["type"], "BURN");
    assert_eq!(first.body["amount"], 12.5);
    let replay = app.burn("b-1", "w-1", json!(12.5)).await;
    assert_eq!(replay.body["id"], first.body["id"]);
    let conflict = app.burn("b-1", "w-1", json!(13)).await;
    assert_eq!(conflict.status, StatusCode::CONFLICT);
    let problem = conflict.problem();
    assert_eq!(problem.code, "already_exists");
    assert_eq!(
        problem.field.as_deref(),
        Some("amount"),
        "the first field that differs"
    );
    assert!(problem.detail.contains("externalId"), "{}", problem.detail);
    assert_eq!(app.balance("w-1").await, tokens("87.5"));

    for (body, field) in [
        (burn_body("b-2", json!(0)), "amount"),
        (burn_body("b-2", json!(-5)), "amount"),
        (burn_body("b-2", json!(1.1234567)), "amount"),
        (
            json!({"externalId": "b-2", "amount": 1, "walletId": "w-1"}),
            "description",
        ),
        (
            json!({"externalId": "b-2", "amount": 1, "walletId": "w-1", "description": "x", "date": "soon"}),
            "date",
        ),
    ] {
        let reply = app.post("/v1/transactions/burn", body.clone()).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
        assert_eq!(reply.body["field"], field, "{body}: {}", reply.body);
    }
    let too_much = app.burn("b-3", "w-1", json!(1000)).await;
    assert_eq!(too_much.status, StatusCode::PAYMENT_REQUIRED);
    assert!(
        too_much.body["detail"].as_str().unwrap().contains("87.5"),
        "{}",
        too_much.body
    );
    let unknown = app
        .post(
            "/v1/transactions/burn",
            json!({"externalId": "b-4", "amount": 1, "walletId": "nope", "description": "x"}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
}

async fn transactions_are_listed_filtered_and_isolated(app: TestApp) {
    let wallet = app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(100.0)).await;
    app.burn("b-1", "w-1", json!(10)).await;
    let all = app.transactions("").await;
    assert_eq!(all.total, 2);
    assert_eq!(all.data[0].kind, "BURN", "newest first");
    let earns = app.get("/v1/transactions?type=EARN").await;
    assert_eq!(earns.body["total"], 1);
    let both = app.get("/v1/transactions?type=EARN&type=BURN").await;
    assert_eq!(both.body["total"], 2);
    let by_ref = app
        .get("/v1/transactions?walletId=w-1&type=BURN,EXPIRY")
        .await;
    assert_eq!(by_ref.body["total"], 1);
    let by_id = app
        .get(&format!(
            "/v1/transactions?walletId={wallet}&dateFrom=2026-11-18"
        ))
        .await;
    assert_eq!(by_id.body["total"], 2);
    let before = app.get("/v1/transactions?dateTo=2026-11-17").await;
    assert_eq!(
        before.body["total"], 0,
        "the earn is dated 2026-11-18, the burn now"
    );
    let bad = app.get("/v1/transactions?type=GIFT&dateFrom=soon").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        bad.fields(),
        ["dateFrom", "type"],
        "every bad parameter, in the order the document lists them"
    );

    let other = app.other_tenant().await;
    let id = &all.data[0].id;
    let reply = app
        .send(
            Method::GET,
            &format!("/v1/transactions/{id}"),
            Some(&other),
            None,
            None,
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let list = app
        .send(Method::GET, "/v1/transactions", Some(&other), None, None)
        .await;
    assert_eq!(list.body["total"], 0);
    let burn_there = app
        .send(
            Method::POST,
            "/v1/transactions/burn",
            Some(&other),
            None,
            Some(burn_body("b-9", json!(1))),
        )
        .await;
    assert_eq!(
        burn_there.status,
        StatusCode::NOT_FOUND,
        "another organisation's wallet"
    );
}

app_tests!(
    the_status_link_is_where_the_client_sees_the_service,
    an_earn_is_accepted_then_completed,
    bad_earns_are_400_naming_the_field_and_unknown_wallets_404,
    earns_are_dated_within_the_window,
    the_same_earn_sent_twenty_times_credits_once,
    burns_spend_once_and_never_overdraw,
    a_burn_replays_conflicts_and_validates,
    transactions_are_listed_filtered_and_isolated,
);
