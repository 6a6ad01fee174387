//! An organisation's front page: its campaign's figures, the daily chart drawn on the server,
//! tiers, the day's files and what needs an eye.

use reqwest::StatusCode;
use store::{NewMember, NewWallet, Role};

use crate::console_tests;
use crate::helpers::{Console, by_id};

console_tests! {
    the_front_page_of_an_organisation_shows_its_campaign_at_a_glance => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        for (member, wallet) in [("cust-1", "card-1"), ("cust-2", "card-2")] {
            let new = NewMember { first_name: "A".into(), idp: "reference".into(), user_id: member.into(), external_id: member.into(), ..Default::default() };
            app.store.members().create_member(&app.acme, new).await.unwrap();
            let new = NewWallet { owner: Some(member.into()), external_id: Some(wallet.into()), name: None };
            app.store.ledger().create_wallet(&campaign, new).await.unwrap();
        }
        let batch = app.receive("earns.csv", "id,walletId,amount,date\nt-1,card-1,1200,2026-11-20T10:00:00Z\nt-2,card-2,oops,2026-11-20T10:00:00Z\n").await;
        app.process(&batch.id, &|_| {}).await;
        let org = app.acme.id().to_owned();
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let home = viewer.get("/console/").await.text;
        assert!(home.contains(&format!("href=\"orgs/{org}/\"")), "{home}");
        let page = viewer.get(&format!("/console/orgs/{org}/")).await;
        let text = page.expect(StatusCode::OK).to_owned();
        assert_eq!(by_id(&text, "members"), "2");
        assert_eq!(by_id(&text, "wallets"), "2");
        assert_eq!(by_id(&text, "outstanding"), "1,200 PTS");
        assert!(text.contains("<svg class=\"chart\"") && text.matches("<polyline").count() == 4, "{text}");
        assert!(text.contains("id=\"daily\""), "the chart's figures as a table");
        assert!(text.contains("earns.csv") && text.contains("1 rejected"), "the day's file: {text}");
        assert!(text.contains("no tier") && text.contains("100%"), "{text}");
        assert_eq!(by_id(&text, "reviews-waiting"), "0");
        // Another campaign is chosen by its id; an unknown one falls back to the first.
        let other = viewer.get(&format!("/console/orgs/{org}/?campaign=nope")).await;
        assert_eq!(by_id(other.expect(StatusCode::OK), "wallets"), "2");
    };
}
