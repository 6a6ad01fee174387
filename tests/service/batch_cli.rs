//! The operator's batch commands through the real binary: `rewards mapping` validates and keeps
//! an organisation's mapping, and `rewards ingest` previews a file (`--dry-run`) and then loads
//! it, while the service answers the API.

use crate::common::{json_of, ok, programme, run, serve};
use serde_json::{Value, json};

async fn call(http: &str, key: &Value, path: &str, body: Option<Value>) -> Value {
    let client = reqwest::Client::new();
    let request = match body {
        Some(body) => client.post(format!("{http}{path}")).json(&body),
        None => client.get(format!("{http}{path}")),
    };
    request
        .header("x-api-key", key["apiKey"].as_str().unwrap())
        .header("x-api-secret", key["apiSecret"].as_str().unwrap())
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

const BROKEN: &str = r#"
delimiter = ";;"
[columns]
id = "Ticket"
amount = { column = "Total", decimal_separator = "," , colour = "red" }
"#;

const MAPPING: &str = r#"
# The till's export: semicolons, decimal commas, day-first dates in Paris.
delimiter = ";"
[columns]
id = "Ticket"
walletId = "Card"
amount = { column = "Total", decimal_separator = "," }
date = { column = "When", format = "%d/%m/%Y %H:%M", timezone = "Europe/Paris" }
[meta]
"store.code" = "Shop"
"#;

const FILE: &str = "Ticket;Card;Total;When;Shop
T1;card-1;10,50;20/11/2026 10:15;A1
T2;card-1;4,99;20/11/2026 11:00;A1
T3;nobody;1,00;20/11/2026 11:00;A1
";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operators_set_a_mapping_preview_a_file_and_load_it() {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![
        ("REWARDS_DATA_DIR", dir.path().display().to_string()),
        // The CLI processes its own files; the service's runner stays out of the way.
        ("REWARDS_BACKGROUND_WORKERS", "false".to_string()),
    ];
    let (org, _, key) = programme(&env);
    let (_server, http) = serve(&env);
    let member = json!({"firstName": "Ada", "userId": "u-1", "externalId": "card-1"});
    call(&http, &key, "/v1/members", Some(member)).await;
    let wallet = call(
        &http,
        &key,
        "/v1/wallets",
        Some(json!({"externalId": "card-1"})),
    )
    .await;
    let wallet_id = wallet["id"].as_str().unwrap().to_string();

    // A broken mapping: every problem at once, nothing stored.
    std::fs::write(dir.path().join("broken.toml"), BROKEN).unwrap();
    let broken = dir.path().join("broken.toml").display().to_string();
    let output = run(&env, &["mapping", "set", "--org", &org, &broken]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    for expected in [
        "delimiter: must be one character",
        "columns.amount.colour: unknown key",
        "columns.walletId: is required",
        "columns.date: is required",
    ] {
        assert!(stderr.contains(expected), "{expected} in {stderr}");
    }
    let shown = json_of(&env, &["mapping", "show", "--org", &org]);
    assert_eq!(shown, json!([]));

    // The example clients read in templates/README.md is a valid mapping.
    let readme = include_str!("../../templates/README.md");
    let example = readme
        .split("```toml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .unwrap();
    std::fs::write(dir.path().join("example.toml"), example).unwrap();
    let example = dir.path().join("example.toml").display().to_string();
    ok(&env, &["mapping", "set", "--org", &org, &example]);
    ok(
        &env,
        &[
            "mapping",
            "remove",
            "--org",
            &org,
            "--pattern",
            "till_*.csv",
        ],
    );

    std::fs::write(dir.path().join("till.toml"), MAPPING).unwrap();
    let mapping = dir.path().join("till.toml").display().to_string();
    ok(&env, &["mapping", "set", "--org", &org, &mapping]);
    let shown = json_of(&env, &["mapping", "show", "--org", &org]);
    assert_eq!(shown[0]["pattern"], "*");
    assert_eq!(shown[0]["mapping"]["columns"]["walletId"], "Card");

    // The preview credits nothing and records no batch.
    std::fs::write(dir.path().join("till.csv"), FILE).unwrap();
    let file = dir.path().join("till.csv").display().to_string();
    let preview = json_of(&env, &["ingest", "--org", &org, "--dry-run", &file]);
    assert_eq!(preview["dryRun"], true);
    assert_eq!(
        (preview["loaded"].clone(), preview["rejected"].clone()),
        (json!(2), json!(1))
    );
    assert_eq!(preview["tokens"], 14, "10 + 4 under the default rules");
    let text = ok(&env, &["ingest", "--org", &org, "--dry-run", &file]);
    assert!(
        text.contains(", 14 tokens"),
        "the text summary says it too: {text}"
    );
    let balance = |wallet: Value| wallet["balance"].clone();
    let path = format!("/v1/wallets/{wallet_id}");
    assert_eq!(balance(call(&http, &key, &path, None).await), 0);
    let reports = dir.path().join("sftp").join(&org).join("reports");
    assert!(reports.join("till.csv.dry-run.result.json").exists());
    assert!(reports.join("till.csv.dry-run.rejected.csv").exists());
    assert_eq!(call(&http, &key, "/v1/batches", None).await["total"], 0);

    // Loaded for real: the service sees the tokens and the batch.
    let loaded = json_of(&env, &["ingest", "--org", &org, &file]);
    assert_eq!(loaded["state"], "completed");
    assert_eq!(loaded["loaded"], 2);
    assert_eq!(balance(call(&http, &key, &path, None).await), 14);
    let batches = call(&http, &key, "/v1/batches", None).await;
    assert_eq!(batches["data"][0]["state"], "completed", "{batches}");
    let rejected = std::fs::read_to_string(reports.join("till.csv.rejected.csv")).unwrap();
    assert!(rejected.contains("unknown_wallet"), "{rejected}");

    // The same file again is a duplicate and loads nothing.
    let again = run(&env, &["ingest", "--org", &org, &file]);
    assert!(!again.status.success());
    assert!(
        String::from_utf8_lossy(&again.stderr).contains("sent before"),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    assert_eq!(balance(call(&http, &key, &path, None).await), 14);
    let report = std::fs::read(reports.join("till.csv.result.json")).unwrap();
    let report: Value = serde_json::from_slice(&report).unwrap();
    assert_eq!(
        report["state"], "duplicate",
        "the duplicate is reported too: {report}"
    );
    assert_eq!(report["duplicateOf"], loaded["batch"]);

    // The operator lists the batches and shows one, as the API has them.
    let listed = json_of(&env, &["batch", "list", "--org", &org]);
    assert_eq!(listed["total"], 2);
    let newest = &listed["batches"][0];
    assert_eq!(newest["state"], "duplicate");
    assert_eq!(newest["duplicateOf"], loaded["batch"]);
    let text = ok(&env, &["batch", "list", "--org", &org]);
    assert!(
        text.contains("2 batch file(s)") && text.contains("duplicate"),
        "{text}"
    );
    let id = loaded["batch"].as_str().unwrap();
    let shown = json_of(&env, &["batch", "show", "--org", &org, id]);
    assert_eq!(
        (shown["state"].clone(), shown["loaded"].clone()),
        (json!("completed"), json!(2))
    );
    let text = ok(&env, &["batch", "show", "--org", &org, id]);
    assert!(
        text.contains("till.csv") && text.contains("rejectedByReason"),
        "{text}"
    );
    let unknown = run(&env, &["batch", "show", "--org", &org, "no-such-batch"]);
    assert!(!unknown.status.success());
    // `audit` exits 1 on any discrepancy.
    ok(&env, &["audit"]);
}

/// A generated Parquet file through the operator's commands: previewed (`--dry-run`: nothing
/// credited), loaded with the preview's figures, then exported back as CSV with the same rows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parquet_file_is_previewed_loaded_and_exported() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let (org, _, key) = programme(&env);
    let (_server, http) = serve(&env);
    for i in 0..2 {
        let member =
            json!({"firstName": "Ada", "userId": format!("u-{i}"), "externalId": format!("m-{i}")});
        call(&http, &key, "/v1/members", Some(member)).await;
        let wallet = json!({"owner": format!("m-{i}"), "externalId": format!("card-{i}")});
        call(&http, &key, "/v1/wallets", Some(wallet)).await;
    }
    let file = dir.path().join("earns.parquet").display().to_string();
    let generate = [
        "generate",
        "--rows",
        "200",
        "--wallets",
        "2",
        "--bad-share",
        "0.05",
        &file,
    ];
    ok(&env, &generate);

    let preview = json_of(&env, &["ingest", "--org", &org, "--dry-run", &file]);
    assert_eq!(
        (preview["dryRun"].clone(), preview["rows"].clone()),
        (json!(true), json!(200))
    );
    let rejected = preview["rejected"].as_u64().unwrap();
    assert!((5..=15).contains(&rejected), "{preview}");
    let wallet = call(&http, &key, "/v1/wallets/card-0", None).await;
    assert_eq!(wallet["balance"], 0, "a dry run credits nothing");

    let loaded = json_of(&env, &["ingest", "--org", &org, &file]);
    assert_eq!(loaded["state"], "completed");
    assert_eq!(
        (loaded["loaded"].clone(), loaded["tokens"].clone()),
        (preview["loaded"].clone(), preview["tokens"].clone())
    );

    let out = dir.path().join("earns-out.csv").display().to_string();
    let export = [
        "export",
        "transactions",
        "--org",
        &org,
        "--type",
        "EARN",
        &out,
    ];
    let exported = json_of(&env, &export);
    assert_eq!(exported["rows"], loaded["loaded"]);
    let lines = std::fs::read_to_string(&out).unwrap().lines().count() as u64;
    assert_eq!(Some(lines - 1), loaded["loaded"].as_u64());
    let none = [
        "export",
        "transactions",
        "--org",
        &org,
        "--from",
        "2026-11-02",
        "--to",
        "2026-11-01",
        &out,
    ];
    let refused = run(&env, &none);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("before --from"));
    let text = dir.path().join("earns.txt").display().to_string();
    let refused = run(&env, &["export", "transactions", "--org", &org, &text]);
    assert!(String::from_utf8_lossy(&refused.stderr).contains(".parquet or .csv"));
    ok(&env, &["audit"]);
}
