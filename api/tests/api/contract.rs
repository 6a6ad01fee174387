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
    // An exponent is read exactly; an amount has 6 decimals at most, as tokens do, so a digit
    // far past them is refused, not rounded away to nothing.
    for amount in [json!(1.5e-40), json!(10.0000001)] {
        let tiny = app
            .post(
                "/v1/transactions/earn",
                earn(amount.clone(), "2026-11-18T10:00:00Z"),
            )
            .await;
        assert_eq!(tiny.status, StatusCode::BAD_REQUEST, "{amount}");
        assert_eq!(tiny.body["field"], "amount", "{amount}");
    }
    let precise = app
        .earn_and_wait(earn(json!(1.000001), "2026-11-18T09:00:00Z"))
        .await;
    assert_eq!(precise.status, "completed", "{precise:?}");
    let scientific = app
        .earn_and_wait(earn(json!(2.5e1), "2026-11-18T11:00:00Z"))
        .await;
    assert_eq!(scientific.tokens, Some(Tokens::whole(25)), "{scientific:?}");

    let burn = json!({"walletId": wallet, "externalId": "b-1", "description": "too much",
        "amount": 2e12});
    let reply = app.post("/v1/transactions/burn", burn).await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(reply.body["field"], "amount");
    // Tokens have 6 decimals: a digit far past them is refused, not rounded away to nothing.
    for amount in [json!(2.5e-42), json!(1.0000001)] {
        let burn = json!({"walletId": wallet, "externalId": "b-2", "description": "dust",
            "amount": amount});
        let reply = app.post("/v1/transactions/burn", burn).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{amount}");
        assert_eq!(reply.body["field"], "amount", "{amount}");
    }
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

/// What a client generator needs of each version's document: every response described, the
/// version header one required parameter naming that version alone, parameters without
/// compositions it cannot read, closed sets as named enums and each resource named once.
async fn each_version_document_is_one_a_generator_reads(app: TestApp) {
    for version in ["1.9.5", "1.6.2"] {
        let doc = app
            .send(
                Method::GET,
                &format!("/openapi.json?version={version}"),
                None,
                None,
                None,
            )
            .await
            .body;
        assert_eq!(doc["info"]["version"], version);
        let header = &doc["components"]["parameters"]["InterfaceVersion"];
        assert_eq!(header["name"], "x-api-version");
        assert_eq!(header["required"], true);
        let schemas = &doc["components"]["schemas"];
        assert_eq!(schemas["InterfaceVersion"]["enum"], json!([version]));
        let reference = json!({"$ref": "#/components/parameters/InterfaceVersion"});
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for (status, response) in operation["responses"].as_object().unwrap() {
                    let description = response["description"].as_str().unwrap_or_default();
                    assert!(
                        !description.trim().is_empty(),
                        "{version} {method} {path} {status}"
                    );
                }
                let parameters = operation["parameters"].as_array().unwrap();
                if path.starts_with("/v1") || path.starts_with("/api") {
                    assert!(parameters.contains(&reference), "{version} {method} {path}");
                }
                for parameter in parameters {
                    let schema = parameter["schema"].to_string();
                    assert!(!schema.contains("allOf"), "{method} {path}: {schema}");
                }
            }
        }
        let enum_of = |schema: &str| -> Vec<String> {
            let values = schemas[schema]["enum"].as_array();
            let values = values.unwrap_or_else(|| panic!("{schema} is an enum"));
            values
                .iter()
                .map(|v| v.as_str().unwrap().to_string())
                .collect()
        };
        assert_eq!(enum_of("TransactionType"), ["EARN", "BURN", "EXPIRY"]);
        assert_eq!(
            enum_of("HoldStatus"),
            ["held", "captured", "voided", "lapsed"]
        );
        assert!(enum_of("EarnStatus").contains(&"completed".to_string()));
        assert!(enum_of("BatchState").contains(&"duplicate".to_string()));
        assert_eq!(enum_of("EndpointStatus"), ["enabled", "disabled"]);
        for (schema, field, named) in [
            ("TransactionView", "type", "TransactionType"),
            ("HoldView", "status", "HoldStatus"),
            ("EarnStatusView", "status", "EarnStatus"),
            ("BatchView", "state", "BatchState"),
            ("EndpointView", "status", "EndpointStatus"),
            ("EventView", "type", "EventType"),
        ] {
            assert_eq!(
                schemas[schema]["properties"][field]["$ref"],
                format!("#/components/schemas/{named}"),
                "{schema}.{field}"
            );
        }
        let page = &schemas["PagedList_TransactionView"]["properties"]["data"]["items"];
        assert_eq!(
            page,
            &json!({"$ref": "#/components/schemas/TransactionView"})
        );
        let text = doc.to_string();
        let copies = text.matches("\"rulesTrace\"").count();
        assert_eq!(
            copies, 3,
            "TransactionView, EarnStatusView and AwardView name it, once each"
        );
        let source = &schemas["TransactionView"]["properties"]["sourceAmount"];
        assert_eq!(source["type"], json!(["number", "null"]));
    }
}

/// Without `?version`, the document follows the version header, as every other request does.
async fn the_document_follows_the_version_header(app: TestApp) {
    let version = |reply: &crate::helpers::Reply| reply.body["info"]["version"].clone();
    let by_header = app
        .send(Method::GET, "/openapi.json", None, Some("1.6.2"), None)
        .await;
    assert_eq!(version(&by_header), "1.6.2");
    let plain = app
        .send(Method::GET, "/openapi.json", None, None, None)
        .await;
    assert_eq!(version(&plain), "1.9.5");
    let query_first = app
        .send(
            Method::GET,
            "/openapi.json?version=1.9.5",
            None,
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(version(&query_first), "1.9.5");
    let unknown = app
        .send(Method::GET, "/openapi.json", None, Some("2.0"), None)
        .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST);
    assert_eq!(unknown.problem().code, "unsupported_version");
    assert_eq!(unknown.fields(), ["x-api-version"]);
}

/// `/docs` finds its documents by relative addresses and asks no validator elsewhere.
async fn the_docs_page_calls_no_other_host(app: TestApp) {
    let initializer = app
        .send(
            Method::GET,
            "/docs/swagger-initializer.js",
            None,
            None,
            None,
        )
        .await;
    assert_eq!(initializer.status, StatusCode::OK);
    let script: String = initializer
        .body
        .as_str()
        .unwrap()
        .split_whitespace()
        .collect();
    assert!(script.contains(r#""validatorUrl":"none""#), "{script}");
    assert!(
        script.contains(r#""url":"../openapi.json?version=1.9.5""#),
        "{script}"
    );
    assert!(
        !script.contains("http://") && !script.contains("https://"),
        "{script}"
    );
    let page = app.send(Method::GET, "/docs/", None, None, None).await;
    let page = page.body.as_str().unwrap();
    for attribute in ["src=\"", "href=\""] {
        for address in page.split(attribute).skip(1) {
            assert!(
                !address.starts_with("http") && !address.starts_with("//"),
                "{address}"
            );
        }
    }
}

app_tests!(
    each_version_document_is_one_a_generator_reads,
    the_document_follows_the_version_header,
    the_docs_page_calls_no_other_host,
    the_catalogue_body_is_the_format_json_schema_whole,
    the_document_names_required_fields_bounds_and_problem_answers,
    a_page_past_the_documented_maximum_is_refused,
    a_blank_version_header_is_an_unknown_version,
    text_numbers_and_dates_are_read_as_the_document_says,
);
