//! Reviews on both backends: creating (checks, one per member and voucher), profanity scores,
//! reporting, what lists show and average, moderation, and tenant isolation.

use serde_json::json;
use store::{
    Campaign, Catalogue, ImportOptions, Moderation, NewMember, NewReview, Page, ReviewFilter,
    ReviewStatus, Store, StoreError, backend_tests,
};

/// A campaign with members `ada`, `alan`, `grace`, `edsger` and a catalogue with product
/// `spa` (variant `spa-day`) and product `mug`.
async fn setup(store: &Store) -> Campaign {
    let c = store::testing::campaign_fixture(store).await;
    for name in ["ada", "alan", "grace", "edsger"] {
        let new = NewMember {
            first_name: name.into(),
            idp: "reference".into(),
            user_id: format!("u-{name}"),
            external_id: name.into(),
            ..Default::default()
        };
        store.members().create_member(&c.org(), new).await.unwrap();
    }
    let doc = json!({"products": [
        {"id": "spa", "name": "Spa", "variants": [{"id": "spa-day", "name": "Day", "price": 10}]},
        {"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}
    ]});
    let catalogue = Catalogue::from_value(&doc).unwrap();
    store
        .catalogue()
        .import_catalogue(&c, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    c
}

fn review(member: &str, voucher: &str, rating: u8, text: &str) -> NewReview {
    NewReview {
        member: member.into(),
        voucher_id: voucher.into(),
        partner_id: "partner-7".into(),
        rating,
        review_text: text.into(),
    }
}

async fn list(store: &Store, c: &Campaign, filter: ReviewFilter) -> (Vec<String>, Option<f64>) {
    let found = store
        .community()
        .list_reviews(c, &filter, &Moderation::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(found.page.total as usize, found.page.items.len());
    let texts = found
        .page
        .items
        .iter()
        .map(|r| r.review_text.clone())
        .collect();
    (texts, found.average_rating)
}

fn voucher(id: &str) -> ReviewFilter {
    ReviewFilter {
        voucher_id: Some(id.into()),
        ..Default::default()
    }
}

async fn reviews_are_checked_scored_and_one_per_member_and_voucher(store: Store) {
    let c = setup(&store).await;
    let made = store
        .community()
        .create_review(
            &c,
            review("ada", "spa", 5, "Lovely, would go again"),
            &Moderation::default(),
        )
        .await
        .unwrap();
    assert_eq!(made.rating, 5);
    assert_eq!(made.partner_id, "partner-7");
    assert_eq!(made.profanity_score, 0.0);
    assert_eq!(made.reports, 0);
    assert_eq!(made.status(&Moderation::default()), ReviewStatus::Visible);
    let member = store
        .community()
        .review_by_id(&c.org(), Some(&c), &made.id)
        .await;
    assert_eq!(member.unwrap(), made);

    // A variant is a voucher too; the member by id works like the external id.
    let ada = made.member_id.clone();
    store
        .community()
        .create_review(
            &c,
            review(&ada, "spa-day", 4, "Good"),
            &Moderation::default(),
        )
        .await
        .unwrap();

    let again = store
        .community()
        .create_review(
            &c,
            review("ada", "spa", 1, "Changed my mind"),
            &Moderation::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            &again,
            StoreError::Refused {
                code: "already_reviewed",
                ..
            }
        ),
        "{again:?}"
    );
    let unknown_member = store
        .community()
        .create_review(
            &c,
            review("nobody", "spa", 3, "Fine"),
            &Moderation::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            unknown_member,
            StoreError::UnknownReference {
                field: "memberId",
                ..
            }
        ),
        "{unknown_member:?}"
    );
    let unknown_voucher = store
        .community()
        .create_review(
            &c,
            review("alan", "balloon", 3, "Fine"),
            &Moderation::default(),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            unknown_voucher,
            StoreError::UnknownReference {
                field: "voucherId",
                ..
            }
        ),
        "{unknown_voucher:?}"
    );

    // Offensive text is scored and held back from the list.
    let rude = store
        .community()
        .create_review(
            &c,
            review("alan", "spa", 1, "f u c k this place"),
            &Moderation::default(),
        )
        .await
        .unwrap();
    assert!(rude.profanity_score >= 0.5);
    assert_eq!(rude.status(&Moderation::default()), ReviewStatus::Pending);
    let (texts, average) = list(&store, &c, voucher("spa")).await;
    assert_eq!(texts, vec!["Lovely, would go again"]);
    assert_eq!(average, Some(5.0));
}

async fn lists_filter_average_and_run_newest_first(store: Store) {
    let c = setup(&store).await;
    store
        .community()
        .create_review(&c, review("ada", "spa", 5, "first"), &Moderation::default())
        .await
        .unwrap();
    store
        .community()
        .create_review(
            &c,
            review("alan", "spa", 2, "second"),
            &Moderation::default(),
        )
        .await
        .unwrap();
    let mut other_partner = review("grace", "mug", 3, "third");
    other_partner.partner_id = "partner-9".into();
    store
        .community()
        .create_review(&c, other_partner, &Moderation::default())
        .await
        .unwrap();

    let (texts, average) = list(&store, &c, voucher("spa")).await;
    assert_eq!(texts, vec!["second", "first"]);
    assert_eq!(average, Some(3.5));
    let by_partner = ReviewFilter {
        partner_id: Some("partner-9".into()),
        ..Default::default()
    };
    assert_eq!(list(&store, &c, by_partner).await.0, vec!["third"]);
    let by_member = ReviewFilter {
        member: Some("alan".into()),
        ..Default::default()
    };
    assert_eq!(list(&store, &c, by_member).await.0, vec!["second"]);
    let nobody = ReviewFilter {
        member: Some("nobody".into()),
        ..Default::default()
    };
    assert_eq!(list(&store, &c, nobody).await, (Vec::new(), None));
    let all = list(&store, &c, ReviewFilter::default()).await;
    assert_eq!(all.0, vec!["third", "second", "first"]);

    let paged = store
        .community()
        .list_reviews(
            &c,
            &ReviewFilter::default(),
            &Moderation::default(),
            Page { page: 2, limit: 2 },
        )
        .await
        .unwrap();
    assert_eq!(paged.page.total, 3);
    assert_eq!(paged.page.items.len(), 1);
    assert_eq!(paged.average_rating, Some(10.0 / 3.0));
}

async fn reports_count_distinct_members_and_hide_until_an_operator_decides(store: Store) {
    let c = setup(&store).await;
    let made = store
        .community()
        .create_review(&c, review("ada", "spa", 4, "Nice"), &Moderation::default())
        .await
        .unwrap();
    let own = store
        .community()
        .report_review(&c, &made.id, "ada", &Moderation::default())
        .await
        .unwrap_err();
    assert!(
        matches!(
            own,
            StoreError::Refused {
                code: "own_review",
                ..
            }
        ),
        "{own:?}"
    );
    let unknown = store
        .community()
        .report_review(&c, &made.id, "nobody", &Moderation::default())
        .await
        .unwrap_err();
    assert!(matches!(
        unknown,
        StoreError::UnknownReference {
            field: "reporterId",
            ..
        }
    ));
    let missing = store
        .community()
        .report_review(&c, "no-such-review", "alan", &Moderation::default())
        .await;
    assert!(matches!(
        missing,
        Err(StoreError::NotFound { what: "review" })
    ));

    let once = store
        .community()
        .report_review(&c, &made.id, "alan", &Moderation::default())
        .await
        .unwrap();
    assert_eq!(once.reports, 1);
    let alan = once.reported_by_id.clone().unwrap();
    let twice = store
        .community()
        .report_review(&c, &made.id, "alan", &Moderation::default())
        .await
        .unwrap();
    assert_eq!(
        twice, once,
        "the same member reporting again changes nothing"
    );
    let by_grace = store
        .community()
        .report_review(&c, &made.id, "grace", &Moderation::default())
        .await
        .unwrap();
    assert_eq!(by_grace.reports, 2);
    assert_ne!(by_grace.reported_by_id.as_deref(), Some(alan.as_str()));
    assert_eq!(list(&store, &c, voucher("spa")).await.0, vec!["Nice"]);

    // The third distinct reporter hides it (default threshold 3).
    let hidden = store
        .community()
        .report_review(&c, &made.id, "edsger", &Moderation::default())
        .await
        .unwrap();
    assert_eq!(hidden.reports, 3);
    assert_eq!(hidden.status(&Moderation::default()), ReviewStatus::Pending);
    assert_eq!(list(&store, &c, voucher("spa")).await, (Vec::new(), None));
    let pending = store
        .community()
        .pending_reviews(&c.org(), &Moderation::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(pending.items.len(), 1);
    assert_eq!(pending.items[0].id, made.id);

    // Approved: shown, whatever is reported later.
    store
        .community()
        .moderate_review(&c.org(), &made.id, true)
        .await
        .unwrap();
    let approved = store
        .community()
        .review_by_id(&c.org(), None, &made.id)
        .await
        .unwrap();
    assert_eq!(
        approved.status(&Moderation::default()),
        ReviewStatus::Approved
    );
    assert_eq!(list(&store, &c, voucher("spa")).await.0, vec!["Nice"]);
    let pending = store
        .community()
        .pending_reviews(&c.org(), &Moderation::default(), Page::default())
        .await
        .unwrap();
    assert!(pending.items.is_empty());

    // Removed: gone from reads, reports and moderation, and not to be posted again.
    let rude = store
        .community()
        .create_review(
            &c,
            review("alan", "mug", 1, "this place is shit"),
            &Moderation::default(),
        )
        .await
        .unwrap();
    store
        .community()
        .moderate_review(&c.org(), &rude.id, false)
        .await
        .unwrap();
    let gone = store
        .community()
        .review_by_id(&c.org(), Some(&c), &rude.id)
        .await;
    assert!(matches!(gone, Err(StoreError::NotFound { .. })));
    let reported = store
        .community()
        .report_review(&c, &rude.id, "ada", &Moderation::default())
        .await;
    assert!(matches!(reported, Err(StoreError::NotFound { .. })));
    let again = store
        .community()
        .moderate_review(&c.org(), &rude.id, true)
        .await;
    assert!(matches!(again, Err(StoreError::NotFound { .. })));
    let repost = store
        .community()
        .create_review(&c, review("alan", "mug", 2, "ok"), &Moderation::default())
        .await;
    assert!(matches!(
        repost,
        Err(StoreError::Refused {
            code: "already_reviewed",
            ..
        })
    ));
}

async fn concurrent_reports_each_count(store: Store) {
    let c = setup(&store).await;
    let made = store
        .community()
        .create_review(&c, review("ada", "spa", 4, "Nice"), &Moderation::default())
        .await
        .unwrap();
    let reports = ["alan", "grace", "edsger"].map(|who| {
        let (store, c, id) = (store.clone(), c.clone(), made.id.clone());
        tokio::spawn(async move {
            store
                .community()
                .report_review(&c, &id, who, &Moderation::default())
                .await
        })
    });
    for report in reports {
        report.await.unwrap().unwrap();
    }
    let after = store
        .community()
        .review_by_id(&c.org(), None, &made.id)
        .await
        .unwrap();
    assert_eq!(after.reports, 3);
}

async fn thresholds_apply_when_reviews_are_read(store: Store) {
    let c = setup(&store).await;
    store
        .community()
        .create_review(
            &c,
            review("ada", "spa", 4, "crap coffee, lovely spa"),
            &Moderation::default(),
        )
        .await
        .unwrap();
    assert_eq!(list(&store, &c, voucher("spa")).await.0.len(), 1);
    let strict = Moderation {
        profanity_threshold: 0.2,
        report_threshold: 3,
    };
    let found = store
        .community()
        .list_reviews(&c, &voucher("spa"), &strict, Page::default())
        .await
        .unwrap();
    assert!(
        found.page.items.is_empty(),
        "a mild word passes a stricter threshold"
    );
}

async fn another_organisation_sees_none_of_it(store: Store) {
    let c = setup(&store).await;
    let made = store
        .community()
        .create_review(&c, review("ada", "spa", 4, "Nice"), &Moderation::default())
        .await
        .unwrap();
    let other = store::testing::campaign_fixture(&store).await;
    let read = store
        .community()
        .review_by_id(&other.org(), None, &made.id)
        .await;
    assert!(matches!(read, Err(StoreError::NotFound { .. })));
    let reported = store
        .community()
        .report_review(&other, &made.id, "ada", &Moderation::default())
        .await;
    assert!(matches!(reported, Err(StoreError::NotFound { .. })));
    let moderated = store
        .community()
        .moderate_review(&other.org(), &made.id, false)
        .await;
    assert!(matches!(moderated, Err(StoreError::NotFound { .. })));
    let listed = list(&store, &other, ReviewFilter::default()).await;
    assert!(listed.0.is_empty());
    // Its members and vouchers are not this organisation's either.
    let theirs = store
        .community()
        .create_review(
            &other,
            review("ada", "spa", 4, "Nice"),
            &Moderation::default(),
        )
        .await
        .unwrap_err();
    assert!(matches!(
        theirs,
        StoreError::UnknownReference {
            field: "memberId",
            ..
        }
    ));
}

backend_tests!(
    reviews_are_checked_scored_and_one_per_member_and_voucher,
    lists_filter_average_and_run_newest_first,
    reports_count_distinct_members_and_hide_until_an_operator_decides,
    concurrent_reports_each_count,
    thresholds_apply_when_reviews_are_read,
    another_organisation_sees_none_of_it,
);
