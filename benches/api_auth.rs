//! Requests per second through authentication, beside a baseline that skips it, in one run.
//!
//! `cargo bench --bench api_auth` starts the real server on SQLite (or on PostgreSQL when
//! `REWARDS_TEST_POSTGRES_URL` is set) on a loopback port and drives it with 32 concurrent
//! clients for a fixed time per scenario:
//!   baseline  GET /healthz            no key check, no database
//!   auth      GET /v1/api-key         key lookup + SHA-256 + constant-time compare
//!   list      GET /v1/members         auth + a page of 10 of 200 members
//! Client and server share the machine's cores, so the figures are a floor, not a ceiling.

mod common;

const CLIENTS: usize = 32;
const SECONDS: u64 = 5;

struct Scenario {
    name: &'static str,
    path: &'static str,
    authenticated: bool,
}

#[tokio::main]
async fn main() {
    let common::Seed {
        _db, store, key, ..
    } = common::seed(200, false).await;
    let base = common::serve(&store).await;

    println!(
        "backend: {:?}; {CLIENTS} concurrent clients, {SECONDS} s per scenario",
        store.backend()
    );
    println!("{}", common::HEADER);
    for scenario in [
        Scenario {
            name: "baseline: GET /healthz",
            path: "/healthz",
            authenticated: false,
        },
        Scenario {
            name: "GET /v1/api-key (auth)",
            path: "/v1/api-key",
            authenticated: true,
        },
        Scenario {
            name: "GET /v1/members (auth + list)",
            path: "/v1/members",
            authenticated: true,
        },
    ] {
        let client = reqwest::Client::new();
        let url = format!("{base}{}", scenario.path);
        let (key, secret) = (key.key.api_key.clone(), key.secret.clone());
        let authenticated = scenario.authenticated;
        let load = common::drive(CLIENTS, SECONDS, move |_, _| {
            let mut request = client.get(&url);
            if authenticated {
                request = request
                    .header("x-api-key", &key)
                    .header("x-api-secret", &secret);
            }
            async move {
                let response = request.send().await.unwrap();
                assert!(response.status().is_success(), "{}", response.status());
                response.bytes().await.unwrap();
            }
        })
        .await;
        println!("{}", load.row(scenario.name));
    }
}
