//! Products over HTTP: the search's parameters and their errors, the product's shape, a single
//! product, freshness after an import, and tenant isolation. (Every filter's behaviour is
//! covered against the index itself in `store/tests/catalogue_search.rs`.)

use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::app_tests;
use crate::helpers::{TestApp, small_catalogue};

async fn products_are_listed_in_the_seed_shape(app: TestApp) {
    let mut doc = small_catalogue();
    doc["products"][0]["branches"] = json!([
        {"id": "far", "name": "Stellenbosch", "address": {"latitude": -33.9346, "longitude": 18.8602}},
        {"id": "near", "name": "Cape Town", "address": {"city": "Cape Town", "latitude": -33.9249, "longitude": 18.4241}}
    ]);
    app.import_catalogue(doc).await;
    let list = app.get("/v1/products").await;
    assert_eq!(list.status, StatusCode::OK, "{}", list.body);
    assert_eq!(list.body["total"], 3);
    let names: Vec<_> = list.data().iter().map(|p| p["name"].clone()).collect();
    assert_eq!(
        names,
        ["Balloon flight", "Dinner for two", "Family picnic"],
        "by name"
    );
    let dinner = &list.data()[1];
    assert_eq!(dinner["category"], "Food & drink", "the category's name");
    assert_eq!(dinner["tags"], json!(["Vegetarian"]));
    assert_eq!(dinner["currency"], "PTS");
    assert_eq!(dinner["variants"][0]["price"], 2500);
    assert_eq!(dinner["variants"][0]["tier"]["name"], "Gold");
    assert_eq!(dinner["variants"][0]["available"], true);
    assert_eq!(dinner["weekdays"]["sun"], true);
    assert!(dinner.get("distance").is_none());

    // A geofence: distances on the product and its branches, nearest branch first.
    let near = app
        .get("/v1/products?latitude=-33.9249&longitude=18.4241&radius=50")
        .await;
    assert_eq!(near.status, StatusCode::OK, "{}", near.body);
    let found = &near.data()[0];
    assert_eq!(found["id"], "dinner");
    assert_eq!(found["distance"], 0.0);
    assert_eq!(found["branches"][0]["id"], "near");
    assert!(found["branches"][1]["distance"].as_f64().unwrap() > 40.0);
    // The default radius (10 km) leaves out the branch 19.5 km away.
    let default = app
        .get("/v1/products?latitude=-34.1&longitude=18.42&sort=name:desc")
        .await;
    assert_eq!(default.body["total"], 0, "{}", default.body);

    let one = app.get("/v1/products/picnic").await;
    assert_eq!(one.status, StatusCode::OK);
    assert_eq!(one.body["name"], "Family picnic");
    let missing = app.get("/v1/products/none").await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

async fn search_parameters_are_checked_together(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    for (query, fields) in [
        ("latitude=10", vec!["longitude"]),
        ("longitude=10&radius=5", vec!["latitude"]),
        ("radius=5", vec!["radius"]),
        ("latitude=91&longitude=0", vec!["latitude"]),
        ("latitude=1&longitude=1&radius=0", vec!["radius"]),
        ("tierPrecedenceOp=gt", vec!["tierPrecedenceOp"]),
        ("tierPrecedence=-1", vec!["tierPrecedence"]),
        ("sort=price", vec!["sort"]),
        ("sort=weight:asc", vec!["sort"]),
        ("minCost=1.0000001", vec!["minCost"]),
        ("maxCost=lots&sort=name:up", vec!["maxCost", "sort"]),
    ] {
        let reply = app.get(&format!("/v1/products?{query}")).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), fields, "{query}");
    }
    let op = app
        .get("/v1/products?tierPrecedenceOp=sometimes&tierPrecedence=1")
        .await;
    assert_eq!(op.status, StatusCode::BAD_REQUEST);
    assert_eq!(op.body["field"], "tierPrecedenceOp");

    // Cost bounds are a 1.9.5 filter.
    let old = app
        .send(
            Method::GET,
            "/v1/products?minCost=10",
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(old.status, StatusCode::BAD_REQUEST);
    assert_eq!(old.fields(), ["minCost"]);
    let cheap = app.get("/v1/products?maxCost=800&sort=price:asc").await;
    let ids: Vec<_> = cheap.data().iter().map(|p| p["id"].clone()).collect();
    assert_eq!(ids, ["picnic"]);
    let precedence = app
        .get("/v1/products?tierPrecedence=1&tierPrecedenceOp=gt")
        .await;
    assert_eq!(
        precedence.data().len(),
        0,
        "Silver (2) requires no variant here"
    );
    let searched = app.get("/v1/products?search=diner").await;
    assert_eq!(searched.data()[0]["id"], "dinner", "a typo is forgiven");
}

async fn a_tier_is_found_by_the_id_the_catalogue_gave_it(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let tiers = app.get("/v1/tiers?name=Gold").await;
    let service_id = tiers.data()[0]["id"].as_str().unwrap().to_string();
    assert_ne!(service_id, "gold", "the service gives tiers ids of its own");
    // The document called it `gold`: both ids find the dinner that requires it.
    for tier in ["gold", service_id.as_str()] {
        let found = app.get(&format!("/v1/products?tierId={tier}")).await;
        let ids: Vec<_> = found.data().iter().map(|p| p["id"].clone()).collect();
        assert_eq!(ids, ["dinner"], "tierId={tier}");
    }
    assert_eq!(
        app.get("/v1/products?tierId=platinum").await.body["total"],
        0
    );
    // Imported again under the same document id, it stays the one tier.
    let mut again = small_catalogue();
    again["tiers"][0]["name"] = json!("Golden");
    app.import_catalogue(again).await;
    let tiers = app.get("/v1/tiers").await;
    assert_eq!(tiers.body["total"], 2, "{}", tiers.body);
    assert_eq!(tiers.data()[0]["id"], service_id.as_str());
    assert_eq!(tiers.data()[0]["name"], "Golden");
    assert_eq!(app.get("/v1/products?tierId=gold").await.body["total"], 1);
}

async fn an_import_shows_in_searches_at_once(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    assert_eq!(app.get("/v1/products").await.body["total"], 3);
    let mut more = small_catalogue();
    more["products"]
        .as_array_mut()
        .unwrap()
        .push(json!({"id": "kayak", "name": "Kayak tour",
        "variants": [{"id": "kayak-1", "name": "Morning", "price": 700}]}));
    app.import_catalogue(more).await;
    assert_eq!(app.get("/v1/products").await.body["total"], 4);
    assert_eq!(
        app.get("/v1/products?search=kayak").await.data()[0]["id"],
        "kayak"
    );
}

async fn another_campaign_finds_no_products(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let other = app.other_tenant().await;
    let list = app
        .send(Method::GET, "/v1/products", Some(&other), None, None)
        .await;
    assert_eq!(list.body["total"], 0);
    let one = app
        .send(Method::GET, "/v1/products/dinner", Some(&other), None, None)
        .await;
    assert_eq!(one.status, StatusCode::NOT_FOUND);
}

app_tests!(
    products_are_listed_in_the_seed_shape,
    search_parameters_are_checked_together,
    a_tier_is_found_by_the_id_the_catalogue_gave_it,
    an_import_shows_in_searches_at_once,
    another_campaign_finds_no_products,
);
