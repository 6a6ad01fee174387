//! What deliveries may take of a node, with the bounds lowered so that a test reaches them: an
//! organisation's silent receivers hold only its share of the sockets while another's events
//! are delivered; an organisation has at most so many endpoints, even when it asks for them all
//! at once; redeliveries are bounded per request and per hour; and a stop keeps its grace with
//! deliveries hanging, every one of them made after the restart.

use std::time::Duration;

use api::views::{NewEndpointView, Problem};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::{NewKey, Permission};

use crate::app_tests;
use crate::helpers::receiver::{Answer, Receiver};
use crate::helpers::{Credentials, Reply, TestApp};

/// Four sockets for deliveries, two for one organisation, three endpoints each; five events per
/// redelivery and eight deliveries by hand an hour; attempts end after 3 s, a stop's grace 2 s.
fn bounded() -> api::Settings {
    let mut settings = api::Settings::default();
    let webhooks = &mut settings.webhooks;
    webhooks.rules.allow_http = true;
    webhooks.rules.allowed = vec!["127.0.0.1".parse().unwrap()];
    webhooks.first_retry = Duration::from_millis(200);
    webhooks.timeout = Duration::from_secs(3);
    webhooks.sockets = 4;
    webhooks.org_sockets = 2;
    webhooks.endpoints_per_org = 3;
    webhooks.manual = store::ManualBounds {
        per_request: 5,
        per_hour: 8,
    };
    settings.http.grace = Duration::from_secs(2);
    settings
}

const WITHIN: Duration = Duration::from_secs(30);

fn webhooks() -> NewKey {
    NewKey {
        permissions: vec![Permission::Webhooks],
        ..Default::default()
    }
}

async fn call(app: &TestApp, key: &Credentials, method: Method, path: &str, body: Value) -> Reply {
    app.send(method, path, Some(key), None, Some(body)).await
}

async fn add_endpoint(app: &TestApp, key: &Credentials, url: &str) -> Reply {
    let body = json!({"url": url, "eventTypes": ["member.created"]});
    call(app, key, Method::POST, "/v1/webhooks", body).await
}

async fn members(app: &TestApp, key: &Credentials, from: usize, count: usize) {
    for n in from..from + count {
        let body =
            json!({"firstName": "Ada", "userId": format!("u-{n}"), "externalId": format!("m-{n}")});
        let reply = call(app, key, Method::POST, "/v1/members", body).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    }
}

async fn one_organisations_silent_receivers_hold_only_its_share(app: TestApp) {
    let ours = app.issue_key(&app.org, &app.campaign, webhooks()).await;
    let silent = Receiver::start().await;
    silent.otherwise(Answer::Hang);
    for _ in 0..3 {
        let made = add_endpoint(&app, &ours, &silent.url).await;
        assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    }
    members(&app, &ours, 0, 20).await;
    silent.wait_for(2, WITHIN).await;
    // Another organisation's event, made while ours hang, is delivered all the same.
    let theirs = app.other_tenant_with(webhooks()).await;
    let listening = Receiver::start().await;
    let made = add_endpoint(&app, &theirs, &listening.url).await;
    assert_eq!(made.status, StatusCode::CREATED, "{}", made.body);
    members(&app, &theirs, 100, 1).await;
    let got = listening.wait_for(1, WITHIN).await;
    assert_eq!(got[0].body["type"], "member.created");
    let health = app.send(Method::GET, "/healthz", None, None, None).await;
    assert_eq!(health.status, StatusCode::OK);
    // Three endpoints with 16 attempts each would hold 48 sockets: the share holds two.
    assert!(
        (1..=2).contains(&silent.most_open()),
        "{} open at once",
        silent.most_open()
    );
}

async fn an_organisation_has_at_most_its_endpoints(app: TestApp) {
    let key = app.issue_key(&app.org, &app.campaign, webhooks()).await;
    let receiver = Receiver::start().await;
    // Asked for all at once: the organisation's lock lets three through.
    let add = || add_endpoint(&app, &key, &receiver.url);
    let (a, b, c, d, e, f) = tokio::join!(add(), add(), add(), add(), add(), add());
    let made = [a, b, c, d, e, f];
    let created = made
        .iter()
        .filter(|r| r.status == StatusCode::CREATED)
        .count();
    assert_eq!(created, 3);
    for refused in made.iter().filter(|r| r.status != StatusCode::CREATED) {
        assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
        let problem: Problem = refused.problem();
        assert_eq!(problem.code, "too_many_endpoints");
        assert!(
            problem.detail.contains("webhook_endpoints_per_org is 3"),
            "{}",
            problem.detail
        );
    }
    let listed = call(&app, &key, Method::GET, "/v1/webhooks", Value::Null).await;
    assert_eq!(listed.body["total"], 3);
    // Another organisation has its own three.
    let theirs = app.other_tenant_with(webhooks()).await;
    let made = add_endpoint(&app, &theirs, &receiver.url).await;
    assert_eq!(made.status, StatusCode::CREATED);
    // Removing one makes room.
    let path = format!("/v1/webhooks/{}", listed.data()[0]["id"].as_str().unwrap());
    let removed = app
        .send(Method::DELETE, &path, Some(&key), None, None)
        .await;
    assert_eq!(removed.status, StatusCode::NO_CONTENT, "{}", removed.body);
    let again = add_endpoint(&app, &key, &receiver.url).await;
    assert_eq!(again.status, StatusCode::CREATED, "{}", again.body);
}

async fn redeliveries_are_bounded_per_request_and_per_hour(app: TestApp) {
    let key = app.issue_key(&app.org, &app.campaign, webhooks()).await;
    let receiver = Receiver::start().await;
    let made: NewEndpointView = add_endpoint(&app, &key, &receiver.url)
        .await
        .expect(StatusCode::CREATED);
    let id = made.endpoint.id;
    members(&app, &key, 0, 6).await;
    receiver.wait_for(6, WITHIN).await;
    let from = (chrono::Utc::now() - chrono::Duration::hours(1)).to_rfc3339();
    let to = (chrono::Utc::now() + chrono::Duration::minutes(1)).to_rfc3339();
    let path = format!("/v1/webhooks/{id}/redeliveries");
    let range = json!({"from": from, "to": to});
    let refused = call(&app, &key, Method::POST, &path, range).await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.body);
    assert_eq!(refused.fields(), ["to"]);
    let message = refused.body["errors"][0]["message"].as_str().unwrap();
    assert!(
        message.contains("6 events") && message.contains("at most 5"),
        "{message}"
    );
    // Five, then a test: six of the hour's eight; the next five would pass it.
    let events: Vec<String> = receiver.received().iter().map(|r| r.id.clone()).collect();
    for event in &events[..5] {
        let one = call(&app, &key, Method::POST, &path, json!({"eventId": event})).await;
        assert_eq!(one.status, StatusCode::ACCEPTED, "{}", one.body);
    }
    let test = format!("/v1/webhooks/{id}/test");
    let tested = call(&app, &key, Method::POST, &test, json!({})).await;
    assert_eq!(tested.status, StatusCode::ACCEPTED, "{}", tested.body);
    let again = json!({"eventId": events[0]});
    for nth in ["the seventh", "the eighth"] {
        let one = call(&app, &key, Method::POST, &path, again.clone()).await;
        assert_eq!(one.status, StatusCode::ACCEPTED, "{nth}");
    }
    let throttled = call(&app, &key, Method::POST, &path, again).await;
    assert_eq!(
        throttled.status,
        StatusCode::TOO_MANY_REQUESTS,
        "{}",
        throttled.body
    );
    assert_eq!(throttled.problem().code, "redelivery_limit");
    let retry: u64 = throttled.headers["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=3600).contains(&retry), "{retry}");
    let tested = call(&app, &key, Method::POST, &test, json!({})).await;
    assert_eq!(
        tested.status,
        StatusCode::TOO_MANY_REQUESTS,
        "a test counts too"
    );
    // Every one queued was delivered, and no more: 6 + 8.
    receiver.wait_for(14, WITHIN).await;
}

async fn a_stop_keeps_its_grace_and_the_restart_delivers_everything(mut app: TestApp) {
    let key = app.issue_key(&app.org, &app.campaign, webhooks()).await;
    let receiver = Receiver::start().await;
    receiver.otherwise(Answer::Hang);
    add_endpoint(&app, &key, &receiver.url)
        .await
        .expect::<NewEndpointView>(StatusCode::CREATED);
    members(&app, &key, 0, 300).await;
    receiver.wait_for(1, WITHIN).await;
    let took = app.stop().await;
    // The grace is 2 s; attempts hang for 3 s each and 300 are due.
    assert!(took < Duration::from_secs(4), "stopped in {took:?}");
    // Given up at the grace's end, the claims were released: due at once after the restart.
    receiver.otherwise(Answer::Status(204));
    let before = receiver.received().len();
    app.restart(bounded()).await;
    let received = receiver
        .wait_for(before + 300, Duration::from_secs(120))
        .await;
    let delivered: std::collections::HashSet<&str> =
        received[before..].iter().map(|r| r.id.as_str()).collect();
    assert_eq!(delivered.len(), 300, "each event once after the restart");
}

app_tests!(settings: super::bounded();
    one_organisations_silent_receivers_hold_only_its_share,
    an_organisation_has_at_most_its_endpoints,
    redeliveries_are_bounded_per_request_and_per_hour,
    a_stop_keeps_its_grace_and_the_restart_delivers_everything,
);
