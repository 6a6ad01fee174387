//! A file through a limited rule set, through the real binary: each member's rows counted in
//! date order (then file order) whatever the file's order, its chunks and the threads, the dry
//! run saying what the load then does, and the counters' use shown to the operator.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::common::{json_of, ok, programme, serve};

const MEMBERS: usize = 4;
const ROWS: usize = 240;

/// One token per unit, doubled on a member's first three visits of a month (so which visits
/// are first matters).
const RULES: &str = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'visit'\npriority = 2\nadd = 'amount'\n\
     limits = [{ scope = 'member', period = 'month', times = 3 }]\n";

/// A file whose rows are out of date order: row `r` of member `r % 4`, on a day of October or
/// November 2026 that jumps about.
fn file() -> (String, Vec<(usize, u32, u32, i64)>) {
    let mut text = String::from("id,walletId,amount,date\n");
    let mut rows = Vec::new();
    for r in 0..ROWS {
        let member = r % MEMBERS;
        let month = if (r * 7) % 3 == 0 { 10 } else { 11 };
        let day = 1 + (r * 37 + 11) % 28;
        let amount = 1 + (r % 5) as i64;
        text.push_str(&format!(
            "f-{r},card-{member},{amount},2026-{month:02}-{day:02}T10:00:00Z\n"
        ));
        rows.push((member, month as u32, day as u32, amount));
    }
    (text, rows)
}

/// The tokens the file's visit bonuses earn when each member's rows are counted in date order,
/// then file order: the limit's own arithmetic, apart from the service.
fn expected(rows: &[(usize, u32, u32, i64)]) -> i64 {
    let mut order: Vec<usize> = (0..rows.len()).collect();
    order.sort_by_key(|&r| (rows[r].1, rows[r].2, r));
    let mut visits: HashMap<(usize, u32), u32> = HashMap::new();
    let mut tokens = 0;
    for r in order {
        let (member, month, _, amount) = rows[r];
        let seen = visits.entry((member, month)).or_default();
        *seen += 1;
        if *seen <= 3 {
            tokens += amount;
        }
    }
    tokens
}

/// A data directory with an organisation, its members' wallets and the limited rule set.
async fn prepared(dir: &std::path::Path) -> (Vec<(&'static str, String)>, String, String) {
    let env = vec![
        ("REWARDS_DATA_DIR", dir.display().to_string()),
        ("REWARDS_BACKGROUND_WORKERS", "false".to_string()),
    ];
    let (org, campaign, key) = programme(&env);
    let (server, http) = serve(&env);
    let client = reqwest::Client::new();
    for i in 0..MEMBERS {
        for (path, body) in [
            (
                "/v1/members",
                json!({"firstName": "Ada", "userId": format!("u-{i}"), "externalId": format!("card-{i}")}),
            ),
            ("/v1/wallets", json!({"externalId": format!("card-{i}")})),
        ] {
            let sent = client
                .post(format!("{http}{path}"))
                .header("x-api-key", key["apiKey"].as_str().unwrap())
                .header("x-api-secret", key["apiSecret"].as_str().unwrap())
                .json(&body)
                .send()
                .await
                .unwrap();
            assert!(sent.status().is_success(), "{path}: {}", sent.status());
        }
    }
    drop(server);
    std::fs::write(dir.join("limits.toml"), RULES).unwrap();
    let rules = dir.join("limits.toml").display().to_string();
    ok(&env, &["rules", "set", "--campaign", &campaign, &rules]);
    (env, org, campaign)
}

/// Loads the file with chunks of `chunk` rows on `threads` threads: the load's summary and the
/// limit's use in November.
fn load(
    env: &[(&str, String)],
    org: &str,
    campaign: &str,
    chunk: &str,
    threads: &str,
) -> (Value, Value) {
    let mut env = env.to_vec();
    env.push(("REWARDS_TEST_CHUNK_ROWS", chunk.to_string()));
    env.push(("RAYON_NUM_THREADS", threads.to_string()));
    let dir = std::path::PathBuf::from(&env[0].1);
    std::fs::write(dir.join("visits.csv"), file().0).unwrap();
    let path = dir.join("visits.csv").display().to_string();
    let dry = json_of(&env, &["ingest", "--org", org, "--dry-run", &path]);
    let loaded = json_of(&env, &["ingest", "--org", org, &path]);
    assert_eq!(loaded["state"], "completed", "{loaded}");
    assert_eq!(
        dry["tokens"], loaded["tokens"],
        "the dry run says what the load does"
    );
    assert_eq!(dry["tokensByRule"], loaded["tokensByRule"]);
    let uses = json_of(
        &env,
        &[
            "rules",
            "limits",
            "--campaign",
            campaign,
            "--day",
            "2026-11-15",
        ],
    );
    (loaded, uses)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_limited_file_counts_each_members_rows_in_date_order_whatever_its_chunks() {
    let (one, two) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (env_one, org_one, campaign_one) = prepared(one.path()).await;
    let (env_two, org_two, campaign_two) = prepared(two.path()).await;
    let (small, uses_small) = load(&env_one, &org_one, &campaign_one, "7", "1");
    let (large, uses_large) = load(&env_two, &org_two, &campaign_two, "5000", "2");

    let rows = file().1;
    let base: i64 = rows.iter().map(|r| r.3).sum();
    let bonus = expected(&rows);
    assert_eq!(small["tokensByRule"]["visit"], json!(bonus), "{small}");
    assert_eq!(small["tokens"], json!(base + bonus));
    assert_eq!(large["tokens"], small["tokens"]);
    assert_eq!(large["tokensByRule"], small["tokensByRule"]);
    assert_eq!(uses_small, uses_large);
    let visit = &uses_small[0];
    assert_eq!(visit["rule"], "visit");
    assert_eq!(visit["used"]["times"], json!(3 * MEMBERS), "{visit}");
    assert_eq!(visit["scopes"], json!(MEMBERS));
    assert_eq!(visit["reached"], json!(MEMBERS));
    assert_eq!(visit["from"], "2026-11-01");
    assert_eq!(visit["to"], "2026-11-30");

    // One member's use, with what is left, in words.
    let text = ok(
        &env_one,
        &[
            "rules",
            "limits",
            "--campaign",
            &campaign_one,
            "--day",
            "2026-11-15",
            "--scope",
            "nobody",
        ],
    );
    assert!(
        text.contains("visit member/month (3 times) 2026-11-01..2026-11-30: 0 times")
            && text.contains("left 3 times"),
        "{text}"
    );
}
