//! The programme in the console: a campaign added, a rule set tried on rows (the trace per
//! row), backtested over recorded earns, activated, its versions compared side by side; a rule
//! set with problems shows them beside the editor; a viewer may try but not activate.

use reqwest::StatusCode;
use store::{NewMember, NewWallet, Role};

use crate::console_tests;
use crate::helpers::Console;

const BASE: &str = "[[rule]]\nid = \"base\"\npriority = 10\naward = \"amount\"\n";
const DOUBLE: &str = "[[rule]]\nid = \"base\"\npriority = 10\naward = \"amount\"\n\n[[rule]]\nid = \"double\"\npriority = 20\nmultiply = 2\n";

console_tests! {
    an_org_admin_tries_backtests_and_activates_a_rule_set => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        let member = NewMember { first_name: "Ada".into(), idp: "reference".into(), user_id: "u-1".into(), external_id: "cust-1".into(), ..Default::default() };
        app.store.members().create_member(&app.acme, member).await.unwrap();
        let wallet = NewWallet { owner: Some("cust-1".into()), external_id: Some("card-1".into()), name: None };
        app.store.ledger().create_wallet(&campaign, wallet).await.unwrap();
        let batch = app.receive("earns.csv", "id,walletId,amount,date\nt-1,card-1,10,2026-11-20T10:00:00Z\nt-2,card-1,5,2026-11-21T10:00:00Z\n").await;
        app.process(&batch.id, &|_| {}).await;
        let org = app.acme.id().to_owned();
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;

        let programme = format!("/console/orgs/{org}/programme");
        let added = admin.submit(&programme, &[("name", "Summer"), ("currency", "x")]).await;
        assert!(added.expect(StatusCode::OK).contains("id=\"currency-error\""), "{}", added.text);
        let added = admin.submit(&programme, &[("name", "Summer"), ("currency", "SUN")]).await;
        assert_eq!(added.status, StatusCode::SEE_OTHER);
        assert!(admin.get(&programme).await.text.contains("Summer"));

        let rules = format!("/console/orgs/{org}/campaigns/{}/rules", campaign.id);
        let page = admin.get(&rules).await;
        assert!(page.expect(StatusCode::OK).contains("one token per unit"), "{}", page.text);
        let broken = admin.submit(&rules, &[("source", "[[rule]]\nid = \"x\"\naward = \"amount +\"\n"), ("rows", ""), ("action", "test")]).await;
        let text = broken.expect(StatusCode::OK);
        assert!(text.contains("id=\"source-errors\"") && text.contains("award = &#34;amount +&#34;"), "the problems beside the kept source: {text}");
        let tried = admin.submit(&rules, &[("source", DOUBLE), ("rows", "id,amount,date\nr-1,21.5,2026-11-20T10:00:00Z\nr-2,lots,2026-11-20T10:00:00Z\n"), ("action", "test")]).await;
        let text = tried.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"trial\"") && text.contains("43 PTS"), "r-1 earns 21.5 doubled: {text}");
        assert!(text.contains("double"), "the trace names the rule: {text}");
        let backtest = admin.submit(&rules, &[("source", DOUBLE), ("rows", ""), ("from", "2026-11-01"), ("to", "2026-11-30"), ("action", "backtest")]).await;
        let text = backtest.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"difference\">15 PTS"), "15 tokens more under the doubled set: {text}");
        assert!(text.contains("/wallets/"), "the wallet that changes, linked: {text}");
        assert!(!text.contains("id=\"limit-cuts\""), "no limit, no table: {text}");
        let once = "[[rule]]\nid = \"base\"\npriority = 10\naward = \"amount\"\nlimits = [{ scope = \"member\", period = \"month\", times = 1 }]\n";
        let backtest = admin.submit(&rules, &[("source", once), ("rows", ""), ("from", "2026-11-01"), ("to", "2026-11-30"), ("action", "backtest")]).await;
        let text = backtest.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"difference\">-5 PTS"), "t-2 is the month's second: {text}");
        assert!(text.contains("id=\"limit-cuts\"") && text.contains("member/month"), "{text}");

        let first = admin.submit(&rules, &[("source", BASE), ("action", "activate")]).await;
        assert_eq!(first.status, StatusCode::SEE_OTHER, "{}", first.text);
        let second = admin.submit(&rules, &[("source", DOUBLE), ("action", "activate")]).await;
        assert_eq!(second.status, StatusCode::SEE_OTHER);
        let text = admin.get(&format!("{rules}?done=rules-activated")).await.text;
        assert!(text.contains("The rule set is active") && text.contains("Version 2") && text.contains("<code>double</code>"), "{text}");
        let compared = admin.get(&format!("{rules}?version=2&compare=1")).await.text;
        assert!(compared.contains("id=\"diff\"") && compared.contains("class=\"added\""), "{compared}");
        assert!(compared.contains("<code>id = &#34;double&#34;</code>"), "{compared}");

        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get(&rules).await.text;
        assert!(!text.contains("value=\"activate\""), "a viewer is not offered activation");
        let refused = viewer.submit(&rules, &[("source", BASE), ("action", "activate")]).await;
        assert_eq!(refused.status, StatusCode::FORBIDDEN);
    };
}
