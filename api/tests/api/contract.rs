//! The OpenAPI document as the contract: what it says a body needs and what the service then
//! refuses. (CI also runs schemathesis against the whole document; see `.ci/contract`.)

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Tokens;

use crate::app_tests;
use crate::helpers::TestApp;

async fn document(app: &TestApp) -> Value {
    app.send(Method::GET, "/openapi.json", None, None, None)
        .await
        .body
}

async fn the_document_names_required_fields_bounds_and_problem_answers(app: TestApp) {
    let doc = document(&app).await;
    let schemas = &doc["components"]["schemas"];
    let required = |name: &str| -> Vec<String> {
        let mut fields: Vec<String> = schemas[name]["required"]
            .as_array()
            .unwrap_or_else(|| panic!("{name} has required fields"))
            .iter()
            .map(|f| f.as_str().unwrap().to_string())
            .collect();
        fields.sort();
        fields
    };
    assert_eq!(
        required("MemberInput"),
        ["externalId", "firstName", "userId"]
    );
    assert_eq!(
        required("GuideMemberInput"),
        ["externalID", "name", "userId"]
    );
    assert_eq!(
        required("BurnInput"),
        ["amount", "description", "externalId", "walletId"]
    );
    assert_eq!(required("EarnBody"), ["amount", "date", "id", "walletId"]);
    assert!(
        schemas["MemberUpdate"]["required"].is_null(),
        "an update needs nothing"
    );
    assert_eq!(
        schemas["MemberInput"]["properties"]["firstName"]["maxLength"],
        100
    );
    assert_eq!(
        schemas["BurnInput"]["properties"]["amount"]["exclusiveMinimum"],
        0
    );

    let paging = doc["paths"]["/v1/members"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let page = paging.iter().find(|p| p["name"] == "page").unwrap();
    assert_eq!(page["schema"]["maximum"], i32::MAX);

    for (path, item) in doc["paths"].as_object().unwrap() {
        for (method, operation) in item.as_object().unwrap() {
            let responses = operation["responses"].as_object().unwrap();
            if path.starts_with("/v1") || path.starts_with("/api") {
                for status in ["400", "401", "403"] {
                    assert!(responses.contains_key(status), "{method} {path}: {status}");
                }
            }
            for (status, response) in responses {
                if !status.starts_with('2') {
                    assert!(
                        response["content"]["application/problem+json"].is_object(),
                        "{method} {path} {status} is a problem"
                    );
                }
            }
        }
    }
}

async fn a_page_past_the_documented_maximum_is_refused(app: TestApp) {
    let reply = app.get("/v1/members?page=2147483648").await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["field"], "page");
    let twice = app.get("/v1/members?limit=5&limit=6").await;
    assert_eq!(twice.status, StatusCode::BAD_REQUEST, "{}", twice.body);
    assert_eq!(twice.body["field"], "limit");
}

async fn a_blank_version_header_is_an_unknown_version(app: TestApp) {
    let reply = app
        .send(Method::GET, "/v1/api-key", Some(&app.key), Some(" "), None)
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.problem().code, "unsupported_version");
}

async fn text_numbers_and_dates_are_read_as_the_document_says(app: TestApp) {
    let member = json!({"firstName": "Ada\u{0}", "userId": "u-1", "externalId": "m-1"});
    let nul = app.post("/v1/members", member).await;
    assert_eq!(nul.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        nul.body["field"], "firstName",
        "PostgreSQL cannot store NUL"
    );

    let preferences = json!({"firstName": "Ada", "userId": "u-1", "externalId": "m-1",
        "communicationPreferences": {"general": [true, false]}});
    let array = app.post("/v1/members", preferences).await;
    assert_eq!(array.status, StatusCode::BAD_REQUEST);
    assert_eq!(array.body["field"], "communicationPreferences.general");

    let wallet = app.member_with_wallet().await;
    let earn = |amount: Value, date: &str| {
        json!({"id": format!("e-{date}-{amount}"), "walletId": wallet, "amount": amount,
            "date": date})
    };
    for date in ["2026-11-18 10:00:00Z", "2026-11-18T10:00:60Z"] {
        let reply = app
            .post("/v1/transactions/earn", earn(json!(10), date))
            .await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{date}");
        assert_eq!(reply.body["field"], "date", "{date}");
    }
    let large = app
        .post(
            "/v1/transactions/earn",
            earn(json!(1e16), "2026-11-18T10:00:00Z"),
        )
        .await;
    assert_eq!(large.status, StatusCode::BAD_REQUEST);
    assert_eq!(large.body["field"], "amount");
    // The nearest double to this is just past the bound, not the bound itself.
    let just_past = app
        .post(
            "/v1/transactions/earn",
            earn(json!(1_000_000_000_000_000.1), "2026-11-18T10:00:00Z"),
        )
        .await;
    assert_eq!(
        just_past.status,
        StatusCode::BAD_REQUEST,
        "{}",
        just_past.body
    );
    // An exponent is read exactly; digits past 28 decimals are rounded, not refused.
    let tiny = app
        .earn_and_wait(earn(json!(1.5e-40), "2026-11-18T10:00:00Z"))
        .await;
    assert_eq!(tiny.status, "completed", "{tiny:?}");
    let scientific = app
        .earn_and_wait(earn(json!(2.5e1), "2026-11-18T11:00:00Z"))
        .await;
    assert_eq!(scientific.tokens, Some(Tokens::whole(25)), "{scientific:?}");

    let burn = json!({"walletId": wallet, "externalId": "b-1", "description": "too much",
        "amount": 2e12});
    let reply = app.post("/v1/transactions/burn", burn).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["field"], "amount");
}

/// Every keyword path of `value` (`/product/properties/id/maxLength`...), under `root`.
fn paths(value: &Value, root: &str, out: &mut std::collections::BTreeSet<String>) {
    let children: Vec<(String, &Value)> = match value {
        Value::Object(o) => o.iter().map(|(k, v)| (k.clone(), v)).collect(),
        Value::Array(a) => a
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        let path = format!("{root}/{key}");
        out.insert(path.clone());
        paths(child, &path, out);
    }
}

/// The catalogue import's body is the JSON Schema in `templates/`, with nothing lost on the way
/// into the OpenAPI document (its reader drops keywords it does not know).
async fn the_catalogue_body_is_the_format_json_schema_whole(app: TestApp) {
    let doc = document(&app).await;
    let body = &doc["paths"]["/v1/catalogue"]["put"]["requestBody"]["content"]["application/json"];
    assert_eq!(
        body["schema"]["$ref"],
        "#/components/schemas/CatalogueDocument"
    );
    let file: Value =
        serde_json::from_str(include_str!("../../../templates/catalogue.schema.json")).unwrap();
    let component = |def: &str| format!("Catalogue{}{}", def[..1].to_uppercase(), &def[1..]);
    let (mut expected, mut found) = (Default::default(), Default::default());
    let mut root = file.clone();
    for key in ["$schema", "$id", "$defs"] {
        root.as_object_mut().unwrap().remove(key);
    }
    paths(&root, "Document", &mut expected);
    paths(
        &doc["components"]["schemas"]["CatalogueDocument"],
        "Document",
        &mut found,
    );
    for (def, schema) in file["$defs"].as_object().unwrap() {
        paths(schema, def, &mut expected);
        paths(
            &doc["components"]["schemas"][component(def)],
            def,
            &mut found,
        );
    }
    let lost: Vec<_> = expected.difference(&found).collect();
    assert!(
        lost.is_empty(),
        "lost on the way into the OpenAPI document: {lost:?}"
    );
}

app_tests!(
    the_catalogue_body_is_the_format_json_schema_whole,
    the_document_names_required_fields_bounds_and_problem_answers,
    a_page_past_the_documented_maximum_is_refused,
    a_blank_version_header_is_an_unknown_version,
    text_numbers_and_dates_are_read_as_the_document_says,
);
