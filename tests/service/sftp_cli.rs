//! The operator's SFTP commands through the real binary: users with a password from standard
//! input or an OpenSSH public key, a key that belongs to one user only, disabling, removing, and
//! the host key made once and kept.

use std::io::Write;
use std::path::Path;
use std::process::Stdio;

use crate::common::{json_of, ok, programme, rewards, run, serve_both};
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

/// `rewards sftp bans` lists the bans in force (none yet) and `unban` says when an address is
/// not banned; a ban itself is made and lifted in the SFTP server's tests (ingest).
#[test]
fn operators_list_bans_and_are_told_when_there_is_none_to_lift() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    let listed = json_of(&env, &["sftp", "bans"]);
    assert_eq!(listed["bans"], serde_json::json!([]));
    assert_eq!(ok(&env, &["sftp", "bans"]).trim(), "no address is banned");
    let lift = run(&env, &["sftp", "unban", "192.0.2.7"]);
    assert!(!lift.status.success());
    let said = String::from_utf8_lossy(&lift.stderr);
    assert!(said.contains("192.0.2.7 is not banned"), "{said}");
    let bad = run(&env, &["sftp", "unban", "not-an-address"]);
    assert!(!bad.status.success());
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not-an-address"));
}

/// Runs OpenSSH's `sftp` as `user` with the commands in `batch` (a file in `dir`).
fn sftp_batch(
    dir: &Path,
    port: u16,
    public_key: &str,
    user: &str,
    batch: &str,
) -> std::process::Output {
    std::process::Command::new("sftp")
        .current_dir(dir)
        .args([
            "-P",
            &port.to_string(),
            "-i",
            public_key.trim_end_matches(".pub"),
        ])
        .args([
            "-o",
            "StrictHostKeyChecking=no",
            "-o",
            "UserKnownHostsFile=/dev/null",
        ])
        .args(["-o", "IdentitiesOnly=yes", "-o", "LogLevel=ERROR"])
        .args(["-b", batch, &format!("{user}@127.0.0.1")])
        .output()
        .unwrap()
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
    generators::xlsx::write(rows, workbook).unwrap();
    std::fs::write(
        dir.path().join("batch.txt"),
        // The workbook as WinSCP and FileZilla send it: a temporary name, then a rename.
        "put earns.csv inbox/earns.csv\nput earns.xlsx inbox/earns.xlsx.filepart\n\
         rename inbox/earns.xlsx.filepart inbox/earns.xlsx\n",
    )
    .unwrap();
    let upload = sftp_batch(dir.path(), port, &client_key, "acme", "batch.txt");
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

    // The same bytes again, under another name: reported at once as a duplicate of the first.
    std::fs::write(
        dir.path().join("again.txt"),
        "put earns.csv inbox/again.csv\n",
    )
    .unwrap();
    let again = sftp_batch(dir.path(), port, &client_key, "acme", "again.txt");
    assert!(
        again.status.success(),
        "{}",
        String::from_utf8_lossy(&again.stderr)
    );
    let duplicate = std::fs::read(reports.join("again.csv.result.json")).unwrap();
    let duplicate: Value = serde_json::from_slice(&duplicate).unwrap();
    assert_eq!(duplicate["state"], "duplicate", "{duplicate}");
    assert_eq!(duplicate["duplicateOf"], csv["id"], "{duplicate}");
    assert_eq!(
        call(&path, None).await["balance"],
        12,
        "nothing more credited"
    );
}

/// The rows of `parquet_uploads_credit_like_csv_and_scheduled_exports_are_fetched`, as CSV.
const SAME_ROWS: &str = "id,walletId,amount,date,description
p-1,w-1,10.50,2026-11-20T00:00:00Z,Coffee
p-2,w-2,4.00,2026-11-20T10:00:00Z,
p-3,nobody,5.00,2026-11-20T00:00:00Z,
p-1,w-1,10.50,2026-11-20T00:00:00Z,again
p-4,w-1,-5.00,2026-11-20T00:00:00Z,
p-5,w-1,,2026-11-20T00:00:00Z,
p-6,w-2,2.25,2026-11-20T00:00:00Z,LONG
p-7,w-2,1.75,2026-11-20T00:00:00Z,
";

/// `SAME_ROWS` as typed Parquet columns (decimal amounts, UTC timestamps).
fn same_rows_parquet(path: &Path) {
    use columnar::Values;
    let lines: Vec<Vec<String>> = SAME_ROWS
        .replace("LONG", &"x".repeat(300))
        .lines()
        .skip(1)
        .map(|l| l.split(',').map(str::to_string).collect())
        .collect();
    let column = |i: usize| -> Vec<Option<String>> {
        lines
            .iter()
            .map(|l| Some(l[i].clone()).filter(|v| !v.is_empty()))
            .collect()
    };
    let micros = column(3)
        .into_iter()
        .map(|d| {
            d.map(|d| {
                chrono::DateTime::parse_from_rfc3339(&d)
                    .unwrap()
                    .timestamp_micros()
            })
        })
        .collect();
    let mut sink = columnar::ParquetSink::create(path).unwrap();
    sink.write(vec![
        ("id".into(), Values::Text(column(0))),
        ("walletId".into(), Values::Text(column(1))),
        (
            "amount".into(),
            Values::Decimal {
                values: column(2),
                precision: 18,
                scale: 2,
            },
        ),
        ("date".into(), Values::Timestamp { micros, utc: true }),
        ("description".into(), Values::Text(column(4))),
    ])
    .unwrap();
    sink.finish().unwrap();
}

/// (row, code, column) of each line of a rejected-rows report, rows counted from the first
/// data row.
fn rejections(path: &Path, header_lines: u64) -> Vec<(u64, String, String)> {
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            let row: u64 = r[0].parse().unwrap();
            (row - header_lines, r[1].to_string(), r[2].to_string())
        })
        .collect()
}

/// The same rows as CSV (one organisation) and as typed Parquet (another), uploaded with
/// OpenSSH's `sftp`, credit the same balances and report the same rejections. The second
/// organisation's daily export, due at the service's start, waits in `exports/`: its user
/// fetches it and cannot write there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parquet_uploads_credit_like_csv_and_scheduled_exports_are_fetched() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    std::fs::write(
        dir.path().join("earns.csv"),
        SAME_ROWS.replace("LONG", &"x".repeat(300)),
    )
    .unwrap();
    same_rows_parquet(&dir.path().join("earns.parquet"));
    let mut orgs = Vec::new();
    for user in ["csvco", "parquetco"] {
        let (org, _, key) = programme(&env);
        let client_key = keygen(dir.path(), user);
        let add = [
            "sftp-user",
            "add",
            "--org",
            &org,
            "--username",
            user,
            "--public-key",
            &client_key,
        ];
        ok(&env, &add);
        orgs.push((org, key, client_key, user));
    }
    // The Parquet organisation exports daily; its first day is made yesterday, so the export
    // is due when the service starts.
    let parquet_org = orgs[1].0.clone();
    ok(
        &env,
        &["export", "schedule", "--org", &parquet_org, "--at", "00:00"],
    );
    // A day is due `EXPORT_SETTLE` after its end: just after midnight the day before is not.
    let today = (chrono::Utc::now() - store::EXPORT_SETTLE).date_naive();
    let yesterday = today.pred_opt().unwrap();
    rusqlite::Connection::open(dir.path().join("rewards.db"))
        .unwrap()
        .execute(
            "UPDATE export_schedules SET next_day = ?1",
            [yesterday.to_string()],
        )
        .unwrap();

    let (_server, http, port) = serve_both(&env);
    let client = reqwest::Client::new();
    let mut balances = Vec::new();
    for (org, key, client_key, user) in &orgs {
        let call = |path: &str, body: Value| {
            client
                .post(format!("{http}{path}"))
                .json(&body)
                .header("x-api-key", key["apiKey"].as_str().unwrap())
                .header("x-api-secret", key["apiSecret"].as_str().unwrap())
                .send()
        };
        for i in 1..=2 {
            let member = serde_json::json!({"firstName": "Ada", "userId": format!("u-{i}"), "externalId": format!("card-{i}")});
            assert!(
                call("/v1/members", member)
                    .await
                    .unwrap()
                    .status()
                    .is_success()
            );
            let wallet =
                serde_json::json!({"owner": format!("card-{i}"), "externalId": format!("w-{i}")});
            assert!(
                call("/v1/wallets", wallet)
                    .await
                    .unwrap()
                    .status()
                    .is_success()
            );
        }
        let file = if *user == "csvco" {
            "earns.csv"
        } else {
            "earns.parquet"
        };
        std::fs::write(
            dir.path().join("put.txt"),
            format!("put {file} inbox/{file}\n"),
        )
        .unwrap();
        let upload = sftp_batch(dir.path(), port, client_key, user, "put.txt");
        assert!(
            upload.status.success(),
            "{}",
            String::from_utf8_lossy(&upload.stderr)
        );
        let result = dir
            .path()
            .join("sftp")
            .join(org)
            .join("reports")
            .join(format!("{file}.result.json"));
        let started = std::time::Instant::now();
        while !result.exists() {
            assert!(started.elapsed().as_secs() < 30, "{file} not processed");
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        let summary: Value = serde_json::from_slice(&std::fs::read(&result).unwrap()).unwrap();
        let mut held = Vec::new();
        for wallet in ["w-1", "w-2"] {
            let got = client
                .get(format!("{http}/v1/wallets/{wallet}"))
                .header("x-api-key", key["apiKey"].as_str().unwrap())
                .header("x-api-secret", key["apiSecret"].as_str().unwrap())
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap();
            held.push(got["balance"].clone());
        }
        let rejected = result.with_file_name(format!("{file}.rejected.csv"));
        // CSV rows are numbered from the header line, Parquet rows from the first row.
        let header_lines = u64::from(*user == "csvco");
        balances.push((
            held,
            (
                summary["rows"].clone(),
                summary["loaded"].clone(),
                summary["tokens"].clone(),
            ),
            rejections(&rejected, header_lines),
        ));
    }
    assert_eq!(balances[0], balances[1]);
    let (held, counts, rejected) = &balances[0];
    assert_eq!(
        held,
        &[serde_json::json!(10), serde_json::json!(5)],
        "10.50 | 4 + 1.75 (2.25's row is rejected), a token per whole unit of each"
    );
    assert_eq!(counts, &(8.into(), 3.into(), 15.into()));
    let codes: Vec<&str> = rejected.iter().map(|(_, code, _)| code.as_str()).collect();
    assert_eq!(
        codes,
        [
            "unknown_wallet",
            "duplicate_in_file",
            "negative_amount",
            "missing_field",
            "too_long"
        ]
    );

    // Yesterday's export of the Parquet organisation, fetched over SFTP.
    let (_, _, client_key, user) = &orgs[1];
    let name = format!("transactions-{yesterday}.parquet");
    let written = dir
        .path()
        .join("sftp")
        .join(&parquet_org)
        .join("exports")
        .join(&name);
    let started = std::time::Instant::now();
    while !written.exists() {
        assert!(started.elapsed().as_secs() < 30, "no daily export");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    std::fs::write(
        dir.path().join("get.txt"),
        format!("ls exports\nget exports/{name} fetched.parquet\n"),
    )
    .unwrap();
    let fetched = sftp_batch(dir.path(), port, client_key, user, "get.txt");
    assert!(
        fetched.status.success(),
        "{}",
        String::from_utf8_lossy(&fetched.stderr)
    );
    assert!(String::from_utf8_lossy(&fetched.stdout).contains(&name));
    let bytes = std::fs::read(dir.path().join("fetched.parquet")).unwrap();
    assert_eq!(bytes, std::fs::read(&written).unwrap());
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    std::fs::write(
        dir.path().join("put-export.txt"),
        "put earns.csv exports/mine.csv\n",
    )
    .unwrap();
    let refused = sftp_batch(dir.path(), port, client_key, user, "put-export.txt");
    assert!(!refused.status.success(), "exports/ is read only");
    let listed = json_of(&env, &["export", "schedules"]);
    assert_eq!(listed[0]["last"]["file"], name.as_str(), "{listed}");
    assert_eq!(listed[0]["nextDay"], today.to_string());
}
