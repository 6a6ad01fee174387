//! The operator's SFTP commands through the real binary: users with a password from standard
//! input or an OpenSSH public key, a key that belongs to one user only, disabling, removing, and
//! the host key made once and kept.

mod common;

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use common::{json_of, ok, programme, rewards, run, serve_both};
use serde_json::Value;

/// A new ed25519 key pair made by OpenSSH's own `ssh-keygen`; returns the `.pub` path.
fn keygen(dir: &Path, name: &str) -> String {
    let path = dir.join(name);
    let made = std::process::Command::new("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&path)
        .status()
        .expect("ssh-keygen runs");
    assert!(made.success());
    format!("{}.pub", path.display())
}

/// `ssh-keygen -l`'s SHA256 fingerprint of a public key file.
fn fingerprint(public_key: &str) -> String {
    let out = std::process::Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f", public_key])
        .output()
        .unwrap();
    String::from_utf8(out.stdout)
        .unwrap()
        .split_whitespace()
        .nth(1)
        .unwrap()
        .to_string()
}

#[test]
fn operators_issue_and_withdraw_sftp_users() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let org = json_of(&env, &["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_string();
    let alice_key = keygen(dir.path(), "alice");
    let stranger_key = keygen(dir.path(), "stranger");

    // A password from standard input, a key from its file.
    let mut add = rewards(&env)
        .args([
            "sftp-user",
            "add",
            "--org",
            &org,
            "--username",
            "alice",
            "--password-stdin",
        ])
        .args(["--public-key", &alice_key, "--json"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    add.stdin
        .take()
        .unwrap()
        .write_all(b"a long enough secret\n")
        .unwrap();
    let added = add.wait_with_output().unwrap();
    assert!(added.status.success());
    let alice: Value = serde_json::from_slice(&added.stdout).unwrap();
    assert_eq!(alice["password"], true);
    assert_eq!(alice["keys"][0], fingerprint(&alice_key));

    // Alice's key cannot be given to another user.
    json_of(
        &env,
        &[
            "sftp-user",
            "add",
            "--org",
            &org,
            "--username",
            "bob",
            "--public-key",
            &stranger_key,
        ],
    );
    let taken = run(
        &env,
        &[
            "sftp-user",
            "key-add",
            "--org",
            &org,
            "--username",
            "bob",
            "--public-key",
            &alice_key,
        ],
    );
    assert!(!taken.status.success());
    assert!(String::from_utf8_lossy(&taken.stderr).contains("publicKey is already in use"));

    // Not a public key: refused with the reason, nothing created.
    let private = alice_key.trim_end_matches(".pub");
    let bad = run(
        &env,
        &[
            "sftp-user",
            "add",
            "--org",
            &org,
            "--username",
            "carol",
            "--public-key",
            private,
        ],
    );
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not an OpenSSH public key"));

    ok(
        &env,
        &["sftp-user", "disable", "--org", &org, "--username", "bob"],
    );
    let users = json_of(&env, &["sftp-user", "list", "--org", &org]);
    let names: Vec<(&str, bool)> = users
        .as_array()
        .unwrap()
        .iter()
        .map(|u| (u["username"].as_str().unwrap(), u["disabledAt"].is_null()))
        .collect();
    assert_eq!(names, [("alice", true), ("bob", false)]);

    ok(
        &env,
        &["sftp-user", "remove", "--org", &org, "--username", "bob"],
    );
    assert_eq!(
        json_of(&env, &["sftp-user", "list", "--org", &org])
            .as_array()
            .unwrap()
            .len(),
        1
    );
    let gone = run(
        &env,
        &["sftp-user", "remove", "--org", &org, "--username", "bob"],
    );
    assert!(!gone.status.success());
}

#[test]
fn the_host_key_is_made_once_and_kept_private() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let first = json_of(&env, &["sftp", "host-key"]);
    let again = json_of(&env, &["sftp", "host-key"]);
    assert_eq!(first["fingerprint"], again["fingerprint"]);
    assert!(
        first["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("SHA256:")
    );
    // OpenSSH reads the file and agrees on the fingerprint.
    let path = dir.path().join("sftp_host_ed25519_key");
    let listed = std::process::Command::new("ssh-keygen")
        .args(["-l", "-E", "sha256", "-f"])
        .arg(&path)
        .output()
        .unwrap();
    let listed = String::from_utf8(listed.stdout).unwrap();
    assert!(
        listed.contains(first["fingerprint"].as_str().unwrap()),
        "{listed}"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
}

/// The whole door: an operator issues a user, the service runs, a client uploads with OpenSSH's
/// `sftp`, and the file is processed, listed as a batch over the API and reported.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_to_the_running_service_is_processed_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let (org, _, key) = programme(&env);
    let client_key = keygen(dir.path(), "client");
    ok(
        &env,
        &[
            "sftp-user",
            "add",
            "--org",
            &org,
            "--username",
            "acme",
            "--public-key",
            &client_key,
        ],
    );
    let (_server, http, port) = serve_both(&env);
    let client = reqwest::Client::new();
    let call = |path: &str, body: Option<Value>| {
        let request = match body {
            Some(body) => client.post(format!("{http}{path}")).json(&body),
            None => client.get(format!("{http}{path}")),
        };
        let request = request
            .header("x-api-key", key["apiKey"].as_str().unwrap())
            .header("x-api-secret", key["apiSecret"].as_str().unwrap());
        async move { request.send().await.unwrap().json::<Value>().await.unwrap() }
    };
    let member = serde_json::json!({"firstName": "Ada", "userId": "u-1", "externalId": "card-1"});
    call("/v1/members", Some(member)).await;
    let wallet = call(
        "/v1/wallets",
        Some(serde_json::json!({"externalId": "card-1"})),
    )
    .await;

    // A CSV file and a workbook, in one session.
    std::fs::write(
        dir.path().join("earns.csv"),
        "id,walletId,amount,date\ne-1,card-1,5,2026-11-20\ne-2,nobody,1,2026-11-20\n",
    )
    .unwrap();
    let rows = [
        ["id", "walletId", "amount", "date"],
        ["x-1", "card-1", "7.5", "2026-11-20"],
    ];
    let rows = rows.map(|r| r.map(String::from).to_vec());
    let workbook = std::fs::File::create(dir.path().join("earns.xlsx")).unwrap();
    ingest::xlsx::write(rows, workbook).unwrap();
    std::fs::write(
        dir.path().join("batch.txt"),
        "put earns.csv inbox/earns.csv\nput earns.xlsx inbox/earns.xlsx\n",
    )
    .unwrap();
    let upload = std::process::Command::new("sftp")
        .current_dir(dir.path())
        .args([
            "-P",
            &port.to_string(),
            "-i",
            client_key.trim_end_matches(".pub"),
        ])
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"])
        .args(["-b", "batch.txt", "acme@127.0.0.1"])
        .output()
        .unwrap();
    assert!(
        upload.status.success(),
        "{}",
        String::from_utf8_lossy(&upload.stderr)
    );

    // The service processes both: the tokens reach the wallet, the bad row is reported.
    let started = std::time::Instant::now();
    let batches = loop {
        let batches = call("/v1/batches", None).await;
        assert_eq!(batches["total"], 2, "{batches}");
        let done = batches["data"].as_array().unwrap();
        if done.iter().all(|b| b["state"] == "completed") {
            break done.clone();
        }
        assert!(started.elapsed().as_secs() < 30, "not processed: {batches}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let csv = batches
        .iter()
        .find(|b| b["fileName"] == "earns.csv")
        .unwrap();
    assert_eq!(csv["username"], "acme");
    assert_eq!(
        (
            csv["rows"].as_i64(),
            csv["loaded"].as_i64(),
            csv["rejected"].as_i64()
        ),
        (Some(2), Some(1), Some(1))
    );
    let xlsx = batches
        .iter()
        .find(|b| b["fileName"] == "earns.xlsx")
        .unwrap();
    assert_eq!(
        (xlsx["rows"].as_i64(), xlsx["loaded"].as_i64()),
        (Some(1), Some(1))
    );
    let path = format!("/v1/wallets/{}", wallet["id"].as_str().unwrap());
    assert_eq!(
        call(&path, None).await["balance"],
        12,
        "5 + 7 (one token per unit)"
    );
    let reports = dir.path().join("sftp").join(&org).join("reports");
    let report = std::fs::read_to_string(reports.join("earns.csv.rejected.csv")).unwrap();
    assert!(
        report.contains("3,unknown_wallet,walletId,nobody"),
        "{report}"
    );
    let result = std::fs::read_to_string(reports.join("earns.xlsx.result.json")).unwrap();
    assert!(result.contains("\"state\": \"completed\""), "{result}");
}
