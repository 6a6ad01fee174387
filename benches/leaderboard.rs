//! The leaderboard with 1,000,000 ranked members and review writes, on SQLite (or PostgreSQL
//! when `REWARDS_TEST_POSTGRES_URL` is set), beside a bare axum handler measured in the same
//! run:
//!
//! - the snapshot's rebuild time for 1,000,000 wallets (the first build, then builds that also
//!   delete the generation before last, as every later build does);
//! - `GET /v1/leaderboard` latency for random pages (the last one included) and for the first
//!   and last pages, one client at a time and eight at once; a member's rank;
//! - `POST /v1/reviews` req/s, each a new review with its profanity score.
//!
//! `cargo bench --bench leaderboard`. Goal on SQLite: page p99 <= 5 ms, any page.
//! `BENCH_MEMBERS` changes the number of members (default 1,000,000).

mod common;

use std::time::{Duration, Instant};

use axum::Json;
use axum::http::StatusCode;
use serde_json::{Value, json};
use store::{Backend, Catalogue, ImportOptions, Store};

const SECONDS: u64 = 5;
const PAGE: u64 = 100;

#[tokio::main]
async fn main() {
    let members: u64 = common::number("BENCH_MEMBERS", 1_000_000);
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(0, false).await;
    println!(
        "backend: {:?}; {members} members, each with a wallet that has earned",
        store.backend()
    );
    let started = Instant::now();
    fill(&store, &campaign, members).await;
    println!("seeded in {:.1} s", started.elapsed().as_secs_f64());

    println!("\nsnapshot rebuild                          entries   seconds");
    for build in 1..=3 {
        let built = rebuild(&store, &campaign).await;
        let what = if build == 1 {
            "first build".to_string()
        } else if build == 2 {
            "second (keeps the first)".to_string()
        } else {
            format!("build {build} (deletes generation {})", build - 2)
        };
        println!(
            "{what:<40} {:>9} {:>9.2}",
            built.entries,
            built.took.as_secs_f64()
        );
        assert_eq!(built.entries, members);
    }
    let snapshot = store
        .community()
        .leaderboard_snapshot(&campaign)
        .await
        .unwrap()
        .unwrap();
    let last_page = members.div_ceil(PAGE).max(1);

    let base = common::serve(&store).await;
    let bare = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let bare_base = format!("http://{}", bare.local_addr().unwrap());
    let page_body: Value = {
        let entries: Vec<Value> = (0..PAGE)
            .map(|i| json!({"id": format!("m-{i}"), "rank": i + 1, "displayName": "Ada L.", "points": 1000 - i}))
            .collect();
        json!({"data": entries, "total": members, "currentPage": 1, "pageSize": PAGE, "totalPages": last_page})
    };
    let router = axum::Router::new()
        .route(
            "/leaderboard",
            axum::routing::get(move || {
                let body = page_body.clone();
                async move { Json(body) }
            }),
        )
        .route(
            "/reviews",
            axum::routing::post(|Json(body): Json<Value>| async move {
                (
                    StatusCode::CREATED,
                    Json(json!({"memberId": body["memberId"], "rating": body["rating"]})),
                )
            }),
        );
    tokio::spawn(async move { axum::serve(bare, router).await });

    let client = reqwest::Client::new();
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    let get = |path: String, clients: usize| {
        let (client, k, s) = (client.clone(), api_key.clone(), secret.clone());
        common::drive(clients, SECONDS, move |c, n| {
            let request = client
                .get(path.replace("{page}", &random_page(c, n, last_page).to_string()))
                .header("x-api-key", &k)
                .header("x-api-secret", &s);
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), StatusCode::OK);
                response.bytes().await.unwrap();
            }
        })
    };

    println!(
        "\nsnapshot of {} entries (generation {}); pages of {PAGE}",
        snapshot.entries, snapshot.generation
    );
    println!("{}", common::HEADER);
    for clients in [1, 8] {
        let load = get(format!("{bare_base}/leaderboard"), clients).await;
        println!(
            "{}",
            load.row(&format!("baseline: bare axum page, {clients} cl"))
        );
        let load = get(
            format!("{base}/v1/leaderboard?limit={PAGE}&page={{page}}"),
            clients,
        )
        .await;
        println!(
            "{}",
            load.row(&format!("random pages, {clients} client(s)"))
        );
    }
    for (name, page) in [
        ("first page, 1 client", 1),
        ("last page, 1 client", last_page),
    ] {
        let load = get(format!("{base}/v1/leaderboard?limit={PAGE}&page={page}"), 1).await;
        println!("{}", load.row(name));
    }
    let load = get(
        format!("{base}/v1/leaderboard/members/ext-{}", members / 2),
        1,
    )
    .await;
    println!("{}", load.row("a member's rank, 1 client"));
    // Pages while this process rebuilds the snapshot (the work every interval brings).
    let building = {
        let (store, campaign) = (store.clone(), campaign.clone());
        tokio::spawn(async move { rebuild(&store, &campaign).await })
    };
    let load = get(
        format!("{base}/v1/leaderboard?limit={PAGE}&page={{page}}"),
        1,
    )
    .await;
    let took = building.await.unwrap().took.as_secs_f64();
    println!("{}", load.row("random pages during a rebuild"));
    println!("(that rebuild took {took:.2} s)");

    // Reviews: each request a new member's review of one of ten products.
    let products: Vec<Value> = (0..10)
        .map(|i| {
            json!({"id": format!("p-{i}"), "name": format!("Reward {i}"),
            "variants": [{"id": format!("v-{i}"), "name": "Standard", "price": 1}]})
        })
        .collect();
    let catalogue = Catalogue::from_value(&json!({"products": products})).unwrap();
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    let clients = 32;
    let review = move |c: usize, n: usize| {
        // A new (member, voucher) pair each time: k < 10 x members.
        let k = (n * 32 + c) as u64;
        let (member, voucher) = (k % members, (k / members) % 10);
        let text = if n % 10 == 9 {
            "The staff were rude and the whole thing was shit, never again."
        } else {
            "Booked the spa day for my mother's birthday: the staff were kind, the pool was warm \
             and the lunch was generous. Parking was hard to find on a Saturday, so come early. \
             We will certainly be back in the winter."
        };
        json!({"memberId": format!("ext-{member}"), "voucherId": format!("p-{voucher}"),
            "partnerId": "partner-1", "rating": 1 + n % 5, "reviewText": text})
    };
    let post = |url: String, expect: StatusCode| {
        let (client, k, s) = (client.clone(), api_key.clone(), secret.clone());
        common::drive(clients, SECONDS, move |c, n| {
            let request = client
                .post(&url)
                .header("x-api-key", &k)
                .header("x-api-secret", &s)
                .json(&review(c, n));
            async move {
                let response = request.send().await.unwrap();
                let status = response.status();
                let text = response.text().await.unwrap_or_default();
                assert_eq!(status, expect, "{text}");
            }
        })
    };
    println!("\nreviews, {clients} concurrent clients");
    println!("{}", common::HEADER);
    let load = post(format!("{bare_base}/reviews"), StatusCode::CREATED).await;
    println!("{}", load.row("baseline: bare axum 201"));
    let load = post(format!("{base}/v1/reviews"), StatusCode::CREATED).await;
    println!("{}", load.row("POST /v1/reviews"));
}

/// Makes the campaign's snapshot due and builds it (with the service's default interval, so the
/// serving process's own job leaves it alone afterwards).
async fn rebuild(store: &Store, campaign: &store::Campaign) -> store::Built {
    store
        .execute_raw("UPDATE leaderboards SET due_at = '2000-01-01T00:00:00+00:00'")
        .await
        .unwrap();
    store
        .community()
        .refresh_leaderboard(campaign, Duration::from_secs(300))
        .await
        .unwrap()
        .expect("due")
}

/// A page spread over the whole board by client and sequence (the last page included).
fn random_page(client: usize, sequence: usize, last: u64) -> u64 {
    let mixed = (client as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15)
        ^ (sequence as u64).wrapping_mul(0xD1B5_4A32_D192_ED03);
    if sequence.is_multiple_of(10) {
        last
    } else {
        1 + (mixed >> 11) % last
    }
}

/// `members` members `ext-<i>` (first and last names), each with a wallet of the campaign that
/// has earned between 1 and 100,000 tokens, written by the database itself (far faster than
/// a million API calls, and the board does not care how they came).
async fn fill(store: &Store, campaign: &store::Campaign, members: u64) {
    let (org, id) = (&campaign.org_id, &campaign.id);
    let series = match store.backend() {
        Backend::Sqlite => format!(
            "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < {}) SELECT i FROM n",
            members.saturating_sub(1)
        ),
        Backend::Postgres => format!(
            "SELECT generate_series(0, {}) AS i",
            members.saturating_sub(1)
        ),
    };
    let at = "2026-11-01T00:00:00+00:00";
    store
        .execute_raw(&format!(
            "INSERT INTO members (id, org_id, first_name, last_name, status, idp, user_id, \
             external_id, created_at, updated_at) SELECT 'm-' || i, '{org}', 'Member', \
             'Number ' || i, 'active', 'reference', 'u-' || i, 'ext-' || i, '{at}', '{at}' \
             FROM ({series}) AS s"
        ))
        .await
        .unwrap();
    let earned = "(((CAST(i AS BIGINT) * 7919) % 100000) + 1) * 1000000";
    store
        .execute_raw(&format!(
            "INSERT INTO wallets (id, org_id, campaign_id, owner_id, external_id, currency, \
             balance, earned, earned_at, created_at, updated_at) SELECT 'w-' || i, '{org}', \
             '{id}', 'm-' || i, 'wallet-' || i, 'PTS', {earned}, {earned}, '{at}', '{at}', \
             '{at}' FROM ({series}) AS s"
        ))
        .await
        .unwrap();
    store.execute_raw("ANALYZE").await.unwrap();
}
