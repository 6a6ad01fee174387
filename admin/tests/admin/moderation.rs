//! Support's tools beyond wallets through the admin API: reviews held back by their language
//! are listed, approved or removed by support (not a viewer), each decision in the audit trail;
//! the ledger audit finds a wallet whose balance was edited behind the ledger's back; due lots
//! are expired by hand; the audit trail is pruned by an owner only.

use reqwest::StatusCode;
use serde_json::json;
use store::{Catalogue, ImportOptions, NewReview, Role};

use crate::admin_tests;
use crate::helpers::AdminApp;

async fn held_reviews_are_decided_by_support(app: AdminApp) {
    app.campaign_with_wallet().await;
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let doc = json!({"products": [{"id": "mug", "name": "Mug",
        "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}]});
    let catalogue = Catalogue::from_value(&doc).unwrap();
    let store = &app.store;
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    let rules = store::Moderation::default();
    let review = |text: &str| NewReview {
        member: "cust-1".into(),
        voucher_id: "mug".into(),
        partner_id: "p-1".into(),
        rating: 1,
        review_text: text.into(),
    };
    let rude = store
        .community()
        .create_review(&campaign, review("this mug is shit"), &rules)
        .await
        .unwrap();
    let reviews = format!("/admin/v1/orgs/{}/reviews", app.acme.id());
    let support = app
        .operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let pending = app.get(&format!("{reviews}/pending"), &viewer).await;
    let pending = pending.expect(StatusCode::OK);
    assert_eq!(pending["total"], 1);
    assert_eq!(pending["data"][0]["id"], rude.id.as_str());
    assert_eq!(pending["data"][0]["status"], "pending");
    // A viewer may not decide; support removes it, and it is no longer waiting.
    let remove = format!("{reviews}/{}/remove", rude.id);
    let reply = app.post(&remove, &viewer, json!({})).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let reply = app.post(&remove, &support, json!({})).await;
    assert_eq!(reply.expect(StatusCode::OK)["decision"], "removed");
    let pending = app.get(&format!("{reviews}/pending"), &support).await;
    assert_eq!(pending.expect(StatusCode::OK)["total"], 0);
    // Removed already: 404; the decision is in the trail as support's.
    let reply = app.post(&remove, &support, json!({})).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    let trail = app
        .get("/admin/v1/audit-log?operation=review.", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    let ok: Vec<_> = trail["data"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["outcome"] == "ok")
        .collect();
    assert_eq!(ok.len(), 1, "{trail}");
    assert_eq!(ok[0]["actorName"], "support@example.com");
    assert_eq!(ok[0]["target"], rude.id.as_str());
}

async fn the_ledger_audit_finds_an_edited_balance(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    app.load(
        "earns.csv",
        "id,walletId,amount,date\nt-1,card-1,40,2026-11-10T10:00:00Z\n",
    )
    .await;
    let audit = app.get("/admin/v1/ledger/audit", &app.owner).await;
    assert_eq!(audit.expect(StatusCode::OK)["consistent"], true);
    app.store
        .db()
        .unaudited()
        .execute("UPDATE wallets SET balance = balance + 5000000", &[])
        .await
        .unwrap();
    let audit = app.get("/admin/v1/ledger/audit", &app.owner).await;
    let audit = audit.expect(StatusCode::OK);
    assert_eq!(audit["consistent"], false);
    let found = &audit["discrepancies"][0];
    assert_eq!(found["check"], "balance");
    assert_eq!(found["recorded"], 45);
    assert_eq!(found["computed"], 40);
    let wallet = app.get(&format!("{base}/wallets/card-1"), &app.owner).await;
    assert_eq!(found["walletId"], wallet.expect(StatusCode::OK)["id"]);
    // Service-wide: not for a per-organisation role.
    let org_admin = app
        .operator("org-admin@example.com", Role::OrgAdmin, &[&app.acme])
        .await;
    let reply = app.get("/admin/v1/ledger/audit", &org_admin).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
}

async fn due_lots_expire_the_trail_is_pruned_and_a_campaign_shown(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let shown = app.get(&base, &app.owner).await;
    assert_eq!(shown.expect(StatusCode::OK)["name"], "Main");
    let unknown = format!("/admin/v1/orgs/{}/campaigns/nope", app.acme.id());
    let reply = app.get(&unknown, &app.owner).await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");
    // Tokens that expire a day after they are earned, earned in 2020: due now.
    let policy = json!({"expiry": "days:1"});
    let path = format!("{base}/policy");
    let set = app
        .send(
            reqwest::Method::PATCH,
            &path,
            Some(&app.owner),
            Some(policy),
        )
        .await;
    set.expect(StatusCode::OK);
    app.load(
        "old.csv",
        "id,walletId,amount,date\nt-1,card-1,10,2020-01-01T10:00:00Z\n",
    )
    .await;
    let wallet = format!("{base}/wallets/card-1");
    assert_eq!(app.get(&wallet, &app.owner).await.body["balance"], 10.0);
    let expired = app
        .post("/admin/v1/ledger/expire", &app.owner, json!({}))
        .await;
    assert_eq!(expired.expect(StatusCode::OK)["expired"], 1);
    assert_eq!(app.get(&wallet, &app.owner).await.body["balance"], 0.0);
    let again = app
        .post("/admin/v1/ledger/expire", &app.owner, json!({}))
        .await;
    assert_eq!(again.expect(StatusCode::OK)["expired"], 0);
    // Pruning: only an owner; entries of today are kept and the chain still verifies.
    let admin = app.operator("admin@example.com", Role::Admin, &[]).await;
    let prune = json!({"olderThanDays": 30});
    let reply = app
        .post("/admin/v1/audit-log/prune", &admin, prune.clone())
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let reply = app
        .post(
            "/admin/v1/audit-log/prune",
            &app.owner,
            json!({"olderThanDays": 0}),
        )
        .await;
    assert_eq!(reply.body["field"], "olderThanDays");
    let pruned = app
        .post("/admin/v1/audit-log/prune", &app.owner, prune)
        .await;
    assert_eq!(pruned.expect(StatusCode::OK)["removed"], 0);
    let verdict = app
        .get("/admin/v1/audit-log/verification", &app.owner)
        .await;
    assert_eq!(verdict.expect(StatusCode::OK)["intact"], true);
}

admin_tests!(
    due_lots_expire_the_trail_is_pruned_and_a_campaign_shown,
    held_reviews_are_decided_by_support,
    the_ledger_audit_finds_an_edited_balance,
);
