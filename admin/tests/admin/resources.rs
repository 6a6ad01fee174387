//! What operators manage through the admin API: operators themselves, organisations,
//! campaigns and keys, and the audit trail that records each change and finds tampering.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

async fn an_owner_manages_operators(app: AdminApp) {
    let body = json!({"email": "Support@Example.com", "role": "support", "orgs": [app.acme.id()]});
    let added = app
        .post("/admin/v1/operators", &app.owner, body.clone())
        .await;
    let added = added.expect(StatusCode::CREATED).clone();
    assert_eq!(added["operator"]["email"], "support@example.com");
    assert_eq!(added["operator"]["mustChangePassword"], true);
    let password = added["password"].as_str().unwrap().to_owned();
    app.sign_in("support@example.com", &password).await;
    // The same e-mail again; a per-organisation role with none; an unknown organisation.
    let again = app.post("/admin/v1/operators", &app.owner, body).await;
    assert_eq!(again.code(StatusCode::CONFLICT), "already_exists");
    let no_org = json!({"email": "v@example.com", "role": "viewer"});
    let reply = app.post("/admin/v1/operators", &app.owner, no_org).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    let unknown = json!({"email": "v@example.com", "role": "viewer", "orgs": ["nowhere"]});
    let reply = app.post("/admin/v1/operators", &app.owner, unknown).await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "orgs[0]");
    // A reset gives a new one-time password; the old one no longer signs in.
    let id = added["operator"]["id"].as_str().unwrap();
    let reset = app
        .post(
            &format!("/admin/v1/operators/{id}/password-reset"),
            &app.owner,
            json!({}),
        )
        .await;
    let new_password = reset.expect(StatusCode::OK)["password"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_ne!(new_password, password);
    let old = json!({"email": "support@example.com", "password": password});
    let reply = app
        .send(Method::POST, "/admin/v1/sessions", None, Some(old))
        .await;
    assert_eq!(reply.status, StatusCode::UNAUTHORIZED);
    // An owner does not lock itself out here (the CLI keeps the last owner: operators_cli).
    let owner = app
        .store
        .operators()
        .find("owner@example.com")
        .await
        .unwrap()
        .id;
    let reply = app
        .post(
            &format!("/admin/v1/operators/{owner}/disable"),
            &app.owner,
            json!({}),
        )
        .await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "own_account");
    let path = format!("/admin/v1/operators/{owner}");
    let reply = app
        .send(Method::DELETE, &path, Some(&app.owner), None)
        .await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "own_account");
    // Removed: gone from the list, its entries stay in the trail.
    let path = format!("/admin/v1/operators/{id}");
    app.send(Method::DELETE, &path, Some(&app.owner), None)
        .await
        .expect(StatusCode::OK);
    let list = app.get("/admin/v1/operators", &app.owner).await;
    assert_eq!(list.expect(StatusCode::OK)["total"], 1);
    let trail = app
        .get("/admin/v1/audit-log?operation=operator.", &app.owner)
        .await;
    let operations: Vec<String> = trail.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["operation"].as_str().unwrap(),
                e["outcome"].as_str().unwrap()
            )
        })
        .collect();
    assert!(
        operations.contains(&"operator.remove ok".to_owned()),
        "{operations:?}"
    );
    assert!(
        operations
            .iter()
            .any(|o| o.starts_with("operator.disable failed")),
        "{operations:?}"
    );
    assert!(!trail.body.to_string().contains(&new_password));
}

async fn organisations_campaigns_and_keys_are_managed_as_the_cli_does(app: AdminApp) {
    let org_admin = app
        .operator("oa@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let acme = app.acme.id();
    let campaigns = format!("/admin/v1/orgs/{acme}/campaigns");
    let made = app
        .post(
            &campaigns,
            &org_admin,
            json!({"name": " Summer ", "currency": "eur"}),
        )
        .await;
    let campaign = made.expect(StatusCode::CREATED).clone();
    assert_eq!(campaign["name"], "Summer");
    assert_eq!(campaign["currency"], "EUR");
    let bad = app
        .post(
            &campaigns,
            &org_admin,
            json!({"name": "X", "currency": "€"}),
        )
        .await;
    assert_eq!(bad.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(bad.body["field"], "currency");
    // A key: the secret shown once, the list shows the key hidden in part; it works on the
    // client API until revoked.
    let keys = format!("/admin/v1/orgs/{acme}/keys");
    let body =
        json!({"campaignId": campaign["id"], "permissions": ["webhooks"], "version": "1.6.2"});
    let issued = app.post(&keys, &org_admin, body).await;
    let issued = issued.expect(StatusCode::CREATED).clone();
    let secret = issued["apiSecret"].as_str().unwrap().to_owned();
    assert!(secret.starts_with("rs_"));
    let context = app
        .store
        .tenancy()
        .authenticate(issued["apiKey"].as_str().unwrap(), &secret)
        .await
        .unwrap()
        .expect("the key works");
    assert_eq!(context.campaign.id, campaign["id"].as_str().unwrap());
    let list = app.get(&keys, &org_admin).await;
    let listed = list.expect(StatusCode::OK)["data"][0].clone();
    assert!(listed["apiKey"].as_str().unwrap().contains('…'));
    assert!(!list.body.to_string().contains(&secret));
    // Another organisation's campaign is not this one's to key; an unknown permission is named.
    let other = app
        .store
        .tenancy()
        .create_campaign(
            &app.other,
            store::NewCampaign {
                name: "O".into(),
                currency: "PTS".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let reply = app
        .post(&keys, &org_admin, json!({"campaignId": other.id}))
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    assert_eq!(reply.body["field"], "campaignId");
    let reply = app
        .post(
            &keys,
            &org_admin,
            json!({"campaignId": campaign["id"], "permissions": ["fly"]}),
        )
        .await;
    assert_eq!(reply.body["field"], "permissions[0]");
    // Revoked through another organisation's path: unknown there.
    let id = issued["key"]["id"].as_str().unwrap();
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let wrong = format!("/admin/v1/orgs/{}/keys/{id}", app.other.id());
    let reply = app.send(Method::DELETE, &wrong, Some(&admin), None).await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    let path = format!("{keys}/{id}");
    let revoked = app
        .send(Method::DELETE, &path, Some(&org_admin), None)
        .await;
    assert!(revoked.expect(StatusCode::OK)["revokedAt"].is_string());
    let gone = app
        .store
        .tenancy()
        .authenticate(issued["apiKey"].as_str().unwrap(), &secret)
        .await
        .unwrap();
    assert!(gone.is_none());
    // Each change is in the trail with its organisation, the secret nowhere.
    let trail = app
        .get(&format!("/admin/v1/audit-log?org={acme}"), &app.owner)
        .await;
    let operations: Vec<String> = trail.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let outcome = e["outcome"].as_str().unwrap();
            format!(
                "{} {}",
                e["operation"].as_str().unwrap(),
                &outcome[..outcome.len().min(6)]
            )
        })
        .collect();
    // The refused campaign too (checks made before acting leave none: the key's).
    assert_eq!(
        operations,
        [
            "key.revoke ok",
            "key.issue ok",
            "campaign.create failed",
            "campaign.create ok"
        ]
    );
    assert!(!trail.body.to_string().contains(&secret));
    // Organisations are made by an owner or admin.
    let made = app
        .post("/admin/v1/orgs", &admin, json!({"name": "Third"}))
        .await;
    made.expect(StatusCode::CREATED);
    let reply = app
        .post("/admin/v1/orgs", &admin, json!({"name": "  "}))
        .await;
    assert_eq!(reply.body["field"], "name");
}

async fn the_trail_is_verified_over_http_and_finds_an_edit(app: AdminApp) {
    app.post("/admin/v1/orgs", &app.owner, json!({"name": "Third"}))
        .await
        .expect(StatusCode::CREATED);
    let verdict = app
        .get("/admin/v1/audit-log/verification", &app.owner)
        .await;
    let verdict = verdict.expect(StatusCode::OK).clone();
    assert_eq!(verdict["intact"], true);
    assert!(verdict["entries"].as_u64().unwrap() >= 3);
    app.store
        .db()
        .unaudited()
        .execute(
            "UPDATE audit_log SET actor_name = 'someone else' WHERE operation = 'org.create'",
            &[],
        )
        .await
        .unwrap();
    let verdict = app
        .get("/admin/v1/audit-log/verification", &app.owner)
        .await;
    let verdict = verdict.expect(StatusCode::OK).clone();
    assert_eq!(verdict["intact"], false);
    assert_eq!(verdict["problems"][0]["fault"], "edited");
    // Filters are checked.
    let reply = app
        .get("/admin/v1/audit-log?since=yesterday", &app.owner)
        .await;
    assert_eq!(reply.body["field"], "since");
}

admin_tests!(
    an_owner_manages_operators,
    organisations_campaigns_and_keys_are_managed_as_the_cli_does,
    the_trail_is_verified_over_http_and_finds_an_edit,
);
