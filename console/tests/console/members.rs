//! Support's journeys: a member found, its wallet's figures and history, an adjustment by hand
//! with its errors beside the fields, and the four-eyes queue.

use reqwest::StatusCode;
use store::{AdjustmentLimits, NewMember, NewWallet, Role, Tokens};

use crate::console_tests;
use crate::helpers::Console;

/// Acme's campaign id, with members `cust-1` (Ada, wallet `card-1`) and `cust-2` (Grace).
async fn seed(app: &Console) -> String {
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    for (reference, first, email) in [
        ("cust-1", "Ada", "ada@shop.example"),
        ("cust-2", "Grace", "grace@shop.example"),
    ] {
        let member = NewMember {
            first_name: first.into(),
            email: Some(email.into()),
            idp: "reference".into(),
            user_id: format!("u-{reference}"),
            external_id: reference.into(),
            ..Default::default()
        };
        app.store
            .members()
            .create_member(&app.acme, member)
            .await
            .unwrap();
    }
    let wallet = NewWallet {
        owner: Some("cust-1".into()),
        external_id: Some("card-1".into()),
        name: None,
    };
    app.store
        .ledger()
        .create_wallet(&campaign, wallet)
        .await
        .unwrap();
    campaign.id
}

console_tests! {
    support_finds_a_member_and_adjusts_a_balance_with_a_reason => |app: Console| async move {
        let campaign = seed(&app).await;
        let org = app.acme.id().to_owned();
        let mut support = app.signed_in("support@example.com", Role::Support, &[&app.acme]).await;
        let all = support.get(&format!("/console/orgs/{org}/members")).await;
        let text = all.expect(StatusCode::OK);
        assert!(text.contains("cust-1") && text.contains("cust-2") && text.contains("2 in all"), "{text}");
        let found = support.get(&format!("/console/orgs/{org}/members?q=grace%40shop.example")).await;
        let text = found.expect(StatusCode::OK);
        assert!(text.contains("cust-2") && !text.contains("cust-1"), "{text}");
        // As one types, htmx asks for the rows alone.
        let rows = support
            .request(reqwest::Method::GET, &format!("/console/orgs/{org}/members?q=cust-1"), None, &[("hx-request", "true")])
            .await;
        let text = rows.expect(StatusCode::OK);
        assert!(text.starts_with("<div id=\"member-rows\">") && text.contains("cust-1") && !text.contains("<html"), "{text}");
        let none = support.get(&format!("/console/orgs/{org}/members?q=nobody")).await;
        assert!(none.expect(StatusCode::OK).contains("No member matches “nobody”."));

        let member = support.get(&format!("/console/orgs/{org}/members/cust-1")).await;
        let text = member.expect(StatusCode::OK);
        assert!(text.contains("Ada") && text.contains("card-1") && text.contains("0 PTS"), "{text}");

        let wallet_page = format!("/console/orgs/{org}/campaigns/{campaign}/wallets/card-1");
        let wallet = support.get(&wallet_page).await;
        assert!(wallet.expect(StatusCode::OK).contains("Adjust the balance"));
        // A missing comment and a bad amount: each said beside its field, what was typed kept.
        let refused = support
            .submit(&format!("{wallet_page}/adjust"), &[("amount", "lots"), ("reason", "goodwill"), ("comment", "")])
            .await;
        let text = refused.expect(StatusCode::OK);
        assert!(text.contains("id=\"amount-error\"") && text.contains("value=\"lots\""), "{text}");
        let refused = support
            .submit(&format!("{wallet_page}/adjust"), &[("amount", "1,000"), ("reason", "goodwill"), ("comment", "")])
            .await;
        let text = refused.expect(StatusCode::OK);
        assert!(text.contains("id=\"comment-error\"") && !text.contains("id=\"amount-error\""), "{text}");
        let made = support
            .submit(&format!("{wallet_page}/adjust"), &[("amount", "1,000"), ("reason", "goodwill"), ("comment", "Late delivery")])
            .await;
        assert_eq!(made.status, StatusCode::SEE_OTHER, "{}", made.text);
        assert!(made.location().unwrap().ends_with("wallets/card-1?done=adjusted"), "{:?}", made.location());
        let after = support.get(&format!("{wallet_page}?done=adjusted")).await;
        let text = after.expect(StatusCode::OK);
        assert!(text.contains("The adjustment is applied.") && text.contains("id=\"balance\">1,000 PTS"), "{text}");
        assert!(text.contains("Late delivery"), "the history shows the comment");
        // The balance at a chosen date: the end of yesterday knew nothing of it.
        let yesterday = (chrono::Utc::now() - chrono::Duration::days(1)).format("%Y-%m-%d").to_string();
        let then = support.get(&format!("{wallet_page}?at={yesterday}")).await;
        assert!(then.expect(StatusCode::OK).contains("balance <strong>0 PTS</strong>"), "{}", then.text);
        let bad_day = support.get(&format!("{wallet_page}?at=31-12-2026")).await;
        assert!(bad_day.expect(StatusCode::OK).contains("id=\"at-error\""));
    };

    a_viewer_reads_but_may_not_adjust => |app: Console| async move {
        let campaign = seed(&app).await;
        let org = app.acme.id().to_owned();
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let wallet_page = format!("/console/orgs/{org}/campaigns/{campaign}/wallets/card-1");
        let text = viewer.get(&wallet_page).await.expect(StatusCode::OK).to_owned();
        assert!(!text.contains("Adjust the balance") && !text.contains("/adjust\""), "no form for a viewer");
        let sent = viewer
            .submit(&format!("{wallet_page}/adjust"), &[("amount", "10"), ("reason", "goodwill"), ("comment", "try")])
            .await;
        assert!(sent.expect(StatusCode::FORBIDDEN).contains("may not use `adjust_wallet`"), "{}", sent.text);
        // Another organisation's pages are not there for it.
        let other = viewer.get(&format!("/console/orgs/{}/members", app.other.id())).await;
        assert_eq!(other.status, StatusCode::NOT_FOUND);
        let wallet = app.store.ledger().get_wallet(
            &app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0], "card-1").await.unwrap();
        assert_eq!(wallet.balance, Tokens::ZERO);
    };

    a_large_adjustment_waits_for_a_second_operator => |app: Console| async move {
        let campaign = seed(&app).await;
        let org = app.acme.id().to_owned();
        app.store.operators().set_adjustment_limits(AdjustmentLimits {
            owner: None,
            support: Some(Tokens::whole(10_000)),
            approval_over: Some(Tokens::whole(500)),
        }).await.unwrap();
        let mut asking = app.signed_in("first@example.com", Role::Support, &[&app.acme]).await;
        let wallet_page = format!("/console/orgs/{org}/campaigns/{campaign}/wallets/card-1");
        asking.get(&wallet_page).await.expect(StatusCode::OK);
        let made = asking
            .submit(&format!("{wallet_page}/adjust"), &[("amount", "5000"), ("reason", "correction"), ("comment", "Missing March earns")])
            .await;
        assert!(made.location().unwrap().ends_with("?done=adjustment-pending"), "{:?}", made.location());
        let queue = format!("/console/orgs/{org}/adjustments");
        let text = asking.get(&queue).await.expect(StatusCode::OK).to_owned();
        assert!(text.contains("5,000 PTS") && text.contains("Missing March earns"), "{text}");
        let id = text.split("/adjustments/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        // Not by the one who asked.
        let own = asking.submit(&format!("/console/orgs/{org}/campaigns/{campaign}/adjustments/{id}/approve"), &[]).await;
        assert_eq!(own.status, StatusCode::FORBIDDEN, "{}", own.text);
        let mut second = app.signed_in("second@example.com", Role::Support, &[&app.acme]).await;
        second.get(&queue).await.expect(StatusCode::OK);
        let approved = second.submit(&format!("/console/orgs/{org}/campaigns/{campaign}/adjustments/{id}/approve"), &[]).await;
        assert_eq!(approved.status, StatusCode::SEE_OTHER, "{}", approved.text);
        let text = second.get(&format!("{queue}?campaign={campaign}&done=approved")).await.text;
        assert!(text.contains("approved and applied") && text.contains("Nothing waits for approval."), "{text}");
        let wallet = second.get(&wallet_page).await;
        assert!(wallet.text.contains("id=\"balance\">5,000 PTS"), "{}", wallet.text);
    };
}
