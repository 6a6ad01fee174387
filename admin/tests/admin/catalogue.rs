//! A campaign's catalogue through the admin API: tried first (a dry run by default), imported,
//! exported as the document it was imported from, each problem of a bad one named.

use reqwest::StatusCode;
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

async fn a_catalogue_is_tried_imported_and_exported(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let catalogue = format!("{base}/catalogue");
    let doc = json!({"products": [{"id": "mug", "name": "Mug",
        "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}]});
    // By default a dry run: the counts, nothing written.
    let tried = app
        .send(
            reqwest::Method::PUT,
            &catalogue,
            Some(&app.owner),
            Some(doc.clone()),
        )
        .await;
    let tried = tried.expect(StatusCode::OK);
    assert_eq!(tried["dryRun"], true);
    assert_eq!(tried["products"]["created"], 1);
    let exported = app.get(&catalogue, &app.owner).await;
    assert_eq!(exported.expect(StatusCode::OK)["products"], json!([]));
    // Applied; the export is the document again.
    let apply = format!("{catalogue}?dryRun=false");
    let made = app
        .send(reqwest::Method::PUT, &apply, Some(&app.owner), Some(doc))
        .await;
    assert_eq!(made.expect(StatusCode::OK)["dryRun"], false);
    let exported = app.get(&catalogue, &app.owner).await;
    let exported = exported.expect(StatusCode::OK).clone();
    assert_eq!(exported["products"][0]["id"], "mug");
    // The export imported again changes nothing; a document with problems names each.
    let again = app
        .send(
            reqwest::Method::PUT,
            &apply,
            Some(&app.owner),
            Some(exported),
        )
        .await;
    assert_eq!(again.expect(StatusCode::OK)["products"]["created"], 0);
    let bad = json!({"products": [{"id": "x", "variants": [{"id": "x-1", "price": -1}]}]});
    let reply = app
        .send(reqwest::Method::PUT, &apply, Some(&app.owner), Some(bad))
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert!(
        reply.body["errors"].as_array().unwrap().len() >= 2,
        "{}",
        reply.body
    );
    // A viewer exports but does not import.
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    app.get(&catalogue, &viewer).await.expect(StatusCode::OK);
    let reply = app
        .send(
            reqwest::Method::PUT,
            &catalogue,
            Some(&viewer),
            Some(json!({})),
        )
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
}

/// The client API's product search, with its filters and its checks, for an operator.
async fn products_are_searched_as_members_find_them(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let doc = json!({"products": [
        {"id": "mug", "name": "Blue mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 1500}]},
        {"id": "cup", "name": "Red cup", "variants": [{"id": "cup-1", "name": "Red", "price": 3}]}]});
    let apply = format!("{base}/catalogue?dryRun=false");
    let made = app
        .send(reqwest::Method::PUT, &apply, Some(&app.owner), Some(doc))
        .await;
    made.expect(StatusCode::OK);
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let found = app
        .get(&format!("{base}/products?search=mug"), &viewer)
        .await;
    let found = found.expect(StatusCode::OK);
    assert_eq!(found["total"], 1);
    assert_eq!(found["data"][0]["id"], "mug");
    let cheap = app
        .get(&format!("{base}/products?maxCost=10"), &viewer)
        .await;
    assert_eq!(cheap.expect(StatusCode::OK)["data"][0]["id"], "cup");
    let dearest = app
        .get(&format!("{base}/products?sort=price:desc&limit=1"), &viewer)
        .await;
    let dearest = dearest.expect(StatusCode::OK);
    assert_eq!(
        (
            dearest["data"][0]["id"].clone(),
            dearest["totalPages"].clone()
        ),
        (json!("mug"), json!(2))
    );
    let half = app
        .get(&format!("{base}/products?latitude=1"), &viewer)
        .await;
    assert_eq!(half.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(half.body["errors"][0]["field"], "longitude");
}

admin_tests!(
    a_catalogue_is_tried_imported_and_exported,
    products_are_searched_as_members_find_them
);
