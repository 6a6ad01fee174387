//! The catalogue over HTTP: the import (permission, every problem with its path, dry runs) and
//! the lists of tiers, categories and tags with their filters, per campaign.

use reqwest::StatusCode;
use serde_json::json;

use crate::app_tests;
use crate::helpers::{TestApp, small_catalogue};

async fn importing_needs_the_catalogue_write_permission(app: TestApp) {
    let reply = app.put_catalogue(&app.key, "", small_catalogue()).await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN, "{}", reply.body);
    assert_eq!(reply.problem().code, "permission_required");
    assert_eq!(app.get("/v1/categories").await.body["total"], 0);
}

async fn an_import_answers_its_counts_and_every_problem_with_its_path(app: TestApp) {
    let key = app.catalogue_key().await;
    let mut bad = small_catalogue();
    bad["products"][0]["variants"][0]["price"] = json!(0);
    bad["products"][2]["category"] = json!("flights");
    let refused = app.put_catalogue(&key, "", bad).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    // A faulty value and an unknown reference, named in one answer.
    assert_eq!(
        refused.fields(),
        ["products[0].variants[0].price", "products[2].category"]
    );

    let mut unknown = small_catalogue();
    unknown["products"][2]["category"] = json!("flights");
    unknown["products"][1]["tags"] = json!(["family", "outdoor"]);
    let refused = app.put_catalogue(&key, "", unknown).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        refused.fields(),
        ["products[1].tags[1]", "products[2].category"]
    );

    let dry = app
        .put_catalogue(&key, "?dryRun=true", small_catalogue())
        .await;
    assert_eq!(dry.status, StatusCode::OK, "{}", dry.body);
    assert_eq!(dry.body["dryRun"], true);
    assert_eq!(dry.body["products"]["created"], 3);
    assert_eq!(
        app.get("/v1/categories").await.body["total"],
        0,
        "a dry run writes nothing"
    );

    let done = app.import_catalogue(small_catalogue()).await;
    assert_eq!(done.products.created, 3);
    assert_eq!(done.version, 1);
    let again = app.import_catalogue(small_catalogue()).await;
    let products = &again.products;
    assert_eq!(
        (products.created, products.updated, products.removed),
        (0, 3, 0)
    );
}

async fn a_body_that_is_not_an_object_is_one_problem(app: TestApp) {
    let key = app.catalogue_key().await;
    let reply = app
        .put_catalogue(&key, "", json!(["not", "an", "object"]))
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.fields(), ["$"]);
}

async fn tiers_categories_and_tags_are_listed_and_filtered(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let tiers = app.get("/v1/tiers").await;
    assert_eq!(tiers.status, StatusCode::OK, "{}", tiers.body);
    let names: Vec<_> = tiers.data().iter().map(|t| t["name"].clone()).collect();
    assert_eq!(names, ["Gold", "Silver"], "highest priority first");
    // Names compare without letter case, as category names do.
    for name in ["Silver", "silver", "SILVER"] {
        let found = app.get(&format!("/v1/tiers?name={name}")).await;
        assert_eq!(found.data().len(), 1, "{name}");
    }
    assert_eq!(app.get("/v1/tiers?name=Silv").await.body["total"], 0);
    assert_eq!(
        app.get("/v1/tiers?precedence=1").await.data()[0]["name"],
        "Gold"
    );
    assert_eq!(app.get("/v1/tiers?precedence=7").await.body["total"], 0);
    let bad = app.get("/v1/tiers?precedence=first").await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.fields(), ["precedence"]);

    let categories = app.get("/v1/categories").await;
    assert_eq!(categories.body["total"], 2);
    assert_eq!(
        categories.data()[0],
        json!({"id": "food", "name": "Food & drink"})
    );
    let one = app.get("/v1/categories?categoryId=trips").await;
    assert_eq!(one.data(), [json!({"id": "trips", "name": "Trips"})]);
    assert_eq!(
        app.get("/v1/categories?categoryId=none").await.body["total"],
        0
    );

    let tags = app.get("/v1/tags?tagId=family").await;
    assert_eq!(tags.data(), [json!({"id": "family", "name": "Family"})]);
    assert_eq!(app.get("/v1/tags?limit=1").await.body["totalPages"], 2);
}

async fn another_campaign_sees_none_of_it(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let other = app.other_tenant().await;
    for path in ["/v1/categories", "/v1/tags", "/v1/tiers"] {
        let reply = app
            .send(reqwest::Method::GET, path, Some(&other), None, None)
            .await;
        assert_eq!(reply.status, StatusCode::OK);
        assert_eq!(reply.body["total"], 0, "{path}");
    }
}

async fn a_tier_renamed_onto_another_is_a_conflict(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    // Gold, matched by the id the service gave it, would take Silver's name.
    let tiers = app.get("/v1/tiers").await;
    let gold_id = tiers.data()[0]["id"].as_str().unwrap().to_string();
    let mut clash = small_catalogue();
    clash["tiers"] = json!([{"id": gold_id, "name": "Silver", "precedence": 1}]);
    clash["products"][0]["variants"][0]["tier"] = json!(gold_id);
    let key = app.catalogue_key().await;
    let reply = app.put_catalogue(&key, "", clash).await;
    assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
    assert_eq!(reply.body["field"], "tiers");
}

app_tests!(
    a_tier_renamed_onto_another_is_a_conflict,
    importing_needs_the_catalogue_write_permission,
    an_import_answers_its_counts_and_every_problem_with_its_path,
    a_body_that_is_not_an_object_is_one_problem,
    tiers_categories_and_tags_are_listed_and_filtered,
    another_campaign_sees_none_of_it,
);
