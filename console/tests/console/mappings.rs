//! Mappings in the console: a document's problems at their path and line, one stored and
//! removed; a file run dry against them, nothing credited.

use reqwest::StatusCode;
use store::{NewMember, NewWallet, Role};

use crate::console_tests;
use crate::helpers::Console;

const TILL: &str = "pattern = \"till_*.csv\"\ndelimiter = \";\"\n\n[columns]\nid = \"Ticket\"\nwalletId = \"Card\"\namount = { column = \"Total\", decimal_separator = \",\" }\ndate = { column = \"When\", format = \"%d/%m/%Y %H:%M\", timezone = \"Europe/Paris\" }\n";
const BROKEN: &str = "delimiter = \";;\"\ncolour = \"blue\"\n[columns]\nid = \"Ticket\"\n";

console_tests! {
    a_mapping_is_checked_stored_and_a_file_run_dry => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        let member = NewMember { first_name: "Ada".into(), idp: "reference".into(), user_id: "u-1".into(), external_id: "cust-1".into(), ..Default::default() };
        app.store.members().create_member(&app.acme, member).await.unwrap();
        let wallet = NewWallet { owner: Some("cust-1".into()), external_id: Some("card-1".into()), name: None };
        app.store.ledger().create_wallet(&campaign, wallet).await.unwrap();
        let org = app.acme.id().to_owned();
        let page = format!("/console/orgs/{org}/mappings");
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        assert!(admin.get(&page).await.expect(StatusCode::OK).contains("No mapping"));
        let broken = admin.submit(&page, &[("document", BROKEN), ("action", "check")]).await;
        let text = broken.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"mapping-problems\"") && text.contains("line 2, <code>colour</code>"), "{text}");
        let good = admin.submit(&page, &[("document", TILL), ("action", "check")]).await;
        assert!(good.expect(StatusCode::OK).contains("id=\"mapping-valid\""), "{}", good.text);
        let stored = admin.submit(&page, &[("document", TILL), ("action", "store")]).await;
        assert_eq!(stored.status, StatusCode::SEE_OTHER, "{}", stored.text);
        let text = admin.get(&format!("{page}?done=mapping-stored")).await.text;
        assert!(text.contains("<code>till_*.csv</code>") && text.contains("The mapping is stored"), "{text}");

        // A till file run dry: read through the mapping, nothing credited.
        let file = "Ticket;Card;Total;When\nt-1;card-1;12,50;20/11/2026 10:15\nt-2;card-1;lots;20/11/2026 10:16\n";
        let dry = admin.post_file(&format!("{page}/dry-run?name=till_1.csv"), file).await;
        let text = dry.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"dry-run-result\"") && text.contains("id=\"dry-rows\">2<") && text.contains("id=\"dry-rejected\">1<"), "{text}");
        assert!(text.contains("lots") && text.contains("till_*.csv"), "the bad row and the mapping used: {text}");
        let wallet = app.store.ledger().get_wallet(&campaign, "card-1").await.unwrap();
        assert_eq!(wallet.balance, store::Tokens::ZERO, "nothing credited");
        // Without the token: refused.
        admin.csrf = "forged".into();
        let forged = admin.post_file(&format!("{page}/dry-run?name=till_1.csv"), file).await;
        assert_eq!(forged.status, StatusCode::FORBIDDEN);
    };
}
