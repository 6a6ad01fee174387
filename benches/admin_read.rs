//! A session-authenticated read on the admin API beside the client API's keyed read of the same
//! wallet, in one run, alternated (client, admin, client, admin) so that the machine's drift
//! falls on both.
//!
//! `cargo bench --bench admin_read` serves both listeners of one node on SQLite (or PostgreSQL
//! when `REWARDS_TEST_POSTGRES_URL` is set), 200 wallets, and drives each with 32 concurrent
//! clients for `BENCH_SECONDS` (default 60) per round:
//!   baseline  GET /healthz                                          no credentials, no database
//!   client    GET /v1/wallets/{w}                                   key + secret, then the wallet
//!   admin     GET /admin/v1/orgs/{o}/campaigns/{c}/wallets/{w}     session, role, organisation,
//!                                                                   campaign, then the wallet
//! Goal (#61): the admin read at least as fast as the client's. The floor, in the same run:
//! the store alone doing each side's database work (the credential's read, then the wallet's),
//! with the same concurrency and no HTTP.

mod common;

const CLIENTS: usize = 32;
const WALLETS: usize = 200;

#[tokio::main]
async fn main() {
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(WALLETS, true).await;
    let state = api::AppState::new(store.clone(), store::CodeKey::random());
    let client_base = common::serve_state(state.clone()).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let admin_base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(admin::serve(
        listener,
        admin::AdminState::new(state, std::env::temp_dir()),
        std::future::pending(),
    ));
    let session = common::owner_session(&store, &admin_base).await;
    let seconds = common::seconds();

    println!(
        "backend: {:?}; {WALLETS} wallets, {CLIENTS} concurrent clients, {seconds} s per round",
        store.backend()
    );
    println!("{}", common::HEADER);
    let http = reqwest::Client::new();
    let healthz = format!("{client_base}/healthz");
    let load = common::drive(CLIENTS, seconds, {
        let http = http.clone();
        move |_, _| {
            let request = http.get(&healthz);
            async move {
                assert!(request.send().await.unwrap().status().is_success());
            }
        }
    })
    .await;
    println!("{}", load.row("baseline: GET /healthz"));
    let admin_wallets = format!(
        "{admin_base}/admin/v1/orgs/{}/campaigns/{}/wallets",
        campaign.org_id, campaign.id
    );
    for round in 1..=2 {
        let (key, secret) = (key.key.api_key.clone(), key.secret.clone());
        let url = format!("{client_base}/v1/wallets");
        let client = common::drive(CLIENTS, seconds, {
            let http = http.clone();
            move |c, n| {
                let request = http
                    .get(format!("{url}/w-{}", (c * 7 + n) % WALLETS))
                    .header("x-api-key", &key)
                    .header("x-api-secret", &secret);
                read(request)
            }
        })
        .await;
        println!("{}", client.row(&format!("client, keyed ({round})")));
        let admin = common::drive(CLIENTS, seconds, {
            let (http, url, session) = (http.clone(), admin_wallets.clone(), session.clone());
            move |c, n| {
                let request = http
                    .get(format!("{url}/w-{}", (c * 7 + n) % WALLETS))
                    .bearer_auth(&session);
                read(request)
            }
        })
        .await;
        println!("{}", admin.row(&format!("admin, session ({round})")));
    }
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    let keyed = common::drive(CLIENTS, seconds, {
        let (store, campaign) = (store.clone(), campaign.clone());
        move |c, n| {
            let (store, campaign) = (store.clone(), campaign.clone());
            let (api_key, secret) = (api_key.clone(), secret.clone());
            async move {
                let found = store.tenancy().authenticate(&api_key, &secret).await;
                assert!(found.unwrap().is_some());
                let wallet = format!("w-{}", (c * 7 + n) % WALLETS);
                store.ledger().get_wallet(&campaign, &wallet).await.unwrap();
            }
        }
    })
    .await;
    println!("{}", keyed.row("store alone: key, wallet"));
    let limits = store::SessionLimits::default();
    let signed = common::drive(CLIENTS, seconds, {
        let (store, campaign, session) = (store.clone(), campaign.clone(), session.clone());
        move |c, n| {
            let (store, campaign, session) = (store.clone(), campaign.clone(), session.clone());
            async move {
                let found = store.operators().authenticate(&session, limits).await;
                assert!(found.unwrap().is_some());
                let wallet = format!("w-{}", (c * 7 + n) % WALLETS);
                store.ledger().get_wallet(&campaign, &wallet).await.unwrap();
            }
        }
    })
    .await;
    println!("{}", signed.row("store alone: session, wallet"));
}

async fn read(request: reqwest::RequestBuilder) {
    let response = request.send().await.unwrap();
    assert!(response.status().is_success(), "{}", response.status());
    response.bytes().await.unwrap();
}
