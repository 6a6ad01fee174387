//! The operator's path end to end, through the real binary: create an organisation, a campaign
//! and a key, serve, use the key over HTTP, revoke it, stop the server with SIGTERM.

use std::path::Path;
use std::process::{Child, Command};
use std::time::Duration;

use api::views::{ApiKeySummary, EarnAccepted, EarnStatusView, WalletView};
use serde_json::{Value, json};
use store::Tokens;

use crate::common::{json_of, ok, programme, run, serve};

async fn operator_story(env: Vec<(&'static str, String)>) {
    let org = ok(&env, &["org", "create", "--name", "Acme"]);
    let campaign = ok(
        &env,
        &[
            "campaign",
            "create",
            "--org",
            &org,
            "--name",
            "Main",
            "--currency",
            "eur",
        ],
    );
    let issued: Value = serde_json::from_str(&ok(
        &env,
        &[
            "--json",
            "key",
            "issue",
            "--org",
            &org,
            "--campaign",
            &campaign,
            "--allow",
            "vector-search",
            "--version",
            "1.6.2",
        ],
    ))
    .unwrap();
    let (key_id, key, secret) = (
        issued["id"].as_str().unwrap(),
        issued["apiKey"].as_str().unwrap(),
        issued["apiSecret"].as_str().unwrap(),
    );

    let refused = run(
        &env,
        &[
            "key",
            "issue",
            "--org",
            &org,
            "--campaign",
            &campaign,
            "--allow",
            "everything",
        ],
    );
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("unknown permission"));
    let foreign = run(
        &env,
        &[
            "key",
            "issue",
            "--org",
            "no-such-org",
            "--campaign",
            &campaign,
        ],
    );
    assert!(
        !foreign.status.success(),
        "a key needs a campaign of its own organisation"
    );

    rules_story(&env, &campaign);

    let (mut server, base) = serve(&env);
    let http = reqwest::Client::new();
    let get = |path: &str| {
        http.get(format!("{base}{path}"))
            .header("x-api-key", key)
            .header("x-api-secret", secret)
    };
    let summary: ApiKeySummary = get("/v1/api-key")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(summary.org, org);
    assert_eq!(summary.currency, "EUR");
    assert_eq!(summary.access.version, "1.6.2", "the key's pinned version");

    let created = http
        .post(format!("{base}/v1/members"))
        .header("x-api-key", key)
        .header("x-api-secret", secret)
        .json(&json!({"firstName": "Ada", "userId": "u1", "externalId": "card-1", "communicationPreferences": {"general": {"channels": ["sms"]}}}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 200);

    ok(&env, &["key", "revoke", key_id]);
    assert_eq!(get("/v1/api-key").send().await.unwrap().status(), 401);
    let keys: Value =
        serde_json::from_str(&ok(&env, &["--json", "key", "list", "--org", &org])).unwrap();
    assert!(keys[0]["revokedAt"].is_string());
    assert!(!keys.to_string().contains(secret) && !keys.to_string().contains(key));

    Command::new("kill")
        .args(["-TERM", &server.id().to_string()])
        .status()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert!(status.success(), "graceful stop exits 0: {status}");
}

fn stop(server: &mut Child, signal: &str) -> std::process::ExitStatus {
    Command::new("kill")
        .args([signal, &server.id().to_string()])
        .status()
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        if let Some(status) = server.try_wait().unwrap() {
            return status;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "server did not stop on {signal}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Earns accepted by a node that dies before processing them are credited, exactly once, by
/// the next node; policies and tiers set from the command line apply; the audit agrees.
async fn crash_story(env: Vec<(&'static str, String)>) {
    let (_, campaign, issued) = programme(&env);
    ok(
        &env,
        &[
            "campaign",
            "policy",
            "--campaign",
            &campaign,
            "--min-balance",
            "5",
            "--expiry-days",
            "30",
            "--shortfall",
            "clip",
            "--transfer-daily-cap",
            "250",
            "--transfers-move-earned",
            "true",
        ],
    );
    // An expiry or a shortfall policy the service would not apply is refused when set, and
    // the policy stays.
    for far in [
        ["--expiry", "days:4000000000"],
        ["--expiry-days", "4000000000"],
        ["--expiry", "days:36526"],
        ["--shortfall", "forgive"],
        ["--transfers", "sometimes"],
        ["--transfer-daily-cap", "0"],
        ["--pending-days", "3651"],
        ["--expiry-from", "later"],
        ["--expiry-notice-days", "367"],
    ] {
        let mut args = vec!["campaign", "policy", "--campaign", &campaign];
        args.extend(far);
        let refused = run(&env, &args);
        let why = String::from_utf8_lossy(&refused.stderr);
        assert!(!refused.status.success(), "{far:?}");
        let expected = match far[0] {
            "--shortfall" => "debt, clip or refuse",
            "--transfers" => "allow or forbid",
            "--transfer-daily-cap" => "more than 0",
            "--pending-days" => "3650",
            "--expiry-from" => "earn or vest",
            "--expiry-notice-days" => "366",
            _ => "36525",
        };
        assert!(why.contains(expected), "{far:?}: {why}");
    }
    // The pending policy is set and read back, then set to none for the earns below.
    let pending = [
        "campaign",
        "policy",
        "--campaign",
        &campaign,
        "--pending-days",
        "30",
        "--pending-counts-tier",
        "true",
        "--expiry-from",
        "vest",
    ];
    let set = json_of(&env, &pending);
    assert_eq!(
        (
            &set["pendingDays"],
            &set["pendingCountsTier"],
            &set["expiryFrom"]
        ),
        (&json!(30), &json!(true), &json!("vest"))
    );
    let shown = json_of(&env, &["campaign", "show", "--campaign", &campaign]);
    assert_eq!(shown["policy"]["pendingDays"], 30);
    assert_eq!(shown["policy"]["expiry"], "days:30", "the rest stays");
    let none = [
        "campaign",
        "policy",
        "--campaign",
        &campaign,
        "--pending-days",
        "0",
        "--expiry-notice-days",
        "7",
    ];
    let set = json_of(&env, &none);
    assert_eq!(
        (&set["pendingDays"], &set["expiryNoticeDays"]),
        (&json!(0), &json!(7))
    );
    ok(
        &env,
        &[
            "tier",
            "add",
            "--campaign",
            &campaign,
            "--name",
            "gold",
            "--precedence",
            "1",
            "--threshold",
            "100",
        ],
    );
    let (key, secret) = (
        issued["apiKey"].as_str().unwrap().to_string(),
        issued["apiSecret"].as_str().unwrap().to_string(),
    );
    let http = reqwest::Client::new();
    let call = |method: reqwest::Method, url: String| {
        http.request(method, url)
            .header("x-api-key", &key)
            .header("x-api-secret", &secret)
    };

    let mut api_only = env.clone();
    api_only.push(("REWARDS_BACKGROUND_WORKERS", "false".into()));
    let (mut node, base) = serve(&api_only);
    let member = json!({"firstName": "Ada", "userId": "u1", "externalId": "card-1"});
    assert_eq!(
        call(reqwest::Method::POST, format!("{base}/v1/members"))
            .json(&member)
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    let wallet = json!({"owner": "card-1", "externalId": "w-1"});
    assert_eq!(
        call(reqwest::Method::POST, format!("{base}/v1/wallets"))
            .json(&wallet)
            .send()
            .await
            .unwrap()
            .status(),
        201
    );
    let mut urls = Vec::new();
    for i in 0..30 {
        let earn = json!({"id": format!("e-{i}"), "amount": 10, "date": "2026-11-18T10:00:00Z", "walletId": "w-1"});
        let reply: EarnAccepted = call(
            reqwest::Method::POST,
            format!("{base}/v1/transactions/earn"),
        )
        .json(&earn)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
        // Absolute, at this node's address; the path is followed on the next node.
        let url = &reply.status_check_url;
        let path = url
            .strip_prefix(base.as_str())
            .expect("a link to this node");
        assert!(path.starts_with("/v1/transactions/earn/"), "{url}");
        urls.push(path.to_string());
    }
    let waiting: EarnStatusView = call(reqwest::Method::GET, format!("{base}{}", urls[0]))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        waiting.status, "accepted",
        "this node does no background work"
    );
    stop(&mut node, "-KILL");

    let (mut node, base) = serve(&env);
    for url in &urls {
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        loop {
            let status: EarnStatusView = call(reqwest::Method::GET, format!("{base}{url}"))
                .send()
                .await
                .unwrap()
                .json()
                .await
                .unwrap();
            if status.status == "completed" {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{status:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    let wallet: WalletView = call(reqwest::Method::GET, format!("{base}/v1/wallets/w-1"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(wallet.balance, Tokens::whole(300));
    assert_eq!(wallet.tier.expect("a tier").name, "gold");
    let burn = |amount: i64| json!({"externalId": format!("b-{amount}"), "amount": amount, "walletId": "w-1", "description": "Voucher"});
    let refused = call(
        reqwest::Method::POST,
        format!("{base}/v1/transactions/burn"),
    )
    .json(&burn(296))
    .send()
    .await
    .unwrap();
    assert_eq!(refused.status(), 402, "5 tokens must stay");
    let spent = call(
        reqwest::Method::POST,
        format!("{base}/v1/transactions/burn"),
    )
    .json(&burn(295))
    .send()
    .await
    .unwrap();
    assert_eq!(spent.status(), 200);

    let shown: Value = serde_json::from_str(&ok(
        &env,
        &["--json", "campaign", "show", "--campaign", &campaign],
    ))
    .unwrap();
    assert_eq!(
        shown["policy"],
        json!({"minBalance": 5, "expiry": "days:30", "shortfall": "clip", "transfers": "allow",
            "transferDailyCap": 250, "transfersMoveEarned": true, "pendingDays": 0,
            "pendingCountsTier": true, "expiryFrom": "vest", "expiryNoticeDays": 7,
            "earnMaxAgeDays": null})
    );
    assert_eq!(shown["tiers"][0]["name"], "gold");
    assert_eq!(
        ok(&env, &["audit"]),
        "every wallet agrees with its transactions and lots"
    );
    // The earns are dated 2026-11-18 and expire 30 days later.
    let expired = ok(&env, &["expire"]);
    assert!(expired.ends_with("lot(s) expired"), "{expired}");
    ok(&env, &["audit"]);
    assert!(stop(&mut node, "-TERM").success());
}

#[tokio::test]
async fn a_crash_loses_no_accepted_earn_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    crash_story(vec![("REWARDS_DATA_DIR", dir.path().display().to_string())]).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn a_crash_loses_no_accepted_earn_on_postgres() {
    crash_story(vec![("DATABASE_URL", store::testing::postgres_url().await)]).await;
}

/// The sample rule set (from the repository root, where cargo runs tests).
const RETAIL: &str = "samples/rules/retail.toml";

fn rules_story(env: &[(&str, String)], campaign: &str) {
    let none = ok(env, &["rules", "list", "--campaign", campaign]);
    assert!(none.contains("one token per unit"), "{none}");
    let set: Value = serde_json::from_str(&ok(
        env,
        &["--json", "rules", "set", "--campaign", campaign, RETAIL],
    ))
    .unwrap();
    assert_eq!(set["version"], 1);

    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.toml");
    std::fs::write(&broken, "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount *'\n[[rule]]\nid = 'x'\npriority = 1\nadd = 'points'\n").unwrap();
    let refused = run(
        env,
        &[
            "rules",
            "set",
            "--campaign",
            campaign,
            broken.to_str().unwrap(),
        ],
    );
    assert!(!refused.status.success());
    let message = String::from_utf8_lossy(&refused.stderr);
    for expected in [
        "3 error(s)",
        "rule `base`, award 1:9",
        "(syntax)",
        "rule `x`, priority",
        "unknown_parameter",
    ] {
        assert!(message.contains(expected), "{expected} in {message}");
    }

    ok(env, &["rules", "set", "--campaign", campaign, RETAIL]);
    let versions: Value = serde_json::from_str(&ok(
        env,
        &["--json", "rules", "list", "--campaign", campaign],
    ))
    .unwrap();
    assert_eq!(versions[0]["version"], 2);
    assert_eq!(versions[0]["active"], true);
    assert_eq!(versions[1]["active"], false);
    let shown: Value = serde_json::from_str(&ok(
        env,
        &[
            "--json",
            "rules",
            "show",
            "--campaign",
            campaign,
            "--version",
            "1",
        ],
    ))
    .unwrap();
    assert_eq!(shown["version"], 1);
    assert_eq!(shown["rules"].as_array().unwrap().len(), 8);
    assert_eq!(
        shown["rules"][0]["id"], "min-spend",
        "listed in priority order"
    );
}

/// `rules test --json`'s answer as (id, tokens) per row.
fn tokens_per_row(out: &Value) -> Vec<(&str, &str)> {
    out.as_array()
        .unwrap()
        .iter()
        .map(|r| (r["id"].as_str().unwrap(), r["tokens"].as_str().unwrap()))
        .collect()
}

#[test]
fn rules_test_prints_tokens_and_trace_per_row_without_a_database() {
    let rows = "samples/rules/retail-rows.csv";
    let env = [(
        "DATABASE_URL",
        "postgres://nowhere.invalid/none".to_string(),
    )];
    let out = json_of(&env, &["rules", "test", RETAIL, "--rows", rows]);
    assert_eq!(
        tokens_per_row(&out),
        [
            ("t-1001", "42"),
            ("t-1002", "0"),
            ("t-1003", "158"),
            ("t-1004", "54"),
            ("t-1005", "1000"),
            ("t-1006", "24")
        ]
    );
    let trace = &out[2]["trace"];
    assert_eq!(trace[0], "base: award +65");
    assert!(
        trace
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l == "weekend: multiply +65"),
        "{trace}"
    );

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        "id,amount,date\nt-1,12.5,2026-11-18T10:00:00Z\nt-2,twelve,2026-11-18T10:00:00Z\n",
    )
    .unwrap();
    let output = run(
        &env,
        &["rules", "test", RETAIL, "--rows", bad.to_str().unwrap()],
    );
    assert!(!output.status.success(), "a bad row fails the run");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("t-1") && text.contains("line 3: amount `twelve` is not a number"),
        "{text}"
    );
}

#[test]
fn rules_test_counts_limits_in_date_order_and_rules_limits_shows_their_use() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let limits = "samples/rules/limits.toml";
    let rows = "samples/rules/limits-rows.csv";
    let out = json_of(&env, &["rules", "test", limits, "--rows", rows]);
    // c-5 is on an earlier line than c-3 but a later date: c-3 has Ada's third visit bonus.
    assert_eq!(
        tokens_per_row(&out),
        [
            ("c-1", "29"),
            ("c-2", "28"),
            ("c-5", "80"),
            ("c-3", "30"),
            ("c-4", "27"),
            ("c-6", "50")
        ]
    );
    let c5 = out[2]["trace"].as_array().unwrap();
    assert!(
        c5.iter()
            .any(|l| l == "visit-bonus: limit member/month reached (3 times), not fired"),
        "{c5:?}"
    );
    assert_eq!(
        out[5]["trace"],
        json!([
            "base: award +30",
            "visit-bonus: limit member/month reached (3 times), not fired",
            "store-opening: limit member/7d had 20 of 60 tokens left",
            "store-opening: multiply +20"
        ])
    );

    // Activated, its limits and budget are shown with what they used (nothing yet).
    let (_, campaign, _) = programme(&env);
    ok(&env, &["rules", "set", "--campaign", &campaign, limits]);
    let uses = json_of(
        &env,
        &[
            "rules",
            "limits",
            "--campaign",
            &campaign,
            "--day",
            "2026-11-04",
        ],
    );
    let shown: Vec<(&str, &str)> = uses
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["scope"].as_str().unwrap(), u["period"].as_str().unwrap()))
        .collect();
    assert_eq!(
        shown,
        [
            ("member", "month"),
            ("member", "7d"),
            ("meta.store.id", "day"),
            ("campaign", "month")
        ]
    );
    assert_eq!(uses[1]["from"], "2026-10-29");
    assert_eq!(uses[1]["to"], "2026-11-04");
    assert_eq!(uses[3]["rule"], Value::Null);
    assert_eq!(uses[3]["left"]["tokens"], 1_000_000);
}

#[tokio::test]
async fn operator_story_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    operator_story(vec![("REWARDS_DATA_DIR", data.display().to_string())]).await;
    assert!(
        data.join("rewards.db").exists(),
        "the default database lives in the data directory"
    );
    // Members' data: readable by the service's user only, whatever the umask.
    use std::os::unix::fs::PermissionsExt;
    let mode =
        |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&data), 0o700);
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let expected = if path.is_dir() { 0o700 } else { 0o600 };
        assert_eq!(mode(&path), expected, "{}", path.display());
    }
    // A directory left open by an earlier version is closed at the next start.
    std::fs::set_permissions(&data, std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = data.join("rewards.db");
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    ok(
        &[("REWARDS_DATA_DIR", data.display().to_string())],
        &["audit"],
    );
    assert_eq!((mode(&data), mode(&db)), (0o700, 0o600));
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn operator_story_on_postgres() {
    let url = store::testing::postgres_url().await;
    operator_story(vec![("DATABASE_URL", url)]).await;
}

#[test]
fn a_config_file_is_read_and_the_environment_overrides_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rewards.toml");
    let from_file = dir.path().join("from-file");
    let from_env = dir.path().join("from-env");
    std::fs::write(
        &file,
        format!("data_dir = {:?}\n", from_file.display().to_string()),
    )
    .unwrap();
    let config = file.to_str().unwrap();

    ok(
        &[],
        &["--config", config, "org", "create", "--name", "Acme"],
    );
    assert!(from_file.join("rewards.db").exists());
    let env = [("REWARDS_DATA_DIR", from_env.display().to_string())];
    let listed = ok(&env, &["--config", config, "org", "list"]);
    assert!(
        listed.is_empty(),
        "the environment's data directory is a new, empty one"
    );
    assert!(from_env.join("rewards.db").exists());

    std::fs::write(&file, "data_dir = 5\n").unwrap();
    let bad = run(&[], &["--config", config, "migrate"]);
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("rewards.toml"),
        "names the file"
    );
    assert!(Path::new(config).exists());
}

#[test]
fn every_command_has_help() {
    for args in [
        vec!["--help"],
        vec!["serve", "--help"],
        vec!["migrate", "--help"],
        vec!["org", "create", "--help"],
        vec!["campaign", "create", "--help"],
        vec!["key", "issue", "--help"],
        vec!["key", "list", "--help"],
        vec!["key", "revoke", "--help"],
        vec!["rules", "set", "--help"],
        vec!["rules", "test", "--help"],
        vec!["rules", "backtest", "--help"],
        vec!["campaign", "policy", "--help"],
        vec!["campaign", "show", "--help"],
        vec!["tier", "add", "--help"],
        vec!["expire", "--help"],
        vec!["audit", "--help"],
        vec!["sftp-user", "add", "--help"],
        vec!["sftp-user", "key-add", "--help"],
        vec!["sftp-user", "list", "--help"],
        vec!["sftp-user", "disable", "--help"],
        vec!["sftp-user", "remove", "--help"],
        vec!["sftp", "host-key", "--help"],
        vec!["generate", "--help"],
        vec!["catalogue", "import", "--help"],
        vec!["catalogue", "export", "--help"],
    ] {
        let output = run(&[], &args);
        assert!(output.status.success(), "{args:?}");
        assert!(
            String::from_utf8_lossy(&output.stdout).contains("Usage:"),
            "{args:?}"
        );
    }
}

/// Slow clients cannot hold the server: a request head not finished within the header timeout
/// is cut off, and a stop ends within its grace period while clients still dribble bodies.
#[test]
fn slow_clients_are_cut_off_and_a_stop_keeps_its_grace() {
    use std::io::{Read, Write};
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        ("REWARDS_DATA_DIR", dir.path().display().to_string()),
        ("REWARDS_HTTP_HEADER_TIMEOUT_SECS", "1".to_string()),
        ("REWARDS_HTTP_SHUTDOWN_GRACE_SECS", "2".to_string()),
    ];
    let (_, _, issued) = programme(&env);
    let (key, secret) = (
        issued["apiKey"].as_str().unwrap().to_string(),
        issued["apiSecret"].as_str().unwrap().to_string(),
    );
    let (mut server, base) = serve(&env);
    let addr = base.trim_start_matches("http://").to_string();

    let mut half = std::net::TcpStream::connect(&addr).unwrap();
    half.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n")
        .unwrap();
    half.set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut answer = Vec::new();
    let read = half.read_to_end(&mut answer);
    assert!(read.is_ok(), "a half-open request is cut off: {read:?}");
    assert!(
        !String::from_utf8_lossy(&answer).contains("200 OK"),
        "{answer:?}"
    );

    // Bodies sent a byte at a time, for ever (as long as the server reads them).
    let head = format!(
        "POST /v1/members HTTP/1.1\r\nhost: x\r\nx-api-key: {key}\r\nx-api-secret: {secret}\r\n\
         content-type: application/json\r\ncontent-length: 1000000\r\n\r\n{{"
    );
    let mut dribblers = Vec::new();
    for _ in 0..4 {
        let mut stream = std::net::TcpStream::connect(&addr).unwrap();
        stream.write_all(head.as_bytes()).unwrap();
        dribblers.push(std::thread::spawn(move || {
            while stream.write_all(b" ").is_ok() {
                std::thread::sleep(Duration::from_millis(100));
            }
        }));
    }
    let status = stop(&mut server, "-TERM");
    assert!(status.success(), "a graceful stop exits 0: {status}");
    for dribbler in dribblers {
        dribbler.join().unwrap();
    }
}
