//! Products by similarity over HTTP: the vector search (permission, vectors as arrays or text,
//! every bad vector), recommendations and the deprecated suggestions.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::{TestApp, small_catalogue};

fn ids(reply: &Value) -> Vec<String> {
    reply
        .as_array()
        .unwrap_or_else(|| panic!("not a list: {reply}"))
        .iter()
        .map(|p| p["id"].as_str().unwrap().to_string())
        .collect()
}

async fn the_vector_search_needs_its_permission_and_a_good_vector(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let path = "/v1/products/vector-search";
    let denied = app.post(path, json!({"limit": 3, "text": "dinner"})).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN);
    assert_eq!(denied.problem().code, "permission_required");
    let malformed = app.post(path, json!({"limit": "lots"})).await;
    assert_eq!(
        malformed.status,
        StatusCode::FORBIDDEN,
        "the permission is checked first"
    );

    let key = app.vector_key().await;
    let search = |body: Value| app.send(Method::POST, path, Some(&key), None, Some(body));
    let found = search(json!({"limit": 3, "text": "dinner for two"})).await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_eq!(ids(&found.body)[0], "dinner");
    let distances: Vec<f64> = found
        .body
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["distance"].as_f64().unwrap())
        .collect();
    assert!(distances.windows(2).all(|d| d[0] <= d[1]), "{distances:?}");
    let null_vector = search(json!({"limit": 3, "text": "dinner for two", "vector": null})).await;
    assert_eq!(
        null_vector.body, found.body,
        "a null vector is one left out"
    );

    // The service's own space has 256 dimensions; a vector may be sent as text too.
    let mut axis = vec!["0"; 256];
    axis[7] = "1";
    let text = search(json!({"limit": 2, "vector": axis.join(",")})).await;
    assert_eq!(text.status, StatusCode::OK, "{}", text.body);
    assert_eq!(text.body.as_array().unwrap().len(), 2);
    // The same vector as a JSON array inside the string, as `JSON.stringify` writes it (an
    // exponent for small numbers), answers the same products.
    let mut written = vec!["0"; 256];
    written[7] = "1.0E0";
    written[8] = "1e-30";
    written[9] = "-0.0";
    for vector in [
        format!("[{}]", written.join(",")),
        format!(" [ {} ] ", written.join(", ")),
    ] {
        let inside = search(json!({"limit": 2, "vector": vector})).await;
        assert_eq!(inside.status, StatusCode::OK, "{}", inside.body);
        assert_eq!(ids(&inside.body), ids(&text.body));
    }

    for (body, field) in [
        (json!({"limit": 3, "vector": "[1, 0"}), "vector"),
        (json!({"limit": 3, "vector": "[]"}), "vector"),
        (json!({"limit": 3, "vector": "[[1, 0]]"}), "vector"),
        (json!({"limit": 3, "vector": "[1e99]"}), "vector"),
        (json!({"limit": 3, "vector": [1, 2, 3]}), "vector"),
        (json!({"limit": 3, "vector": vec![0; 256]}), "vector"),
        (json!({"limit": 3, "vector": "1, two, 3"}), "vector"),
        (json!({"limit": 3, "vector": []}), "vector"),
        (json!({"limit": 0, "text": "dinner"}), "limit"),
        (json!({"limit": 101, "text": "dinner"}), "limit"),
        (json!({"text": "dinner"}), "limit"),
        (json!({"limit": 3}), "vector"),
        (json!({"limit": 3, "text": "dinner", "vector": [1]}), "text"),
        (json!({"limit": 3, "text": " - "}), "text"),
        (json!({"limit": 3, "text": "a".repeat(2001)}), "text"),
    ] {
        let reply = search(body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.body["field"], field, "{body}: {}", reply.body);
    }
}

async fn imported_embeddings_are_searched_in_their_own_space(app: TestApp) {
    let mut doc = small_catalogue();
    for (i, e) in [[1.0, 0.0, 0.0], [0.9, 0.1, 0.0], [0.0, 0.0, 1.0]]
        .iter()
        .enumerate()
    {
        doc["products"][i]["embedding"] = json!(e);
    }
    app.import_catalogue(doc).await;
    let key = app.vector_key().await;
    let path = "/v1/products/vector-search";
    let found = app
        .send(
            Method::POST,
            path,
            Some(&key),
            None,
            Some(json!({"limit": 3, "vector": [1, 0, 0]})),
        )
        .await;
    assert_eq!(found.status, StatusCode::OK, "{}", found.body);
    assert_eq!(ids(&found.body), ["dinner", "picnic", "balloon"]);
    assert_eq!(found.body[0]["distance"], 0.0);
    let text = app
        .send(
            Method::POST,
            path,
            Some(&key),
            None,
            Some(json!({"limit": 3, "text": "dinner"})),
        )
        .await;
    assert_eq!(text.status, StatusCode::BAD_REQUEST);
    assert_eq!(text.body["field"], "text");
    let wrong = app
        .send(
            Method::POST,
            path,
            Some(&key),
            None,
            Some(json!({"limit": 3, "vector": [1, 0]})),
        )
        .await;
    assert_eq!(wrong.status, StatusCode::BAD_REQUEST);
    assert!(
        wrong.body["detail"]
            .as_str()
            .unwrap()
            .contains("3 dimensions"),
        "{}",
        wrong.body
    );

    let like = app.get("/v1/products/dinner/recommendations?limit=5").await;
    assert_eq!(like.status, StatusCode::OK, "{}", like.body);
    assert_eq!(
        ids(&like.body),
        ["picnic", "balloon"],
        "never the product itself"
    );
}

async fn recommendations_check_their_product_and_limit(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let like = app.get("/v1/products/picnic/recommendations?limit=1").await;
    assert_eq!(like.status, StatusCode::OK, "{}", like.body);
    assert_eq!(like.body.as_array().unwrap().len(), 1);
    assert_ne!(like.body[0]["id"], "picnic");
    assert_eq!(
        app.get("/v1/products/none/recommendations?limit=1")
            .await
            .status,
        StatusCode::NOT_FOUND
    );
    for query in ["", "?limit=0", "?limit=101", "?limit=many"] {
        let reply = app
            .get(&format!("/v1/products/picnic/recommendations{query}"))
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{query}");
        assert_eq!(reply.body["field"], "limit");
    }
}

async fn suggestions_are_deprecated_and_point_to_the_search(app: TestApp) {
    app.import_catalogue(small_catalogue()).await;
    let reply = app.get("/v1/products/suggestions?q=fam").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.headers["deprecation"], "true");
    assert_eq!(
        reply.headers["link"],
        "</v1/products?search=fam>; rel=\"successor-version\""
    );
    assert_eq!(
        reply.body["tags"],
        json!([{"id": "family", "name": "Family"}])
    );
    assert_eq!(ids(&reply.body["products"]), ["picnic"]);
    assert_eq!(reply.body["categories"], json!([]));
    let food = app.get("/v1/products/suggestions?q=Food").await;
    assert_eq!(food.body["categories"][0]["id"], "food");
    let missing = app.get("/v1/products/suggestions").await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.body["field"], "q");
}

app_tests!(
    the_vector_search_needs_its_permission_and_a_good_vector,
    imported_embeddings_are_searched_in_their_own_space,
    recommendations_check_their_product_and_limit,
    suggestions_are_deprecated_and_point_to_the_search,
);
