//! A member's activities over HTTP: recorded and awarded at once (201 with the award), the same
//! again answering the first, another under its id a 409, every bad field named, the platform's
//! own sign-up awarded by the worker, and the list with its type filter.

use std::time::Duration;

use api::views::ActivityView;
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::{TestApp, tokens};

/// Fifty tokens for signing up; five for opening the app, once a day per member.
const RULES: &str = "[[rule]]\nid = 'purchase'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'welcome'\npriority = 2\non = 'activity'\n\
     when = \"activity.type == 'member.signed_up'\"\naward = 50\n\
     [[rule]]\nid = 'app'\npriority = 3\non = 'activity'\n\
     when = \"activity.type == 'app.opened' && activity.attributes.device != 'bot'\"\n\
     award = 5\nlimits = [{ scope = 'member', period = 'day', times = 1 }]\n";

/// The campaign runs `RULES`; member `card-1` has wallet `w-1`.
async fn setup(app: &TestApp) {
    let campaign = app.campaign().await;
    app.store
        .programme()
        .set_rule_set(&campaign, RULES)
        .await
        .unwrap();
    app.member_with_wallet().await;
}

fn opened(id: &str, device: &str) -> Value {
    json!({"externalId": id, "type": "app.opened", "attributes": {"device": device}})
}

/// The member's activities, as listed with `query`.
async fn listed(app: &TestApp, query: &str) -> Vec<ActivityView> {
    let reply = app
        .get(&format!("/v1/members/card-1/activities?{query}"))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    reply
        .data()
        .iter()
        .map(|a| serde_json::from_value(a.clone()).unwrap())
        .collect()
}

async fn an_activity_is_awarded_at_once_and_recorded_once(app: TestApp) {
    setup(&app).await;
    let reply = app
        .post("/v1/members/card-1/activities", opened("open-1", "ios"))
        .await;
    let first: ActivityView = reply.expect(StatusCode::CREATED);
    assert_eq!(first.kind, "app.opened");
    assert_eq!(first.attributes, Some(json!({"device": "ios"})));
    assert!(first.awarded_at.is_some());
    assert_eq!(first.awards.len(), 1);
    assert_eq!(first.awards[0].tokens, tokens("5"));
    let trace = first.awards[0].rules_trace.as_deref().unwrap_or_default();
    assert!(trace.contains("app"), "{trace}");
    // The award is an EARN of the wallet, found like any other transaction.
    let path = format!("/v1/transactions/{}", first.awards[0].transaction_id);
    let earned = app.get(&path).await;
    assert_eq!(earned.status, StatusCode::OK, "{}", earned.body);
    assert_eq!(earned.body["type"], "EARN");

    let again = app
        .post("/v1/members/card-1/activities", opened("open-1", "ios"))
        .await;
    assert_eq!(again.expect::<ActivityView>(StatusCode::CREATED), first);
    let other = app
        .post("/v1/members/card-1/activities", opened("open-1", "android"))
        .await;
    assert_eq!(other.status, StatusCode::CONFLICT, "{}", other.body);
    let problem = other.problem();
    assert_eq!(
        (problem.code.as_str(), problem.field.as_deref()),
        ("already_exists", Some("attributes"))
    );

    // Once a day: recorded, and given nothing.
    let second: ActivityView = app
        .post("/v1/members/card-1/activities", opened("open-2", "ios"))
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(second.awards[0].tokens, tokens("0"));
    // A rule that does not match gives nothing, and writes nothing.
    let bot: ActivityView = app
        .post("/v1/members/card-1/activities", opened("open-3", "bot"))
        .await
        .expect(StatusCode::CREATED);
    assert!(bot.awards.is_empty() && bot.awarded_at.is_some());

    // The member's sign-up (its first wallet) is awarded by the worker.
    let mut signed_up = Vec::new();
    for _ in 0..200 {
        signed_up = listed(&app, "type=member.signed_up").await;
        if signed_up.iter().any(|a| a.awarded_at.is_some()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(signed_up.len(), 1);
    assert_eq!(signed_up[0].awards[0].tokens, tokens("50"));
    assert_eq!(app.balance("w-1").await, tokens("55"));
    let all = listed(&app, "").await;
    assert_eq!(all.len(), 4);
    assert_eq!(listed(&app, "type=app.opened&limit=2").await.len(), 2);
}

async fn bad_activities_are_refused_naming_each_field(app: TestApp) {
    setup(&app).await;
    let ahead = (chrono::Utc::now() + chrono::Duration::days(3)).to_rfc3339();
    for (body, field) in [
        (json!({"type": "app.opened"}), "externalId"),
        (json!({"externalId": "a-1"}), "type"),
        (json!({"externalId": "a-1", "type": "App Opened"}), "type"),
        (
            json!({"externalId": "a-1", "type": "member.signed_up"}),
            "type",
        ),
        (
            json!({"externalId": "a-1", "type": "a.b", "occurredAt": ahead}),
            "occurredAt",
        ),
        (
            json!({"externalId": "a-1", "type": "a.b", "occurredAt": "yesterday"}),
            "occurredAt",
        ),
        (
            json!({"externalId": "a-1", "type": "a.b", "attributes": [1]}),
            "attributes",
        ),
    ] {
        let reply = app
            .post("/v1/members/card-1/activities", body.clone())
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), [field], "{body}");
    }
    let nobody = app
        .post("/v1/members/nobody/activities", opened("a-1", "ios"))
        .await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND, "{}", nobody.body);
    let filter = app
        .get("/v1/members/card-1/activities?type=Bad%20Type")
        .await;
    assert_eq!(filter.status, StatusCode::BAD_REQUEST, "{}", filter.body);
    assert!(listed(&app, "type=app.opened").await.is_empty());
    // An award's earn id is the service's own: no client's earn may take it.
    let body = json!({"id": "activity:01", "walletId": "w-1", "amount": 5,
        "date": chrono::Utc::now().to_rfc3339()});
    let taken = app.post("/v1/transactions/earn", body).await;
    assert_eq!(taken.status, StatusCode::BAD_REQUEST, "{}", taken.body);
    assert_eq!(taken.fields(), ["id"]);
}

/// A member's `birthDate`, the day of its birthday activity: kept, cleared with `null`, in both
/// versions; a day to come, before 1900 or not a day is refused naming it.
async fn a_birth_date_is_kept_and_checked(app: TestApp) {
    let made = app
        .create_member_from(
            json!({"firstName": "Ada", "userId": "u-1", "externalId": "ada",
            "birthDate": "1990-06-02"}),
        )
        .await;
    assert_eq!(made.birth_date, "1990-06-02".parse().ok());
    let path = format!("/v1/members/{}", made.id);
    for version in ["1.9.5", "1.6.2"] {
        let read = app
            .send(Method::GET, &path, Some(&app.key), Some(version), None)
            .await;
        assert_eq!(read.body["birthDate"], "1990-06-02", "{version}");
    }
    let cleared = app
        .send(
            Method::PATCH,
            &path,
            Some(&app.key),
            None,
            Some(json!({"birthDate": null})),
        )
        .await;
    assert_eq!(cleared.status, StatusCode::OK, "{}", cleared.body);
    assert_eq!(cleared.body["birthDate"], Value::Null);
    let tomorrow = (chrono::Utc::now() + chrono::Duration::days(2))
        .date_naive()
        .to_string();
    for day in [tomorrow.as_str(), "1899-12-31", "02/06/1990"] {
        let reply = app
            .send(
                Method::PATCH,
                &path,
                Some(&app.key),
                None,
                Some(json!({"birthDate": day})),
            )
            .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{day}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), ["birthDate"], "{day}");
    }
}

app_tests!(
    a_birth_date_is_kept_and_checked,
    an_activity_is_awarded_at_once_and_recorded_once,
    bad_activities_are_refused_naming_each_field,
);
