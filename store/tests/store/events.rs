//! Events out on both backends: recorded with their change or not at all, numbered into the
//! feed, fanned out to the endpoints that want them, claimed once at a time, retried, failed
//! after their window, endpoints paused and disabled, the log and redeliveries.

use chrono::{Duration, Utc};
use store::{
    ApiVersion, AttemptOutcome, Campaign, ClaimedDelivery, CodeKey, DeliveryStatus, EndpointAfter,
    EndpointPatch, EndpointStatus, EventData, EventFilter, EventType, ManualBounds, NewCampaign,
    NewEndpoint, Page, Redelivery, RuleBook, Store, StoreError, TransactionKind, WebhookEndpoint,
    backend_tests,
};

use crate::ledger::{burn, drain, earn, setup};

fn key() -> CodeKey {
    CodeKey::new(&[7u8; 32])
}

fn endpoint(url: &str, types: &[EventType]) -> NewEndpoint {
    NewEndpoint {
        campaign_id: None,
        url: url.into(),
        description: None,
        event_types: types.to_vec(),
        api_version: ApiVersion::V1_9_5,
        secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw".into(),
    }
}

const PAGE: Page = Page {
    page: 1,
    limit: 100,
};

/// Numbers and fans out until nothing waits.
async fn dispatch(store: &Store) {
    while store.events().dispatch_events(500).await.unwrap().full {}
}

async fn feed(store: &Store, campaign: &Campaign, filter: EventFilter) -> Vec<store::Event> {
    store
        .events()
        .feed(&campaign.org(), Some(&campaign.id), &filter, PAGE)
        .await
        .unwrap()
        .items
}

/// The transaction events only (the fixtures' members make events of their own).
fn burns() -> EventFilter {
    EventFilter {
        types: vec![EventType::TransactionCreated],
        ..Default::default()
    }
}

/// 100 tokens earned (`e-1`, credited), then 30 burned (`b-1`).
async fn earned_and_burned(store: &Store, campaign: &Campaign) {
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(campaign, earn("e-1", "100"))
        .await
        .unwrap();
    drain(store, &book).await;
    store
        .ledger()
        .burn(campaign, burn("b-1", 30))
        .await
        .unwrap();
}

/// A wallet of 100 tokens, burned from twice (30, then a refused 500).
async fn burned(store: &Store) -> Campaign {
    let s = setup(store).await;
    earned_and_burned(store, &s.campaign).await;
    let refused = store.ledger().burn(&s.campaign, burn("b-2", 500)).await;
    assert!(matches!(
        refused,
        Err(StoreError::InsufficientBalance { .. })
    ));
    // A repeat of the first writes nothing, so records nothing.
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 30))
        .await
        .unwrap();
    s.campaign
}

/// A burn's event commits with it and carries the transaction; a refused burn and a replay
/// record none; the feed shows an event only once it is numbered.
async fn a_burn_records_one_event_with_its_transaction(store: Store) {
    let campaign = burned(&store).await;
    assert!(
        feed(&store, &campaign, EventFilter::default())
            .await
            .is_empty()
    );
    dispatch(&store).await;
    let events = feed(&store, &campaign, burns()).await;
    assert_eq!(events.len(), 1, "{events:?}");
    let event = &events[0];
    assert_eq!(event.kind, EventType::TransactionCreated);
    assert_eq!(event.campaign_id.as_deref(), Some(campaign.id.as_str()));
    let EventData::Transaction(t) = &EventData::of(&event.data).unwrap() else {
        panic!("{:?}", event.data);
    };
    assert_eq!(t.kind, TransactionKind::Burn);
    assert_eq!(t.amount, store::Tokens::whole(30));
    assert_eq!(t.external_id.as_deref(), Some("b-1"));
    let listed = store
        .ledger()
        .list_transactions(&campaign, &Default::default(), PAGE)
        .await
        .unwrap();
    assert!(listed.items.iter().any(|l| l.id == t.id));
    assert!(event.seq.is_some());
}

/// Events are numbered by the time they occurred, without gaps, however many a dispatch takes
/// at once; the feed pages by number either way, filters by type and time, and `after` an id
/// it does not hold is refused.
async fn the_feed_pages_by_number(store: Store) {
    let campaign = burned(&store).await;
    for n in 2..=5 {
        store
            .ledger()
            .burn(&campaign, burn(&format!("b-{n}0"), 1))
            .await
            .unwrap();
    }
    while store.events().dispatch_events(2).await.unwrap().full {}
    let all = feed(&store, &campaign, burns()).await;
    assert_eq!(all.len(), 5);
    let seqs: Vec<i64> = all.iter().map(|e| e.seq.unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let times: Vec<_> = all.iter().map(|e| e.occurred_at).collect();
    assert!(times.windows(2).all(|w| w[0] <= w[1]), "{times:?}");
    let after = EventFilter {
        after: Some(all[1].id.clone()),
        ..burns()
    };
    let rest = feed(&store, &campaign, after).await;
    assert_eq!(rest.first().map(|e| &e.id), Some(&all[2].id));
    assert_eq!(rest.len(), 3);
    let newest = EventFilter {
        newest_first: true,
        after: Some(all[3].id.clone()),
        ..burns()
    };
    let older: Vec<String> = feed(&store, &campaign, newest)
        .await
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(older, [&*all[2].id, &all[1].id, &all[0].id]);
    let other_type = EventFilter {
        types: vec![EventType::ReviewCreated],
        ..Default::default()
    };
    assert!(feed(&store, &campaign, other_type).await.is_empty());
    let members = EventFilter {
        types: vec![EventType::MemberCreated],
        ..Default::default()
    };
    assert_eq!(feed(&store, &campaign, members).await.len(), 1);
    let later = EventFilter {
        from: Some(Utc::now() + Duration::minutes(1)),
        ..Default::default()
    };
    assert!(feed(&store, &campaign, later).await.is_empty());
    let unknown = EventFilter {
        after: Some("nope".into()),
        ..Default::default()
    };
    let refused = store
        .events()
        .feed(&campaign.org(), Some(&campaign.id), &unknown, PAGE)
        .await;
    assert!(matches!(
        refused,
        Err(StoreError::Invalid { field: "after", .. })
    ));
    // Another organisation sees none of them.
    let other = store.tenancy().create_org("Other").await.unwrap();
    let theirs = store
        .events()
        .feed(&other.scope(), None, &EventFilter::default(), PAGE)
        .await
        .unwrap();
    assert_eq!(theirs.total, 0);
}

/// Each event goes to the enabled endpoints that want its type and campaign and existed when
/// it happened, and to no other.
async fn events_fan_out_to_the_endpoints_that_want_them(store: Store) {
    let s = setup(&store).await;
    let org = s.campaign.org();
    let k = key();
    let all = store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &k, 25)
        .await
        .unwrap();
    let burns = store
        .events()
        .create_endpoint(
            &org,
            endpoint("https://b.example/hook", &[EventType::TransactionCreated]),
            &k,
            25,
        )
        .await
        .unwrap();
    let members = store
        .events()
        .create_endpoint(
            &org,
            endpoint("https://c.example/hook", &[EventType::MemberCreated]),
            &k,
            25,
        )
        .await
        .unwrap();
    let second = NewCampaign {
        name: "Second".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let second = store.tenancy().create_campaign(&org, second).await.unwrap();
    let elsewhere = NewEndpoint {
        campaign_id: Some(second.id.clone()),
        ..endpoint("https://d.example/hook", &[])
    };
    let elsewhere = store
        .events()
        .create_endpoint(&org, elsewhere, &k, 25)
        .await
        .unwrap();
    let off = store
        .events()
        .create_endpoint(&org, endpoint("https://e.example/hook", &[]), &k, 25)
        .await
        .unwrap();
    let disable = EndpointPatch {
        status: Some(EndpointStatus::Disabled),
        ..Default::default()
    };
    store
        .events()
        .update_endpoint(&org, &off.id, disable)
        .await
        .unwrap();
    earned_and_burned(&store, &s.campaign).await;
    let late = store
        .events()
        .create_endpoint(&org, endpoint("https://f.example/hook", &[]), &k, 25)
        .await
        .unwrap();
    let dispatched = store.events().dispatch_events(500).await.unwrap();
    // The member's creation came before every endpoint: the earn's completion goes to the
    // endpoint of every type, the burn to it and to the burns' one.
    assert_eq!((dispatched.events, dispatched.deliveries), (3, 3));
    let store = &store;
    let due = |per_org| async move {
        let due = store.events().endpoints_due(per_org).await.unwrap();
        due.into_iter().map(|e| e.id).collect::<Vec<String>>()
    };
    let mut wanted = vec![all.id.clone(), burns.id.clone()];
    wanted.sort();
    assert_eq!(due(25).await, wanted);
    let first = due(1).await;
    assert_eq!(
        first,
        wanted[..1],
        "at most one of the organisation's, by id"
    );
    for quiet in [&members, &elsewhere, &off, &late] {
        let claimed = claim(store, quiet).await;
        assert!(claimed.is_empty(), "{}: {claimed:?}", quiet.url);
    }
    // A second run finds nothing new.
    assert_eq!(store.events().dispatch_events(500).await.unwrap().events, 0);
}

/// Many endpoints are fanned out to a few at a time: no dispatch gives deliveries to more than
/// 100 endpoints, every event is numbered into the feed at once, and in the end each endpoint
/// has each event it wants exactly once.
async fn a_wide_fan_out_takes_short_writes(store: Store) {
    let quiet = setup(&store).await;
    let noisy = setup(&store).await;
    dispatch(&store).await;
    let k = key();
    let everything = endpoint("https://quiet.example/hook", &[]);
    let quiet_one = store
        .events()
        .create_endpoint(&quiet.campaign.org(), everything, &k, 25)
        .await
        .unwrap();
    let org = noisy.campaign.org();
    let mut noisy_ones = Vec::new();
    for n in 0..450 {
        let url = format!("https://noisy.example/{n}");
        let burns = endpoint(&url, &[EventType::TransactionCreated]);
        noisy_ones.push(
            store
                .events()
                .create_endpoint(&org, burns, &k, 1_000)
                .await
                .unwrap(),
        );
    }
    // The quiet organisation's earn and burn, the noisy one's earn and six burns.
    earned_and_burned(&store, &quiet.campaign).await;
    earned_and_burned(&store, &noisy.campaign).await;
    for n in 2..=6 {
        let burn = burn(&format!("b-{n}"), 1);
        store.ledger().burn(&noisy.campaign, burn).await.unwrap();
    }
    let first = store.events().dispatch_events(500).await.unwrap();
    assert_eq!(first.events, 9, "numbered at once, fanned out after");
    assert!(first.full);
    let burns_fed = feed(&store, &noisy.campaign, burns()).await;
    assert_eq!(burns_fed.len(), 6, "every noisy burn is in the feed");
    let mut runs = vec![first.deliveries];
    loop {
        let next = store.events().dispatch_events(500).await.unwrap();
        assert_eq!(next.events, 0);
        runs.push(next.deliveries);
        if !next.full {
            break;
        }
    }
    assert!(runs.iter().all(|&d| d <= 100 * 6), "{runs:?}");
    assert_eq!(runs.iter().sum::<usize>(), 2 + 450 * 6, "{runs:?}");
    assert!(runs.len() >= 5, "450 endpoints, 100 a write: {runs:?}");
    let claimed = claim(&store, &quiet_one).await;
    assert_eq!(claimed.len(), 2, "the quiet earn and burn");
    for one in [&noisy_ones[0], &noisy_ones[449]] {
        let claimed = claim(&store, one).await;
        assert_eq!(claimed.len(), 6, "each noisy burn once");
    }
    // An endpoint with a round in flight is not due (its sender goes on with it), though four
    // of its deliveries are.
    let lease = Duration::seconds(30);
    let part = store
        .events()
        .claim_deliveries(&noisy_ones[1].id, 2, lease)
        .await
        .unwrap();
    assert_eq!(part.len(), 2);
    let due = store.events().endpoints_due(1_000).await.unwrap();
    assert_eq!(due.len(), 450 - 3);
    assert!(due.iter().all(|e| e.id != noisy_ones[1].id));
    assert_eq!(
        store.events().endpoints_due(100).await.unwrap().len(),
        100,
        "at most 100 of one organisation"
    );
    assert_eq!(
        store.events().dispatch_events(500).await.unwrap(),
        Default::default()
    );
}

async fn claim(store: &Store, endpoint: &WebhookEndpoint) -> Vec<ClaimedDelivery> {
    store
        .events()
        .claim_deliveries(&endpoint.id, 10, Duration::seconds(30))
        .await
        .unwrap()
}

fn answered(status: u16) -> AttemptOutcome {
    AttemptOutcome {
        attempted_at: Utc::now(),
        status_code: Some(status),
        latency_ms: 12,
        response: Some("ok".into()),
    }
}

/// A claimed delivery is nobody else's until it is recorded; a failure makes it due again
/// later and pauses the endpoint; a success delivers it and clears the endpoint's failing;
/// the log lists every attempt, newest first.
async fn attempts_retry_then_deliver(store: Store) {
    let campaign = burned(&store).await;
    let org = campaign.org();
    let hook = store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &key(), 25)
        .await
        .unwrap();
    store
        .ledger()
        .burn(&campaign, burn("b-3", 5))
        .await
        .unwrap();
    dispatch(&store).await;
    let claimed = claim(&store, &hook).await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].attempt, 1);
    assert!(claim(&store, &hook).await.is_empty(), "claimed twice");
    let after = store
        .events()
        .record_attempts(
            &hook.id,
            vec![(claimed[0].clone(), answered(500))],
            store::FIRST_RETRY,
        )
        .await
        .unwrap();
    assert!(matches!(after, EndpointAfter::Paused(until) if until > Utc::now()));
    let hook_now = store
        .events()
        .endpoint(&org, &hook.id)
        .await
        .unwrap()
        .unwrap();
    assert!(hook_now.failing_since.is_some());
    // Paused, and the delivery waits for its backoff.
    assert!(store.events().endpoints_due(25).await.unwrap().is_empty());
    assert!(claim(&store, &hook).await.is_empty());
    // The worker records the second attempt (as if its backoff had passed).
    let second = ClaimedDelivery {
        attempt: 2,
        ..claimed[0].clone()
    };
    // Not the claim's holder (the delivery's attempts say 1): the log keeps it, the delivery
    // stays as it was.
    store
        .events()
        .record_attempts(&hook.id, vec![(second, answered(200))], store::FIRST_RETRY)
        .await
        .unwrap();
    let log = store
        .events()
        .delivery_attempts(&org, &hook.id, PAGE)
        .await
        .unwrap();
    assert_eq!(log.total, 2);
    assert_eq!(log.items[0].delivery_status, DeliveryStatus::Pending);
    let after = store
        .events()
        .record_attempts(
            &hook.id,
            vec![(claimed[0].clone(), answered(204))],
            store::FIRST_RETRY,
        )
        .await
        .unwrap();
    assert_eq!(after, EndpointAfter::Healthy);
    let log = store
        .events()
        .delivery_attempts(&org, &hook.id, PAGE)
        .await
        .unwrap();
    assert_eq!(log.total, 3);
    let newest = &log.items[0];
    assert_eq!(newest.status_code, Some(204));
    assert!(newest.succeeded);
    assert_eq!(newest.delivery_status, DeliveryStatus::Delivered);
    assert_eq!(newest.event_type, EventType::TransactionCreated);
    let hook_now = store
        .events()
        .endpoint(&org, &hook.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(hook_now.failing_since, None);
    // Another organisation's key cannot read the log.
    let other = store.tenancy().create_org("Other").await.unwrap();
    let theirs = store
        .events()
        .delivery_attempts(&other.scope(), &hook.id, PAGE)
        .await;
    assert!(matches!(theirs, Err(StoreError::NotFound { .. })));
}

/// A delivery whose window has passed is failed at its next failure; an answer of 410 disables
/// the endpoint at once, and enabling it again clears its reason.
async fn deliveries_fail_after_their_window_and_gone_disables(store: Store) {
    let campaign = burned(&store).await;
    let org = campaign.org();
    let hook = store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &key(), 25)
        .await
        .unwrap();
    store
        .ledger()
        .burn(&campaign, burn("b-3", 5))
        .await
        .unwrap();
    store
        .ledger()
        .burn(&campaign, burn("b-4", 5))
        .await
        .unwrap();
    dispatch(&store).await;
    let claimed = claim(&store, &hook).await;
    assert_eq!(claimed.len(), 2);
    let old = ClaimedDelivery {
        created_at: Utc::now() - store::DELIVERY_WINDOW - Duration::minutes(1),
        ..claimed[0].clone()
    };
    store
        .events()
        .record_attempts(&hook.id, vec![(old, answered(503))], store::FIRST_RETRY)
        .await
        .unwrap();
    let after = store
        .events()
        .record_attempts(
            &hook.id,
            vec![(claimed[1].clone(), answered(410))],
            store::FIRST_RETRY,
        )
        .await
        .unwrap();
    assert!(matches!(after, EndpointAfter::Disabled(ref why) if why.contains("410")));
    let log = store
        .events()
        .delivery_attempts(&org, &hook.id, PAGE)
        .await
        .unwrap();
    let statuses: Vec<DeliveryStatus> = log.items.iter().map(|a| a.delivery_status).collect();
    assert!(statuses.contains(&DeliveryStatus::Failed), "{statuses:?}");
    let hook_now = store
        .events()
        .endpoint(&org, &hook.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(hook_now.status, EndpointStatus::Disabled);
    assert!(store.events().endpoints_due(25).await.unwrap().is_empty());
    let enable = EndpointPatch {
        status: Some(EndpointStatus::Enabled),
        ..Default::default()
    };
    let hook_now = store
        .events()
        .update_endpoint(&org, &hook.id, enable)
        .await
        .unwrap();
    assert_eq!(hook_now.disabled_reason, None);
    assert_eq!(hook_now.status, EndpointStatus::Enabled);
}

/// Two workers claiming the same endpoint's deliveries at once never get the same one.
async fn concurrent_claims_share_nothing(store: Store) {
    let campaign = burned(&store).await;
    let hook = store
        .events()
        .create_endpoint(
            &campaign.org(),
            endpoint("https://a.example/h", &[]),
            &key(),
            25,
        )
        .await
        .unwrap();
    for n in 0..40 {
        store
            .ledger()
            .burn(&campaign, burn(&format!("c-{n}"), 1))
            .await
            .unwrap();
    }
    dispatch(&store).await;
    let claims = (0..4).map(|_| {
        let store = store.clone();
        let id = hook.id.clone();
        tokio::spawn(async move {
            store
                .events()
                .claim_deliveries(&id, 7, Duration::seconds(30))
                .await
                .unwrap()
        })
    });
    let mut seen = std::collections::HashSet::new();
    let mut count = 0;
    for claim in claims {
        for delivery in claim.await.unwrap() {
            count += 1;
            assert!(seen.insert(delivery.id), "a delivery was claimed twice");
        }
    }
    assert_eq!(count, 28);
}

/// Redelivery of one event or of a time range makes new deliveries of what the endpoint
/// wants; test events go to their endpoint alone and never into the feed; secrets rotate with
/// a window in which both sign.
async fn redeliveries_tests_and_rotations(store: Store) {
    let campaign = burned(&store).await;
    let org = campaign.org();
    let k = key();
    dispatch(&store).await;
    let hook = store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &k, 25)
        .await
        .unwrap();
    let members_only = store
        .events()
        .create_endpoint(
            &org,
            endpoint("https://b.example/hook", &[EventType::MemberCreated]),
            &k,
            25,
        )
        .await
        .unwrap();
    let event = feed(&store, &campaign, burns()).await[0].clone();
    let one = Redelivery::Event(event.id.clone());
    assert_eq!(
        store
            .events()
            .redeliver(&org, &hook.id, one.clone(), ManualBounds::default())
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        store
            .events()
            .redeliver(&org, &members_only.id, one, ManualBounds::default())
            .await
            .unwrap(),
        0
    );
    let range = Redelivery::Range {
        from: Utc::now() - Duration::hours(1),
        to: Utc::now() + Duration::hours(1),
    };
    // The range holds the member's creation, the earn's completion and the burn.
    assert_eq!(
        store
            .events()
            .redeliver(&org, &hook.id, range, ManualBounds::default())
            .await
            .unwrap(),
        3
    );
    let unknown = store
        .events()
        .redeliver(
            &org,
            &hook.id,
            Redelivery::Event("nope".into()),
            ManualBounds::default(),
        )
        .await;
    assert!(matches!(
        unknown,
        Err(StoreError::NotFound { what: "event" })
    ));
    assert_eq!(claim(&store, &hook).await.len(), 4);

    let test = store
        .events()
        .send_test_event(&org, &members_only.id, ManualBounds::default())
        .await
        .unwrap();
    dispatch(&store).await;
    let claimed = claim(&store, &members_only).await;
    assert_eq!(claimed.len(), 1);
    assert_eq!(claimed[0].event.id, test);
    assert_eq!(claimed[0].event.kind, EventType::WebhookTest);
    assert!(claim(&store, &hook).await.is_empty());
    let listed = feed(&store, &campaign, EventFilter::default()).await;
    assert!(listed.iter().all(|e| e.kind != EventType::WebhookTest));

    let first = store.events().endpoint_secrets(&hook.id, &k).await.unwrap();
    assert_eq!(first.previous, None);
    let until = Utc::now() + Duration::hours(24);
    store
        .events()
        .rotate_endpoint_secret(&org, &hook.id, "whsec_bmV3", Some(until), &k)
        .await
        .unwrap();
    let rotated = store.events().endpoint_secrets(&hook.id, &k).await.unwrap();
    assert_eq!(rotated.current, "whsec_bmV3");
    assert_eq!(rotated.previous, Some(first.current));
    store
        .events()
        .rotate_endpoint_secret(&org, &hook.id, "whsec_bmV4", None, &k)
        .await
        .unwrap();
    let again = store.events().endpoint_secrets(&hook.id, &k).await.unwrap();
    assert_eq!(
        (again.current.as_str(), again.previous),
        ("whsec_bmV4", None)
    );
    // The secret is kept sealed: another key does not open it.
    let wrong = store
        .events()
        .endpoint_secrets(&hook.id, &CodeKey::new(&[8u8; 32]))
        .await;
    assert!(wrong.is_err());

    assert!(
        store
            .events()
            .remove_endpoint(&org, &hook.id)
            .await
            .unwrap()
    );
    assert!(
        !store
            .events()
            .remove_endpoint(&org, &hook.id)
            .await
            .unwrap()
    );
    assert!(
        store
            .events()
            .endpoint(&org, &hook.id)
            .await
            .unwrap()
            .is_none()
    );
}

/// A member's creation and updates carry the member; a refused one records nothing; the
/// deletion records only the id and takes the personal data out of the member's earlier events.
async fn member_events_and_erasure(store: Store) {
    let campaign = store::testing::campaign_fixture(&store).await;
    let org = campaign.org();
    let new = store::NewMember {
        first_name: "Ada".into(),
        email: Some("ada@example.com".into()),
        idp: "reference".into(),
        user_id: "u-1".into(),
        external_id: "card-1".into(),
        ..Default::default()
    };
    let member = store
        .members()
        .create_member(&org, new.clone())
        .await
        .unwrap();
    let twin = store.members().create_member(&org, new).await;
    assert!(matches!(twin, Err(StoreError::Conflict { .. })), "{twin:?}");
    let patch = store::MemberPatch {
        last_name: Some(Some("Lovelace".into())),
        ..Default::default()
    };
    store
        .members()
        .update_member(&org, &member.id, patch)
        .await
        .unwrap();
    dispatch(&store).await;
    let events = feed(&store, &campaign, EventFilter::default()).await;
    let kinds: Vec<EventType> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [EventType::MemberCreated, EventType::MemberUpdated]);
    let EventData::Member(updated) = &EventData::of(&events[1].data).unwrap() else {
        panic!("{:?}", events[1].data);
    };
    assert_eq!(updated.last_name.as_deref(), Some("Lovelace"));
    assert_eq!(
        events[0].campaign_id, None,
        "an event of the organisation's"
    );

    store
        .members()
        .delete_member(&org, &member.id)
        .await
        .unwrap();
    dispatch(&store).await;
    let events = feed(&store, &campaign, EventFilter::default()).await;
    assert_eq!(events.len(), 3);
    assert_eq!(events[2].kind, EventType::MemberDeleted);
    for event in &events {
        assert_eq!(
            EventData::of(&event.data).unwrap(),
            EventData::MemberErased {
                id: member.id.clone()
            },
            "{:?}",
            event.kind
        );
    }
}

/// Every transaction written by a request or the sweep has its event: a refund, a capture,
/// both sides of a transfer, an expiry; each as the ledger lists it.
async fn every_written_transaction_has_its_event(store: Store) {
    let campaign = burned(&store).await;
    let burn = store
        .ledger()
        .list_transactions(&campaign, &Default::default(), PAGE)
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|t| t.kind == TransactionKind::Burn)
        .unwrap();
    let refund = store::NewCorrection {
        transaction_id: burn.id.clone(),
        external_id: "r-1".into(),
        amount: Some(5.into()),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().correct(&campaign, refund).await.unwrap();
    store
        .ledger()
        .hold(&campaign, crate::holds::hold("h-1", 4))
        .await
        .unwrap();
    store
        .ledger()
        .capture_hold(&campaign, "h-1", None)
        .await
        .unwrap();
    let member = store::NewMember {
        first_name: "Grace".into(),
        idp: "reference".into(),
        user_id: "u-2".into(),
        external_id: "card-2".into(),
        ..Default::default()
    };
    store
        .members()
        .create_member(&campaign.org(), member)
        .await
        .unwrap();
    let wallet = store::NewWallet {
        owner: Some("card-2".into()),
        external_id: Some("w-2".into()),
        name: None,
    };
    store
        .ledger()
        .create_wallet(&campaign, wallet)
        .await
        .unwrap();
    let transfer = store::NewTransfer {
        from: "w-1".into(),
        to: "w-2".into(),
        external_id: "t-1".into(),
        amount: store::Tokens::whole(3),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().transfer(&campaign, transfer).await.unwrap();
    dispatch(&store).await;
    let events = feed(&store, &campaign, burns()).await;
    let mut listed = store
        .ledger()
        .list_transactions(&campaign, &Default::default(), PAGE)
        .await
        .unwrap()
        .items;
    // Every transaction but the earn (which a request's processing credits: its own event).
    listed.retain(|t| t.kind != TransactionKind::Earn);
    let mut evented: Vec<String> = events
        .iter()
        .map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Transaction(t) => t.id.clone(),
            other => panic!("{other:?}"),
        })
        .collect();
    let mut ids: Vec<String> = listed.iter().map(|t| t.id.clone()).collect();
    evented.sort();
    ids.sort();
    assert_eq!(evented, ids);
    let kinds: Vec<TransactionKind> = events
        .iter()
        .filter_map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Transaction(t) => Some(t.kind),
            _ => None,
        })
        .collect();
    for kind in [
        TransactionKind::Burn,
        TransactionKind::Refund,
        TransactionKind::TransferOut,
        TransactionKind::TransferIn,
    ] {
        assert!(kinds.contains(&kind), "{kind:?} in {kinds:?}");
    }
}

/// The sweep's expiries have their events too.
async fn an_expiry_has_its_event(store: Store) {
    let s = setup(&store).await;
    let policy = store::Policy {
        expiry: store::Expiry::Days(30),
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, crate::ledger::earn_on("e-old", "10", 40))
        .await
        .unwrap();
    drain(&store, &RuleBook::new(store.programme().clone())).await;
    assert_eq!(store.ledger().expire(Utc::now()).await.unwrap(), 1);
    dispatch(&store).await;
    let events = feed(&store, &s.campaign, burns()).await;
    assert_eq!(events.len(), 1);
    let EventData::Transaction(t) = &EventData::of(&events[0].data).unwrap() else {
        panic!("{:?}", events[0].data);
    };
    assert_eq!(
        (t.kind, t.amount),
        (TransactionKind::Expiry, store::Tokens::whole(10))
    );
}

/// A batch file makes one event when it ends, whatever its rows: completed with its counts
/// and summary, or failed with why.
async fn a_batch_file_makes_one_event(store: Store) {
    let campaign = store::testing::campaign_fixture(&store).await;
    let org = campaign.org();
    for (id, state) in [
        ("b-ok", store::BatchState::Completed),
        ("b-bad", store::BatchState::Failed),
    ] {
        let new = store::NewBatch {
            id: id.into(),
            file_name: format!("{id}.csv"),
            size: 10,
            sha256: format!("{id}-sha"),
            source: "sftp".into(),
            username: None,
        };
        store.batches().record_batch(&org, new).await.unwrap();
        let finish = store::BatchFinish {
            state,
            rows: 1_000,
            loaded: 990,
            rejected: 10,
            summary: serde_json::json!({"rejectedReport": format!("{id}.rejected.csv")}),
            error: (state == store::BatchState::Failed).then(|| "unreadable".into()),
        };
        store.batches().finish_batch(id, finish).await.unwrap();
    }
    dispatch(&store).await;
    let batches = EventFilter {
        types: vec![EventType::BatchCompleted, EventType::BatchFailed],
        ..Default::default()
    };
    let events = feed(&store, &campaign, batches).await;
    let seen: Vec<(EventType, String, Option<i64>)> = events
        .iter()
        .map(|e| match &EventData::of(&e.data).unwrap() {
            EventData::Batch(b) => (e.kind, b.id.clone(), b.rows_rejected),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        seen,
        [
            (EventType::BatchCompleted, "b-ok".to_string(), Some(10)),
            (EventType::BatchFailed, "b-bad".to_string(), Some(10)),
        ]
    );
}

/// Events past their retention go with their deliveries and attempts, except one a delivery
/// still waits to send.
async fn old_events_are_pruned_unless_a_delivery_waits(store: Store) {
    let s = setup(&store).await;
    let org = s.campaign.org();
    let hook = store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &key(), 25)
        .await
        .unwrap();
    earned_and_burned(&store, &s.campaign).await;
    dispatch(&store).await;
    let claimed = claim(&store, &hook).await;
    assert_eq!(claimed.len(), 2, "the earn's completion and the burn");
    let sent = claimed
        .iter()
        .find(|c| c.event.kind == EventType::TransactionCreated)
        .unwrap();
    let outcome = vec![(sent.clone(), answered(204))];
    store
        .events()
        .record_attempts(&hook.id, outcome, store::FIRST_RETRY)
        .await
        .unwrap();
    let waiting = claimed.iter().find(|c| c.id != sent.id).unwrap();

    assert_eq!(
        store
            .events()
            .prune_events(Utc::now() - store::EVENT_RETENTION)
            .await
            .unwrap(),
        0
    );
    // All of them old: the member's creation and the delivered burn go; the earn's completion,
    // whose delivery waits, stays.
    let later = Utc::now() + Duration::seconds(1);
    assert_eq!(store.events().prune_events(later).await.unwrap(), 2);
    let left: Vec<String> = feed(&store, &s.campaign, EventFilter::default())
        .await
        .into_iter()
        .map(|e| e.id)
        .collect();
    assert_eq!(left, std::slice::from_ref(&waiting.event.id));
    let log = store
        .events()
        .delivery_attempts(&org, &hook.id, PAGE)
        .await
        .unwrap();
    assert_eq!(log.total, 0, "the burn's attempt went with it");
    assert!(
        store
            .events()
            .event(&org, None, &sent.event.id)
            .await
            .unwrap()
            .is_none()
    );
}

backend_tests!(
    old_events_are_pruned_unless_a_delivery_waits,
    a_burn_records_one_event_with_its_transaction,
    the_feed_pages_by_number,
    events_fan_out_to_the_endpoints_that_want_them,
    a_wide_fan_out_takes_short_writes,
    attempts_retry_then_deliver,
    deliveries_fail_after_their_window_and_gone_disables,
    concurrent_claims_share_nothing,
    redeliveries_tests_and_rotations,
    member_events_and_erasure,
    every_written_transaction_has_its_event,
    an_expiry_has_its_event,
    a_batch_file_makes_one_event,
);

/// The schema before migration 27, which keeps the dispatcher's place in a fan-out.
const BEFORE_THE_PLACE: i64 = 26;

/// An event numbered before migration 27 was fanned out when numbered: after it, the
/// dispatcher does not fan it out again (no second delivery to any endpoint).
async fn migration_27_fans_nothing_out_twice(db: store::testing::TestStore) {
    let store = &db.store;
    let (campaign, _) = store::testing::old_schema_fixture(store, &["w-1"]).await;
    let org = campaign.org();
    store
        .events()
        .create_endpoint(&org, endpoint("https://a.example/hook", &[]), &key(), 25)
        .await
        .unwrap();
    let (o, c) = (&campaign.org_id, &campaign.id);
    let numbered = format!(
        "INSERT INTO events (id, org_id, campaign_id, type, occurred_at, data, seq) VALUES \
         ('ev-old', '{o}', '{c}', 'transaction.created', '2100-01-01T00:00:00+00:00', '{{}}', 1); \
         DELETE FROM events WHERE id <> 'ev-old'; UPDATE event_dispatch SET last_seq = 1;"
    );
    store.execute_raw(&numbered).await.unwrap();
    store.migrate().await.unwrap();
    assert_eq!(
        store.events().dispatch_events(500).await.unwrap(),
        Default::default()
    );
    let endpoints = store.events().endpoints_due(25).await.unwrap();
    assert!(endpoints.is_empty(), "{endpoints:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_27_fans_nothing_out_twice_on_sqlite() {
    migration_27_fans_nothing_out_twice(
        store::testing::TestStore::sqlite_at(BEFORE_THE_PLACE).await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn migration_27_fans_nothing_out_twice_on_postgres() {
    migration_27_fans_nothing_out_twice(
        store::testing::TestStore::postgres_at(BEFORE_THE_PLACE).await,
    )
    .await;
}
