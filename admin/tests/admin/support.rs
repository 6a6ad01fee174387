//! Support's lookups: a member found by what a caller on the phone gives (an e-mail in any
//! case, a user id, the client's reference), its wallets, and a wallet's history, balance and
//! holds; another organisation's campaign is unknown under this one.

use reqwest::{Method, StatusCode};
use serde_json::json;
use store::{NewCampaign, NewMember, NewWallet, Role};

use crate::admin_tests;
use crate::helpers::AdminApp;

async fn support_finds_a_member_and_reads_its_wallet(app: AdminApp) {
    let members = app.store.members();
    let member = members
        .create_member(
            &app.acme,
            NewMember {
                first_name: "Ada".into(),
                email: Some("Ada@Example.com".into()),
                idp: "auth0".into(),
                user_id: "auth0|42".into(),
                external_id: "cust-42".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let wallet = app
        .store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: Some("cust-42".into()),
                external_id: Some("card-42".into()),
                name: None,
            },
        )
        .await
        .unwrap();
    let support = app
        .operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let acme = app.acme.id();
    for q in [
        "ada@example.COM",
        "auth0%7C42",
        "cust-42",
        member.id.as_str(),
    ] {
        let found = app
            .get(&format!("/admin/v1/orgs/{acme}/members?q={q}"), &support)
            .await;
        let found = found.expect(StatusCode::OK);
        assert_eq!(found["total"], 1, "{q}");
        assert_eq!(found["data"][0]["id"], member.id.as_str(), "{q}");
    }
    let none = app
        .get(&format!("/admin/v1/orgs/{acme}/members?q=nobody"), &support)
        .await;
    assert_eq!(none.expect(StatusCode::OK)["total"], 0);
    let one = app
        .get(&format!("/admin/v1/orgs/{acme}/members/cust-42"), &support)
        .await;
    assert_eq!(one.expect(StatusCode::OK)["externalId"], "cust-42");

    let base = format!("/admin/v1/orgs/{acme}/campaigns/{}", campaign.id);
    let wallets = app
        .get(&format!("{base}/wallets?owner=cust-42"), &support)
        .await;
    assert_eq!(
        wallets.expect(StatusCode::OK)["data"][0]["id"],
        wallet.id.as_str()
    );
    let got = app.get(&format!("{base}/wallets/card-42"), &support).await;
    assert_eq!(got.expect(StatusCode::OK)["balance"], 0.0);
    let history = app
        .get(&format!("{base}/wallets/card-42/transactions"), &support)
        .await;
    assert_eq!(history.expect(StatusCode::OK)["total"], 0);
    let balance = app
        .get(
            &format!("{base}/wallets/card-42/balance?at=2026-01-01T00:00:00Z"),
            &support,
        )
        .await;
    assert_eq!(
        balance.expect(StatusCode::OK)["walletId"],
        wallet.id.as_str()
    );
    let bad = app
        .get(
            &format!("{base}/wallets/card-42/balance?at=yesterday"),
            &support,
        )
        .await;
    assert_eq!(bad.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(bad.body["field"], "at");
    let holds = app
        .get(&format!("{base}/wallets/card-42/holds"), &support)
        .await;
    assert_eq!(holds.expect(StatusCode::OK)["total"], 0);
    let unknown = app.get(&format!("{base}/wallets/nope"), &support).await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    // Another organisation's campaign, under this organisation's path: unknown.
    let theirs = app
        .store
        .tenancy()
        .create_campaign(
            &app.other,
            NewCampaign {
                name: "Theirs".into(),
                currency: "PTS".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let reply = app
        .get(
            &format!("/admin/v1/orgs/{acme}/campaigns/{}/wallets", theirs.id),
            &app.owner,
        )
        .await;
    assert_eq!(reply.status, StatusCode::NOT_FOUND);
    // An unknown parameter is refused, naming it.
    let reply = app
        .get(&format!("/admin/v1/orgs/{acme}/members?query=x"), &support)
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "query", "{}", reply.body);
}

/// A member erased on request by support (not a viewer): gone, in the trail.
async fn support_erases_a_member(app: AdminApp) {
    app.campaign_with_wallet().await;
    let support = app
        .operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let member = format!("/admin/v1/orgs/{}/members/cust-1", app.acme.id());
    let refused = app.send(Method::DELETE, &member, Some(&viewer), None).await;
    assert_eq!(refused.code(StatusCode::FORBIDDEN), "not_permitted");
    let erased = app
        .send(Method::DELETE, &member, Some(&support), None)
        .await;
    assert_eq!(erased.expect(StatusCode::OK)["firstName"], "Ada");
    let gone = app.get(&member, &support).await;
    assert_eq!(gone.code(StatusCode::NOT_FOUND), "not_found");
    let again = app
        .send(Method::DELETE, &member, Some(&support), None)
        .await;
    assert_eq!(again.code(StatusCode::NOT_FOUND), "not_found");
    let trail = app
        .get("/admin/v1/audit-log?operation=member.erase", &app.owner)
        .await;
    let trail = trail.expect(StatusCode::OK);
    assert_eq!(trail["total"], 1, "{trail}");
    assert_eq!(trail["data"][0]["actorName"], "support@example.com");
}

admin_tests!(
    support_finds_a_member_and_reads_its_wallet,
    a_campaign_is_seen_at_a_glance,
    support_erases_a_member
);

/// A campaign at a glance: its wallets, what they hold, and each day's recorded tokens.
async fn a_campaign_is_seen_at_a_glance(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    let credit = json!({"walletId": "card-1", "amount": 10, "reason": "goodwill",
        "comment": "late parcel"});
    let made = app
        .post(&format!("{base}/adjustments"), &app.owner, credit)
        .await;
    made.expect(StatusCode::CREATED);
    let seen = app.get(&format!("{base}/overview"), &viewer).await;
    let seen = seen.expect(StatusCode::OK);
    assert_eq!(
        (seen["wallets"].as_u64(), seen["activeWallets"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(seen["outstanding"], 10.0);
    let days = seen["days"].as_array().unwrap();
    assert_eq!(days.len(), 90);
    let today = app.store.now().date_naive().to_string();
    assert_eq!(days[89]["day"], today.as_str());
    assert_eq!(
        (
            days[89]["earned"].as_f64(),
            days[89]["transactions"].as_u64()
        ),
        (Some(10.0), Some(1))
    );
    assert_eq!(days[0]["transactions"], 0);
    // Asked again, the closed days kept: the same answer.
    let again = app.get(&format!("{base}/overview?days=90"), &viewer).await;
    assert_eq!(again.expect(StatusCode::OK)["days"], seen["days"]);
    let week = app.get(&format!("{base}/overview?days=7"), &viewer).await;
    assert_eq!(
        week.expect(StatusCode::OK)["days"]
            .as_array()
            .unwrap()
            .len(),
        7
    );
    for days in ["0", "367"] {
        let wrong = app
            .get(&format!("{base}/overview?days={days}"), &viewer)
            .await;
        wrong.expect(StatusCode::BAD_REQUEST);
        assert_eq!(wrong.body["field"], "days", "{}", wrong.body);
    }
}
