//! Earn submissions, burns, refunds of burns and returns of earns per second over HTTP on SQLite
//! (or PostgreSQL when
//! `REWARDS_TEST_POSTGRES_URL` is set), beside a bare axum handler that parses the same body and
//! answers 202, measured in the same run. Also the time from 202 to `completed`.
//!
//! Each scenario runs for `BENCH_SECONDS` (default 60: long enough for the WAL to grow to where
//! SQLite's checkpoints matter) and reports p50, p99 and the slowest request. The burns run on
//! wallets holding every lot the earn scenario gave them (about 1,000 or more each); the number
//! is printed.
//!
//! `cargo bench --bench ledger`. Goals: on SQLite earn >= 5,000 req/s and burn >= 5,000 req/s,
//! each with p99 <= 20 ms over the whole run, and refunds and returns at least as fast as the
//! burns; on PostgreSQL burn >= 2,000 req/s with p99 <= 30 ms on wallets with 1,000 open lots
//! each.

mod common;

use std::time::Duration;

use axum::http::StatusCode;
use serde_json::{Value, json};

const CLIENTS: usize = 32;
const WALLETS: usize = 100;

fn main() {
    // As the service does (`src/main.rs`), before any thread starts.
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(WALLETS, true).await;
    let seconds = common::seconds();
    let base = common::serve(&store).await;
    let bare_base = common::serve_bare(
        "/earn",
        StatusCode::ACCEPTED,
        |body| json!({"status": "accepted", "requestId": body["id"]}),
    )
    .await;

    let client = reqwest::Client::new();
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    let body = |client_index: usize, sequence: usize| {
        json!({
            "id": format!("e-{client_index}-{sequence}"),
            "amount": 12.5,
            "date": "2026-11-18T10:00:00Z",
            "walletId": format!("w-{}", (client_index * 7 + sequence) % WALLETS),
            "meta": {"store": "A1"}
        })
    };

    println!(
        "backend: {:?}; {CLIENTS} concurrent clients, {seconds} s per scenario",
        store.backend()
    );
    println!("{}", common::HEADER);
    let bare_load = {
        let (client, url) = (client.clone(), format!("{bare_base}/earn"));
        common::drive(CLIENTS, seconds, move |c, s| {
            let request = client.post(&url).json(&body(c, s));
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::ACCEPTED);
            }
        })
        .await
    };
    println!("{}", bare_load.row("baseline: bare axum 202"));

    let read_load = {
        let (client, k, s) = (client.clone(), api_key.clone(), secret.clone());
        let base = base.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let url = format!("{base}/v1/wallets/w-{}", (c + n) % WALLETS);
            let request = client
                .get(url)
                .header("x-api-key", &k)
                .header("x-api-secret", &s);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        })
        .await
    };
    println!("{}", read_load.row("GET /v1/wallets/{ref} (auth + read)"));

    // Every 25th request's id is kept to read its timings afterwards.
    let sampled = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let earn_load = {
        let (client, url, k, s) = (
            client.clone(),
            format!("{base}/v1/transactions/earn"),
            api_key.clone(),
            secret.clone(),
        );
        let sampled = sampled.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let request = client
                .post(&url)
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&body(c, n));
            let sampled = sampled.clone();
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), StatusCode::ACCEPTED);
                let accepted: Value = response.json().await.unwrap();
                if n % 25 == 0 {
                    sampled
                        .lock()
                        .unwrap()
                        .push(accepted["statusCheckUrl"].as_str().unwrap().to_string());
                }
            }
        })
        .await
    };
    println!("{}", earn_load.row("POST /v1/transactions/earn (202)"));

    // Let the workers finish, then read how long requests took from 202 to completed.
    let drained = std::time::Instant::now();
    let all = store::TransactionFilter::default();
    let count_only = store::Page { page: 1, limit: 0 };
    while store
        .ledger()
        .list_transactions(&campaign, &all, count_only)
        .await
        .unwrap()
        .total
        < earn_load.count as u64
    {
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(
            drained.elapsed() < Duration::from_secs(300),
            "earns not processed"
        );
    }
    let drain_seconds = drained.elapsed().as_secs_f64();
    let mut waits = Vec::new();
    let urls = sampled.lock().unwrap().clone();
    for url in urls {
        let status: Value = client
            // The answer's link is absolute (the address the client used).
            .get(url)
            .header("x-api-key", &api_key)
            .header("x-api-secret", &secret)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        assert_eq!(status["status"], "completed");
        let at = |field: &str| {
            status[field]
                .as_str()
                .unwrap()
                .parse::<chrono::DateTime<chrono::Utc>>()
                .unwrap()
        };
        waits.push(
            (at("updatedAt") - at("createdAt"))
                .to_std()
                .unwrap_or_default(),
        );
    }
    let (p50, p99) = common::percentiles(waits);
    println!(
        "{:<34} {:>10} {:>9.2} {:>9.2}",
        "202 to completed (under load)", "", p50, p99
    );
    println!(
        "{:<34} {:>10.1}",
        "backlog drained after the load (s)", drain_seconds
    );

    // Every wallet holds enough for the burns that follow, in as many open lots as it earned
    // (a burn of 0.01 takes from one lot of 12.5).
    println!(
        "{:<34} {:>10}",
        "open lots a wallet before the burns",
        earn_load.count / WALLETS
    );
    let burned = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let burn_load = {
        let (client, url, k, s) = (
            client.clone(),
            format!("{base}/v1/transactions/burn"),
            api_key.clone(),
            secret.clone(),
        );
        let burned = burned.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let body = json!({
                "externalId": format!("b-{c}-{n}"),
                "amount": 0.01,
                "walletId": format!("w-{}", (c * 13 + n) % WALLETS),
                "description": "Voucher"
            });
            let request = client
                .post(&url)
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&body);
            let burned = burned.clone();
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                let burn: Value = response.json().await.unwrap();
                burned
                    .lock()
                    .unwrap()
                    .push(burn["id"].as_str().unwrap().to_string());
            }
        })
        .await
    };
    println!("{}", burn_load.row("POST /v1/transactions/burn (200)"));

    // The floor: the same burns through the store alone, in this process (no HTTP, no
    // authentication, no JSON), on the same wallets; the returns' after theirs.
    let store_burns = common::burns_alone(&store, &campaign, CLIENTS, WALLETS, seconds, "sb").await;
    println!("{}", store_burns.row("floor: Ledger::burn alone"));

    // Refunds of those burns, a tenth of one at a time (each burn can take ten), then returns
    // of a tenth of the earns' purchases (12.5 each: 1.25 takes back 1 of its 12 tokens; a
    // wallet that spent them owes, the default policy).
    let burns = std::sync::Arc::new(burned.lock().unwrap().clone());
    let refund_load = correct(&client, &base, &api_key, &secret, seconds, burns, 0.001).await;
    println!("{}", refund_load.row("reversals: refund a burn (200)"));
    let earns = std::sync::Arc::new(earn_ids(&store, &campaign).await);
    let return_load = correct(
        &client,
        &base,
        &api_key,
        &secret,
        seconds,
        earns.clone(),
        1.25,
    )
    .await;
    println!("{}", return_load.row("reversals: return of an earn (200)"));

    let store_returns = {
        let (store, campaign) = (store.clone(), campaign.clone());
        let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        common::drive(CLIENTS, seconds, move |c, n| {
            let turn = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let correction = store::NewCorrection {
                transaction_id: earns[turn % earns.len()].clone(),
                external_id: format!("sr-{c}-{n}"),
                amount: Some("1.25".parse().unwrap()),
                description: None,
                comment: None,
                meta: None,
            };
            let (store, campaign) = (store.clone(), campaign.clone());
            async move {
                store.ledger().correct(&campaign, correction).await.unwrap();
            }
        })
        .await
    };
    println!("{}", store_returns.row("floor: Ledger::correct (return)"));
    // The returns left each wallet many aside rows (a partial return of an earn not spent yet
    // makes one): burns read them only as far as they reach.
    let aside_burns = common::burns_alone(&store, &campaign, CLIENTS, WALLETS, seconds, "sa").await;
    println!(
        "{}",
        aside_burns.row("Ledger::burn alone, after the returns")
    );
    assert!(
        store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees with itself after the run"
    );
}

/// `POST /v1/transactions/{id}/reversals` of `amount` for `seconds`, through `ids` in turn (each
/// client its own stride), every answer 200.
async fn correct(
    client: &reqwest::Client,
    base: &str,
    key: &str,
    secret: &str,
    seconds: u64,
    ids: std::sync::Arc<Vec<String>>,
    amount: f64,
) -> common::Load {
    let (client, base, k, s) = (
        client.clone(),
        base.to_string(),
        key.to_string(),
        secret.to_string(),
    );
    let next = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    common::drive(CLIENTS, seconds, move |c, n| {
        let turn = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let id = &ids[turn % ids.len()];
        let body = json!({"externalId": format!("r-{amount}-{c}-{n}"), "amount": amount});
        let request = client
            .post(format!("{base}/v1/transactions/{id}/reversals"))
            .header("x-api-key", &k)
            .header("x-api-secret", &s)
            .json(&body);
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
    .await
}

/// The campaign's EARN transactions' ids, spread over its wallets in the order they were made.
async fn earn_ids(store: &store::Store, campaign: &store::Campaign) -> Vec<String> {
    let earns = store::TransactionFilter {
        kinds: vec![store::TransactionKind::Earn],
        ..Default::default()
    };
    let mut ids = Vec::new();
    for page in 1.. {
        let found = store
            .ledger()
            .list_transactions(
                campaign,
                &earns,
                store::Page {
                    page,
                    limit: 10_000,
                },
            )
            .await
            .unwrap();
        let last = found.items.len() < 10_000;
        ids.extend(found.items.into_iter().map(|t| t.id));
        if last {
            break;
        }
    }
    ids
}
