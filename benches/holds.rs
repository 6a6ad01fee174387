//! Holds placed and captured, and transfers between wallets, per second over HTTP on SQLite (or
//! PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set), beside burns of the same size on the
//! same wallets in the same run, and the hold and the transfer through the store alone (the
//! floors). Transfers run twice: between neighbouring wallets (`w-k` to `w-k+1`, so concurrent
//! transfers wait on each other in chains) and between pairs of wallets each client has to
//! itself (back and forth), which no other transfer waits on.
//!
//! Every wallet holds `LOTS` open lots (earns of 12.5 credited through the store) before the
//! first scenario; the burns, holds, captures and transfers are of 0.01, each taking from one
//! lot. The burns, holds and transfers run for `BENCH_SECONDS` (default 60); the captures take
//! each hold placed once, as fast as they go.
//!
//! On PostgreSQL the bench ends with the database alone doing the same writes (pgbench, see
//! `common::pgbench`), when pgbench is installed.
//!
//! `cargo bench --bench holds`. Goals: hold, capture and transfer on SQLite at the burn's speed
//! (>= 5,000 req/s, p99 <= 20 ms); on PostgreSQL >= 2,000 req/s, p99 <= 30 ms.

mod common;

use std::sync::{Arc, Mutex};

use axum::http::StatusCode;
use serde_json::{Value, json};

const CLIENTS: usize = 32;
const WALLETS: usize = 100;
const LOTS: usize = 1_000;

fn main() {
    rewards::arenas::limit();
    run();
}

#[tokio::main]
async fn run() {
    let common::Seed {
        _db: db,
        store,
        campaign,
        key,
    } = common::seed(WALLETS, true).await;
    let seconds = common::seconds();
    common::open_lots(&store, &campaign, WALLETS, LOTS).await;
    let base = common::serve(&store).await;
    let client = reqwest::Client::new();
    let (k, s) = (key.key.api_key.clone(), key.secret.clone());
    let post = {
        let (client, base) = (client.clone(), base.clone());
        move |path: String, body: Value| {
            client
                .post(format!("{base}{path}"))
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&body)
        }
    };
    let wallet = |c: usize, n: usize| format!("w-{}", (c * 13 + n) % WALLETS);
    // Client `c`'s own two wallets, the tokens going one way then back.
    let own_pair = |c: usize, n: usize| {
        let (a, b) = (format!("w-{}", 2 * c), format!("w-{}", 2 * c + 1));
        if n.is_multiple_of(2) { (a, b) } else { (b, a) }
    };

    println!(
        "backend: {:?}; {CLIENTS} concurrent clients; {WALLETS} wallets of {LOTS} open lots",
        store.backend()
    );
    println!("{}", common::HEADER);
    let burns = {
        let post = post.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let body = json!({"externalId": format!("b-{c}-{n}"), "amount": 0.01,
                "walletId": wallet(c, n), "description": "Voucher"});
            let request = post("/v1/transactions/burn".into(), body);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        })
        .await
    };
    println!("{}", burns.row("baseline: POST burn (200)"));

    let placed = Arc::new(Mutex::new(Vec::new()));
    let holds = {
        let (post, placed) = (post.clone(), placed.clone());
        common::drive(CLIENTS, seconds, move |c, n| {
            let body = json!({"externalId": format!("h-{c}-{n}"), "amount": 0.01,
                "walletId": wallet(c, n), "description": "Checkout"});
            let request = post("/v1/holds".into(), body);
            let placed = placed.clone();
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), StatusCode::CREATED);
                let hold: Value = response.json().await.unwrap();
                let id = hold["id"].as_str().unwrap().to_string();
                placed.lock().unwrap().push(id);
            }
        })
        .await
    };
    println!("{}", holds.row("POST /v1/holds (201)"));

    let ids: Vec<String> = placed.lock().unwrap().clone();
    let captures = {
        let post = post.clone();
        common::drive_each(CLIENTS, ids, move |id| {
            let request = post(format!("/v1/holds/{id}/capture"), json!({}));
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::OK);
            }
        })
        .await
    };
    println!("{}", captures.row("POST /v1/holds/{id}/capture (200)"));

    let transfers = {
        let post = post.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let (from, to) = (wallet(c, n), wallet(c, n + 1));
            let body = json!({"externalId": format!("t-{c}-{n}"), "amount": 0.01,
                "fromWalletId": from, "toWalletId": to, "description": "Gift"});
            let request = post("/v1/transfers".into(), body);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::CREATED);
            }
        })
        .await
    };
    println!("{}", transfers.row("POST /v1/transfers, chained (201)"));

    let apart = {
        let post = post.clone();
        common::drive(CLIENTS, seconds, move |c, n| {
            let (from, to) = own_pair(c, n);
            let body = json!({"externalId": format!("p-{c}-{n}"), "amount": 0.01,
                "fromWalletId": from, "toWalletId": to, "description": "Gift"});
            let request = post("/v1/transfers".into(), body);
            async move {
                assert_eq!(request.send().await.unwrap().status(), StatusCode::CREATED);
            }
        })
        .await
    };
    println!("{}", apart.row("POST /v1/transfers, pairs apart (201)"));

    let transfers_alone = {
        let (store, campaign) = (store.clone(), campaign.clone());
        common::drive(CLIENTS, seconds, move |c, n| {
            let (from, to) = own_pair(c, n);
            let transfer = store::NewTransfer {
                from,
                to,
                external_id: format!("st-{c}-{n}"),
                amount: store::Tokens::from_text("0.01").unwrap(),
                description: Some("Gift".into()),
                comment: None,
                meta: None,
            };
            let (store, campaign) = (store.clone(), campaign.clone());
            async move {
                store.ledger().transfer(&campaign, transfer).await.unwrap();
            }
        })
        .await
    };
    println!(
        "{}",
        transfers_alone.row("floor: Ledger::transfer alone, pairs apart")
    );

    let alone = {
        let (store, campaign) = (store.clone(), campaign.clone());
        common::drive(CLIENTS, seconds, move |c, n| {
            let hold = store::NewHold {
                spend: store::Spend {
                    wallet: wallet(c, n),
                    external_id: format!("sh-{c}-{n}"),
                    amount: store::Tokens::from_text("0.01").unwrap(),
                    description: "Checkout".into(),
                    comment: None,
                    meta: None,
                },
                expires_at: None,
            };
            let (store, campaign) = (store.clone(), campaign.clone());
            async move {
                store.ledger().hold(&campaign, hold).await.unwrap();
            }
        })
        .await
    };
    println!("{}", alone.row("floor: Ledger::hold alone"));
    assert!(
        store.ledger().audit().await.unwrap().is_empty(),
        "the ledger agrees with itself after the run"
    );
    if store.backend() == store::Backend::Postgres {
        database_alone(&db.url, &campaign, seconds);
    }
}

/// The floors of PostgreSQL alone (see `common::pgbench`): a burn, a hold and a transfer
/// between a client's own pair of wallets, each a snapshot read and one write statement.
fn database_alone(url: &str, campaign: &store::Campaign, seconds: u64) {
    let floor = common::pgbench::Floor {
        url,
        org: &campaign.org_id,
        campaign: &campaign.id,
        clients: CLIENTS,
        seconds,
    };
    let any = format!("\\set w random(0, {})", WALLETS - 1);
    let pair = concat!(
        "\\set side random(0, 1)\n",
        "\\set w 2 * :client_id + :side\n",
        "\\set to 2 * :client_id + 1 - :side"
    );
    let scenarios = [
        (any.as_str(), "burn", "floor: pgbench, burn's statements"),
        (any.as_str(), "hold", "floor: pgbench, hold's statements"),
        (pair, "transfer", "floor: pgbench, transfer, pairs"),
    ];
    for (prelude, write, name) in scenarios {
        match floor.run(prelude, write) {
            Some(load) => println!("{}", load.row(name)),
            None => println!("{name}: pgbench is not installed"),
        }
    }
}
