//! Batch records over HTTP: the key's organisation's files only, newest first, duplicates
//! pointing at the batch that holds their content.

use reqwest::{Method, StatusCode};
use store::NewBatch;

use crate::app_tests;
use crate::helpers::TestApp;

fn received(id: &str, content: &str) -> NewBatch {
    NewBatch {
        id: id.into(),
        file_name: format!("{id}.csv"),
        size: 1234,
        sha256: content.into(),
        source: "sftp".into(),
        username: Some("acme-upload".into()),
    }
}

async fn batches_are_listed_newest_first_with_duplicates(app: TestApp) {
    assert_eq!(app.get("/v1/batches").await.body["total"], 0);
    app.store
        .batches()
        .record_batch(&app.org, received("b1", "aa"))
        .await
        .unwrap();
    app.store
        .batches()
        .record_batch(&app.org, received("b2", "bb"))
        .await
        .unwrap();
    app.store
        .batches()
        .record_batch(&app.org, received("b3", "aa"))
        .await
        .unwrap();

    let list = app.get("/v1/batches?limit=2").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["total"], 3);
    assert_eq!(list.body["totalPages"], 2);
    let first = &list.body["data"][0];
    assert_eq!(first["id"], "b3");
    assert_eq!(first["state"], "duplicate");
    assert_eq!(first["duplicateOf"], "b1");
    assert_eq!(first["fileName"], "b3.csv");
    assert_eq!(first["username"], "acme-upload");

    let one = app.get("/v1/batches/b1").await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["state"], "received");
    assert_eq!(one.body["size"], 1234);
    assert_eq!(
        one.body["rows"],
        serde_json::Value::Null,
        "not processed yet"
    );
}

async fn another_organisations_batches_are_not_found(app: TestApp) {
    app.store
        .batches()
        .record_batch(&app.org, received("b1", "aa"))
        .await
        .unwrap();
    let other = app.other_tenant().await;
    let listed = app
        .send(Method::GET, "/v1/batches", Some(&other), None, None)
        .await;
    assert_eq!(listed.body["total"], 0);
    let one = app
        .send(Method::GET, "/v1/batches/b1", Some(&other), None, None)
        .await;
    assert_eq!(one.status, StatusCode::NOT_FOUND);
    assert_eq!(one.problem().code, "not_found");
    let bad = app.get("/v1/batches?page=0").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.body["field"], "page");
}

app_tests!(
    batches_are_listed_newest_first_with_duplicates,
    another_organisations_batches_are_not_found,
);
