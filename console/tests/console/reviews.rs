//! Review moderation in the console: the held review shown with its language, approved or
//! removed by support; a viewer sees the queue without the buttons.

use reqwest::StatusCode;
use serde_json::json;
use store::{Catalogue, ImportOptions, NewMember, NewReview, Role};

use crate::console_tests;
use crate::helpers::Console;

/// Two reviews held for their language: their ids.
async fn held(app: &Console) -> (String, String) {
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let member = NewMember {
        first_name: "Ada".into(),
        idp: "reference".into(),
        user_id: "u-1".into(),
        external_id: "cust-1".into(),
        ..Default::default()
    };
    app.store
        .members()
        .create_member(&app.acme, member)
        .await
        .unwrap();
    let doc = json!({"products": [{"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]},
        {"id": "cup", "name": "Cup", "variants": [{"id": "cup-1", "name": "Red", "price": 2}]}]});
    let catalogue = Catalogue::from_value(&doc).unwrap();
    app.store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    let rules = store::Moderation::default();
    let review = |voucher: &str, text: &str| NewReview {
        member: "cust-1".into(),
        voucher_id: voucher.into(),
        partner_id: "p-1".into(),
        rating: 1,
        review_text: text.into(),
    };
    let community = app.store.community();
    let rude = community
        .create_review(&campaign, review("mug", "this mug is shit"), &rules)
        .await
        .unwrap();
    let fair = community
        .create_review(&campaign, review("cup", "this cup is shit too"), &rules)
        .await
        .unwrap();
    (rude.id, fair.id)
}

console_tests! {
    support_moderates_the_held_reviews => |app: Console| async move {
        let (rude, fair) = held(&app).await;
        let org = app.acme.id().to_owned();
        let queue = format!("/console/orgs/{org}/reviews");
        let mut viewer = app.signed_in("viewer@example.com", Role::Viewer, &[&app.acme]).await;
        let text = viewer.get(&queue).await.expect(StatusCode::OK).to_owned();
        assert!(text.contains("this mug is shit") && !text.contains("/approve\""), "{text}");
        let mut support = app.signed_in("support@example.com", Role::Support, &[&app.acme]).await;
        let text = support.get(&queue).await.expect(StatusCode::OK).to_owned();
        assert!(text.contains("this mug is shit") && text.contains("this cup is shit too"), "{text}");
        assert!(text.contains(">moderate<") || text.contains(">severe<") || text.contains(">mild<"), "the language named: {text}");
        let removed = support.submit(&format!("/console/orgs/{org}/reviews/{rude}/remove"), &[]).await;
        assert_eq!(removed.status, StatusCode::SEE_OTHER, "{}", removed.text);
        let approved = support.submit(&format!("/console/orgs/{org}/reviews/{fair}/approve"), &[]).await;
        assert_eq!(approved.status, StatusCode::SEE_OTHER);
        let text = support.get(&format!("{queue}?done=review-approved")).await.text;
        assert!(text.contains("approved and listed again") && text.contains("id=\"queue-empty\""), "{text}");
        // Removed already: the page says so, nothing breaks.
        let again = support.submit(&format!("/console/orgs/{org}/reviews/{rude}/remove"), &[]).await;
        assert_eq!(again.status, StatusCode::NOT_FOUND);
    };
}
