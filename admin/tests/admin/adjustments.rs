//! Manual adjustments over HTTP: support credits and debits within its role's limit, the
//! member's history shows why, a four-eyes adjustment end to end (waiting, refused to the one
//! who asked, approved by another, applied once), a bulk file tried then made, and bad input
//! named field by field.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::Role;

use crate::admin_tests;
use crate::helpers::AdminApp;

/// The path of Acme's campaign, with wallet `card-1` made in it.
fn adjustment(amount: f64, reason: &str) -> Value {
    json!({
        "walletId": "card-1",
        "amount": amount,
        "reason": reason,
        "comment": "Parcel lost in transit",
    })
}

async fn balance(app: &AdminApp, base: &str) -> f64 {
    let wallet = app.get(&format!("{base}/wallets/card-1"), &app.owner).await;
    wallet.expect(StatusCode::OK)["balance"].as_f64().unwrap()
}

async fn four_eyes_adjustment_end_to_end(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let limits = json!({"support": 100, "approvalOver": 50});
    let set = app
        .send(
            Method::PATCH,
            "/admin/v1/adjustment-limits",
            Some(&app.owner),
            Some(limits),
        )
        .await;
    let set = set.expect(StatusCode::OK);
    assert_eq!(
        (set["support"].as_f64(), set["owner"].as_f64()),
        (Some(100.0), None)
    );
    let alice = app
        .operator("alice@example.com", Role::Support, &[&app.acme])
        .await;
    let bob = app
        .operator("bob@example.com", Role::Support, &[&app.acme])
        .await;
    let adjustments = format!("{base}/adjustments");

    let made = app
        .post(&adjustments, &alice, adjustment(30.0, "goodwill"))
        .await;
    let made = made.expect(StatusCode::CREATED);
    assert_eq!(made["status"], "applied");
    assert_eq!(made["requestedBy"], "alice@example.com");
    let history = app
        .get(&format!("{base}/wallets/card-1/transactions"), &alice)
        .await;
    let first = &history.expect(StatusCode::OK)["data"][0];
    assert_eq!(first["id"], made["transactionId"]);
    assert_eq!(first["type"], "EARN");
    assert_eq!(first["description"], "Manual adjustment (goodwill)");
    assert_eq!(first["meta"]["adjustment"]["id"], made["id"]);

    let over = app
        .post(&adjustments, &alice, adjustment(-200.0, "fraud"))
        .await;
    assert_eq!(over.code(StatusCode::FORBIDDEN), "over_limit");
    assert_eq!(
        over.body["detail"],
        "your role may adjust at most 100 tokens at a time"
    );

    let waiting = app
        .post(&adjustments, &alice, adjustment(80.0, "correction"))
        .await;
    let waiting = waiting.expect(StatusCode::CREATED).clone();
    assert_eq!(waiting["status"], "pending");
    assert_eq!(balance(&app, &base).await, 30.0);
    let queue = app
        .get(&format!("{adjustments}?status=pending"), &bob)
        .await;
    assert_eq!(queue.expect(StatusCode::OK)["data"][0]["id"], waiting["id"]);

    let id = waiting["id"].as_str().unwrap();
    let approve = format!("{adjustments}/{id}/approve");
    let own = app.post(&approve, &alice, json!({})).await;
    assert_eq!(own.code(StatusCode::FORBIDDEN), "own_request");
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let looked = app.post(&approve, &viewer, json!({})).await;
    assert_eq!(looked.code(StatusCode::FORBIDDEN), "not_permitted");
    let approved = app.post(&approve, &bob, json!({})).await;
    let approved = approved.expect(StatusCode::OK);
    assert_eq!(approved["status"], "applied");
    assert_eq!(approved["decidedBy"], "bob@example.com");
    assert_eq!(balance(&app, &base).await, 110.0);
    let again = app.post(&approve, &app.owner, json!({})).await;
    assert_eq!(again.code(StatusCode::CONFLICT), "not_pending");
    assert_eq!(balance(&app, &base).await, 110.0);

    // A request withdrawn: rejected by the one who asked, nothing written.
    let withdrawn = app
        .post(&adjustments, &alice, adjustment(-60.0, "fraud"))
        .await;
    let wid = withdrawn.expect(StatusCode::CREATED)["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let rejected = app
        .post(
            &format!("{adjustments}/{wid}/reject"),
            &alice,
            json!({"note": "wrong member"}),
        )
        .await;
    assert_eq!(rejected.expect(StatusCode::OK)["status"], "rejected");
    assert_eq!(balance(&app, &base).await, 110.0);

    // Each change is in the audit trail as its operator's.
    let trail = app
        .get(
            "/admin/v1/audit-log?operation=adjustment.approve",
            &app.owner,
        )
        .await;
    let entries = trail.expect(StatusCode::OK)["data"].as_array().unwrap();
    let done: Vec<(&str, &str)> = entries
        .iter()
        .filter(|e| e["target"] == id)
        .map(|e| {
            let outcome = e["outcome"].as_str().unwrap();
            (
                e["actorName"].as_str().unwrap(),
                &outcome[..outcome.len().min(6)],
            )
        })
        .collect();
    assert!(done.contains(&("bob@example.com", "ok")), "{done:?}");
    assert!(done.contains(&("alice@example.com", "failed")), "{done:?}");
    assert_eq!(
        done.iter().filter(|(_, o)| *o == "ok").count(),
        1,
        "{done:?}"
    );

    // Only an owner sets the limits.
    let refused = app
        .send(
            Method::PATCH,
            "/admin/v1/adjustment-limits",
            Some(&alice),
            Some(json!({"support": null})),
        )
        .await;
    assert_eq!(refused.code(StatusCode::FORBIDDEN), "not_permitted");
}

async fn bad_adjustments_are_named_and_change_nothing(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let adjustments = format!("{base}/adjustments");
    for (body, field) in [
        (adjustment(0.0, "goodwill"), "amount"),
        (adjustment(1.0000001, "goodwill"), "amount"),
        (adjustment(5.0, "bonus"), "reason"),
        (
            json!({"walletId": "card-1", "amount": 5, "reason": "goodwill"}),
            "comment",
        ),
        (
            json!({"walletId": "card-1", "amount": 5, "reason": "goodwill", "comment": "  "}),
            "comment",
        ),
    ] {
        let reply = app.post(&adjustments, &app.owner, body).await;
        assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
        assert_eq!(reply.body["field"], field, "{}", reply.body);
    }
    let short = app
        .post(&adjustments, &app.owner, adjustment(-1.0, "fraud"))
        .await;
    assert_eq!(
        short.code(StatusCode::PAYMENT_REQUIRED),
        "insufficient_balance"
    );
    let unknown = app
        .post(
            &adjustments,
            &app.owner,
            json!({"walletId": "nobody", "amount": 5, "reason": "goodwill", "comment": "x"}),
        )
        .await;
    unknown.expect(StatusCode::NOT_FOUND);
    // Support of another organisation does not reach this one's campaign.
    let stranger = app
        .operator("stranger@example.com", Role::Support, &[&app.other])
        .await;
    let reply = app
        .post(&adjustments, &stranger, adjustment(5.0, "goodwill"))
        .await;
    reply.expect(StatusCode::NOT_FOUND);
    let listed = app.get(&adjustments, &app.owner).await;
    assert_eq!(listed.expect(StatusCode::OK)["total"], 0);
    assert_eq!(balance(&app, &base).await, 0.0);
}

async fn send_csv(
    app: &AdminApp,
    path: &str,
    token: &str,
    csv: &str,
    content_type: &str,
) -> (StatusCode, Value) {
    let reply = app
        .send_text(Method::POST, path, token, content_type, csv)
        .await;
    (reply.status, reply.body)
}

async fn a_bulk_file_is_tried_then_made(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let bulk = format!("{base}/adjustments/bulk");
    let file = "wallet,amount,reason,comment\n\
        card-1,25,migration,Old card balance\n\
        card-1,-5,correction,Double stamp\n\
        card-1,3,gift,Unknown reason\n";
    let (status, dry) = send_csv(&app, &bulk, &app.owner, file, "text/csv").await;
    assert_eq!(status, StatusCode::OK, "{dry}");
    assert_eq!(dry["dryRun"], true);
    let outcomes: Vec<&str> = dry["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["outcome"].as_str().unwrap())
        .collect();
    assert_eq!(outcomes, ["would_apply", "would_apply", "refused"]);
    assert_eq!(dry["rows"][2]["field"], "reason");
    assert_eq!(balance(&app, &base).await, 0.0, "a dry run writes nothing");

    let (status, made) = send_csv(
        &app,
        &format!("{bulk}?dryRun=false"),
        &app.owner,
        file,
        "text/csv",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{made}");
    assert_eq!(
        (made["applied"].as_u64(), made["refused"].as_u64()),
        (Some(2), Some(1))
    );
    assert_eq!(balance(&app, &base).await, 20.0);
    let batch = made["batchId"].as_str().unwrap();
    let listed = app
        .get(&format!("{base}/adjustments?batchId={batch}"), &app.owner)
        .await;
    assert_eq!(listed.expect(StatusCode::OK)["total"], 2);

    // The same file again makes nothing twice.
    let (_, again) = send_csv(
        &app,
        &format!("{bulk}?dryRun=false"),
        &app.owner,
        file,
        "text/csv",
    )
    .await;
    assert_eq!(again["replayed"], 2);
    assert_eq!(balance(&app, &base).await, 20.0);

    let (status, problem) =
        send_csv(&app, &bulk, &app.owner, "no,columns\n1,2\n", "text/csv").await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert_eq!(problem["field"], "file");
    let (status, _) = send_csv(&app, &bulk, &app.owner, file, "application/json").await;
    assert_eq!(status, StatusCode::UNSUPPORTED_MEDIA_TYPE);
}

admin_tests!(
    four_eyes_adjustment_end_to_end,
    bad_adjustments_are_named_and_change_nothing,
    a_bulk_file_is_tried_then_made,
);
