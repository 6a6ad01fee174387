//! A campaign's policy and tiers in the console, and a member's erasure.

use reqwest::StatusCode;
use store::{NewMember, Role};

use crate::console_tests;
use crate::helpers::Console;

console_tests! {
    an_org_admin_sets_the_policy_and_the_tiers => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        let settings = format!("/console/orgs/{org}/campaigns/{}/settings", campaign.id);
        let page = admin.get(&settings).await;
        assert!(page.expect(StatusCode::OK).contains("Save the policy"));
        let policy = format!("{settings}/policy");
        let base = [("expiry", "days"), ("expiryDays", "30"), ("shortfall", "clip"), ("transfers", "allow"),
            ("transferDailyCap", ""), ("pendingDays", "0"), ("expiryFrom", "earn"), ("expiryNoticeDays", "7"), ("earnMaxAgeDays", "")];
        let mut wrong = base.to_vec();
        wrong.push(("minBalance", "lots"));
        let refused = admin.submit(&policy, &wrong).await;
        assert!(refused.expect(StatusCode::OK).contains("id=\"minBalance-error\""), "{}", refused.text);
        let mut good = base.to_vec();
        good.push(("minBalance", "10"));
        let saved = admin.submit(&policy, &good).await;
        assert_eq!(saved.status, StatusCode::SEE_OTHER, "{}", saved.text);
        let stored = app.store.programme().policy(&campaign).await.unwrap();
        assert_eq!(stored.expiry.to_string(), "days:30");
        assert_eq!(stored.min_balance, store::Tokens::whole(10));
        assert_eq!(stored.expiry_notice_days, 7);

        let tiers = format!("{settings}/tiers");
        let unnamed = admin.submit(&tiers, &[("name", ""), ("precedence", "1"), ("threshold", "1000"), ("benefits", "")]).await;
        assert!(unnamed.expect(StatusCode::OK).contains("id=\"tier-name-error\""), "{}", unnamed.text);
        let added = admin.submit(&tiers, &[("name", "Gold"), ("precedence", "1"), ("threshold", "1,000"), ("benefits", "Free coffee\nLounge")]).await;
        assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.text);
        let text = admin.get(&format!("{settings}?done=tier-added")).await.text;
        assert!(text.contains("Gold") && text.contains("1,000 PTS") && text.contains("Free coffee; Lounge"), "{text}");
        let id = text.split("/settings/tiers/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        let removed = admin.submit(&format!("{tiers}/{id}/remove"), &[]).await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&settings).await.text.contains("No tier."));

        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get(&settings).await.text;
        assert!(!text.contains("Save the policy") && !text.contains("Add the tier"), "{text}");
    };

    support_erases_a_member_on_request => |app: Console| async move {
        let member = NewMember { first_name: "Grace".into(), email: Some("grace@shop.example".into()), idp: "reference".into(), user_id: "u-2".into(), external_id: "cust-2".into(), ..Default::default() };
        app.store.members().create_member(&app.acme, member).await.unwrap();
        let org = app.acme.id().to_owned();
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get(&format!("/console/orgs/{org}/members/cust-2")).await.text;
        assert!(text.contains("Grace") && !text.contains("/erase\""), "a viewer is not offered erasure");
        let mut support = app.signed_in("support@example.com", Role::Support, &[&app.acme]).await;
        let text = support.get(&format!("/console/orgs/{org}/members/cust-2")).await.text;
        let id = text.split("/members/").nth(1).unwrap().split('/').next().unwrap().to_owned();
        assert!(text.contains("Erase the member"), "{text}");
        let erased = support.submit(&format!("/console/orgs/{org}/members/{id}/erase"), &[]).await;
        assert_eq!(erased.status, StatusCode::SEE_OTHER, "{}", erased.text);
        let text = support.get(&format!("/console/orgs/{org}/members?done=member-erased")).await.text;
        assert!(text.contains("personal data is erased") && !text.contains("grace@shop.example"), "{text}");
        assert_eq!(support.get(&format!("/console/orgs/{org}/members/cust-2")).await.status, StatusCode::NOT_FOUND);
    };
}
