//! Orders per second over HTTP on SQLite (or PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set):
//! `POST /v1/orders` of one line without a wallet, and paid from the owner's wallet (the burn in
//! the same transaction), beside a bare axum handler that parses the same body and answers 200,
//! measured in the same run. Each order has a new reference, so each places a new order with
//! its redemption code.
//!
//! `cargo bench --bench orders`. Goal on SQLite: >= 2,000 orders/s with p99 <= 20 ms.

mod common;

use axum::http::StatusCode;
use serde_json::{Value, json};
use store::{Catalogue, EarnInput, ImportOptions, RuleBook};

const CLIENTS: usize = 32;
const SECONDS: u64 = 5;
const MEMBERS: usize = 100;

/// Ten products of one unlimited variant each, one token apiece.
fn catalogue() -> Catalogue {
    let products: Vec<Value> = (0..10)
        .map(|i| {
            json!({"id": format!("p-{i}"), "name": format!("Reward {i}"),
                "description": "A reward", "primaryImage": "https://img.example/r.jpg",
                "variants": [{"id": format!("v-{i}"), "name": "Standard", "price": 1}]})
        })
        .collect();
    Catalogue::from_value(&json!({"products": products})).expect("a valid catalogue")
}

#[tokio::main]
async fn main() {
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(MEMBERS, true).await;
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue(), ImportOptions::default())
        .await
        .unwrap();
    // Every wallet holds enough for every order the run can place.
    for i in 0..MEMBERS {
        let earn = EarnInput {
            activity: None,
            earn_id: format!("fund-{i}"),
            wallet: format!("w-{i}"),
            amount: "10000000".into(),
            date: chrono::Utc::now(),
            description: None,
            comment: None,
            meta: None,
        };
        store.ledger().submit_earn(&campaign, earn).await.unwrap();
    }
    let book = RuleBook::new(store.programme().clone());
    while store.ledger().process_earns(&book, 100).await.unwrap() > 0 {}

    let base = common::serve(&store).await;
    let bare_base = common::serve_bare(
        "/orders",
        StatusCode::OK,
        |body| json!({"reference": body["reference"], "lines": body["lines"]}),
    )
    .await;

    let client = reqwest::Client::new();
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    let body = |client_index: usize, sequence: usize, paid: bool| {
        let member = (client_index * 7 + sequence) % MEMBERS;
        let mut body = json!({
            "owner": format!("m-{member}"),
            "reference": format!("o-{paid}-{client_index}-{sequence}"),
            "lines": [{"productId": format!("p-{}", sequence % 10), "quantity": 1}]
        });
        if paid {
            body["walletId"] = json!(format!("w-{member}"));
        }
        body
    };

    println!(
        "backend: {:?}; {CLIENTS} concurrent clients, {SECONDS} s per scenario",
        store.backend()
    );
    println!("{}", common::HEADER);
    let bare_load = {
        let (client, url) = (client.clone(), format!("{bare_base}/orders"));
        common::drive(CLIENTS, SECONDS, move |c, s| {
            let request = client.post(&url).json(&body(c, s, false));
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        })
        .await
    };
    println!("{}", bare_load.row("baseline: bare axum 200"));

    let place = |paid: bool, seconds: u64| {
        let (client, url, k, s) = (
            client.clone(),
            format!("{base}/v1/orders"),
            api_key.clone(),
            secret.clone(),
        );
        common::drive(CLIENTS, seconds, move |c, n| {
            let request = client
                .post(&url)
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&body(c, n + seconds as usize * 1_000_000, paid));
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(
                    response.status(),
                    StatusCode::OK,
                    "{}",
                    response.text().await.unwrap_or_default()
                );
            }
        })
    };
    // A running service's tables hold orders and have statistics (autovacuum analyses them).
    // Without this, PostgreSQL plans the statements once on empty tables and keeps those plans
    // for the connection's life, picking an index on the campaign alone over the reference's.
    let mut placed = place(false, 1).await.count + place(true, 1).await.count;
    store.execute_raw("ANALYZE").await.unwrap();
    for (paid, name) in [
        (false, "POST /v1/orders (one line)"),
        (true, "POST /v1/orders (with walletId)"),
    ] {
        let load = place(paid, SECONDS).await;
        println!("{}", load.row(name));
        placed += load.count;
    }

    let count_only = store::Page { page: 1, limit: 0 };
    let scope = store::OrderScope::campaign(&campaign);
    let orders = store
        .orders()
        .list_orders(&scope, None, false, count_only)
        .await
        .unwrap();
    assert_eq!(orders.total, placed as u64, "one order per request");
    assert!(
        store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees with itself after the run"
    );
}
