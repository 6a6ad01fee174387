//! Webhooks over HTTP, to a real receiver: endpoints made and managed with a key holding the
//! `webhooks` permission, deliveries signed so a Standard Webhooks verifier accepts them,
//! carrying the event the feed lists; retries after a failure, a 410 disabling the endpoint, a
//! redirect not followed, a hanging receiver ended by the timeout without holding another
//! endpoint's deliveries; bad addresses refused naming `url`.

use std::time::Duration;

use api::views::{
    AttemptView, EndpointView, EventView, NewEndpointView, PagedList, Queued, TransactionView,
};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::{NewKey, Permission};

use crate::app_tests;
use crate::helpers::receiver::{Answer, Receiver};
use crate::helpers::{Credentials, Reply, TestApp};

/// Deliveries to this host allowed, quick retries and a short timeout.
fn local() -> api::Settings {
    let mut settings = api::Settings::default();
    settings.webhooks.rules.allow_http = true;
    settings.webhooks.rules.allowed = vec!["127.0.0.1".parse().unwrap()];
    settings.webhooks.first_retry = Duration::from_millis(200);
    settings.webhooks.timeout = Duration::from_secs(1);
    settings
}

const WITHIN: Duration = Duration::from_secs(20);

/// The event types of the endpoints that follow burns (members' events come first otherwise).
const BURNS: [&str; 1] = ["transaction.created"];

async fn manager(app: &TestApp) -> Credentials {
    let new = NewKey {
        permissions: vec![Permission::Webhooks],
        ..Default::default()
    };
    app.issue_key(&app.org, &app.campaign, new).await
}

async fn call(
    app: &TestApp,
    key: &Credentials,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> Reply {
    app.send(method, path, Some(key), None, body).await
}

async fn add_endpoint(app: &TestApp, key: &Credentials, body: Value) -> NewEndpointView {
    call(app, key, Method::POST, "/v1/webhooks", Some(body))
        .await
        .expect(StatusCode::CREATED)
}

async fn attempts(app: &TestApp, key: &Credentials, endpoint: &str) -> Vec<AttemptView> {
    let path = format!("/v1/webhooks/{endpoint}/attempts?limit=100");
    let page: PagedList<AttemptView> = call(app, key, Method::GET, &path, None)
        .await
        .expect(StatusCode::OK);
    page.data
}

/// A burn reaches the receiver signed with the endpoint's secret, carrying the transaction as
/// the API shows it, under the event's id as the feed lists it.
async fn a_burn_is_delivered_signed_and_in_the_feed(app: TestApp) {
    let key = manager(&app).await;
    let receiver = Receiver::start().await;
    let made = add_endpoint(
        &app,
        &key,
        json!({"url": receiver.url, "description": "CRM", "eventTypes": BURNS}),
    )
    .await;
    assert!(made.secret.starts_with("whsec_"));
    assert_eq!(made.endpoint.status, "enabled");
    assert_eq!(
        made.endpoint.campaign_id.as_deref(),
        Some(app.campaign.as_str())
    );
    receiver.verify_with(&made.secret);
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(50)).await;
    let burned: TransactionView = app
        .burn("b-1", "w-1", json!(20))
        .await
        .expect(StatusCode::OK);
    let received = receiver.wait_for(1, WITHIN).await;
    let delivery = &received[0];
    assert!(delivery.verified, "{delivery:?}");
    assert!((chrono::Utc::now().timestamp() - delivery.timestamp).abs() < 60);
    assert_eq!(delivery.body["type"], "transaction.created");
    let data: TransactionView = serde_json::from_value(delivery.body["data"].clone()).unwrap();
    assert_eq!(data, burned);
    let feed: PagedList<EventView> = app
        .get("/v1/events?type=transaction.created")
        .await
        .expect(StatusCode::OK);
    assert_eq!(feed.data.len(), 1);
    assert_eq!(feed.data[0].id, delivery.id);
    assert_eq!(serde_json::to_value(&feed.data[0]).unwrap(), delivery.body);
    let one: EventView = app
        .get(&format!("/v1/events/{}", delivery.id))
        .await
        .expect(StatusCode::OK);
    assert_eq!(one, feed.data[0]);
    // The attempt is recorded once its answer is in, a moment after the receiver has it.
    let log = wait_attempts(&app, &key, &made.endpoint.id, 1).await;
    assert_eq!(log.len(), 1);
    assert_eq!((log[0].status_code, log[0].succeeded), (Some(204), true));
    assert_eq!(log[0].delivery_status, "delivered");
    // A rotation: both secrets sign until the window ends.
    let path = format!("/v1/webhooks/{}/rotate-secret", made.endpoint.id);
    let rotated: NewEndpointView = call(&app, &key, Method::POST, &path, Some(json!({})))
        .await
        .expect(StatusCode::OK);
    assert!(rotated.endpoint.previous_secret_until.is_some());
    let path = format!("/v1/webhooks/{}/test", made.endpoint.id);
    let queued: Queued = call(&app, &key, Method::POST, &path, None)
        .await
        .expect(StatusCode::ACCEPTED);
    let received = receiver.wait_for(2, WITHIN).await;
    let test = &received[1];
    assert_eq!(Some(&test.id), queued.event_id.as_ref());
    assert_eq!(test.body["type"], "webhook.test");
    assert_eq!(test.signature.split(' ').count(), 2, "{}", test.signature);
    assert!(test.verified, "the old secret still verifies");
    receiver.verify_with(&rotated.secret);
    let path = format!("/v1/webhooks/{}/redeliveries", made.endpoint.id);
    let body = json!({"eventId": delivery.id});
    let again: Queued = call(&app, &key, Method::POST, &path, Some(body))
        .await
        .expect(StatusCode::ACCEPTED);
    assert_eq!(again.deliveries, 1);
    let received = receiver.wait_for(3, WITHIN).await;
    assert_eq!(
        received[2].id, delivery.id,
        "a redelivery keeps the event's id"
    );
    assert!(received[2].verified, "the new secret verifies");
    // The test event is never in the feed (the member's creation, the earn and the burn are;
    // so is the member's sign-up, its first wallet, once the earn worker has settled it).
    let feed: PagedList<EventView> = app.get("/v1/events").await.expect(StatusCode::OK);
    let kinds: Vec<&str> = feed.data.iter().map(|e| e.kind.as_str()).collect();
    let kinds: Vec<&str> = kinds
        .into_iter()
        .filter(|k| *k != "activity.recorded")
        .collect();
    assert_eq!(
        kinds,
        ["member.created", "earn.completed", "transaction.created"]
    );
}

/// A 500 is tried again until it succeeds; a 303 is not followed; a 410 disables the endpoint.
async fn failures_retry_redirects_fail_and_gone_disables(app: TestApp) {
    let key = manager(&app).await;
    let receiver = Receiver::start().await;
    let made = add_endpoint(
        &app,
        &key,
        json!({"url": receiver.url, "eventTypes": BURNS}),
    )
    .await;
    receiver.script(&[Answer::Status(500), Answer::Redirect]);
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(50)).await;
    app.burn("b-1", "w-1", json!(1)).await;
    let received = receiver.wait_for(3, WITHIN).await;
    assert!(
        received.iter().all(|r| r.id == received[0].id),
        "one event, three attempts"
    );
    // The last attempt's record follows its answer.
    let id = &made.endpoint.id;
    let log = wait_attempts(&app, &key, id, 3).await;
    let statuses: Vec<Option<u16>> = log.iter().rev().map(|a| a.status_code).collect();
    assert_eq!(statuses, [Some(500), Some(303), Some(204)]);
    assert_eq!(log[0].delivery_status, "delivered");
    assert!(log.iter().skip(1).all(|a| !a.succeeded));

    receiver.script(&[Answer::Status(410)]);
    app.burn("b-2", "w-1", json!(1)).await;
    receiver.wait_for(4, WITHIN).await;
    let endpoint = wait_endpoint(&app, &key, id, |e| e.status == "disabled").await;
    assert!(endpoint.disabled_reason.unwrap().contains("410"));
    // Disabled: later events wait.
    app.burn("b-3", "w-1", json!(1)).await;
    let path = format!("/v1/webhooks/{id}");
    let enabled: EndpointView = call(
        &app,
        &key,
        Method::PATCH,
        &path,
        Some(json!({"enabled": true})),
    )
    .await
    .expect(StatusCode::OK);
    assert_eq!(
        (enabled.status.as_ref(), enabled.disabled_reason),
        ("enabled", None)
    );
    let received = receiver.wait_for(6, WITHIN).await;
    let types: Vec<&Value> = received.iter().map(|r| &r.body["type"]).collect();
    assert!(types.iter().all(|t| *t == "transaction.created"));
}

async fn wait_attempts(app: &TestApp, key: &Credentials, id: &str, n: usize) -> Vec<AttemptView> {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let log = attempts(app, key, id).await;
        if log.len() >= n || tokio::time::Instant::now() > deadline {
            assert!(log.len() >= n, "{log:?}");
            return log;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn wait_endpoint(
    app: &TestApp,
    key: &Credentials,
    id: &str,
    done: impl Fn(&EndpointView) -> bool,
) -> EndpointView {
    let deadline = tokio::time::Instant::now() + WITHIN;
    loop {
        let path = format!("/v1/webhooks/{id}");
        let endpoint: EndpointView = call(app, key, Method::GET, &path, None)
            .await
            .expect(StatusCode::OK);
        if done(&endpoint) || tokio::time::Instant::now() > deadline {
            assert!(done(&endpoint), "{endpoint:?}");
            return endpoint;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A receiver that never answers holds only its own deliveries: another endpoint gets its
/// events meanwhile, and the hanging attempt ends by the timeout, logged without a status.
async fn a_hanging_receiver_delays_no_one_else(app: TestApp) {
    let key = manager(&app).await;
    let (slow, quick) = (Receiver::start().await, Receiver::start().await);
    slow.script(&[Answer::Hang; 64]);
    let hanging = add_endpoint(&app, &key, json!({"url": slow.url, "eventTypes": BURNS})).await;
    add_endpoint(&app, &key, json!({"url": quick.url, "eventTypes": BURNS})).await;
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(50)).await;
    for n in 0..3 {
        app.burn(&format!("b-{n}"), "w-1", json!(1)).await;
    }
    quick.wait_for(3, WITHIN).await;
    let log = wait_attempts(&app, &key, &hanging.endpoint.id, 1).await;
    assert_eq!(log[0].status_code, None);
    assert!(
        log[0].response.as_deref().unwrap().contains("no answer"),
        "{log:?}"
    );
    assert!(log[0].latency_ms >= 900, "{log:?}");
    assert_eq!(log[0].delivery_status, "pending");
}

/// Bad endpoints are refused naming `url`; the permission is needed; another organisation's
/// endpoint is not found; the feed's filters are checked.
async fn bad_requests_are_refused(app: TestApp) {
    let key = manager(&app).await;
    for url in [
        "not a url",
        "ftp://example.com/hook",
        "https://10.0.0.7/hook",
        "https://169.254.169.254/latest",
        "https://127.0.0.2/hook",
        "https://user:pw@example.com/hook",
    ] {
        let reply = call(
            &app,
            &key,
            Method::POST,
            "/v1/webhooks",
            Some(json!({"url": url})),
        )
        .await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{url}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), ["url"], "{url}");
    }
    let reply = call(
        &app,
        &key,
        Method::POST,
        "/v1/webhooks",
        Some(json!({"url": "http://127.0.0.1:9/x", "eventTypes": ["nope"]})),
    )
    .await;
    assert_eq!(reply.fields(), ["eventTypes"]);
    let reply = app
        .post("/v1/webhooks", json!({"url": "http://127.0.0.1:9/x"}))
        .await;
    assert_eq!(reply.status, StatusCode::FORBIDDEN);
    let made = add_endpoint(
        &app,
        &key,
        json!({"url": "http://127.0.0.1:9/x",
        "eventTypes": ["transaction.created"], "apiVersion": "1.6.2"}),
    )
    .await;
    assert_eq!(made.endpoint.event_types, ["transaction.created"]);
    assert_eq!(made.endpoint.api_version, "1.6.2");
    let path = format!("/v1/webhooks/{}", made.endpoint.id);
    let reply = call(
        &app,
        &key,
        Method::PATCH,
        &path,
        Some(json!({"url": "https://10.1.1.1/"})),
    )
    .await;
    assert_eq!(reply.fields(), ["url"]);
    let other = app.other_tenant().await;
    let reply = app.send(Method::GET, &path, Some(&other), None, None).await;
    assert_eq!(
        reply.status,
        StatusCode::FORBIDDEN,
        "no permission there either"
    );
    let listed: PagedList<EndpointView> = call(&app, &key, Method::GET, "/v1/webhooks", None)
        .await
        .expect(StatusCode::OK);
    assert_eq!(listed.total, 1);
    let redeliver = format!("{path}/redeliveries");
    for body in [
        json!({}),
        json!({"from": "2026-01-02T00:00:00Z"}),
        json!({"from": "2026-01-02T00:00:00Z", "to": "2026-01-01T00:00:00Z"}),
    ] {
        let reply = call(&app, &key, Method::POST, &redeliver, Some(body.clone())).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{body}");
    }
    let reply = call(
        &app,
        &key,
        Method::POST,
        &redeliver,
        Some(json!({"eventId": "nope"})),
    )
    .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let reply = call(&app, &key, Method::DELETE, &path, None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = call(&app, &key, Method::GET, &path, None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    for query in [
        "type=nope",
        "from=yesterday",
        "order=sideways",
        "after=nope",
    ] {
        let reply = app.get(&format!("/v1/events?{query}")).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{query}: {}",
            reply.body
        );
    }
}

/// A member's events carry the member in the shapes of the endpoint's version (1.6.2: channel
/// lists) and of the reader's in the feed (1.9.5: flags); after the deletion, none of them
/// holds personal data.
async fn member_events_follow_the_version_and_erasure(app: TestApp) {
    let key = manager(&app).await;
    let receiver = Receiver::start().await;
    let body = json!({"url": receiver.url, "apiVersion": "1.6.2",
        "eventTypes": ["member.created", "member.deleted"]});
    add_endpoint(&app, &key, body).await;
    let member = app.create_member("card-1").await;
    let received = receiver.wait_for(1, WITHIN).await;
    let data = &received[0].body["data"];
    assert_eq!(received[0].body["type"], "member.created");
    assert_eq!(data["id"], member.id);
    assert!(
        data["communicationPreferences"]["general"]["channels"].is_array(),
        "{data}"
    );
    let feed: PagedList<EventView> = app.get("/v1/events").await.expect(StatusCode::OK);
    let prefs = &feed.data[0].data["communicationPreferences"]["general"];
    assert!(prefs["email"].is_boolean(), "1.9.5 in the feed: {prefs}");
    let path = format!("/v1/members/{}", member.id);
    let reply = app
        .send(Method::DELETE, &path, Some(&app.key), None, None)
        .await;
    assert!(reply.status.is_success(), "{}", reply.body);
    let received = receiver.wait_for(2, WITHIN).await;
    assert_eq!(received[1].body["type"], "member.deleted");
    assert_eq!(received[1].body["data"], json!({"id": member.id}));
    let feed: PagedList<EventView> = app.get("/v1/events").await.expect(StatusCode::OK);
    assert_eq!(feed.total, 2);
    for event in &feed.data {
        assert_eq!(event.data, json!({"id": member.id}), "{}", event.kind);
    }
}

/// An earn, the tier it reaches and an order are delivered in the endpoint's version's shapes,
/// and listed in the feed in the reader's, as their own reads show them.
async fn earns_tiers_and_orders_render_as_their_reads(app: TestApp) {
    let key = manager(&app).await;
    let receiver = Receiver::start().await;
    let types = ["earn.completed", "wallet.tier_changed", "order.created"];
    let body = json!({"url": receiver.url, "apiVersion": "1.6.2", "eventTypes": types});
    let made = add_endpoint(&app, &key, body).await;
    receiver.verify_with(&made.secret);
    app.ready_to_order().await;
    let earned = app.earn("e-1", "w-1", json!(150)).await;
    let order = app
        .place(json!([{"productId": "mug", "quantity": 1}]))
        .await;
    let received = receiver.wait_for(3, WITHIN).await;
    assert!(received.iter().all(|r| r.verified), "{received:?}");
    let of = |kind: &str| {
        let found = received.iter().find(|r| r.body["type"] == kind);
        found
            .unwrap_or_else(|| panic!("{kind} in {received:?}"))
            .body["data"]
            .clone()
    };
    assert_eq!(of("earn.completed"), json!(earned));
    let wallet = app.wallet("w-1").await;
    let gold = wallet.tier.expect("gold reached");
    let moved = json!({"walletId": wallet.id, "memberId": wallet.owner_id, "from": null,
        "to": {"id": gold.id, "name": gold.name}});
    assert_eq!(of("wallet.tier_changed"), moved);
    let delivered = of("order.created");
    assert_eq!(delivered["id"], json!(order.id));
    assert!(
        delivered["lines"][0].get("product").is_none(),
        "1.6.2: {delivered}"
    );

    let path = format!("/v1/orders/{}", order.id);
    let read: Value = app.get(&path).await.expect(StatusCode::OK);
    let feed: PagedList<EventView> = app
        .get("/v1/events?type=order.created")
        .await
        .expect(StatusCode::OK);
    assert_eq!(
        feed.data[0].data, read,
        "1.9.5 in the feed, as the order reads"
    );
    assert!(read["lines"][0]["product"].is_object());
}

/// A receiver that closes the connection without answering: the attempt is logged as failed
/// with no status, and the delivery is tried again until an answer delivers it.
async fn a_closed_connection_is_tried_again(app: TestApp) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let key = manager(&app).await;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hook", listener.local_addr().unwrap());
    // The first two connections are closed once the request is read; the rest answered 204.
    tokio::spawn(async move {
        for n in 0.. {
            let (mut socket, _) = listener.accept().await.unwrap();
            tokio::spawn(async move {
                let mut request = vec![0u8; 64 * 1024];
                let _ = socket.read(&mut request).await;
                if n >= 2 {
                    let answer = b"HTTP/1.1 204 No Content\r\nconnection: close\r\n\r\n";
                    let _ = socket.write_all(answer).await;
                }
            });
        }
    });
    let made = add_endpoint(&app, &key, json!({"url": url, "eventTypes": BURNS})).await;
    app.member_with_wallet().await;
    app.earn("e-1", "w-1", json!(50)).await;
    app.burn("b-1", "w-1", json!(1)).await;
    let log = wait_attempts(&app, &key, &made.endpoint.id, 3).await;
    let oldest_first: Vec<&AttemptView> = log.iter().rev().collect();
    for closed in &oldest_first[..2] {
        assert_eq!(
            (closed.status_code, closed.succeeded),
            (None, false),
            "{closed:?}"
        );
        assert!(
            closed.response.is_some(),
            "what went wrong is kept: {closed:?}"
        );
    }
    assert_eq!(oldest_first[2].status_code, Some(204));
    assert_eq!(log[0].delivery_status, "delivered");
    assert!(
        log.iter().all(|a| a.event_id == log[0].event_id),
        "one event"
    );
}

app_tests!(settings: super::local();
    a_burn_is_delivered_signed_and_in_the_feed,
    failures_retry_redirects_fail_and_gone_disables,
    a_hanging_receiver_delays_no_one_else,
    bad_requests_are_refused,
    member_events_follow_the_version_and_erasure,
    earns_tiers_and_orders_render_as_their_reads,
    a_closed_connection_is_tried_again,
);
