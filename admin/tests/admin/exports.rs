//! Exports through the admin API: a viewer exports a campaign's transactions and downloads the
//! file whole and in part; bad filters are named; an org-admin sets, shows and stops the daily
//! export, which the service-wide list shows to an admin; each action is in the trail, which
//! an owner exports filtered, as CSV or Parquet.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Role;

use crate::admin_tests;
use crate::helpers::{AdminApp, ok_operations};

/// The exports list until `name` is no longer being written.
async fn settled(app: &AdminApp, exports: &str, token: &str, name: &str) -> Value {
    for _ in 0..400 {
        let listed = app.get(exports, token).await;
        let listed = listed.expect(StatusCode::OK).clone();
        let found = listed["data"]
            .as_array()
            .unwrap()
            .iter()
            .find(|f| f["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not listed: {listed}"));
        if found["status"] != "writing" {
            return found;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("{name} still being written");
}

async fn a_viewer_exports_and_downloads_transactions(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let campaign = base.rsplit('/').next().unwrap().to_owned();
    for amount in [10, 20] {
        let credit = json!({"walletId": "card-1", "amount": amount, "reason": "goodwill",
            "comment": "late parcel"});
        let made = app
            .post(&format!("{base}/adjustments"), &app.owner, credit)
            .await;
        made.expect(StatusCode::CREATED);
    }
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let exports = format!("/admin/v1/orgs/{}/exports", app.acme.id());
    let body = json!({"format": "csv", "campaignId": campaign, "types": ["EARN"]});
    let started = app.post(&exports, &viewer, body).await;
    let started = started.expect(StatusCode::ACCEPTED).clone();
    let name = started["name"].as_str().unwrap().to_owned();
    assert!(
        name.starts_with("transactions-") && name.ends_with(".csv"),
        "{name}"
    );
    assert_eq!(started["totalRows"], 2);
    let done = settled(&app, &exports, &viewer, &name).await;
    assert_eq!(done["status"], "written", "{done}");
    assert_eq!(done["rows"], 2);
    let bytes = done["bytes"].as_u64().unwrap();

    // Downloaded whole: the header and one row per credit; then its first 2 bytes only.
    let file = format!("{exports}/{name}");
    let whole = app
        .http
        .get(format!("{}{file}", app.base))
        .bearer_auth(&viewer)
        .send()
        .await
        .unwrap();
    assert_eq!(whole.status(), StatusCode::OK);
    assert_eq!(whole.headers()["content-type"], "text/csv; charset=utf-8");
    let text = whole.text().await.unwrap();
    assert_eq!(text.len() as u64, bytes);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("id,campaignId,walletId"),
        "{}",
        lines[0]
    );
    assert_eq!(lines.len(), 3, "{text}");
    assert!(lines.iter().any(|l| l.contains(",EARN,20,")), "{text}");
    let part = app
        .http
        .get(format!("{}{file}", app.base))
        .bearer_auth(&viewer)
        .header("range", "bytes=0-1")
        .send()
        .await
        .unwrap();
    assert_eq!(part.status(), StatusCode::PARTIAL_CONTENT);
    assert_eq!(part.text().await.unwrap(), "id");

    // Bad filters named; hidden or unknown files are not there.
    let bad = json!({"format": "xlsx", "from": "2026-02-30", "types": ["GIFT"]});
    let reply = app.post(&exports, &viewer, bad).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    let fields: Vec<&str> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert_eq!(fields, ["format", "from", "types[0]"]);
    let many = json!({"types": vec!["EARN"; 30]});
    let reply = app.post(&exports, &viewer, many).await;
    assert_eq!(reply.body["field"], "types", "{}", reply.body);
    let backwards = json!({"from": "2026-03-02", "to": "2026-03-01"});
    let reply = app.post(&exports, &viewer, backwards).await;
    assert_eq!(reply.body["field"], "to");
    let reply = app
        .post(&exports, &viewer, json!({"campaignId": "nope"}))
        .await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    assert_eq!(reply.body["field"], "campaignId");
    for missing in [
        format!(".{name}.tmp"),
        "nothing.csv".into(),
        "notes.txt".into(),
    ] {
        let reply = app.get(&format!("{exports}/{missing}"), &viewer).await;
        assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found", "{missing}");
    }
    // Another organisation's operator sees none of it.
    let outsider = app
        .operator("other@example.com", Role::Viewer, &[&app.other])
        .await;
    let reply = app.get(&file, &outsider).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");

    // The export is in the trail as the viewer's, once it ended.
    let trail = app
        .get(
            "/admin/v1/audit-log?operation=export.transactions",
            &app.owner,
        )
        .await;
    let trail = trail.expect(StatusCode::OK);
    assert_eq!(
        trail["data"][0]["actorName"], "viewer@example.com",
        "{trail}"
    );
    assert_eq!(trail["data"][0]["target"], name.as_str());
    assert_eq!(trail["data"][0]["outcome"], "ok");
}

async fn an_org_admin_schedules_the_daily_export(app: AdminApp) {
    let admin = app
        .operator("org-admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let schedule = format!("/admin/v1/orgs/{}/export-schedule", app.acme.id());
    let reply = app.get(&schedule, &admin).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    let set = json!({"at": "02:30", "format": "csv"});
    let reply = app
        .send(Method::PUT, &schedule, Some(&admin), Some(set))
        .await;
    let set = reply.expect(StatusCode::OK).clone();
    assert_eq!(
        (set["at"].as_str(), set["format"].as_str()),
        (Some("02:30"), Some("csv"))
    );
    let today = app.store.now().date_naive();
    assert_eq!(set["nextDay"], today.to_string());
    assert!(set["last"].is_null());
    // Changed: the time and format; shown as set.
    let change = json!({"at": "23:59"});
    let reply = app
        .send(Method::PUT, &schedule, Some(&admin), Some(change))
        .await;
    assert_eq!(reply.expect(StatusCode::OK)["format"], "parquet");
    assert_eq!(app.get(&schedule, &admin).await.body["at"], "23:59");
    for (bad, field) in [
        (json!({"at": "24:00"}), "at"),
        (json!({"at": "2:30"}), "at"),
        (json!({"format": "csv"}), "at"),
        (json!({"at": "01:00", "format": "json"}), "format"),
        (json!({"at": null}), "at"),
        (json!({"at": "01:00", "format": null}), "format"),
    ] {
        let reply = app
            .send(Method::PUT, &schedule, Some(&admin), Some(bad.clone()))
            .await;
        assert_eq!(
            reply.code(StatusCode::BAD_REQUEST),
            "validation_failed",
            "{bad}"
        );
        assert_eq!(reply.body["field"], field, "{bad}");
    }
    // An admin lists every organisation's; an org-admin may not (service-wide).
    let reply = app.get("/admin/v1/export-schedules", &app.owner).await;
    let all = reply.expect(StatusCode::OK);
    assert_eq!(all["total"], 1);
    assert_eq!(all["data"][0]["orgId"], app.acme.id());
    let reply = app.get("/admin/v1/export-schedules", &admin).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    // A viewer reads it and may not stop it; the org-admin stops it, once.
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    app.get(&schedule, &viewer).await.expect(StatusCode::OK);
    let reply = app
        .send(Method::DELETE, &schedule, Some(&viewer), None)
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let reply = app
        .send(Method::DELETE, &schedule, Some(&admin), None)
        .await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = app
        .send(Method::DELETE, &schedule, Some(&admin), None)
        .await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    let trail = app
        .get("/admin/v1/audit-log?operation=export.", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    let ok = ok_operations(trail);
    assert_eq!(
        ok,
        ["export.unschedule", "export.schedule", "export.schedule"]
    );
}

async fn the_audit_trail_is_exported_filtered(app: AdminApp) {
    let admin = app
        .operator("org-admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let schedule = format!("/admin/v1/orgs/{}/export-schedule", app.acme.id());
    for at in ["01:00", "02:00"] {
        let set = json!({"at": at});
        let reply = app
            .send(Method::PUT, &schedule, Some(&admin), Some(set))
            .await;
        reply.expect(StatusCode::OK);
    }
    let download = |query: &str| {
        let url = format!("{}/admin/v1/audit-log/export?{query}", app.base);
        app.http.get(url).bearer_auth(&app.owner).send()
    };
    let csv = download("operation=export.schedule").await.unwrap();
    assert_eq!(csv.status(), StatusCode::OK);
    assert_eq!(csv.headers()["content-type"], "text/csv; charset=utf-8");
    let text = csv.text().await.unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("seq,at,actorKind,actorId,actorName,operation"),
        "{text}"
    );
    assert_eq!(lines.len(), 3, "{text}");
    assert!(
        lines
            .iter()
            .skip(1)
            .all(|l| l.contains("org-admin@example.com")),
        "{text}"
    );
    // Parquet: a file that starts and ends with its magic bytes.
    let parquet = download("format=parquet&actor=org-admin%40example.com")
        .await
        .unwrap();
    assert_eq!(parquet.status(), StatusCode::OK);
    let bytes = parquet.bytes().await.unwrap();
    assert!(bytes.starts_with(b"PAR1") && bytes.ends_with(b"PAR1"));
    let bad = download("format=xml").await.unwrap();
    assert_eq!(bad.status(), StatusCode::BAD_REQUEST);
    // The trail is service-wide: not for a per-organisation role.
    let url = format!("{}/admin/v1/audit-log/export", app.base);
    let refused = app.http.get(url).bearer_auth(&admin).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::FORBIDDEN);
}

admin_tests!(
    a_viewer_exports_and_downloads_transactions,
    an_org_admin_schedules_the_daily_export,
    the_audit_trail_is_exported_filtered,
);
