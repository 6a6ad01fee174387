//! The leaderboard and reviews as an operator runs them: two server processes on one database
//! share one snapshot per interval, and held-back reviews are decided with `rewards reviews`.

use std::time::{Duration, Instant};

use crate::common::{json_of, programme, run, serve};
use serde_json::{Value, json};
use store::Store;

struct Client {
    http: reqwest::Client,
    key: String,
    secret: String,
}

impl Client {
    fn new(key: &Value) -> Client {
        Client {
            http: reqwest::Client::new(),
            key: key["apiKey"].as_str().unwrap().to_string(),
            secret: key["apiSecret"].as_str().unwrap().to_string(),
        }
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> (u16, Value, Option<String>) {
        let response = request
            .header("x-api-key", &self.key)
            .header("x-api-secret", &self.secret)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        let updated = response
            .headers()
            .get("x-leaderboard-updated-at")
            .map(|v| v.to_str().unwrap().to_string());
        (
            status,
            response.json().await.unwrap_or(Value::Null),
            updated,
        )
    }

    async fn post(&self, url: String, body: Value) -> (u16, Value) {
        let (status, body, _) = self.send(self.http.post(url).json(&body)).await;
        (status, body)
    }

    async fn get(&self, url: String) -> (u16, Value, Option<String>) {
        self.send(self.http.get(url)).await
    }
}

/// Two servers with snapshots every second: both answer from the one snapshot the pair builds
/// per interval (the claim in the database makes one build, not one per node).
async fn two_servers_share_one_snapshot(mut env: Vec<(&'static str, String)>, url: String) {
    env.push(("REWARDS_LEADERBOARD_REFRESH_SECS", "1".into()));
    let (_org, campaign, key) = programme(&env);
    let (_a, first) = serve(&env);
    let (_b, second) = serve(&env);
    let client = Client::new(&key);
    let member = json!({"firstName": "Ada", "lastName": "Lovelace", "userId": "u1",
        "externalId": "card-1"});
    assert_eq!(
        client.post(format!("{first}/v1/members"), member).await.0,
        200
    );
    let wallet = json!({"owner": "card-1", "externalId": "w-1"});
    assert_eq!(
        client.post(format!("{first}/v1/wallets"), wallet).await.0,
        201
    );
    let earn = json!({"id": "e-1", "walletId": "w-1", "amount": 25,
        "date": "2026-11-18T10:15:00Z"});
    assert_eq!(
        client
            .post(format!("{second}/v1/transactions/earn"), earn)
            .await
            .0,
        202
    );

    let deadline = Instant::now() + Duration::from_secs(30);
    for base in [&first, &second] {
        loop {
            let (status, board, _) = client.get(format!("{base}/v1/leaderboard")).await;
            if status == 200 && board["total"] == 1 {
                assert_eq!(board["data"][0]["displayName"], "Ada L.");
                assert_eq!(board["data"][0]["points"], 25);
                break;
            }
            assert!(Instant::now() < deadline, "{base}: {status} {board}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    // Both answer the same snapshot (asked twice in a row, they may straddle a rebuild).
    let same = async {
        loop {
            let (_, _, a) = client.get(format!("{first}/v1/leaderboard")).await;
            let (_, _, b) = client.get(format!("{second}/v1/leaderboard")).await;
            if a.is_some() && a == b {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), same)
        .await
        .expect("both servers answer from one snapshot");

    // One build per interval for the pair: over T seconds the generation grows by at most
    // T + 1, where a build on each node would give about twice that.
    let store = Store::connect(&url, 2).await.unwrap();
    let campaign = store.tenancy().campaign_by_id(&campaign).await.unwrap();
    let generation = || async {
        let snapshot = store
            .community()
            .leaderboard_snapshot(&campaign)
            .await
            .unwrap();
        snapshot.expect("a snapshot").generation
    };
    // Waits for five builds (snapshots keep coming), then looks at how long they took: a build
    // on each node would bring five in about half the time the bound allows.
    let (started, before) = (Instant::now(), generation().await);
    let built = loop {
        let built = generation().await - before;
        if built >= 5 {
            break built;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "snapshots stopped coming"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let seconds = started.elapsed().as_secs_f64();
    assert!(
        built as f64 <= seconds.ceil() + 1.0,
        "{built} builds in {seconds:.1} s"
    );
}

#[tokio::test]
async fn two_servers_share_one_snapshot_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let url = format!("sqlite:{}", data.join("rewards.db").display());
    let env = vec![("REWARDS_DATA_DIR", data.display().to_string())];
    two_servers_share_one_snapshot(env, url).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn two_servers_share_one_snapshot_on_postgres() {
    let dir = tempfile::tempdir().unwrap();
    let url = store::testing::postgres_url().await;
    let env = vec![
        ("DATABASE_URL", url.clone()),
        ("REWARDS_DATA_DIR", dir.path().display().to_string()),
    ];
    two_servers_share_one_snapshot(env, url).await;
}

const CATALOGUE: &str = r#"{"products": [{"id": "spa", "name": "Spa",
    "variants": [{"id": "spa-day", "name": "Day", "price": 10}]}]}"#;

/// Reviews held back by profanity or by reports (the report threshold set to 2 through the
/// environment) are listed for the operator, who approves or removes them.
#[tokio::test]
async fn operators_decide_on_held_back_reviews() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        ("REWARDS_DATA_DIR", dir.path().display().to_string()),
        ("REWARDS_REVIEWS_REPORT_THRESHOLD", "2".to_string()),
    ];
    let (org, campaign, key) = programme(&env);
    let file = dir.path().join("catalogue.json");
    std::fs::write(&file, CATALOGUE).unwrap();
    let import = ["catalogue", "import", "--campaign", &campaign];
    crate::common::ok(&env, &[&import[..], &[file.to_str().unwrap()]].concat());
    let (_server, base) = serve(&env);
    let client = Client::new(&key);
    for reference in ["ada", "alan", "grace"] {
        let member = json!({"firstName": reference, "userId": reference, "externalId": reference});
        assert_eq!(
            client.post(format!("{base}/v1/members"), member).await.0,
            200
        );
    }
    let review = |member: &str, text: &str| {
        json!({"memberId": member, "voucherId": "spa", "partnerId": "p-1", "rating": 4,
            "reviewText": text})
    };
    let (status, rude) = client
        .post(
            format!("{base}/v1/reviews"),
            review("ada", "this place is shit"),
        )
        .await;
    assert_eq!((status, &rude["status"]), (201, &json!("pending")));
    let (_, nice) = client
        .post(format!("{base}/v1/reviews"), review("alan", "Nice"))
        .await;
    let report = format!("{base}/v1/reviews/{}/report", nice["id"].as_str().unwrap());
    for reporter in ["ada", "grace"] {
        let (status, _) = client
            .post(report.clone(), json!({"reporterId": reporter}))
            .await;
        assert_eq!(status, 200);
    }
    let listed = || async {
        let (_, page, _) = client.get(format!("{base}/v1/reviews?voucherId=spa")).await;
        page["total"].as_u64().unwrap()
    };
    assert_eq!(listed().await, 0, "both are held back");

    let pending = json_of(&env, &["reviews", "pending", "--org", &org]);
    assert_eq!(pending["total"], 2);
    let ids: Vec<&Value> = pending["reviews"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| &r["id"])
        .collect();
    assert_eq!(ids, vec![&rude["id"], &nice["id"]], "oldest first");
    let text = crate::common::ok(&env, &["reviews", "pending", "--org", &org]);
    assert!(
        text.contains("this place is shit") && text.contains("reports 2"),
        "{text}"
    );

    let nice_id = nice["id"].as_str().unwrap();
    let rude_id = rude["id"].as_str().unwrap();
    crate::common::ok(&env, &["reviews", "approve", "--org", &org, nice_id]);
    crate::common::ok(&env, &["reviews", "remove", "--org", &org, rude_id]);
    assert_eq!(listed().await, 1);
    let (status, _, _) = client.get(format!("{base}/v1/reviews/{rude_id}")).await;
    assert_eq!(status, 404, "a removed review is gone");
    let (_, approved, _) = client.get(format!("{base}/v1/reviews/{nice_id}")).await;
    assert_eq!(approved["status"], "approved");
    assert_eq!(
        json_of(&env, &["reviews", "pending", "--org", &org])["total"],
        0
    );

    let again = run(&env, &["reviews", "approve", "--org", &org, rude_id]);
    assert!(!again.status.success());
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("review not found"), "{stderr}");
}
