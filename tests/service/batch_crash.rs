//! A process killed in the middle of a file, through the real binary: the file is finished
//! after the restart with every row credited exactly once, its repeated ids refused as
//! repeats (not as rows credited before the crash), and `rewards audit` is clean.

use std::time::{Duration, Instant};

use crate::common::{programme, rewards, serve_both};
use serde_json::{Value, json};

const WALLETS: usize = 10;
const ROWS: usize = 12_000;

async fn call(
    http: &str,
    key: &Value,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut request = reqwest::Client::new()
        .request(method, format!("{http}{path}"))
        .header("x-api-key", key["apiKey"].as_str().unwrap())
        .header("x-api-secret", key["apiSecret"].as_str().unwrap());
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_interrupted_by_a_crash_is_finished_once_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let (org, _, key) = programme(&env);

    // Wallets, made over the API.
    let (server, http, _) = serve_both(&env);
    for i in 0..WALLETS {
        let member = json!({"firstName": "Ada", "userId": format!("u-{i}"), "externalId": format!("card-{i}")});
        call(
            &http,
            &key,
            reqwest::Method::POST,
            "/v1/members",
            Some(member),
        )
        .await;
        let wallet = json!({"externalId": format!("card-{i}")});
        call(
            &http,
            &key,
            reqwest::Method::POST,
            "/v1/wallets",
            Some(wallet),
        )
        .await;
    }
    drop(server);

    // A file of several chunks, placed in the inbox (the watcher receives it).
    let mut file = String::from("id,walletId,amount,date\n");
    for row in 0..ROWS {
        file.push_str(&format!("f-{row},card-{},2,2026-11-20\n", row % WALLETS));
    }
    // Repeats, in the last chunk, of ids credited before the crash and after it.
    file.push_str("f-3,card-3,2,2026-11-20\nf-11000,card-0,2,2026-11-20\n");
    let inbox = dir.path().join("sftp").join(&org).join("inbox");
    std::fs::create_dir_all(&inbox).unwrap();
    std::fs::write(inbox.join("big.csv"), &file).unwrap();

    // The service dies right after its first chunk is committed.
    let mut crashing = rewards(&env)
        .arg("serve")
        .env("REWARDS_HTTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_SFTP_ADDR", "127.0.0.1:0")
        .env("REWARDS_ADMIN_ADDR", "127.0.0.1:0")
        .env("REWARDS_TEST_CRASH_AFTER_CHUNKS", "1")
        .env("REWARDS_TEST_CHUNK_ROWS", "5000")
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    let status = loop {
        if let Some(status) = crashing.try_wait().unwrap() {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "it never crashed"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(!status.success(), "the process was killed mid-file");

    // Restarted, it finishes the file.
    let (_server, http, _) = serve_both(&env);
    let started = Instant::now();
    let batch = loop {
        let batches = call(&http, &key, reqwest::Method::GET, "/v1/batches", None).await;
        let batch = batches["data"][0].clone();
        if batch["state"] == "completed" {
            break batch;
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "not finished: {batch}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(batch["rows"], ROWS + 2);
    assert_eq!(batch["loaded"], ROWS, "{batch}");
    assert_eq!(batch["rejected"], 2, "{batch}");
    assert_eq!(
        batch["summary"]["rejectedByReason"],
        json!({"duplicate_in_file": 2}),
        "{batch}"
    );
    // The first chunk was committed before the crash, and maybe the second with it (a chunk is
    // credited while the next is read, and they may share a commit).
    let before = batch["summary"]["loadedBeforeRestart"].as_u64().unwrap();
    assert!(
        before == 5_000 || before == 10_000,
        "one or two chunks before the crash: {batch}"
    );

    // Every row credited exactly once: 2 tokens each, and the books balance.
    let wallets = call(
        &http,
        &key,
        reqwest::Method::GET,
        "/v1/wallets?limit=100",
        None,
    )
    .await;
    let total: f64 = wallets["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["balance"].as_f64().unwrap())
        .sum();
    assert_eq!(total, (ROWS * 2) as f64);
    let audit = rewards(&env).arg("audit").output().unwrap();
    assert!(
        audit.status.success(),
        "{}",
        String::from_utf8_lossy(&audit.stdout)
    );
}
