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

use store::testing::TestStore;
use store::{NewCampaign, NewKey, NewMember};

const CLIENTS: usize = 32;
const SECONDS: u64 = 5;

struct Scenario {
    name: &'static str,
    path: &'static str,
    authenticated: bool,
}

#[tokio::main]
async fn main() {
    let db = match std::env::var(store::testing::POSTGRES_URL_VAR) {
        Ok(_) => TestStore::postgres().await,
        Err(_) => TestStore::sqlite().await,
    };
    let store = db.store.clone();
    let org = store.create_org("Bench").await.unwrap().id;
    let campaign = store
        .create_campaign(
            &org,
            NewCampaign {
                name: "B".into(),
                currency: "PTS".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .id;
    let key = store
        .issue_key(
            &org,
            NewKey {
                campaign_id: campaign,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    for i in 0..200 {
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: format!("u{i}"),
            external_id: format!("card-{i}"),
            ..Default::default()
        };
        store.create_member(&org, member).await.unwrap();
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let state = api::AppState::new(store.clone());
    tokio::spawn(api::serve(listener, state, true, std::future::pending()));

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
