//! The events of earns, orders, codes, bookings, reviews, tiers and expiry notices, on both
//! backends: each recorded by its change, carrying the record as the store reads it after.

use chrono::{Duration, Utc};
use store::{
    BookingPatch, BookingStatus, Campaign, EarnInput, EarnStatus, Event, EventData, EventFilter,
    EventType, ExpiringDay, Expiry, Moderation, NewBooking, NewMember, NewReview, NewTier,
    OrderScope, Page, Policy, ReviewStatus, RuleBook, Store, TierRef, Tokens, backend_tests,
};

use crate::ledger::{drain, earn, setup};
use crate::orders::{key, line, order};

const PAGE: Page = Page {
    page: 1,
    limit: 100,
};

/// The campaign's numbered events of `kind`, oldest first.
async fn events_of(store: &Store, campaign: &Campaign, kind: EventType) -> Vec<Event> {
    while store.events().dispatch_events(500).await.unwrap().full {}
    let filter = EventFilter {
        types: vec![kind],
        ..Default::default()
    };
    store
        .events()
        .feed(&campaign.org(), Some(&campaign.id), &filter, PAGE)
        .await
        .unwrap()
        .items
}

/// An API earn records `earn.completed` with the request as it ended; a request refused (by the
/// ledger's ceiling before it is written, or as a twin that differs when written) records
/// `earn.rejected`; a plain repeat records nothing.
async fn api_earns_record_their_outcome(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let first = earn("e-1", "12");
    let done = store
        .ledger()
        .submit_earn(&s.campaign, first.clone())
        .await
        .unwrap();
    drain(&store, &book).await;
    store
        .ledger()
        .submit_earn(&s.campaign, first)
        .await
        .unwrap();
    drain(&store, &book).await;
    let too_big = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-2", "2000000000000"))
        .await
        .unwrap();
    drain(&store, &book).await;
    let mut twins = Vec::new();
    for amount in ["10", "11"] {
        twins.push(
            store
                .ledger()
                .pending_earn(&s.campaign, earn("e-3", amount))
                .await
                .unwrap(),
        );
    }
    let twins = store::testing::store_unchecked(&store, twins).await;
    drain(&store, &book).await;

    let request = |id: String| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        async move { store.ledger().earn_request(&campaign, &id).await.unwrap() }
    };
    let completed = events_of(&store, &s.campaign, EventType::EarnCompleted).await;
    let mut expected = vec![request(done.id.clone()).await];
    let twins_now = [
        request(twins[0].id.clone()).await,
        request(twins[1].id.clone()).await,
    ];
    expected.extend(
        twins_now
            .iter()
            .filter(|r| r.status == EarnStatus::Completed)
            .cloned(),
    );
    let carried: Vec<EventData> = completed
        .into_iter()
        .map(|e| EventData::of(&e.data).unwrap())
        .collect();
    let wanted: Vec<EventData> = expected
        .into_iter()
        .map(|r| EventData::Earn(Box::new(r)))
        .collect();
    assert_eq!(
        carried, wanted,
        "the first earn and the twin credited; not the repeat"
    );

    let rejected = events_of(&store, &s.campaign, EventType::EarnRejected).await;
    let mut expected = vec![request(too_big.id).await];
    expected.extend(
        twins_now
            .into_iter()
            .filter(|r| r.status == EarnStatus::Rejected),
    );
    assert_eq!(expected.len(), 2);
    for (event, request) in rejected.iter().zip(&expected) {
        assert_eq!(
            EventData::of(&event.data).unwrap(),
            EventData::Earn(Box::new(request.clone()))
        );
        assert_eq!(event.campaign_id.as_deref(), Some(s.campaign.id.as_str()));
    }
    assert_eq!(rejected.len(), 2);
    let EventData::Earn(ceiling) = &EventData::of(&rejected[0].data).unwrap() else {
        panic!("an earn")
    };
    let reason = ceiling.reason.as_deref().unwrap_or_default();
    assert!(reason.contains("more than the ledger's"), "{ceiling:?}");
}

/// `order.created` carries the order as placed (codes masked) and a booking made with it its
/// `booking.created`; a redeem, a booking's status change and a cancel record theirs, the
/// cancel's order showing the cancelled line; the owner's erasure clears its external id from
/// the order events.
async fn orders_codes_and_bookings_record_their_events(store: Store) {
    let c = crate::orders::setup(&store).await;
    let placed = store
        .orders()
        .place_order(&c, order(Some("o-1"), vec![line("mug", None, 1)]), key())
        .await
        .unwrap();
    let created = events_of(&store, &c, EventType::OrderCreated).await;
    assert_eq!(created.len(), 1);
    assert_eq!(
        EventData::of(&created[0].data).unwrap(),
        EventData::Order(Box::new(placed.order.clone()))
    );
    let code = &placed.order.lines[0].codes[0].code;
    assert_eq!(code, &store::masked_code(code), "masked");

    let scope = OrderScope::campaign(&c);
    let line_id = placed.order.lines[0].id.clone();
    let clear = store
        .orders()
        .order_line(&scope, &placed.order.id, &line_id, None, Some(&key()))
        .await
        .unwrap();
    let redeemed = store
        .orders()
        .redeem_code(&c.org(), &clear.codes[0].code, &key(), "partner-key")
        .await
        .unwrap();
    let redeems = events_of(&store, &c, EventType::CodeRedeemed).await;
    assert_eq!(redeems.len(), 1);
    assert_eq!(
        EventData::of(&redeems[0].data).unwrap(),
        EventData::Redeemed(Box::new(redeemed))
    );

    let mut dinner = line("dinner", Some("dinner-std"), 1);
    dinner.booking = Some(NewBooking {
        first_name: "Ada".into(),
        last_name: "Lovelace".into(),
        email: None,
        phone: None,
        branch: Some("cpt".into()),
        date: crate::orders::next_friday(),
        pax: 2,
        notes: None,
        meta: None,
    });
    let booked = store
        .orders()
        .place_order(&c, order(Some("o-2"), vec![dinner]), key())
        .await
        .unwrap();
    let booking = booked.order.lines[0].booking.clone().expect("booked");
    let bookings = events_of(&store, &c, EventType::BookingCreated).await;
    assert_eq!(bookings.len(), 1);
    assert_eq!(
        EventData::of(&bookings[0].data).unwrap(),
        EventData::Booking(Box::new(booking.clone()))
    );

    let patch = BookingPatch {
        status: Some(BookingStatus::Pending),
        ..Default::default()
    };
    let pending = store
        .orders()
        .update_booking(&c, &booking.id, patch)
        .await
        .unwrap();
    let (cancelled, _) = store
        .orders()
        .cancel_order(&c, &booked.order.id, None)
        .await
        .unwrap();
    let changes = events_of(&store, &c, EventType::BookingStatusChanged).await;
    let statuses: Vec<BookingStatus> = changes
        .iter()
        .map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Booking(b) => b.status,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(statuses, [BookingStatus::Pending, BookingStatus::Cancelled]);
    assert_eq!(
        EventData::of(&changes[0].data).unwrap(),
        EventData::Booking(Box::new(pending))
    );
    let cancels = events_of(&store, &c, EventType::OrderCancelled).await;
    assert_eq!(cancels.len(), 1);
    assert_eq!(
        EventData::of(&cancels[0].data).unwrap(),
        EventData::Order(Box::new(cancelled.clone()))
    );
    assert!(cancelled.lines[0].cancelled_at.is_some());
    // Cancelling again changes nothing, and records nothing.
    store
        .orders()
        .cancel_order(&c, &booked.order.id, None)
        .await
        .unwrap();
    assert_eq!(
        events_of(&store, &c, EventType::OrderCancelled).await.len(),
        1
    );

    let owner = placed.order.owner_id.clone();
    store
        .members()
        .delete_member(&c.org(), &owner)
        .await
        .unwrap();
    for kind in [EventType::OrderCreated, EventType::OrderCancelled] {
        for event in events_of(&store, &c, kind).await {
            let EventData::Order(order) = EventData::of(&event.data).unwrap() else {
                panic!("an order")
            };
            assert_eq!(order.owner, "", "{kind:?}: the external id is erased");
            assert_eq!(order.owner_id, owner);
        }
    }
}

fn member(name: &str) -> NewMember {
    NewMember {
        first_name: name.into(),
        idp: "auth0".into(),
        user_id: format!("auth0|{name}"),
        external_id: name.into(),
        ..Default::default()
    }
}

fn review(member: &str, text: &str) -> NewReview {
    NewReview {
        member: member.into(),
        voucher_id: "mug".into(),
        partner_id: "p-1".into(),
        rating: 4,
        review_text: text.into(),
    }
}

/// A review records `review.created`, and `review.held` as well when its language holds it
/// back; each counted report records `review.reported`, and the one that hides it
/// `review.held`.
async fn reviews_record_created_held_and_reported(store: Store) {
    let c = crate::orders::setup(&store).await;
    for name in ["ada", "alan", "grace", "edsger"] {
        store
            .members()
            .create_member(&c.org(), member(name))
            .await
            .unwrap();
    }
    let rules = Moderation {
        profanity_threshold: 0.5,
        report_threshold: 2,
    };
    let clean = store
        .community()
        .create_review(&c, review("ada", "Lovely mug"), &rules)
        .await
        .unwrap();
    let rude = store
        .community()
        .create_review(&c, review("alan", "this mug is shit"), &rules)
        .await
        .unwrap();
    let created = events_of(&store, &c, EventType::ReviewCreated).await;
    let ids: Vec<String> = created
        .iter()
        .map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Review { review, .. } => review.id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ids, [clean.id.clone(), rude.id.clone()]);
    let held = events_of(&store, &c, EventType::ReviewHeld).await;
    assert_eq!(held.len(), 1);
    assert_eq!(
        EventData::of(&held[0].data).unwrap(),
        EventData::Review {
            review: Box::new(rude),
            status: ReviewStatus::Pending
        }
    );

    store
        .community()
        .report_review(&c, &clean.id, "grace", &rules)
        .await
        .unwrap();
    store
        .community()
        .report_review(&c, &clean.id, "grace", &rules)
        .await
        .unwrap();
    let hidden = store
        .community()
        .report_review(&c, &clean.id, "edsger", &rules)
        .await
        .unwrap();
    let reported = events_of(&store, &c, EventType::ReviewReported).await;
    let counts: Vec<(u32, ReviewStatus)> = reported
        .iter()
        .map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Review { review, status } => (review.reports, *status),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        counts,
        [(1, ReviewStatus::Visible), (2, ReviewStatus::Pending)],
        "a repeated report is not counted, so records nothing"
    );
    let held = events_of(&store, &c, EventType::ReviewHeld).await;
    assert_eq!(held.len(), 2);
    assert_eq!(
        EventData::of(&held[1].data).unwrap(),
        EventData::Review {
            review: Box::new(hidden),
            status: ReviewStatus::Pending
        }
    );
}

fn tier(name: &str, threshold: i64) -> NewTier {
    NewTier {
        name: name.into(),
        precedence: 1,
        threshold: Tokens::whole(threshold),
        benefits: vec![],
        image_url: None,
    }
}

/// A wallet's tier moves by an earn, a new tier and a tier's removal: each move records one
/// `wallet.tier_changed` naming the tiers before and after, in the statement's transaction.
async fn tier_changes_are_recorded_by_the_database(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let gold = store
        .programme()
        .create_tier(&s.campaign, tier("Gold", 100))
        .await
        .unwrap();
    assert!(
        events_of(&store, &s.campaign, EventType::WalletTierChanged)
            .await
            .is_empty()
    );
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "150"))
        .await
        .unwrap();
    drain(&store, &book).await;
    let platinum = store
        .programme()
        .create_tier(&s.campaign, tier("Platinum", 120))
        .await
        .unwrap();
    // A tier no wallet reaches moves none.
    store
        .programme()
        .create_tier(&s.campaign, tier("Diamond", 1000))
        .await
        .unwrap();
    store
        .programme()
        .remove_tier(&s.campaign, &platinum.id)
        .await
        .unwrap();

    let refs = |t: &store::Tier| TierRef {
        id: t.id.clone(),
        name: t.name.clone(),
    };
    let moves: Vec<(Option<TierRef>, Option<TierRef>)> =
        events_of(&store, &s.campaign, EventType::WalletTierChanged)
            .await
            .into_iter()
            .map(|e| {
                assert_eq!(e.campaign_id.as_deref(), Some(s.campaign.id.as_str()));
                match EventData::of(&e.data).unwrap() {
                    EventData::TierChanged {
                        wallet_id,
                        member_id,
                        from,
                        to,
                    } => {
                        assert_eq!(
                            (wallet_id, member_id),
                            (s.wallet.id.clone(), s.wallet.owner_id.clone())
                        );
                        (from, to)
                    }
                    other => panic!("{other:?}"),
                }
            })
            .collect();
    assert_eq!(
        moves,
        [
            (None, Some(refs(&gold))),
            (Some(refs(&gold)), Some(refs(&platinum))),
            (Some(refs(&platinum)), Some(refs(&gold))),
        ]
    );
    let wallet = store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(wallet.tier.map(|t| t.id), Some(gold.id));
}

/// Tokens that expire within the campaign's notice are announced once per wallet and day, by
/// the first look of a day; a later look that day, or a later day's, does not announce them
/// again; tokens further ahead are announced when their day comes within the notice.
async fn tokens_about_to_expire_are_announced_once(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let policy = Policy {
        expiry: Expiry::Days(30),
        expiry_notice_days: 10,
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    let now = Utc::now();
    let past = now - Duration::days(25);
    for (id, amount, date) in [
        ("soon", "7", past),
        ("soon-too", "3", past),
        ("later", "20", now),
    ] {
        let input = EarnInput {
            date,
            ..earn(id, amount)
        };
        store
            .ledger()
            .submit_earn(&s.campaign, input)
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let expiring = store
        .ledger()
        .expiring(&s.campaign, "w-1", now + Duration::days(31))
        .await
        .unwrap();
    let [soon, later] = &expiring[..] else {
        panic!("two days: {expiring:?}")
    };
    assert_eq!(store.ledger().notice_expiring(now).await.unwrap(), 1);
    assert_eq!(
        store.ledger().notice_expiring(now).await.unwrap(),
        0,
        "looked at today"
    );
    let tomorrow = now + Duration::days(1);
    assert_eq!(
        store.ledger().notice_expiring(tomorrow).await.unwrap(),
        0,
        "announced before"
    );
    let notice = |day: &ExpiringDay| EventData::PointsExpiring {
        wallet_id: s.wallet.id.clone(),
        member_id: s.wallet.owner_id.clone(),
        tokens: day.tokens,
        date: day.date,
    };
    let notices = events_of(&store, &s.campaign, EventType::WalletPointsExpiring).await;
    let carried: Vec<EventData> = notices
        .into_iter()
        .map(|e| EventData::of(&e.data).unwrap())
        .collect();
    assert_eq!(carried, [notice(soon)]);
    assert_eq!(soon.date, (past + Duration::days(30)).date_naive());

    // 21 days on, the later earn's day is within the notice (the first one's has passed):
    // announced, unless the campaign has stopped announcing.
    let quiet = Policy {
        expiry_notice_days: 0,
        ..policy
    };
    store
        .programme()
        .set_policy(&s.campaign, quiet)
        .await
        .unwrap();
    let later_look = now + Duration::days(21);
    assert_eq!(
        store.ledger().notice_expiring(later_look).await.unwrap(),
        0,
        "not announced"
    );
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    let next_day = later_look + Duration::days(1);
    assert_eq!(store.ledger().notice_expiring(next_day).await.unwrap(), 1);
    let notices = events_of(&store, &s.campaign, EventType::WalletPointsExpiring).await;
    let carried: Vec<EventData> = notices
        .into_iter()
        .map(|e| EventData::of(&e.data).unwrap())
        .collect();
    assert_eq!(carried, [notice(soon), notice(later)]);
}

backend_tests!(
    api_earns_record_their_outcome,
    orders_codes_and_bookings_record_their_events,
    reviews_record_created_held_and_reported,
    tier_changes_are_recorded_by_the_database,
    tokens_about_to_expire_are_announced_once,
);
