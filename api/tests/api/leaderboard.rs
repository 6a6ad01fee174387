//! The leaderboard over HTTP: ranking, paging, what an entry shows of a member, a member's own
//! rank, the snapshot's headers and refresh, the answer before a first snapshot, and tenancy.

use std::time::{Duration, Instant};

use chrono::DateTime;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

/// Snapshots every second, so a test sees its earns on the board soon.
fn every_second() -> api::Settings {
    api::Settings {
        leaderboard_refresh: Duration::from_secs(1),
        ..Default::default()
    }
}

/// Member `reference` (Ada Lovelace's name, an email and a phone) with wallet `w-<reference>`.
async fn member(app: &TestApp, reference: &str, first: &str, last: &str) -> String {
    let id = app
        .member_id(
            json!({"firstName": first, "lastName": last, "externalId": reference,
            "userId": format!("u-{reference}"), "email": format!("{reference}@example.com"),
            "phone": "+27 21 555 0100"}),
        )
        .await;
    app.create_wallet(reference, &format!("w-{reference}"))
        .await;
    id
}

/// Polls `path` until `done` holds for its 200 reply.
async fn wait_for(app: &TestApp, path: &str, done: impl Fn(&Reply) -> bool) -> Reply {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let reply = app.get(path).await;
        if reply.status == StatusCode::OK && done(&reply) {
            return reply;
        }
        assert!(
            Instant::now() < deadline,
            "{path}: {} {}",
            reply.status,
            reply.body
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn header<'a>(reply: &'a Reply, name: &str) -> &'a str {
    reply
        .headers
        .get(name)
        .unwrap_or_else(|| panic!("no {name} header"))
        .to_str()
        .unwrap()
}

async fn the_board_ranks_members_and_shows_only_a_short_name(app: TestApp) {
    let ada = member(&app, "ada", "Ada", "Lovelace").await;
    let grace = member(&app, "grace", "Grace", "hopper").await;
    member(&app, "alan", "Alan", "Turing").await;
    member(&app, "idle", "Idle", "Member").await;
    app.earn("e-1", "w-grace", json!(30)).await;
    app.earn("e-2", "w-ada", json!(50)).await;
    app.earn("e-3", "w-alan", json!(10)).await;
    // Spending does not lower a member's points.
    let burned = app.burn("b-1", "w-ada", json!(45)).await;
    assert_eq!(burned.status, StatusCode::OK, "{}", burned.body);

    let board = wait_for(&app, "/v1/leaderboard", |r| r.body["total"] == 3).await;
    assert_eq!(
        board.body["data"],
        json!([
            {"id": ada, "rank": 1, "displayName": "Ada L.", "points": 50},
            {"id": grace, "rank": 2, "displayName": "Grace H.", "points": 30},
            {"id": board.data()[2]["id"], "rank": 3, "displayName": "Alan T.", "points": 10}
        ]),
        "an entry holds the id, rank, short name and points, nothing more"
    );
    let updated = DateTime::parse_from_rfc3339(header(&board, "x-leaderboard-updated-at"));
    assert!(updated.is_ok(), "{updated:?}");
    let cache = header(&board, "cache-control");
    let age: u64 = cache
        .strip_prefix("private, max-age=")
        .unwrap_or_else(|| panic!("{cache}"))
        .parse()
        .unwrap();
    assert!(age <= 1, "{cache}");

    let second = app.get("/v1/leaderboard?page=2&limit=2").await;
    assert_eq!(second.status, StatusCode::OK);
    assert_eq!(
        (&second.body["total"], &second.body["totalPages"]),
        (&json!(3), &json!(2))
    );
    assert_eq!(second.data().len(), 1);
    assert_eq!(second.data()[0]["rank"], 3);
    let bad = app.get("/v1/leaderboard?limit=101").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.fields(), vec!["limit"]);
}

async fn a_member_finds_their_rank(app: TestApp) {
    for (i, name) in ["a", "b", "c", "d"].iter().enumerate() {
        member(&app, name, &name.to_uppercase(), "Smith").await;
        app.earn(
            &format!("e-{name}"),
            &format!("w-{name}"),
            json!(40 - i * 10),
        )
        .await;
    }
    let loner = member(&app, "loner", "Lone", "Wolf").await;
    wait_for(&app, "/v1/leaderboard", |r| r.body["total"] == 4).await;

    let rank = app.get("/v1/leaderboard/members/c?neighbours=1").await;
    assert_eq!(rank.status, StatusCode::OK, "{}", rank.body);
    assert_eq!(rank.body["rank"], 3);
    assert_eq!(rank.body["points"], 20);
    assert_eq!(rank.body["displayName"], "C S.");
    assert_eq!(rank.body["total"], 4);
    let ranks = |side: &str| -> Vec<Value> {
        rank.body[side]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["rank"].clone())
            .collect()
    };
    assert_eq!(ranks("above"), vec![json!(2)]);
    assert_eq!(ranks("below"), vec![json!(4)]);
    assert!(rank.headers.contains_key("x-leaderboard-updated-at"));

    let top = app.get("/v1/leaderboard/members/a").await;
    assert_eq!(top.body["rank"], 1);
    assert_eq!(top.body["above"], json!([]));
    assert_eq!(
        top.body["below"].as_array().unwrap().len(),
        2,
        "two by default"
    );

    let unranked = app.get(&format!("/v1/leaderboard/members/{loner}")).await;
    assert_eq!(unranked.status, StatusCode::NOT_FOUND);
    assert_eq!(unranked.problem().code, "not_ranked");
    let unknown = app.get("/v1/leaderboard/members/nobody").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.problem().code, "not_found");
    let too_many = app.get("/v1/leaderboard/members/a?neighbours=11").await;
    assert_eq!(too_many.status, StatusCode::BAD_REQUEST);
    assert_eq!(too_many.fields(), vec!["neighbours"]);
}

async fn the_snapshot_follows_the_ledger_on_its_interval(app: TestApp) {
    member(&app, "ada", "Ada", "Lovelace").await;
    app.earn("e-1", "w-ada", json!(10)).await;
    let first = wait_for(&app, "/v1/leaderboard", |r| r.body["total"] == 1).await;
    let first_time = header(&first, "x-leaderboard-updated-at").to_string();
    app.earn("e-2", "w-ada", json!(5)).await;
    let later = wait_for(&app, "/v1/leaderboard", |r| r.data()[0]["points"] == 15).await;
    let later_time = header(&later, "x-leaderboard-updated-at");
    assert!(
        DateTime::parse_from_rfc3339(later_time).unwrap()
            > DateTime::parse_from_rfc3339(&first_time).unwrap()
    );

    // Made inactive: gone from the board at the next snapshot.
    let id = later.data()[0]["id"].as_str().unwrap().to_string();
    let patched = app
        .send(
            Method::PATCH,
            &format!("/v1/members/{id}"),
            Some(&app.key),
            None,
            Some(json!({"status": "inactive"})),
        )
        .await;
    assert_eq!(patched.status, StatusCode::OK, "{}", patched.body);
    wait_for(&app, "/v1/leaderboard", |r| r.body["total"] == 0).await;
}

async fn another_organisation_has_its_own_board(app: TestApp) {
    let ada = member(&app, "ada", "Ada", "Lovelace").await;
    app.earn("e-1", "w-ada", json!(10)).await;
    wait_for(&app, "/v1/leaderboard", |r| r.body["total"] == 1).await;
    let other = app.other_tenant().await;
    let deadline = Instant::now() + Duration::from_secs(30);
    let theirs = loop {
        let reply = app
            .send(Method::GET, "/v1/leaderboard", Some(&other), None, None)
            .await;
        if reply.status == StatusCode::OK || Instant::now() > deadline {
            break reply;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(theirs.status, StatusCode::OK, "{}", theirs.body);
    assert_eq!(theirs.body["total"], 0);
    let path = format!("/v1/leaderboard/members/{ada}");
    let rank = app.send(Method::GET, &path, Some(&other), None, None).await;
    assert_eq!(rank.status, StatusCode::NOT_FOUND);
}

app_tests!(
    settings: super::every_second();
    the_board_ranks_members_and_shows_only_a_short_name,
    a_member_finds_their_rank,
    the_snapshot_follows_the_ledger_on_its_interval,
    another_organisation_has_its_own_board,
);

/// A campaign whose first snapshot no background worker has built yet (none runs here) gets
/// it built by the first request, once, whoever asks: 200 with the board, never 503.
async fn the_first_snapshot_is_built_on_demand(db: store::testing::TestStore) {
    let app = std::sync::Arc::new(TestApp::spawn_with(db, api::Settings::default(), false).await);
    let wallet = app.member_with_wallet().await;
    let accepted = app
        .post(
            "/v1/transactions/earn",
            json!({"id": "e-1", "walletId": wallet, "amount": 25,
                "date": "2026-11-18T10:15:00Z", "description": "Coffee"}),
        )
        .await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{}", accepted.body);
    // The test stands in for the earn worker, which this node does not run.
    let rules = store::RuleBook::new(app.store.programme().clone());
    assert_eq!(
        app.store.ledger().process_earns(&rules, 10).await.unwrap(),
        1
    );

    let asks: Vec<_> = (0..6)
        .map(|_| {
            let app = app.clone();
            tokio::spawn(async move { app.get("/v1/leaderboard").await })
        })
        .collect();
    let mut built_at = Vec::new();
    for ask in asks {
        let reply = ask.await.unwrap();
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["total"], 1, "{}", reply.body);
        assert_eq!(reply.data()[0]["points"], 25);
        built_at.push(reply.headers["x-leaderboard-updated-at"].clone());
    }
    built_at.dedup();
    assert_eq!(
        built_at.len(),
        1,
        "one snapshot for every asker: {built_at:?}"
    );
    let rank = app.get("/v1/leaderboard/members/card-1").await;
    assert_eq!(rank.status, StatusCode::OK, "{}", rank.body);
    assert_eq!(rank.body["rank"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_the_first_snapshot_is_built_on_demand() {
    the_first_snapshot_is_built_on_demand(store::testing::TestStore::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn postgres_the_first_snapshot_is_built_on_demand() {
    the_first_snapshot_is_built_on_demand(store::testing::TestStore::postgres().await).await;
}
