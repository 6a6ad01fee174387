//! The command line as scripts and pipes use it: a reader that goes away ends a command
//! quietly, `--json` errors are JSON on standard error, `--org` and `--campaign` take a name
//! as well as an id, every command says what it did, and a database that cannot be reached is
//! named with why.

use std::io::Read;
use std::process::Stdio;

use crate::common::{json_of, ok, rewards, run};

fn data_dir() -> (tempfile::TempDir, Vec<(&'static str, String)>) {
    let dir = tempfile::tempdir().unwrap();
    let env = vec![("REWARDS_DATA_DIR", dir.path().display().to_string())];
    (dir, env)
}

#[test]
fn a_closed_pipe_ends_a_command_quietly() {
    let (_dir, env) = data_dir();
    for n in 0..3 {
        ok(&env, &["org", "create", "--name", &format!("Org {n}")]);
    }
    // The reader is gone before the command writes a byte (`rewards org list | head -0`).
    let mut child = rewards(&env)
        .args(["org", "list"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr, "", "nothing said about it");
}

#[test]
fn json_errors_are_json_with_the_same_exit_code() {
    let (_dir, env) = data_dir();
    let args = [
        "campaign",
        "create",
        "--org",
        "nobody",
        "--name",
        "P",
        "--currency",
        "PTS",
    ];
    let text = run(&env, &args);
    let mut json_args = args.to_vec();
    json_args.push("--json");
    let json = run(&env, &json_args);
    assert_eq!(text.status.code(), json.status.code());
    assert!(!json.status.success());
    let error: serde_json::Value = serde_json::from_slice(&json.stderr).unwrap();
    assert_eq!(error["code"], "not_found", "{error}");
    assert!(
        error["error"].as_str().unwrap().contains("organisation"),
        "{error}"
    );
    assert!(json.stdout.is_empty());

    let org = json_of(&env, &["org", "create", "--name", "Acme"])["id"].clone();
    let bad = [
        "campaign",
        "create",
        "--org",
        org.as_str().unwrap(),
        "--name",
        "P",
        "--currency",
        "€",
        "--json",
    ];
    let refused = run(&env, &bad);
    let error: serde_json::Value = serde_json::from_slice(&refused.stderr).unwrap();
    assert_eq!(
        (error["code"].as_str(), error["field"].as_str()),
        (Some("invalid_value"), Some("currency"))
    );
}

#[test]
fn organisations_and_campaigns_are_named_by_id_or_unique_name() {
    let (_dir, env) = data_dir();
    let acme = json_of(&env, &["org", "create", "--name", "Acme"])["id"].clone();
    let by_name = [
        "campaign",
        "create",
        "--org",
        "Acme",
        "--name",
        "Points",
        "--currency",
        "PTS",
    ];
    let campaign = ok(&env, &by_name);
    let listed = json_of(&env, &["campaign", "list", "--org", acme.as_str().unwrap()]);
    assert_eq!(listed[0]["id"], campaign.as_str());
    // A key for the campaign by its name, within the organisation named.
    let key = json_of(
        &env,
        &["key", "issue", "--org", "Acme", "--campaign", "Points"],
    );
    let keys = json_of(&env, &["key", "list", "--org", "Acme"]);
    assert_eq!(keys[0]["id"], key["id"]);
    assert_eq!(keys[0]["campaignId"], campaign.as_str());
    let shown = json_of(&env, &["campaign", "show", "--campaign", "Points"]);
    assert_eq!(shown["id"], campaign.as_str(), "{shown}");

    // A name two organisations share names neither: the ids are offered instead.
    ok(&env, &["org", "create", "--name", "Twin"]);
    ok(&env, &["org", "create", "--name", "Twin"]);
    let twin = run(&env, &["campaign", "list", "--org", "Twin", "--json"]);
    assert!(!twin.status.success());
    let error: serde_json::Value = serde_json::from_slice(&twin.stderr).unwrap();
    assert_eq!(error["field"], "org", "{error}");
    assert!(
        error["error"]
            .as_str()
            .unwrap()
            .contains("2 organisations are named"),
        "{error}"
    );
    let help = ok(&env, &["campaign", "list", "--help"]);
    assert!(help.contains("its id, or its name"), "{help}");
}

#[test]
fn every_command_says_what_it_did() {
    let (dir, env) = data_dir();
    let file = dir.path().join("catalogue.json");
    let file = file.display().to_string();
    let said = ok(&env, &["catalogue", "generate", "--products", "5", &file]);
    assert!(said.contains("5 products written to"), "{said}");
    let org = json_of(&env, &["org", "create", "--name", "Acme"])["id"].clone();
    let create = [
        "campaign",
        "create",
        "--org",
        org.as_str().unwrap(),
        "--name",
        "P",
        "--currency",
        "PTS",
    ];
    let campaign = ok(&env, &create);
    ok(
        &env,
        &["catalogue", "import", "--campaign", &campaign, &file],
    );
    let out = dir.path().join("out.json").display().to_string();
    let exported = json_of(
        &env,
        &["catalogue", "export", "--campaign", &campaign, &out],
    );
    assert_eq!(exported["products"], 5, "{exported}");
}

/// A refused webhook address names the settings that would allow it.
#[test]
fn a_local_webhook_receiver_is_refused_naming_the_settings() {
    let (_dir, env) = data_dir();
    ok(&env, &["org", "create", "--name", "Acme"]);
    let add = [
        "webhook",
        "add",
        "--org",
        "Acme",
        "--url",
        "http://127.0.0.1:9000/hooks",
    ];
    let refused = run(&env, &add);
    assert!(!refused.status.success());
    let said = String::from_utf8_lossy(&refused.stderr);
    assert!(
        said.contains("REWARDS_WEBHOOK_ALLOW_HTTP") && said.contains("REWARDS_WEBHOOK_ALLOW)"),
        "{said}"
    );
    let allowed = [
        ("REWARDS_WEBHOOK_ALLOW_HTTP", "true".to_string()),
        ("REWARDS_WEBHOOK_ALLOW", "127.0.0.1".to_string()),
    ];
    let env: Vec<_> = env.into_iter().chain(allowed).collect();
    let added = crate::common::json_of(&env, &add);
    assert_eq!(added["url"], "http://127.0.0.1:9000/hooks", "{added}");
}

#[test]
fn an_unreachable_database_is_named_with_its_cause() {
    let (_dir, mut env) = data_dir();
    // Nothing listens on port 1.
    env.push((
        "DATABASE_URL",
        "postgres://postgres@127.0.0.1:1/test".to_string(),
    ));
    let output = run(&env, &["org", "list"]);
    assert!(!output.status.success());
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(
        said.contains("127.0.0.1:1") && said.contains("refused"),
        "{said}"
    );
    assert!(!said.contains("pool timed out"), "{said}");
}
