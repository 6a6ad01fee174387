//! Batch files through the admin API: a file received and processed as the SFTP door does is
//! listed with its counts, shown with its summary, and its rejected rows downloaded; a duplicate
//! has no report of its own, and a later file of the same name replaces the report.

use reqwest::StatusCode;

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

admin_tests!(batches_are_listed_with_their_reports);
