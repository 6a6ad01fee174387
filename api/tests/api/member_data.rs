//! A member's own data over HTTP (`GET /v1/members/{id}/data`): only with the `member-data`
//! permission; everything the service holds about the member in one document, each record as
//! its own operation shows it, in the version asked for; nothing for a deleted member.

use api::views::MemberDataView;
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::app_tests;
use crate::helpers::TestApp;

async fn a_members_data_is_exported_whole_with_the_permission(app: TestApp) {
    app.create_member_from(
        json!({"firstName": "Ada", "lastName": "Lovelace", "userId": "u-ada",
        "externalId": "card-ada", "birthDate": "1990-06-02", "meta": {"engine": "Analytical"}}),
    )
    .await;
    app.create_wallet("card-ada", "w-ada").await;
    app.earn("ada-1", "w-ada", json!(12)).await;
    let activity = json!({"externalId": "ada-open", "type": "app.opened",
        "attributes": {"device": "Ada's phone"}});
    let recorded = app.post("/v1/members/card-ada/activities", activity).await;
    assert_eq!(recorded.status, StatusCode::CREATED, "{}", recorded.body);

    let refused = app.get("/v1/members/card-ada/data").await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "{}", refused.body);
    assert_eq!(refused.problem().code, "permission_required");

    let key = app.member_data_key().await;
    let reply = app
        .send(
            Method::GET,
            "/v1/members/card-ada/data",
            Some(&key),
            None,
            None,
        )
        .await;
    let data: MemberDataView = reply.expect(StatusCode::OK);
    assert_eq!(data.member.first_name, "Ada");
    assert_eq!(data.member.birth_date, "1990-06-02".parse().ok());
    assert_eq!(data.wallets.len(), 1);
    assert_eq!(data.transactions.len(), 1, "the earn");
    assert_eq!(data.earn_requests.len(), 1);
    assert!(data.activities.iter().any(|a| a.external_id == "ada-open"));
    assert!(data.events.iter().any(|e| e.kind == "member.created"));
    // Version 1.6.2 speaks its own shapes (preferences as channel lists).
    let old = app
        .send(
            Method::GET,
            "/v1/members/card-ada/data",
            Some(&key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(old.status, StatusCode::OK, "{}", old.body);
    assert!(old.body["member"]["communicationPreferences"]["general"]["channels"].is_array());

    let nobody = app
        .send(
            Method::GET,
            "/v1/members/nobody/data",
            Some(&key),
            None,
            None,
        )
        .await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND, "{}", nobody.body);
    let id = data.member.id;
    let deleted = app
        .send(
            Method::DELETE,
            &format!("/v1/members/{id}"),
            Some(&app.key),
            None,
            None,
        )
        .await;
    assert_eq!(deleted.status, StatusCode::OK, "{}", deleted.body);
    let gone = app
        .send(
            Method::GET,
            &format!("/v1/members/{id}/data"),
            Some(&key),
            None,
            None,
        )
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND, "{}", gone.body);
}

app_tests!(a_members_data_is_exported_whole_with_the_permission);
