//! Support's lookups: a member found by what a caller on the phone gives (an e-mail in any
//! case, a user id, the client's reference), its wallets, and a wallet's history, balance and
//! holds; another organisation's campaign is unknown under this one.

use reqwest::StatusCode;
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

admin_tests!(support_finds_a_member_and_reads_its_wallet);
