//! Batch files through the admin API: a file received and processed as the SFTP door does is
//! listed with its counts, shown with its summary, and its rejected rows downloaded; a duplicate
//! has no report of its own, and a later file of the same name replaces the report.

use reqwest::StatusCode;
use serde_json::Value;

use crate::admin_tests;
use crate::helpers::AdminApp;

const FILE: &str = "id,walletId,amount,date\n\
    t-1,card-1,12.50,2026-11-20T10:15:00Z\n\
    t-2,card-1,twelve,2026-11-20T10:16:00Z\n";

async fn batches_are_listed_with_their_reports(app: AdminApp) {
    app.campaign_with_wallet().await;
    let viewer = app
        .operator("viewer@example.com", store::Role::Viewer, &[&app.acme])
        .await;
    let batches = format!("/admin/v1/orgs/{}/batches", app.acme.id());
    let first = app.load("earns.csv", FILE).await;
    let listed = app.get(&batches, &viewer).await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["data"][0]["id"], first.as_str());
    assert_eq!(listed["data"][0]["rows"], 2);
    assert_eq!(listed["data"][0]["loaded"], 1);
    assert_eq!(listed["data"][0]["rejected"], 1);
    let shown = app.get(&format!("{batches}/{first}"), &viewer).await;
    let shown = shown.expect(StatusCode::OK);
    assert_eq!(shown["state"], "completed");
    assert_eq!(
        shown["summary"]["rejectedByReason"]["bad_decimal"], 1,
        "{shown}"
    );
    // The rejected rows, as the CSV report the SFTP door leaves.
    let rejected = format!("{batches}/{first}/rejected");
    let response = app
        .http
        .get(format!("{}{rejected}", app.base))
        .bearer_auth(&viewer)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert!(
        response.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/csv")
    );
    assert!(
        response.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .contains("earns.csv.rejected.csv")
    );
    let csv = response.text().await.unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 2, "{csv}");
    assert!(lines[1].contains("bad_decimal") && lines[1].contains("twelve"));
    // The same content again: a duplicate, with no report of its own.
    let duplicate = app.load("earns.csv", FILE).await;
    let shown = app.get(&format!("{batches}/{duplicate}"), &viewer).await;
    assert_eq!(shown.expect(StatusCode::OK)["duplicateOf"], first.as_str());
    let reply = app
        .get(&format!("{batches}/{duplicate}/rejected"), &viewer)
        .await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    // Another file of the same name replaces the first's report.
    let later = "id,walletId,amount,date\nt-3,card-1,5,2026-11-21T09:00:00Z\n";
    let second = app.load("earns.csv", later).await;
    let reply = app.get(&rejected, &viewer).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "report_replaced");
    let reply = app
        .get(&format!("{batches}/{second}/rejected"), &viewer)
        .await;
    assert_eq!(reply.status, StatusCode::OK);
    // Another organisation's batch is unknown here.
    let other = format!("/admin/v1/orgs/{}/batches/{first}", app.other.id());
    let reply = app.get(&other, &app.owner).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
}

/// An operator's upload of `content` as `name` (run dry when `dry`).
async fn send(
    app: &AdminApp,
    token: &str,
    name: &str,
    content: &str,
    dry: bool,
) -> (StatusCode, Value) {
    let batches = format!("/admin/v1/orgs/{}/batches", app.acme.id());
    let path = match dry {
        true => format!("{batches}/dry-run?name={name}"),
        false => format!("{batches}?name={name}"),
    };
    let response = app
        .http
        .post(format!("{}{path}", app.base))
        .bearer_auth(token)
        .header("content-type", "text/csv")
        .body(content.to_owned())
        .send()
        .await
        .unwrap();
    let status = response.status();
    (status, response.json().await.unwrap())
}

async fn an_operator_sends_a_file_after_a_dry_run(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let admin = app
        .operator("org-admin@example.com", store::Role::OrgAdmin, &[&app.acme])
        .await;
    // A dry run: counts, tokens and the rejected row; nothing credited, no batch recorded.
    let (status, dry) = send(&app, &admin, "earns.csv", FILE, true).await;
    assert_eq!(status, StatusCode::OK, "{dry}");
    assert_eq!(dry["summary"]["rows"], 2);
    assert_eq!(dry["summary"]["loaded"], 1);
    assert_eq!(dry["summary"]["rejected"], 1);
    let sample = dry["rejectedSample"].as_str().unwrap();
    assert_eq!(sample.lines().count(), 2, "{sample}");
    assert!(sample.contains("twelve"), "{sample}");
    let batches = format!("/admin/v1/orgs/{}/batches", app.acme.id());
    assert_eq!(app.get(&batches, &admin).await.body["total"], 0);
    let wallet = format!("{base}/wallets/card-1");
    assert_eq!(app.get(&wallet, &admin).await.body["balance"], 0.0);

    // Sent: recorded as a batch from `admin`, loaded as an SFTP file is; the same again is a
    // duplicate that loads nothing.
    let (status, batch) = send(&app, &admin, "earns.csv", FILE, false).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{batch}");
    assert_eq!(batch["source"], "admin");
    assert_eq!(batch["username"], "org-admin@example.com");
    assert_eq!(batch["state"], "received");
    let id = batch["id"].as_str().unwrap();
    let claimed = app
        .store
        .batches()
        .claim_batches(1, Some(id))
        .await
        .unwrap();
    let book = store::RuleBook::new(app.store.programme().clone());
    ingest::batch::pipeline::process(&app.store, &book, &app.data_dir, &claimed[0], &|_| {})
        .await
        .unwrap();
    let shown = app.get(&format!("{batches}/{id}"), &admin).await;
    assert_eq!(shown.expect(StatusCode::OK)["loaded"], 1);
    assert_eq!(app.get(&wallet, &admin).await.body["balance"], 12.0);
    let (status, again) = send(&app, &admin, "earns-again.csv", FILE, false).await;
    assert_eq!(status, StatusCode::OK, "{again}");
    assert_eq!(again["state"], "duplicate");
    assert_eq!(again["duplicateOf"], id);

    // A name that is not a batch file's, a viewer, and the trail.
    let (status, problem) = send(&app, &admin, "empty.csv", "", false).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{problem}");
    assert_eq!(problem["field"], "body");
    let long = format!("{}.csv", "x".repeat(177));
    for bad in [
        "notes.txt",
        "earns.csv.filepart",
        "a%2Fb.csv",
        long.as_str(),
    ] {
        let (status, problem) = send(&app, &admin, bad, FILE, false).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{bad}: {problem}");
        assert_eq!(problem["field"], "name");
    }
    let viewer = app
        .operator("viewer@example.com", store::Role::Viewer, &[&app.acme])
        .await;
    let (status, _) = send(&app, &viewer, "earns.csv", FILE, true).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    let trail = app
        .get("/admin/v1/audit-log?operation=batch.send", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    assert_eq!(trail["total"], 2, "{trail}");
    assert_eq!(trail["data"][0]["actorName"], "org-admin@example.com");
}

admin_tests!(
    batches_are_listed_with_their_reports,
    an_operator_sends_a_file_after_a_dry_run,
);
