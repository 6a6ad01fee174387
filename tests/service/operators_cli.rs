//! Operators and the audit trail through the real binary: the first owner made on the server
//! with a one-time password, the CLI's changes recorded as `local` with the OS user, secrets
//! never in the trail, the chain verified and an edit made in the database found.

use serde_json::Value;

use crate::common::{json_of, ok, run};

fn operator_cli(env: Vec<(&'static str, String)>) {
    let mut env = env;
    env.push(("USER", "ops-on-call".into()));
    let owner = json_of(
        &env,
        &[
            "operator",
            "add",
            "--email",
            "Owner@Example.com",
            "--role",
            "owner",
        ],
    );
    assert_eq!(owner["email"], "owner@example.com");
    assert_eq!(owner["mustChangePassword"], true);
    let password = owner["password"].as_str().unwrap().to_owned();
    assert_eq!(password.len(), 24);

    let org = json_of(&env, &["org", "create", "--name", "Acme"])["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let support = json_of(
        &env,
        &[
            "operator",
            "add",
            "--email",
            "help@example.com",
            "--role",
            "support",
            "--org",
            "Acme",
            "--allow-from",
            "10.0.0.0/8",
        ],
    );
    assert_eq!(support["orgs"], serde_json::json!([org]));
    assert_eq!(
        support["allowedAddresses"],
        serde_json::json!(["10.0.0.0/8"])
    );
    let refused = run(
        &env,
        &[
            "operator",
            "add",
            "--email",
            "x@example.com",
            "--role",
            "viewer",
        ],
    );
    assert!(!refused.status.success());
    let stderr = String::from_utf8_lossy(&refused.stderr);
    assert!(
        stderr.contains("orgs: the role viewer acts on organisations"),
        "{stderr}"
    );

    let listed = json_of(&env, &["operator", "list"]);
    assert_eq!(listed.as_array().unwrap().len(), 2);
    assert!(!listed.to_string().contains(&password));
    let last = run(&env, &["operator", "disable", "owner@example.com"]);
    assert!(!last.status.success());
    assert!(String::from_utf8_lossy(&last.stderr).contains("last enabled owner"));
    let reset = json_of(&env, &["operator", "reset-password", "help@example.com"]);
    let second = reset["password"].as_str().unwrap().to_owned();
    let reset = json_of(&env, &["operator", "reset-2fa", "help@example.com"]);
    assert_eq!(reset["twoFactor"], false);
    let viewer = json_of(
        &env,
        &[
            "operator",
            "set-role",
            "help@example.com",
            "--role",
            "viewer",
            "--org",
            "Acme",
        ],
    );
    assert_eq!(viewer["role"], "viewer");
    let required = json_of(&env, &["operator", "require-2fa", "true"]);
    assert_eq!(required["requireTwoFactor"], true);
    ok(&env, &["operator", "remove", "help@example.com"]);

    // The trail: each change, by the OS user, newest first; the refusals with their reason.
    let trail = json_of(&env, &["audit-log", "list"]);
    let entries: Vec<(String, String, String)> = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e[k].as_str().unwrap_or_default().to_owned();
            (text("operation"), text("actorName"), text("outcome"))
        })
        .collect();
    let operations: Vec<&str> = entries.iter().map(|(o, _, _)| o.as_str()).collect();
    assert_eq!(
        operations,
        [
            "operator.remove",
            "operator.require-2fa",
            "operator.set-role",
            "operator.reset-2fa",
            "operator.reset-password",
            "operator.disable",
            "operator.add",
            "operator.add",
            "org.create",
            "operator.add",
        ]
    );
    assert!(entries.iter().all(|(_, actor, _)| actor == "ops-on-call"));
    assert!(
        entries[5]
            .2
            .starts_with("failed: this is the last enabled owner")
    );
    assert!(entries[6].2.starts_with("failed: orgs:"));
    let text = trail.to_string();
    assert!(!text.contains(&password) && !text.contains(&second));
    let added = &trail["data"][7];
    assert_eq!(added["orgId"], Value::from(org.clone()));
    assert_eq!(added["target"], "help@example.com");
    assert_eq!(trail["data"][8]["target"], "Acme");
    // The operator added to Acme, and given a role in it.
    let only_org = json_of(&env, &["audit-log", "list", "--org", &org]);
    assert_eq!(only_org["total"], 2);
    let family = json_of(&env, &["audit-log", "list", "--operation", "operator."]);
    assert_eq!(family["total"], 9);

    let verified = json_of(&env, &["audit-log", "verify"]);
    assert_eq!(verified["entries"], 10);
    assert_eq!(verified["problems"], serde_json::json!([]));
    assert_eq!(verified["headHash"].as_str().unwrap().len(), 64);
    // Nothing is older than the retention period yet: nothing goes, nothing is written.
    let pruned = json_of(&env, &["audit-log", "prune", "--older-than-days", "30"]);
    assert_eq!(pruned["removed"], 0);

    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("trail.csv");
    let exported = json_of(
        &env,
        &[
            "audit-log",
            "export",
            "--operation",
            "org.",
            file.to_str().unwrap(),
        ],
    );
    assert_eq!(exported["entries"], 1);
    let csv = std::fs::read_to_string(&file).unwrap();
    let mut lines = csv.lines();
    assert!(
        lines
            .next()
            .unwrap()
            .starts_with("seq,at,actorKind,actorId,actorName,operation")
    );
    assert!(
        lines
            .next()
            .unwrap()
            .contains(",local,,ops-on-call,org.create,")
    );
    assert_eq!(lines.next(), None);
}

#[test]
fn operators_and_their_trail_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    operator_cli(vec![("REWARDS_DATA_DIR", dir.path().display().to_string())]);
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn operators_and_their_trail_from_the_command_line_on_postgres() {
    let url = store::testing::postgres_url().await;
    operator_cli(vec![("DATABASE_URL", url)]);
}

/// An entry edited in the database itself: `verify` exits 1 and names it.
#[test]
fn verify_finds_an_entry_edited_in_the_database() {
    let dir = tempfile::tempdir().unwrap();
    let env = [("REWARDS_DATA_DIR", dir.path().display().to_string())];
    ok(&env, &["org", "create", "--name", "Acme"]);
    ok(&env, &["org", "create", "--name", "Globex"]);
    let db = rusqlite::Connection::open(dir.path().join("rewards.db")).unwrap();
    db.execute(
        "UPDATE audit_log SET actor_name = 'someone else' WHERE seq = 1",
        [],
    )
    .unwrap();
    let verdict = run(&env, &["audit-log", "verify"]);
    assert!(!verdict.status.success());
    let out = String::from_utf8_lossy(&verdict.stdout);
    assert!(out.contains("edited  entry 1 was edited"), "{out}");
    let err = String::from_utf8_lossy(&verdict.stderr);
    assert!(err.contains("tampered with: 1 problem(s)"), "{err}");
}

/// Manual adjustments from the command line: made as `local` (the OS user), a four-eyes one
/// approved by another OS user and never by the one who asked, a bulk file tried and then made,
/// each change in the audit trail.
#[tokio::test]
async fn adjustments_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let data = ("REWARDS_DATA_DIR", dir.path().display().to_string());
    let env = vec![data.clone(), ("USER", "ops-on-call".into())];
    let (org, campaign, _) = crate::common::programme(&env);
    {
        let store = store::Store::open_sqlite(&dir.path().join("rewards.db"))
            .await
            .unwrap();
        let scope = store.tenancy().get_org(&org).await.unwrap().scope();
        let member = store::NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: "u-1".into(),
            external_id: "cust-1".into(),
            ..Default::default()
        };
        store.members().create_member(&scope, member).await.unwrap();
        let campaign = store.tenancy().campaign_in(&org, &campaign).await.unwrap();
        let wallet = store::NewWallet {
            owner: Some("cust-1".into()),
            external_id: Some("card-1".into()),
            name: None,
        };
        store
            .ledger()
            .create_wallet(&campaign, wallet)
            .await
            .unwrap();
    }
    let limits = json_of(&env, &["adjustment", "limits", "--approval-over", "100"]);
    assert_eq!(limits["approvalOver"], 100.0);
    let add = |amount: &str| {
        vec![
            "adjustment",
            "add",
            "--campaign",
            &campaign,
            "--wallet",
            "card-1",
            "--amount",
        ]
        .into_iter()
        .map(str::to_owned)
        .chain([amount, "--reason", "goodwill", "--comment", "Lost parcel"].map(str::to_owned))
        .collect::<Vec<String>>()
    };
    let args = add("40");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let made = json_of(&env, &args);
    assert_eq!(made["status"], "applied");
    assert_eq!(made["requestedBy"], "ops-on-call");
    let args = add("-60");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let short = run(&env, &args);
    assert!(!short.status.success());
    assert!(String::from_utf8_lossy(&short.stderr).contains("insufficient balance"));
    let args = add("150");
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let waiting = json_of(&env, &args);
    assert_eq!(waiting["status"], "pending");
    let id = waiting["id"].as_str().unwrap();
    let approve = ["adjustment", "approve", "--campaign", &campaign, id];
    let own = run(&env, &approve);
    assert!(!own.status.success());
    assert!(String::from_utf8_lossy(&own.stderr).contains("another operator"));
    let other = vec![data.clone(), ("USER", "second-pair-of-eyes".into())];
    let approved = json_of(&other, &approve);
    assert_eq!(approved["status"], "applied");
    assert_eq!(approved["decidedBy"], "second-pair-of-eyes");

    let file = dir.path().join("adjust.csv");
    std::fs::write(
        &file,
        "wallet,amount,reason,comment\ncard-1,-10,correction,Double stamp\ncard-1,5,nope,Bad\n",
    )
    .unwrap();
    let path = file.display().to_string();
    let bulk = ["adjustment", "bulk", "--campaign", &campaign, &path];
    let tried = ok(&env, &bulk);
    assert!(tried.contains("line 2: would_apply"), "{tried}");
    assert!(tried.contains("line 3: refused"), "{tried}");
    assert!(tried.contains("dry run: nothing written"), "{tried}");
    let mut apply = bulk.to_vec();
    apply.push("--apply");
    let report = json_of(&env, &apply);
    assert_eq!(
        (report["applied"].as_u64(), report["refused"].as_u64()),
        (Some(1), Some(1))
    );
    let listed = json_of(&env, &["adjustment", "list", "--campaign", &campaign]);
    assert_eq!(listed.as_array().unwrap().len(), 3);

    let trail = ok(
        &env,
        &["audit-log", "list", "--operation", "adjustment.approve"],
    );
    assert!(trail.contains("second-pair-of-eyes"), "{trail}");
}
