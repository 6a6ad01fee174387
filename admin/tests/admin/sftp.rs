//! The batch door's credentials through the admin API: an org-admin issues SFTP users with a
//! password and keys that then log in, disables and removes them; the host key's fingerprint is
//! the server's; bad input is named field by field; passwords never reach the audit trail.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

const ALICE: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIIHI8TtNBNjlVoLjvYDaUmpGwHvYoWLWIugV+rJFjCfy alice@laptop";
const ALICE_FINGERPRINT: &str = "SHA256:ZoYKCEr8rKWkKpWAa4YKPj8wKXLPKLNKpt5Q+FP7Up0";
const CI: &str =
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIKiKyimudLm4j83RsGkk2InsQ7Oz2DtYO2r60i5bqQQb ci@build";
const PASSWORD: &str = "upload-secret-0001";

async fn an_org_admin_issues_sftp_users_that_log_in(app: AdminApp) {
    let admin = app
        .operator("org-admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let users = format!("/admin/v1/orgs/{}/sftp-users", app.acme.id());
    let body = json!({"username": "acme-upload", "password": PASSWORD, "publicKey": ALICE});
    let added = app.post(&users, &admin, body).await;
    let added = added.expect(StatusCode::CREATED).clone();
    assert_eq!(added["password"], true);
    assert_eq!(added["keys"][0]["fingerprint"], ALICE_FINGERPRINT);
    // The password logs in, into Acme's folders; a second key is added and listed.
    let tenancy = app.store.tenancy();
    let login = tenancy.sftp_login_password("acme-upload", PASSWORD).await;
    assert_eq!(login.unwrap().unwrap().org_id, app.acme.id());
    let keys = format!("{users}/acme-upload/keys");
    let key = app.post(&keys, &admin, json!({"publicKey": CI})).await;
    assert!(
        key.expect(StatusCode::CREATED)["fingerprint"]
            .as_str()
            .unwrap()
            .starts_with("SHA256:")
    );
    let listed = app.get(&users, &admin).await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["data"][0]["keys"].as_array().unwrap().len(), 2);
    // A key another user holds, a name taken.
    let again = json!({"username": "acme-ci", "publicKey": CI});
    let reply = app.post(&users, &admin, again).await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "already_exists");
    assert_eq!(reply.body["field"], "publicKey");
    let taken = json!({"username": "acme-upload", "password": "another-password"});
    let reply = app.post(&users, &admin, taken).await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "already_exists");
    assert_eq!(reply.body["field"], "username");
    // Disabled: the password no longer logs in. Removed: gone from the list.
    let disable = format!("{users}/acme-upload/disable");
    let disabled = app.post(&disable, &admin, json!({})).await;
    assert!(disabled.expect(StatusCode::OK)["disabledAt"].is_string());
    let login = tenancy.sftp_login_password("acme-upload", PASSWORD).await;
    assert!(login.unwrap().is_none());
    let user = format!("{users}/acme-upload");
    let reply = app.send(Method::DELETE, &user, Some(&admin), None).await;
    assert_eq!(reply.status, StatusCode::NO_CONTENT);
    let reply = app.send(Method::DELETE, &user, Some(&admin), None).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    assert_eq!(app.get(&users, &admin).await.body["total"], 0);
    // Each change is in the trail as the org-admin's, the password not at all.
    let trail = app
        .get("/admin/v1/audit-log?operation=sftp-user.", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    let operations: Vec<&str> = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["operation"].as_str().unwrap())
        .collect();
    for operation in [
        "sftp-user.add",
        "sftp-user.key-add",
        "sftp-user.disable",
        "sftp-user.remove",
    ] {
        assert!(operations.contains(&operation), "{operations:?}");
    }
    assert!(!trail.to_string().contains(PASSWORD));
    assert_eq!(trail["data"][0]["actorName"], "org-admin@example.com");
}

async fn bad_sftp_input_is_named_and_other_organisations_are_unknown(app: AdminApp) {
    let users = format!("/admin/v1/orgs/{}/sftp-users", app.acme.id());
    for (body, field) in [
        (
            json!({"username": "Bad Name", "password": PASSWORD}),
            "username",
        ),
        (json!({"username": "ok"}), "password"),
        (json!({"username": "ok", "password": ""}), "password"),
        (
            json!({"username": "ok", "publicKey": "ssh-rsa nonsense"}),
            "publicKey",
        ),
    ] {
        let reply = app.post(&users, &app.owner, body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.body["field"], field, "{body}");
    }
    assert_eq!(app.get(&users, &app.owner).await.body["total"], 0);
    // An org-admin of Other reaches none of Acme's users.
    let other = app
        .operator("other@example.com", Role::OrgAdmin, &[&app.other])
        .await;
    let body = json!({"username": "sneaky", "password": PASSWORD});
    let reply = app.post(&users, &other, body).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    // A viewer lists them but may not add one.
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    app.get(&users, &viewer).await.expect(StatusCode::OK);
    let body = json!({"username": "viewer-made", "password": PASSWORD});
    let reply = app.post(&users, &viewer, body).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
}

async fn the_host_key_is_the_servers(app: AdminApp) {
    let shown = app.get("/admin/v1/sftp/host-key", &app.owner).await;
    let shown = shown.expect(StatusCode::OK).clone();
    let key = ingest::sftp::keys::host_key(&app.data_dir).unwrap();
    let fingerprint = ingest::sftp::keys::fingerprint(key.public_key());
    assert_eq!(shown["fingerprint"], fingerprint);
    assert_eq!(shown["algorithm"], "ssh-ed25519");
    assert!(
        shown["publicKey"]
            .as_str()
            .unwrap()
            .starts_with("ssh-ed25519 AAAA")
    );
    // No ban to lift.
    let reply = app
        .send(
            Method::DELETE,
            "/admin/v1/sftp/bans/192.0.2.7",
            Some(&app.owner),
            None,
        )
        .await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    let bans = app.get("/admin/v1/sftp/bans", &app.owner).await;
    assert_eq!(bans.expect(StatusCode::OK)["total"], 0);
}

admin_tests!(
    an_org_admin_issues_sftp_users_that_log_in,
    bad_sftp_input_is_named_and_other_organisations_are_unknown,
    the_host_key_is_the_servers,
);
