//! Health, readiness, metrics, the OpenAPI description, the docs page and request ids.

use reqwest::{Method, StatusCode};

use crate::app_tests;
use crate::helpers::TestApp;

async fn probes_answer_without_credentials(app: TestApp) {
    for path in ["/healthz", "/readyz"] {
        let reply = app.send(Method::GET, path, None, None, None).await;
        assert_eq!(reply.status, StatusCode::OK, "{path}");
    }
    app.get("/v1/members").await;
    let metrics = app.send(Method::GET, "/metrics", None, None, None).await;
    let text = metrics.body.as_str().unwrap();
    assert!(
        text.contains(r#"http_requests_total{method="GET",route="/v1/members",status="200"}"#),
        "{text}"
    );
    assert!(
        text.contains("http_request_duration_seconds_bucket"),
        "{text}"
    );
}

async fn readiness_fails_when_the_database_is_gone(app: TestApp) {
    app.store.close().await;
    let reply = app.send(Method::GET, "/readyz", None, None, None).await;
    assert_eq!(reply.status, StatusCode::SERVICE_UNAVAILABLE);
    let alive = app.send(Method::GET, "/healthz", None, None, None).await;
    assert_eq!(alive.status, StatusCode::OK);
}

async fn the_openapi_description_covers_the_routes(app: TestApp) {
    let doc = app
        .send(Method::GET, "/openapi.json", None, None, None)
        .await
        .body;
    assert_eq!(doc["openapi"], "3.1.0");
    for path in [
        "/v1/api-key",
        "/v1/members",
        "/v1/members/{id}",
        "/v1/members/idp/{idp}/{id}",
        "/api/members",
    ] {
        assert!(doc["paths"][path].is_object(), "{path} missing");
    }
    let create = &doc["paths"]["/v1/members"]["post"];
    assert!(create["responses"]["401"].is_object() && create["responses"]["403"].is_object());
    let params = create["parameters"].as_array().unwrap();
    let version = serde_json::json!({"$ref": "#/components/parameters/InterfaceVersion"});
    assert!(params.contains(&version), "the version header, shared");
    assert!(doc["components"]["securitySchemes"]["apiKey"].is_object());
    // Every schema a reference points at is defined.
    let text = doc.to_string();
    for reference in text.split("#/components/schemas/").skip(1) {
        let name: String = reference
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect();
        assert!(
            doc["components"]["schemas"][&name].is_object(),
            "dangling $ref to {name}"
        );
    }
}

async fn the_docs_page_serves_its_own_assets(app: TestApp) {
    let page = app.send(Method::GET, "/docs/", None, None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = page.body.as_str().unwrap();
    assert!(html.contains("swagger-ui"), "{html}");
    assert!(
        !html.contains("https://"),
        "the page must not load anything from the internet"
    );
    let script = app
        .send(Method::GET, "/docs/swagger-ui-bundle.js", None, None, None)
        .await;
    assert_eq!(script.status, StatusCode::OK);
    let init = app
        .send(
            Method::GET,
            "/docs/swagger-initializer.js",
            None,
            None,
            None,
        )
        .await;
    let init = init.body.as_str().unwrap();
    for version in ["1.9.5", "1.6.2"] {
        assert!(
            init.contains(&format!("/openapi.json?version={version}")),
            "the page offers each version's document: {init}"
        );
    }
}

/// Each interface version has its own document, with that version's parameters and shapes.
async fn each_version_has_its_own_document(app: TestApp) {
    let app = &app;
    let document = |query: &str| {
        let path = format!("/openapi.json{query}");
        async move { app.send(Method::GET, &path, None, None, None).await }
    };
    let default = document("").await.body;
    let new = document("?version=1.9.5").await.body;
    let old = document("?version=1.6.2").await.body;
    assert_eq!(default, new, "1.9.5 is the default");
    assert_eq!(new["info"]["version"], "1.9.5");
    assert_eq!(old["info"]["version"], "1.6.2");
    let names = |doc: &serde_json::Value, path: &str| -> Vec<String> {
        doc["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|p| p["name"].as_str().map(String::from))
            .collect()
    };
    for (path, name) in [
        ("/v1/products", "minCost"),
        ("/v1/wallets", "ownerId"),
        ("/v1/orders", "acrossCampaigns"),
    ] {
        assert!(
            names(&new, path).contains(&name.to_string()),
            "{path} {name}"
        );
        assert!(
            !names(&old, path).contains(&name.to_string()),
            "{path} {name}"
        );
    }
    let version_header =
        |doc: &serde_json::Value| doc["components"]["schemas"]["InterfaceVersion"]["enum"].clone();
    assert_eq!(version_header(&old), serde_json::json!(["1.6.2"]));
    assert_eq!(version_header(&new), serde_json::json!(["1.9.5"]));
    let schemas = &old["components"]["schemas"];
    assert_eq!(
        schemas["WalletList"]["type"], "array",
        "1.6.2 wraps the page"
    );
    assert!(schemas.get("ListPreferences").is_some());
    assert!(schemas.get("FlagPreferences").is_none());

    let unknown = document("?version=2.0").await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.body["field"], "version");
}

async fn unknown_routes_are_problems_and_requests_carry_ids(app: TestApp) {
    let reply = app.get("/v1/nothing-here").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.problem().code, "not_found");
    assert!(!reply.headers["x-request-id"].is_empty());
    let wrong_method = app
        .send(Method::PUT, "/v1/members", Some(&app.key), None, None)
        .await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.problem().code, "method_not_allowed");
}

async fn a_client_request_id_is_kept_and_huge_bodies_refused(app: TestApp) {
    let response = reqwest::Client::new()
        .get(format!("{}/healthz", app.base))
        .header("x-request-id", "client-chosen-42")
        .send()
        .await
        .unwrap();
    assert_eq!(response.headers()["x-request-id"], "client-chosen-42");

    let huge = serde_json::json!({"firstName": "A", "userId": "u", "externalId": "c", "meta": {"blob": "x".repeat(3 << 20)}});
    let reply = app.post("/v1/members", huge).await;
    assert_eq!(reply.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(reply.problem().code, "payload_too_large");
}

app_tests!(
    each_version_has_its_own_document,
    a_client_request_id_is_kept_and_huge_bodies_refused,
    probes_answer_without_credentials,
    readiness_fails_when_the_database_is_gone,
    the_openapi_description_covers_the_routes,
    the_docs_page_serves_its_own_assets,
    unknown_routes_are_problems_and_requests_carry_ids,
);
