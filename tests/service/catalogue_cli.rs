//! `rewards catalogue import` and `export` as an operator runs them: the template example
//! imports, a bad file is refused with every problem and changes nothing, and the export
//! imports back to the same catalogue.

use crate::common::{json_of, programme, run, serve};

#[test]
fn the_operator_imports_checks_and_exports_a_catalogue() {
    let dir = tempfile::tempdir().unwrap();
    let env = [(
        "REWARDS_DATA_DIR",
        dir.path().join("data").display().to_string(),
    )];
    let (_org, campaign, _key) = programme(&env);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/templates/catalogue.json");

    let dry = json_of(
        &env,
        &[
            "catalogue",
            "import",
            "--campaign",
            &campaign,
            "--dry-run",
            example,
        ],
    );
    assert_eq!(dry["dryRun"], true);
    assert_eq!(dry["products"]["created"], 2);
    let done = json_of(
        &env,
        &["catalogue", "import", "--campaign", &campaign, example],
    );
    assert_eq!(done["products"]["created"], 2, "the dry run wrote nothing");
    assert_eq!(done["version"], 1);

    // A file with problems: every one listed with its path, exit 1, nothing written.
    let bad = dir.path().join("bad.json");
    std::fs::write(
        &bad,
        r#"{"products": [{"id": "x", "name": "X", "category": "none",
            "variants": [{"id": "x-1", "name": "One", "price": -5}]},
           {"id": "x", "name": ""}]}"#,
    )
    .unwrap();
    let refused = run(
        &env,
        &[
            "catalogue",
            "import",
            "--campaign",
            &campaign,
            bad.to_str().unwrap(),
        ],
    );
    assert!(!refused.status.success());
    let out = String::from_utf8_lossy(&refused.stdout);
    assert!(
        out.contains("products[0].variants[0].price: must be more than 0"),
        "{out}"
    );
    assert!(out.contains("products[1].name: must not be blank"), "{out}");
    assert!(
        out.contains("products[1].id: product `x` appears more than once"),
        "{out}"
    );
    // The unknown category is named beside the faulty values, in the same report.
    assert!(
        out.contains("products[0].category: unknown category `none`"),
        "{out}"
    );
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("4 problem(s); nothing was imported"), "{err}");

    // The export is an import document that gives the same catalogue back.
    let exported = dir.path().join("exported.json");
    let export = [
        "catalogue",
        "export",
        "--campaign",
        &campaign,
        exported.to_str().unwrap(),
    ];
    assert!(run(&env, &export).status.success());
    let again = json_of(
        &env,
        &[
            "catalogue",
            "import",
            "--campaign",
            &campaign,
            exported.to_str().unwrap(),
        ],
    );
    assert_eq!(
        again["products"],
        serde_json::json!({"created": 0, "updated": 2, "removed": 0})
    );
    assert_eq!(again["tiers"]["updated"], 1);
    let reexported = dir.path().join("reexported.json");
    let export = [
        "catalogue",
        "export",
        "--campaign",
        &campaign,
        reexported.to_str().unwrap(),
    ];
    assert!(run(&env, &export).status.success());
    assert_eq!(
        std::fs::read_to_string(&exported).unwrap(),
        std::fs::read_to_string(&reexported).unwrap()
    );
}

/// Two server processes on one database: an import by the operator's command (a third process)
/// shows in both servers' searches within 2 seconds.
async fn imports_reach_every_server(env: Vec<(&'static str, String)>) {
    let (_org, campaign, key) = programme(&env);
    let (_a, first) = serve(&env);
    let (_b, second) = serve(&env);
    let client = reqwest::Client::new();
    let total = |base: &str| {
        let request = client
            .get(format!("{base}/v1/products"))
            .header("x-api-key", key["apiKey"].as_str().unwrap())
            .header("x-api-secret", key["apiSecret"].as_str().unwrap());
        async move {
            let body: serde_json::Value = request.send().await.unwrap().json().await.unwrap();
            body["total"].as_u64().unwrap()
        }
    };
    assert_eq!(total(&first).await, 0);
    assert_eq!(total(&second).await, 0);
    let example = concat!(env!("CARGO_MANIFEST_DIR"), "/samples/catalogue.json");
    json_of(
        &env,
        &["catalogue", "import", "--campaign", &campaign, example],
    );
    let started = std::time::Instant::now();
    for base in [&first, &second] {
        while total(base).await != 240 {
            assert!(
                started.elapsed() < std::time::Duration::from_secs(2),
                "{base} did not show the import within 2 s"
            );
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test]
async fn imports_reach_every_server_on_sqlite() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data").display().to_string();
    imports_reach_every_server(vec![("REWARDS_DATA_DIR", data)]).await;
}

#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn imports_reach_every_server_on_postgres() {
    let url = store::testing::postgres_url().await;
    imports_reach_every_server(vec![("DATABASE_URL", url)]).await;
}
