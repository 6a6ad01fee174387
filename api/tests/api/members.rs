//! Members in both versions, the member guide's alias, duplicates, bad bodies, deletion and
//! tenant isolation.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::TestApp;

fn member_body() -> Value {
    json!({
        "firstName": "Ada",
        "lastName": "Lovelace",
        "email": "ada@example.com",
        "phone": "+44 20 7946 0000",
        "userId": "auth0|123",
        "idp": "auth0",
        "externalId": "card-1",
        "meta": {"segment": {"name": "gold"}, "newsletter": true},
        "communicationPreferences": {"marketing": {"email": true, "sms": false}, "order": {"sms": true}}
    })
}

async fn members_are_created_found_and_listed(app: TestApp) {
    let created = app.post("/v1/members", member_body()).await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let member = &created.body;
    let id = member["id"].as_str().unwrap();
    assert_eq!(member["firstName"], "Ada");
    assert_eq!(member["status"], "active");
    assert_eq!(member["idp"], "auth0");
    assert_eq!(
        member["meta"],
        json!({"segment": {"name": "gold"}, "newsletter": true})
    );
    let prefs = &member["communicationPreferences"];
    assert_eq!(prefs["marketing"], json!({"email": true, "sms": false}));
    assert_eq!(prefs["order"], json!({"email": false, "sms": true}));
    assert_eq!(
        prefs["general"],
        json!({"email": false, "sms": false}),
        "off until opted in"
    );

    let found = app.get(&format!("/v1/members/{id}")).await;
    assert_eq!(found.body, created.body);
    let by_idp = app.get("/v1/members/idp/auth0/auth0%7C123").await;
    assert_eq!(by_idp.status, StatusCode::OK, "{}", by_idp.body);
    assert_eq!(by_idp.body["id"], id);
    assert_eq!(
        app.get("/v1/members/idp/google/auth0%7C123").await.status,
        StatusCode::NOT_FOUND
    );
    let list = app.get("/v1/members").await;
    assert_eq!(list.body["data"][0]["id"], id);

    let plain = app
        .post(
            "/v1/members",
            json!({"firstName": "Bo", "userId": "u2", "externalId": "card-2"}),
        )
        .await;
    assert_eq!(plain.body["idp"], "reference", "idp defaults to reference");
}

async fn version_1_6_2_speaks_channel_lists_of_the_same_preferences(app: TestApp) {
    let body = json!({
        "firstName": "Ada", "userId": "u1", "externalId": "card-1",
        "communicationPreferences": {"general": {"channels": ["email", "sms"]}, "earn": {"channels": ["sms"]}}
    });
    let created = app
        .send(
            Method::POST,
            "/v1/members",
            Some(&app.key),
            Some("1.6.2"),
            Some(body),
        )
        .await;
    assert_eq!(created.status, StatusCode::OK, "{}", created.body);
    let prefs = &created.body["communicationPreferences"];
    assert_eq!(prefs["general"], json!({"channels": ["email", "sms"]}));
    assert_eq!(prefs["earn"], json!({"channels": ["sms"]}));
    assert_eq!(prefs["order"], json!({"channels": []}));

    let id = created.body["id"].as_str().unwrap();
    let newer = app.get(&format!("/v1/members/{id}")).await;
    assert_eq!(
        newer.body["communicationPreferences"]["general"],
        json!({"email": true, "sms": true})
    );
    assert_eq!(
        newer.body["communicationPreferences"]["earn"],
        json!({"email": false, "sms": true})
    );

    // Each version refuses the other's shape and says which version it belongs to.
    let flags = json!({"communicationPreferences": {"general": {"email": true}}});
    let reply = app
        .send(
            Method::PATCH,
            &format!("/v1/members/{id}"),
            Some(&app.key),
            Some("1.6.2"),
            Some(flags),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.body["field"],
        "communicationPreferences.general.email"
    );
    assert!(
        reply.body["detail"].as_str().unwrap().contains("1.9.5"),
        "{}",
        reply.body
    );
    let lists = json!({"communicationPreferences": {"general": {"channels": ["email"]}}});
    let reply = app
        .send(
            Method::PATCH,
            &format!("/v1/members/{id}"),
            Some(&app.key),
            None,
            Some(lists),
        )
        .await;
    assert_eq!(reply.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        reply.body["field"],
        "communicationPreferences.general.channels"
    );
    assert!(
        reply.body["detail"].as_str().unwrap().contains("1.6.2"),
        "{}",
        reply.body
    );
}

async fn updates_change_only_what_they_name(app: TestApp) {
    let id = app.member_id(member_body()).await;
    let path = format!("/v1/members/{id}");
    let patch = json!({
        "status": "inactive",
        "phone": null,
        "communicationPreferences": {"marketing": {"sms": true}}
    });
    let reply = app
        .send(Method::PATCH, &path, Some(&app.key), None, Some(patch))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let member = &reply.body;
    assert_eq!(member["status"], "inactive");
    assert_eq!(member["phone"], Value::Null, "null clears");
    assert_eq!(member["lastName"], "Lovelace", "absent keeps");
    assert_eq!(
        member["communicationPreferences"]["marketing"],
        json!({"email": true, "sms": true})
    );
    assert_eq!(
        member["communicationPreferences"]["order"],
        json!({"email": false, "sms": true})
    );
    assert_eq!(app.get(&path).await.body, reply.body);

    // 1.9.5 cannot change externalId; 1.6.2 can.
    let change = json!({"externalId": "card-9"});
    let refused = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            None,
            Some(change.clone()),
        )
        .await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST);
    assert_eq!(refused.body["field"], "externalId");
    let allowed = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            Some("1.6.2"),
            Some(change),
        )
        .await;
    assert_eq!(allowed.status, StatusCode::OK, "{}", allowed.body);
    assert_eq!(allowed.body["externalId"], "card-9");

    let missing = app
        .send(
            Method::PATCH,
            "/v1/members/no-such-id",
            Some(&app.key),
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

async fn duplicates_are_409_naming_the_field(app: TestApp) {
    app.post(
        "/v1/members",
        json!({"firstName": "A", "userId": "u1", "externalId": "card-1"}),
    )
    .await;
    let same_card = app
        .post(
            "/v1/members",
            json!({"firstName": "B", "userId": "u2", "externalId": "card-1"}),
        )
        .await;
    assert_eq!(same_card.status, StatusCode::CONFLICT);
    assert_eq!(same_card.problem().code, "already_exists");
    assert_eq!(same_card.body["field"], "externalId");
    let same_user = app
        .post(
            "/v1/members",
            json!({"firstName": "B", "userId": "u1", "externalId": "card-2"}),
        )
        .await;
    assert_eq!(same_user.status, StatusCode::CONFLICT);
    assert_eq!(same_user.body["field"], "userId");
    // The same user id at another identity provider is another person.
    let other_idp = app
        .post(
            "/v1/members",
            json!({"firstName": "B", "idp": "google", "userId": "u1", "externalId": "card-2"}),
        )
        .await;
    assert_eq!(other_idp.status, StatusCode::OK);

    let b = app
        .post(
            "/v1/members",
            json!({"firstName": "C", "userId": "u3", "externalId": "card-3"}),
        )
        .await;
    let path = format!("/v1/members/{}", b.body["id"].as_str().unwrap());
    let clash = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            Some("1.6.2"),
            Some(json!({"externalId": "card-1"})),
        )
        .await;
    assert_eq!(clash.status, StatusCode::CONFLICT);
    assert_eq!(clash.body["field"], "externalId");
}

async fn concurrent_duplicate_creates_make_one_member(app: TestApp) {
    let app = std::sync::Arc::new(app);
    let mut tasks = Vec::new();
    for i in 0..20 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            let body = json!({"firstName": "A", "userId": format!("u{i}"), "externalId": "card-1"});
            app.post("/v1/members", body).await.status
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    assert_eq!(
        statuses.iter().filter(|s| **s == StatusCode::OK).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|s| **s == StatusCode::CONFLICT)
            .count(),
        19,
        "{statuses:?}"
    );
    assert_eq!(app.get("/v1/members?limit=0").await.body["total"], 1);
}

async fn bad_bodies_are_400_naming_the_field(app: TestApp) {
    let cases = [
        (json!({}), vec!["firstName", "userId", "externalId"]),
        (
            json!({"firstName": 5, "userId": "u", "externalId": "c"}),
            vec!["firstName"],
        ),
        (
            json!({"firstName": "  ", "userId": "u", "externalId": "c"}),
            vec!["firstName"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "email": "not-an-email"}),
            vec!["email"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "phone": "call me"}),
            vec!["phone"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "status": "banned"}),
            vec!["status"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "meta": [1, 2]}),
            vec!["meta"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "x".repeat(129)}),
            vec!["externalId"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "communicationPreferences": {"sports": {"email": true}}}),
            vec!["communicationPreferences.sports"],
        ),
        (
            json!({"firstName": "A", "userId": "u", "externalId": "c", "communicationPreferences": {"general": {"email": "yes"}}}),
            vec!["communicationPreferences.general.email"],
        ),
    ];
    for (body, fields) in cases {
        let reply = app.post("/v1/members", body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.problem().code, "validation_failed", "{body}");
        assert_eq!(reply.fields(), fields, "{body}: {}", reply.body);
    }
    for raw in ["{\"firstName\": ", "[1, 2]", "\"text\""] {
        let response = reqwest::Client::new()
            .post(format!("{}/v1/members", app.base))
            .header("x-api-key", &app.key.api_key)
            .header("x-api-secret", &app.key.secret)
            .header("content-type", "application/json")
            .body(raw)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), StatusCode::BAD_REQUEST, "{raw}");
    }
    assert_eq!(
        app.get("/v1/members?limit=0").await.body["total"],
        0,
        "nothing was stored"
    );
}

async fn deleted_members_are_gone_and_their_data_erased(app: TestApp) {
    let id = app.member_id(member_body()).await;
    let path = format!("/v1/members/{id}");
    let deleted = app
        .send(Method::DELETE, &path, Some(&app.key), None, None)
        .await;
    assert_eq!(deleted.status, StatusCode::OK);
    assert_eq!(deleted.body["id"], id);
    assert_eq!(app.get(&path).await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        app.get("/v1/members/idp/auth0/auth0%7C123").await.status,
        StatusCode::NOT_FOUND
    );
    assert_eq!(app.get("/v1/members?limit=0").await.body["total"], 0);
    let again = app
        .send(Method::DELETE, &path, Some(&app.key), None, None)
        .await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);
    // The erased identifiers are free for a new member.
    assert_eq!(
        app.post("/v1/members", member_body()).await.status,
        StatusCode::OK
    );
}

async fn the_member_guide_alias_takes_its_own_field_names(app: TestApp) {
    let body = json!({"name": "Ada", "email": "ada@example.com", "externalID": "card-7", "idp": "reference", "userId": "u7"});
    let reply = app.post("/api/members", body).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    assert_eq!(reply.body["firstName"], "Ada");
    assert_eq!(reply.body["externalId"], "card-7");
    let id = reply.body["id"].as_str().unwrap();
    assert_eq!(
        app.get(&format!("/v1/members/{id}")).await.status,
        StatusCode::OK
    );

    let missing = app
        .post("/api/members", json!({"email": "a@b.co", "userId": "u8"}))
        .await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        missing.fields(),
        ["name", "externalID"],
        "errors use the guide's names"
    );
}

async fn another_organisation_cannot_see_or_touch_members(app: TestApp) {
    let id = app.member_id(member_body()).await;
    let path = format!("/v1/members/{id}");
    let other = app.other_tenant().await;
    for method in [Method::GET, Method::PATCH, Method::DELETE] {
        let body = (method == Method::PATCH).then(|| json!({"firstName": "Mallory"}));
        let reply = app
            .send(method.clone(), &path, Some(&other), None, body)
            .await;
        assert_eq!(reply.status, StatusCode::NOT_FOUND, "{method}");
        assert!(!reply.body.to_string().contains("Ada"));
    }
    let by_idp = app
        .send(
            Method::GET,
            "/v1/members/idp/auth0/auth0%7C123",
            Some(&other),
            None,
            None,
        )
        .await;
    assert_eq!(by_idp.status, StatusCode::NOT_FOUND);
    let list = app
        .send(Method::GET, "/v1/members", Some(&other), None, None)
        .await;
    assert_eq!(list.body["total"], 0);
    // The other organisation may use the same identifiers for its own member.
    let own = app
        .send(
            Method::POST,
            "/v1/members",
            Some(&other),
            None,
            Some(member_body()),
        )
        .await;
    assert_eq!(own.status, StatusCode::OK);
    assert_eq!(app.get(&path).await.body["firstName"], "Ada", "untouched");
}

app_tests!(
    members_are_created_found_and_listed,
    version_1_6_2_speaks_channel_lists_of_the_same_preferences,
    updates_change_only_what_they_name,
    duplicates_are_409_naming_the_field,
    concurrent_duplicate_creates_make_one_member,
    bad_bodies_are_400_naming_the_field,
    deleted_members_are_gone_and_their_data_erased,
    the_member_guide_alias_takes_its_own_field_names,
    another_organisation_cannot_see_or_touch_members,
);
