//! Access: API keys issued (the secret once) and revoked, SFTP users added and withdrawn with
//! the host key's fingerprint beside them, webhook endpoints added (the secret once), tested,
//! disabled and redelivered; what a viewer may not do is neither shown nor done.

use reqwest::StatusCode;
use store::{Permission, Role};

use crate::console_tests;
use crate::helpers::{Console, by_id};

console_tests! {
    an_org_admin_issues_a_key_sees_its_secret_once_and_revokes_it => |app: Console| async move {
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        let page = admin.get(&format!("/console/orgs/{org}/keys")).await;
        let text = page.expect(StatusCode::OK);
        for permission in Permission::ALL {
            assert!(text.contains(&format!("value=\"{}\"", permission.as_str())), "{permission:?} is offered");
        }
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].id.clone();
        let issued = admin
            .submit(&format!("/console/orgs/{org}/keys"), &[("campaign", &campaign), ("permissions", "webhooks"), ("permissions", "redeem-codes"), ("version", "1.6.2")])
            .await;
        let text = issued.expect(StatusCode::OK).to_owned();
        let key = by_id(&text, "new-api-key").to_owned();
        let secret = by_id(&text, "new-api-secret").to_owned();
        assert!(!key.is_empty() && !secret.is_empty());
        let stored = app.store.tenancy().authenticate(&key, &secret).await.unwrap();
        assert!(stored.is_some(), "the key and secret shown work");
        let listed = admin.get(&format!("/console/orgs/{org}/keys")).await.text;
        assert!(!listed.contains(&secret) && !listed.contains(&key), "the secret and whole key only once");
        assert!(listed.contains("redeem-codes") && listed.contains("1.6.2") && listed.contains("active"));
        // A campaign not the organisation's: said beside the field.
        let wrong = admin.submit(&format!("/console/orgs/{org}/keys"), &[("campaign", "no-such-campaign")]).await;
        assert!(wrong.expect(StatusCode::OK).contains("id=\"campaign-error\""), "{}", wrong.text);
        let id = listed.split("/keys/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        let revoked = admin.submit(&format!("/console/orgs/{org}/keys/{id}/revoke"), &[]).await;
        assert_eq!(revoked.status, StatusCode::SEE_OTHER);
        let after = admin.get(&format!("/console/orgs/{org}/keys?done=key-revoked")).await.text;
        assert!(after.contains("revoked") && !after.contains("/revoke\""), "{after}");
        assert!(app.store.tenancy().authenticate(&key, &secret).await.unwrap().is_none());
    };

    sftp_users_are_added_and_withdrawn_beside_the_host_key => |app: Console| async move {
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        let page = admin.get(&format!("/console/orgs/{org}/sftp")).await;
        let text = page.expect(StatusCode::OK).to_owned();
        assert!(by_id(&text, "host-fingerprint").starts_with("SHA256:"), "{text}");
        let bad = admin
            .submit(&format!("/console/orgs/{org}/sftp"), &[("username", "Not Valid"), ("password", "long enough password"), ("publicKey", "")])
            .await;
        let text = bad.expect(StatusCode::OK);
        assert!(text.contains("id=\"username-error\"") && text.contains("value=\"Not Valid\""), "{text}");
        let bad_key = admin
            .submit(&format!("/console/orgs/{org}/sftp"), &[("username", "acme-drop"), ("password", ""), ("publicKey", "ssh-ed25519 nonsense")])
            .await;
        assert!(bad_key.expect(StatusCode::OK).contains("id=\"key-error\""), "{}", bad_key.text);
        let added = admin
            .submit(&format!("/console/orgs/{org}/sftp"), &[("username", "acme-drop"), ("password", "long enough password"), ("publicKey", "")])
            .await;
        assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.text);
        let listed = admin.get(&format!("/console/orgs/{org}/sftp?done=sftp-user-added")).await.text;
        assert!(listed.contains("<strong>acme-drop</strong>") && listed.contains("a password") && listed.contains("may log in now"));
        let disabled = admin.submit(&format!("/console/orgs/{org}/sftp/acme-drop/disable"), &[]).await;
        assert_eq!(disabled.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&format!("/console/orgs/{org}/sftp")).await.text.contains("disabled"));
        let removed = admin.submit(&format!("/console/orgs/{org}/sftp/acme-drop/remove"), &[]).await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert!(!admin.get(&format!("/console/orgs/{org}/sftp")).await.text.contains("acme-drop"));
    };

    webhook_endpoints_are_added_tested_disabled_and_redelivered => |app: Console| async move {
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        let hooks = format!("/console/orgs/{org}/webhooks");
        let page = admin.get(&hooks).await;
        assert!(page.expect(StatusCode::OK).contains("value=\"transaction.created\""));
        let local = admin.submit(&hooks, &[("url", "https://127.0.0.1/hooks"), ("version", "1.9.5")]).await;
        assert!(local.expect(StatusCode::OK).contains("id=\"url-error\""), "{}", local.text);
        let added = admin
            .submit(&hooks, &[("url", "https://93.184.215.14/hooks"), ("description", "warehouse"), ("eventTypes", "transaction.created"), ("version", "1.9.5")])
            .await;
        let text = added.expect(StatusCode::OK).to_owned();
        assert!(by_id(&text, "new-webhook-secret").starts_with("whsec_"), "{text}");
        let listed = admin.get(&hooks).await.text;
        assert!(listed.contains("warehouse") && !listed.contains("whsec_"), "the secret only once");
        let id = listed.split("/webhooks/").nth(1).unwrap().split('"').next().unwrap().to_owned();
        let endpoint = format!("{hooks}/{id}");
        let shown = admin.get(&endpoint).await;
        assert!(shown.expect(StatusCode::OK).contains("Nothing delivered yet."));
        let tested = admin.submit(&format!("{endpoint}/test"), &[]).await;
        assert_eq!(tested.location(), Some(format!("../../../../orgs/{org}/webhooks/{id}?done=webhook-test-sent").as_str()));
        let range = admin.submit(&format!("{endpoint}/redeliver"), &[("eventId", ""), ("from", "2026-12-01T00:00"), ("to", "2026-11-01T00:00")]).await;
        let text = range.expect(StatusCode::OK);
        assert!(text.contains("id=\"to-error\"") && text.contains("value=\"2026-12-01T00:00\""), "{text}");
        let disabled = admin.submit(&format!("{endpoint}/disable"), &[]).await;
        assert_eq!(disabled.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&endpoint).await.text.contains("badge bad\">disabled"));
        let rotated = admin.submit(&format!("{endpoint}/rotate"), &[]).await;
        assert!(by_id(rotated.expect(StatusCode::OK), "rotated-secret").starts_with("whsec_"));
        let removed = admin.submit(&format!("{endpoint}/remove"), &[]).await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&hooks).await.text.contains("No endpoint yet."));
    };

    a_viewer_sees_access_but_changes_nothing => |app: Console| async move {
        let org = app.acme.id().to_owned();
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        for page in ["keys", "sftp", "webhooks"] {
            let text = viewer.get(&format!("/console/orgs/{org}/{page}")).await.expect(StatusCode::OK).to_owned();
            assert!(!text.contains("method=\"post\" action=\"orgs/"), "{page} offers a viewer a form: {text}");
        }
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].id.clone();
        let refused = viewer.submit(&format!("/console/orgs/{org}/keys"), &[("campaign", &campaign)]).await;
        assert!(refused.expect(StatusCode::FORBIDDEN).contains("may not use `issue_key`"), "{}", refused.text);
        assert!(app.store.tenancy().list_keys(&app.acme).await.unwrap().is_empty());
    };
}
