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
    assert!(params.iter().any(|p| p["name"] == "x-api-version"));
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
    assert!(init.body.as_str().unwrap().contains("/openapi.json"));
}

async fn unknown_routes_are_problems_and_requests_carry_ids(app: TestApp) {
    let reply = app.get("/v1/nothing-here").await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.body["code"], "not_found");
    assert!(!reply.headers["x-request-id"].is_empty());
    let wrong_method = app
        .send(Method::PUT, "/v1/members", Some(&app.key), None, None)
        .await;
    assert_eq!(wrong_method.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(wrong_method.body["code"], "method_not_allowed");
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
    assert_eq!(reply.body["code"], "payload_too_large");
}

app_tests!(
    a_client_request_id_is_kept_and_huge_bodies_refused,
    probes_answer_without_credentials,
    readiness_fails_when_the_database_is_gone,
    the_openapi_description_covers_the_routes,
    the_docs_page_serves_its_own_assets,
    unknown_routes_are_problems_and_requests_carry_ids,
);
