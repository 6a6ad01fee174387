//! The catalogue in the console: a document checked (problems at their JSON paths, or what it
//! would change) before it is applied, products found, the catalogue exported.

use reqwest::StatusCode;
use store::Role;

use crate::console_tests;
use crate::helpers::Console;

const DOCUMENT: &str = r#"{"categories": [{"id": "home", "name": "Home"}], "tags": [],
  "products": [{"id": "mug", "name": "Blue mug", "category": "home", "variants": [{"id": "mug-1", "name": "Blue", "price": 1500}]},
               {"id": "cup", "name": "Red cup", "variants": [{"id": "cup-1", "name": "Red", "price": 3}]}]}"#;

console_tests! {
    a_catalogue_is_checked_then_applied_found_and_exported => |app: Console| async move {
        let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
        let org = app.acme.id().to_owned();
        let page = format!("/console/orgs/{org}/campaigns/{}/catalogue", campaign.id);
        let mut admin = app.signed_in("org-admin@example.com", Role::OrgAdmin, &[&app.acme]).await;
        assert!(admin.get(&page).await.expect(StatusCode::OK).contains("No product yet."));
        let broken = admin.submit(&page, &[("document", r#"{"products": [{"id": "", "name": "x", "variants": []}]}"#), ("action", "check")]).await;
        let text = broken.expect(StatusCode::OK).to_owned();
        assert!(text.contains("id=\"import-problems\"") && text.contains("<code>products[0]"), "each problem at its path: {text}");
        let checked = admin.submit(&page, &[("document", DOCUMENT), ("action", "check")]).await;
        let text = checked.expect(StatusCode::OK).to_owned();
        assert!(text.contains("Checked: nothing is applied yet") && text.contains("No product yet."), "{text}");
        assert!(text.contains("<td>Products</td><td class=\"num\">2</td>"), "{text}");
        let applied = admin.submit(&page, &[("document", DOCUMENT), ("action", "apply")]).await;
        let text = applied.expect(StatusCode::OK).to_owned();
        assert!(text.contains("Applied: the catalogue is now version") && text.contains("Blue mug") && text.contains("1,500 PTS"), "{text}");
        // The client API's search and filters: words (a typo forgiven), category, price, order.
        let found = admin.get(&format!("{page}?search=mugs")).await.text;
        assert!(found.contains("Blue mug") && !found.contains("Red cup"), "{found}");
        let found = admin.get(&format!("{page}?category=home")).await.text;
        assert!(found.contains("Blue mug") && !found.contains("Red cup"), "{found}");
        let found = admin.get(&format!("{page}?max=10")).await.text;
        assert!(found.contains("Red cup") && !found.contains("Blue mug"), "{found}");
        let found = admin.get(&format!("{page}?sort=price%3Adesc")).await.text;
        let (mug, cup) = (found.find("Blue mug").unwrap(), found.find("Red cup").unwrap());
        assert!(mug < cup, "dearest first: {found}");
        // A filter the search refuses: its message beside its field, the others kept.
        let refused = admin.get(&format!("{page}?min=lots&category=home")).await;
        let text = refused.expect(StatusCode::OK);
        assert!(text.contains("id=\"min-error\"") && text.contains("No product matches these filters."), "{text}");
        assert!(text.contains("value=\"home\""), "{text}");
        let refused = admin.get(&format!("{page}?latitude=51.5")).await.text;
        assert!(refused.contains("id=\"longitude-error\"") && refused.contains("<details open>"), "{refused}");
        let export = admin.get(&format!("{page}.json")).await;
        assert_eq!(export.status, StatusCode::OK);
        assert!(export.headers["content-disposition"].to_str().unwrap().contains("catalogue.json"));
        let document: serde_json::Value = serde_json::from_str(&export.text).unwrap();
        assert_eq!(document["products"].as_array().unwrap().len(), 2);
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get(&page).await.text;
        assert!(text.contains("Blue mug") && !text.contains("value=\"apply\""), "{text}");
    };
}
