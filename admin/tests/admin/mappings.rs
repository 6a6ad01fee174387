//! Batch-file mappings through the admin API: a TOML document (as the CLI's files are) checked
//! with every problem at its path, stored, chosen for the files its pattern matches, shown and
//! removed; JSON documents alike.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::admin_tests;
use crate::helpers::AdminApp;

const TILL: &str = r#"
pattern = "till_*.csv"
delimiter = ";"

[columns]
id = "Ticket"
walletId = "Card"
amount = { column = "Total", decimal_separator = "," }
date = { column = "When", format = "%d/%m/%Y %H:%M", timezone = "Europe/Paris" }

[meta]
"store.code" = "Shop"
"#;

const BROKEN: &str = r#"
delimiter = ";;"
colour = "blue"

[columns]
id = "Ticket"
amount = { column = "Total", format = "%d" }
"#;

async fn a_mapping_is_checked_stored_chosen_and_removed(app: AdminApp) {
    let acme = app.acme.id();
    let mappings = format!("/admin/v1/orgs/{acme}/mappings");
    let check = format!("{mappings}/check");
    let toml = "application/toml";
    // Checked: every problem at once, at its path; nothing stored.
    let reply = app
        .send_text(Method::POST, &check, &app.owner, toml, BROKEN)
        .await;
    let found = reply.expect(StatusCode::OK);
    assert_eq!(found["valid"], false);
    let paths: Vec<&str> = found["problems"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["path"].as_str().unwrap())
        .collect();
    for path in ["delimiter", "colour", "columns.amount.format", "columns"] {
        assert!(
            paths.iter().any(|p| p.starts_with(path)),
            "{path}: {paths:?}"
        );
    }
    let reply = app
        .send_text(Method::POST, &check, &app.owner, toml, TILL)
        .await;
    assert_eq!(reply.expect(StatusCode::OK)["pattern"], "till_*.csv");
    assert_eq!(app.get(&mappings, &app.owner).await.body["total"], 0);
    // Stored with problems: refused with each of them; then the good one.
    let reply = app
        .send_text(Method::PUT, &mappings, &app.owner, toml, BROKEN)
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert!(reply.body["errors"].as_array().unwrap().len() >= 4);
    let reply = app
        .send_text(Method::PUT, &mappings, &app.owner, toml, TILL)
        .await;
    let stored = reply.expect(StatusCode::OK);
    assert_eq!(stored["pattern"], "till_*.csv");
    assert_eq!(stored["mapping"]["columns"]["walletId"], "Card");
    // A file named for it takes it, another the canonical layout.
    let chosen = ingest::batch::pipeline::mapping_for(&app.store, &app.acme, "TILL_0412.csv")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(chosen.pattern, "till_*.csv");
    let other = ingest::batch::pipeline::mapping_for(&app.store, &app.acme, "sales.csv")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(other.pattern, "*");
    // Shown by its pattern (URL-encoded); JSON documents too; listed by pattern.
    let one = format!("{mappings}/till_%2A.csv");
    let shown = app.get(&one, &app.owner).await;
    assert_eq!(shown.expect(StatusCode::OK)["mapping"]["delimiter"], ";");
    let every = json!({"columns": {"id": "Ref", "walletId": "Card", "amount": "Total",
        "date": "Day"}});
    let reply = app
        .send(Method::PUT, &mappings, Some(&app.owner), Some(every))
        .await;
    assert_eq!(reply.expect(StatusCode::OK)["pattern"], "*");
    let listed = app.get(&mappings, &app.owner).await;
    let patterns: Vec<&str> = listed.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["pattern"].as_str().unwrap())
        .collect();
    assert_eq!(patterns, ["*", "till_*.csv"]);
    // Removed: gone, and a second removal is 404.
    let reply = app.send(Method::DELETE, &one, Some(&app.owner), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = app.send(Method::DELETE, &one, Some(&app.owner), None).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    // Text that is neither, and a type that is not a document.
    let reply = app
        .send_text(Method::PUT, &mappings, &app.owner, toml, "pattern = ")
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "body");
    let reply = app
        .send_text(Method::PUT, &mappings, &app.owner, "text/csv", "a,b")
        .await;
    assert_eq!(reply.status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
    // The trail has the two stored and the one removed, as the owner's.
    let trail = app
        .get("/admin/v1/audit-log?operation=mapping.", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    let ok = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["outcome"] == "ok")
        .count();
    assert_eq!(ok, 3, "{trail}");
}

admin_tests!(a_mapping_is_checked_stored_chosen_and_removed);
