//! An organisation's webhook endpoints through the admin API: an org-admin adds one (the secret
//! shown then only), changes, disables, tests, rotates and removes it, and sends events again;
//! a viewer reads the endpoints and their log but changes nothing; another organisation's
//! operator cannot reach them; the trail records each change without a secret.

use chrono::Duration;
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::{AdminApp, ok_operations};

/// A public address given as an IP literal: no lookup, never a refused range.
const RECEIVER: &str = "https://93.184.215.14/hooks";

async fn an_org_admin_manages_endpoints_and_redelivers(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let admin = app
        .operator("org-admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let hooks = format!("/admin/v1/orgs/{}/webhooks", app.acme.id());
    let body = json!({"url": RECEIVER, "eventTypes": ["transaction.created"],
        "description": "warehouse"});
    let added = app.post(&hooks, &admin, body).await;
    let added = added.expect(StatusCode::CREATED).clone();
    let secret = added["secret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("whsec_"), "{secret}");
    assert_eq!(added["apiVersion"], "1.9.5");
    assert_eq!(added["campaignId"], serde_json::Value::Null);
    let id = added["id"].as_str().unwrap().to_owned();
    let hook = format!("{hooks}/{id}");
    // Listed and shown without the secret.
    let listed = app.get(&hooks, &admin).await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["total"], 1);
    assert!(listed["data"][0].get("secret").is_none());
    let shown = app.get(&hook, &admin).await;
    assert_eq!(shown.expect(StatusCode::OK)["description"], "warehouse");

    // A credit makes an event; a redelivery of its time range queues it again.
    let credit = json!({"walletId": "card-1", "amount": 10, "reason": "goodwill",
        "comment": "late parcel"});
    let credited = app
        .post(&format!("{base}/adjustments"), &app.owner, credit)
        .await;
    credited.expect(StatusCode::CREATED);
    // What the node's dispatcher does: number the event, queue its deliveries.
    app.store.events().dispatch_events(100).await.unwrap();
    let now = app.store.now();
    let range = json!({"from": (now - Duration::hours(1)).to_rfc3339(),
        "to": (now + Duration::minutes(1)).to_rfc3339()});
    let again = app
        .post(&format!("{hook}/redeliveries"), &admin, range)
        .await;
    assert_eq!(again.expect(StatusCode::ACCEPTED)["deliveries"], 1);
    let test = app.post(&format!("{hook}/test"), &admin, json!({})).await;
    let test = test.expect(StatusCode::ACCEPTED);
    assert!(test["eventId"].is_string());
    // No runtime delivers here: the log is empty and readable.
    let log = app.get(&format!("{hook}/attempts"), &admin).await;
    assert_eq!(log.expect(StatusCode::OK)["total"], 0);

    // Bad input named field by field; an unknown campaign and endpoint are 404.
    let bad = json!({"url": "ftp://example.com/x", "eventTypes": ["no.such"]});
    let reply = app.post(&hooks, &admin, bad).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    let fields: Vec<&str> = reply.body["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["field"].as_str().unwrap())
        .collect();
    assert!(
        fields.contains(&"eventTypes[0]") || fields.contains(&"eventTypes"),
        "{fields:?}"
    );
    let local = json!({"url": "https://127.0.0.1/hooks"});
    let reply = app.post(&hooks, &admin, local).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["errors"][0]["field"], "url");
    let elsewhere = json!({"url": RECEIVER, "campaignId": "no-such-campaign"});
    let reply = app.post(&hooks, &admin, elsewhere).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    assert_eq!(reply.body["field"], "campaignId");
    let reply = app.get(&format!("{hooks}/no-such-endpoint"), &admin).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");

    // Disabled and enabled again; the secret rotated (a new one, shown once).
    let off = app
        .send(
            Method::PATCH,
            &hook,
            Some(&admin),
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(off.expect(StatusCode::OK)["status"], "disabled");
    let on = app
        .send(
            Method::PATCH,
            &hook,
            Some(&admin),
            Some(json!({"enabled": true})),
        )
        .await;
    assert_eq!(on.expect(StatusCode::OK)["status"], "enabled");
    let rotate = json!({"keepPreviousHours": 2});
    let rotated = app
        .post(&format!("{hook}/rotate-secret"), &admin, rotate)
        .await;
    let rotated = rotated.expect(StatusCode::OK);
    assert_ne!(rotated["secret"].as_str().unwrap(), secret);
    assert!(rotated["previousSecretUntil"].is_string());

    // A viewer reads; it may not change. To another organisation's admin it does not exist.
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    app.get(&format!("{hook}/attempts"), &viewer)
        .await
        .expect(StatusCode::OK);
    let reply = app.post(&format!("{hook}/test"), &viewer, json!({})).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let outsider = app
        .operator("other@example.com", Role::OrgAdmin, &[&app.other])
        .await;
    let reply = app.get(&hook, &outsider).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");

    // Removed: gone, a second time 404.
    let reply = app.send(Method::DELETE, &hook, Some(&admin), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = app.send(Method::DELETE, &hook, Some(&admin), None).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");

    // The trail has each change as the org-admin's, never a secret.
    let trail = app
        .get("/admin/v1/audit-log?operation=webhook.", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    let text = trail.to_string();
    assert!(!text.contains(&secret), "a secret in the trail");
    let ok = ok_operations(trail);
    for operation in [
        "webhook.add",
        "webhook.redeliver",
        "webhook.test",
        "webhook.update",
        "webhook.rotate-secret",
        "webhook.remove",
    ] {
        assert!(ok.iter().any(|o| o == operation), "{operation} in {ok:?}");
    }
}

admin_tests!(an_org_admin_manages_endpoints_and_redelivers);
