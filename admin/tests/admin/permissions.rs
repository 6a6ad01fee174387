//! The permission table over HTTP: every operation of the document, for every role, answers
//! 403 exactly when the table says the role may not use it; an operator of one organisation
//! naming another's gets 404; `me` lists what a role may use and nothing else.

use admin::permissions::{OPERATIONS, need_of};
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

/// Every operation of the document with its method and path, its `{org}` set to `org` and any
/// other parameter to an id nothing has.
fn operations(org: &str) -> Vec<(Method, String, String)> {
    let document = admin::openapi();
    let mut out = Vec::new();
    for (path, item) in &document.paths.paths {
        let path = path
            .replace("{org}", org)
            .replace("{id}", "00000000000000000000000000");
        for (method, operation) in [
            (Method::GET, &item.get),
            (Method::POST, &item.post),
            (Method::PUT, &item.put),
            (Method::PATCH, &item.patch),
            (Method::DELETE, &item.delete),
        ] {
            if let Some(operation) = operation {
                let id = operation.operation_id.clone().unwrap();
                out.push((method, path.clone(), id));
            }
        }
    }
    out
}

async fn each_role_is_answered_as_the_table_says(app: AdminApp) {
    let acme = app.acme.clone();
    let roles = [
        (
            Role::Owner,
            "owner@example.com".to_owned(),
            app.owner.clone(),
        ),
        (Role::Admin, "admin@example.com".into(), String::new()),
        (
            Role::OrgAdmin,
            "org-admin@example.com".into(),
            String::new(),
        ),
        (Role::Support, "support@example.com".into(), String::new()),
        (Role::Viewer, "viewer@example.com".into(), String::new()),
    ];
    let mut checked = 0;
    for (role, email, token) in roles {
        let token = if token.is_empty() {
            let orgs = if role.per_organisation() {
                vec![&acme]
            } else {
                vec![]
            };
            app.operator(&email, role, &orgs).await
        } else {
            token
        };
        for (method, path, id) in operations(acme.id()) {
            // Signing in needs no token, and signing out would end the session the rest uses.
            if id == "sign_in" || id == "sign_out" {
                continue;
            }
            let need = need_of(&id).unwrap();
            // An empty body: refused for what it lacks (400) if the role may, never acted on.
            let body = matches!(method, Method::POST | Method::PUT).then(|| json!({}));
            let reply = app.send(method.clone(), &path, Some(&token), body).await;
            if need.allows(role) {
                assert!(
                    ![StatusCode::UNAUTHORIZED, StatusCode::FORBIDDEN].contains(&reply.status),
                    "{role} may use {id} ({method} {path}): {} {}",
                    reply.status,
                    reply.body
                );
            } else {
                assert_eq!(
                    reply.code(StatusCode::FORBIDDEN),
                    "not_permitted",
                    "{role} may not use {id}"
                );
            }
            checked += 1;
        }
        // What `me` lists is what the role may use.
        let me = app.get("/admin/v1/me", &token).await;
        let listed: Vec<&str> = me.expect(StatusCode::OK)["operations"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        let allowed: Vec<&str> = OPERATIONS
            .iter()
            .filter(|(_, need)| need.allows(role))
            .map(|(id, _)| *id)
            .collect();
        assert_eq!(listed, allowed, "{role}");
    }
    assert!(checked >= 5 * (OPERATIONS.len() - 2), "{checked}");
}

async fn another_organisations_records_are_unknown_to_a_per_organisation_role(app: AdminApp) {
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let other = app.other.id();
    for path in [
        format!("/admin/v1/orgs/{other}"),
        format!("/admin/v1/orgs/{other}/campaigns"),
        format!("/admin/v1/orgs/{other}/keys"),
    ] {
        let reply = app.get(&path, &viewer).await;
        assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found", "{path}");
    }
    // Its own are there, and the list of organisations holds only them.
    let own = format!("/admin/v1/orgs/{}/campaigns", app.acme.id());
    app.get(&own, &viewer).await.expect(StatusCode::OK);
    let orgs = app.get("/admin/v1/orgs", &viewer).await;
    let ids: Vec<&str> = orgs.expect(StatusCode::OK)["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [app.acme.id()]);
    // An admin reaches every organisation.
    let all = app.get("/admin/v1/orgs", &app.owner).await;
    assert_eq!(all.expect(StatusCode::OK)["total"], 2);
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let path = format!("/admin/v1/orgs/{other}/campaigns");
    app.get(&path, &admin).await.expect(StatusCode::OK);
}

async fn a_role_change_holds_from_the_next_request_and_disabling_at_once(app: AdminApp) {
    let token = app
        .operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let path = format!("/admin/v1/orgs/{}/campaigns", app.acme.id());
    let body = json!({"name": "Summer", "currency": "PTS"});
    let refused = app.post(&path, &token, body.clone()).await;
    assert_eq!(refused.code(StatusCode::FORBIDDEN), "not_permitted");
    // Made an org-admin: the same session may, from its next request.
    let role = json!({"role": "org-admin", "orgs": [app.acme.id()]});
    let reply = app
        .send(
            Method::PUT,
            "/admin/v1/operators/support@example.com/role",
            Some(&app.owner),
            Some(role),
        )
        .await;
    assert_eq!(reply.expect(StatusCode::OK)["role"], "org-admin");
    app.post(&path, &token, body.clone())
        .await
        .expect(StatusCode::CREATED);
    // A per-organisation role needs an organisation; an owner does not demote itself.
    let none = json!({"role": "viewer"});
    let reply = app
        .send(
            Method::PUT,
            "/admin/v1/operators/support@example.com/role",
            Some(&app.owner),
            Some(none),
        )
        .await;
    assert_eq!(reply.body["field"], "orgs");
    let reply = app
        .send(
            Method::PUT,
            "/admin/v1/operators/owner@example.com/role",
            Some(&app.owner),
            Some(json!({"role": "admin"})),
        )
        .await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "own_account");
    // Disabled: its session ends at once.
    let id = app
        .store
        .operators()
        .find("support@example.com")
        .await
        .unwrap()
        .id;
    let disable = format!("/admin/v1/operators/{id}/disable");
    app.post(&disable, &app.owner, json!({}))
        .await
        .expect(StatusCode::OK);
    let reply = app.get("/admin/v1/me", &token).await;
    assert_eq!(reply.code(StatusCode::UNAUTHORIZED), "unauthorized");
}

admin_tests!(
    each_role_is_answered_as_the_table_says,
    another_organisations_records_are_unknown_to_a_per_organisation_role,
    a_role_change_holds_from_the_next_request_and_disabling_at_once,
);
