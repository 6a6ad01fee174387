//! A campaign's rule sets through the admin API: set from TOML (one with problems refused with
//! each of them), listed and shown by version, tried on sample rows with each row's trace, and
//! backtested over earns loaded from a file, as `rewards rules` does; tiers added and removed,
//! the wallets re-tiered; a campaign's policy changed field by field.

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::admin_tests;
use crate::helpers::AdminApp;

const RETAIL: &str = include_str!("../../../samples/rules/retail.toml");
const CANDIDATE: &str = include_str!("../../../samples/rules/candidate.toml");

async fn rule_sets_are_set_shown_tried_and_backtested(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let rules = format!("{base}/rules");
    let toml = "application/toml";
    let listed = app.get(&rules, &app.owner).await;
    assert_eq!(listed.expect(StatusCode::OK)["total"], 0);
    // Earns loaded before any rule set: one token per unit.
    app.load(
        "earns.csv",
        "id,walletId,amount,date\n\
         t-1,card-1,40,2026-11-10T10:00:00Z\n\
         t-2,card-1,0.50,2026-11-11T10:00:00Z\n",
    )
    .await;
    // A rule set with problems: each named; nothing stored.
    let broken = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount *'\n";
    let reply = app
        .send_text(Method::PUT, &rules, &app.owner, toml, broken)
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert!(
        reply.body["errors"][0]["message"]
            .as_str()
            .unwrap()
            .contains("base")
    );
    let reply = app
        .send_text(Method::PUT, &rules, &app.owner, toml, RETAIL)
        .await;
    let set = reply.expect(StatusCode::CREATED);
    assert_eq!(set["version"], 1);
    assert_eq!(set["active"], true);
    assert!(
        set["rules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["id"] == "base")
    );
    let reply = app
        .send_text(Method::PUT, &rules, &app.owner, toml, CANDIDATE)
        .await;
    assert_eq!(reply.expect(StatusCode::CREATED)["version"], 2);
    // Listed newest first; version 1 shown as it was, no longer active.
    let listed = app.get(&rules, &app.owner).await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["data"][0]["version"], 2);
    assert_eq!(listed["data"][0]["active"], true);
    assert_eq!(listed["data"][1]["active"], false);
    let first = app.get(&format!("{rules}/1"), &app.owner).await;
    let first = first.expect(StatusCode::OK);
    assert_eq!(first["source"], RETAIL);
    assert_eq!(first["active"], false);
    let active = app.get(&format!("{rules}/active"), &app.owner).await;
    assert_eq!(active.expect(StatusCode::OK)["version"], 2);
    let reply = app.get(&format!("{rules}/9"), &app.owner).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    let reply = app.get(&format!("{rules}/latest"), &app.owner).await;
    assert_eq!(reply.body["field"], "version");
    // Tried on sample rows (the active set, and one given): tokens and trace per row.
    let rows = "id,amount,date\ns-1,40,2026-11-10T10:00:00Z\ns-2,0.5,2026-11-10T10:00:00Z\n\
        s-3,forty,2026-11-10T10:00:00Z\n";
    let test = format!("{rules}/test");
    let tried = app.post(&test, &app.owner, json!({"rows": rows})).await;
    let tried = tried.expect(StatusCode::OK);
    assert_eq!(tried["unreadable"], 1);
    assert_eq!(tried["rows"][1]["tokens"], "0");
    assert!(
        tried["rows"][1]["trace"].to_string().contains("min-spend"),
        "{tried}"
    );
    assert!(
        tried["rows"][2]["error"]
            .as_str()
            .unwrap()
            .contains("forty")
    );
    let flat = "[[rule]]\nid = 'flat'\npriority = 1\naward = '5'\n";
    let tried = app
        .post(&test, &app.owner, json!({"rules": flat, "rows": rows}))
        .await;
    assert_eq!(tried.expect(StatusCode::OK)["rows"][0]["tokens"], "5");
    let reply = app
        .post(&test, &app.owner, json!({"rows": "no,columns\n1,2\n"}))
        .await;
    assert_eq!(reply.body["field"], "rows");
    // Backtested over the two earns: what they got (40.5 at one per unit) beside the candidate.
    let backtest = format!("{rules}/backtest");
    let body = json!({"rules": flat, "from": "2026-11-01T00:00:00Z",
        "to": "2026-11-30T23:59:59Z"});
    let report = app.post(&backtest, &app.owner, body).await;
    let report = report.expect(StatusCode::OK);
    assert_eq!(report["transactions"], 2);
    assert_eq!(report["currentTokens"], "40");
    assert_eq!(report["candidateTokens"], "10");
    assert_eq!(report["difference"], "-30");
    assert_eq!(report["topWallets"][0]["candidate"], "10");
    let flat_rule = report["perRule"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"] == "flat")
        .unwrap();
    assert_eq!(flat_rule["fired"], 2);
    assert_eq!(report["limits"], json!([]));
    // A candidate with a limit: counted over the period's earns in date order, each cut
    // counted.
    let limited = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
         limits = [{ scope = 'wallet', period = 'month', tokens = 30 }]\n";
    let body = json!({"rules": limited, "from": "2026-11-01T00:00:00Z",
        "to": "2026-11-30T23:59:59Z"});
    let report = app.post(&backtest, &app.owner, body).await;
    let report = report.expect(StatusCode::OK);
    assert_eq!(report["candidateTokens"], "30", "{report}");
    assert_eq!(
        report["limits"],
        json!([{"rule": "base", "limit": "wallet/month", "cuts": 2}])
    );
    // Activated, the ledger counts them.
    let reply = app
        .send_text(Method::PUT, &rules, &app.owner, toml, limited)
        .await;
    assert_eq!(reply.expect(StatusCode::CREATED)["version"], 3);
    // A period that ends before it starts, or is missing.
    let body = json!({"from": "2026-11-30T00:00:00Z", "to": "2026-11-01T00:00:00Z"});
    let reply = app.post(&backtest, &app.owner, body).await;
    assert_eq!(reply.body["field"], "to");
    let reply = app.post(&backtest, &app.owner, json!({})).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    // A viewer may read and try rule sets, not set or backtest them.
    let viewer = app
        .operator("viewer@example.com", store::Role::Viewer, &[&app.acme])
        .await;
    app.get(&rules, &viewer).await.expect(StatusCode::OK);
    let reply = app
        .send_text(Method::PUT, &rules, &viewer, toml, RETAIL)
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
}

async fn tiers_are_added_and_removed(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let tiers = format!("{base}/tiers");
    let gold = json!({"name": "Gold", "precedence": 1, "threshold": 30,
        "benefits": ["Free delivery"]});
    let added = app.post(&tiers, &app.owner, gold.clone()).await;
    let added = added.expect(StatusCode::CREATED).clone();
    assert_eq!(added["threshold"], 30);
    // A wallet that earns past the threshold holds the tier.
    app.load(
        "earns.csv",
        "id,walletId,amount,date\nt-1,card-1,40,2026-11-10T10:00:00Z\n",
    )
    .await;
    let wallet = app.get(&format!("{base}/wallets/card-1"), &app.owner).await;
    assert_eq!(
        wallet.expect(StatusCode::OK)["tier"]["name"],
        "Gold",
        "{}",
        wallet.body
    );
    // The same name again; bad fields, each named.
    let reply = app.post(&tiers, &app.owner, gold).await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "already_exists");
    let bad = json!({"name": "", "precedence": -1, "threshold": -5});
    let reply = app.post(&tiers, &app.owner, bad).await;
    let fields: Vec<&str> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["name", "precedence", "threshold"]);
    let listed = app.get(&tiers, &app.owner).await;
    assert_eq!(listed.expect(StatusCode::OK)["total"], 1);
    // Removed by name: the wallet falls out of it.
    let one = format!("{tiers}/Gold");
    let reply = app.send(Method::DELETE, &one, Some(&app.owner), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let wallet = app.get(&format!("{base}/wallets/card-1"), &app.owner).await;
    assert!(wallet.expect(StatusCode::OK)["tier"].is_null());
    let reply = app.send(Method::DELETE, &one, Some(&app.owner), None).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
}

async fn a_policy_changes_field_by_field(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let policy = format!("{base}/policy");
    let shown = app.get(&policy, &app.owner).await;
    let shown = shown.expect(StatusCode::OK).clone();
    assert_eq!(shown["expiry"], "never");
    assert!(shown["transferDailyCap"].is_null());
    let change = json!({"minBalance": 10, "expiry": "days:365", "transferDailyCap": 100});
    let changed = app
        .send(Method::PATCH, &policy, Some(&app.owner), Some(change))
        .await;
    let changed = changed.expect(StatusCode::OK);
    assert_eq!(changed["minBalance"], 10);
    assert_eq!(changed["expiry"], "days:365");
    assert_eq!(changed["transferDailyCap"], 100);
    // Left out: kept; null: cleared.
    let clear = json!({"transferDailyCap": null});
    let cleared = app
        .send(Method::PATCH, &policy, Some(&app.owner), Some(clear))
        .await;
    let cleared = cleared.expect(StatusCode::OK);
    assert!(cleared["transferDailyCap"].is_null());
    assert_eq!(cleared["minBalance"], 10);
    // Bad fields, each named; a value the store bounds, named as this API names it.
    let bad = json!({"expiry": "weekly", "shortfall": "forgive", "minBalance": -1});
    let reply = app
        .send(Method::PATCH, &policy, Some(&app.owner), Some(bad))
        .await;
    let fields: Vec<&str> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["minBalance", "expiry", "shortfall"]);
    let long = json!({"pendingDays": 5000});
    let reply = app
        .send(Method::PATCH, &policy, Some(&app.owner), Some(long))
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "pendingDays");
    let shown = app.get(&policy, &app.owner).await;
    assert_eq!(shown.expect(StatusCode::OK)["pendingDays"], 0);
    // The trail holds the change with the policy before and after.
    let trail = app
        .get("/admin/v1/audit-log?operation=campaign.policy", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    // Newest first: the oldest change that went through is the first.
    let first = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .rfind(|e| e["outcome"] == "ok")
        .unwrap();
    assert!(first["before"].as_str().unwrap().contains("never"));
    assert!(first["after"].as_str().unwrap().contains("days:365"));
}

admin_tests!(
    rule_sets_are_set_shown_tried_and_backtested,
    tiers_are_added_and_removed,
    a_policy_changes_field_by_field,
);
