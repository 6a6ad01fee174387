//! Members' activities on both backends: awarded under the rules with `on = "activity"` as an
//! EARN linked to the activity, limited like any rule, idempotent under their external id
//! (also when recorded at once), recorded by the platform itself (a first wallet, a published
//! review, a first order), refused when malformed, and erased with their member.

use chrono::{Duration, Utc};
use serde_json::{Value, json};
use store::{
    Activity, ActivitySource, Campaign, EventData, EventFilter, EventType, Moderation, NewActivity,
    NewCampaign, NewReview, NewWallet, Page, RuleBook, Store, StoreError, Tokens, backend_tests,
};

use crate::ledger::{balance, drain, earn, reused_for, setup};

/// Fifty tokens for signing up, five for opening the app (once a day per member), twenty for a
/// published review, thirty for a first order; a token per unit of a purchase.
const PROGRAMME: &str = "[[rule]]\nid = 'purchase'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'welcome'\npriority = 2\non = 'activity'\n\
     when = \"activity.type == 'member.signed_up'\"\naward = 50\n\
     [[rule]]\nid = 'app'\npriority = 3\non = 'activity'\n\
     when = \"activity.type == 'app.opened'\"\naward = 5\n\
     limits = [{ scope = 'member', period = 'day', times = 1 }]\n\
     [[rule]]\nid = 'review'\npriority = 4\non = 'activity'\n\
     when = \"activity.type == 'review.published'\"\naward = 20\n\
     [[rule]]\nid = 'first-order'\npriority = 5\non = 'activity'\n\
     when = \"activity.type == 'order.first'\"\naward = 30\n";

async fn activate(store: &Store, campaign: &Campaign) -> RuleBook {
    store
        .programme()
        .set_rule_set(campaign, PROGRAMME)
        .await
        .unwrap();
    RuleBook::new(store.programme().clone())
}

/// Noon yesterday (UTC): every activity of a test on one day.
fn yesterday_noon() -> chrono::DateTime<Utc> {
    let day = (Utc::now() - Duration::days(1)).date_naive();
    day.and_hms_opt(12, 0, 0).unwrap().and_utc()
}

fn opened(id: &str, device: &str) -> NewActivity {
    NewActivity {
        campaign_id: String::new(),
        member_id: String::new(),
        external_id: id.into(),
        kind: "app.opened".into(),
        occurred_at: Some(yesterday_noon()),
        attributes: Some(json!({ "device": device })),
        source: ActivitySource::Api,
        batch_id: None,
    }
}

/// `new` for the fixture's member (`card-1`) in `campaign`.
async fn of_member(store: &Store, campaign: &Campaign, mut new: NewActivity) -> NewActivity {
    new.campaign_id = campaign.id.clone();
    new.member_id = store
        .members()
        .member_id_of(&campaign.org_id, "card-1")
        .await
        .unwrap()
        .unwrap();
    new
}

async fn record(
    store: &Store,
    book: &RuleBook,
    campaign: &Campaign,
    new: NewActivity,
) -> Result<(Activity, bool), StoreError> {
    let new = of_member(store, campaign, new).await;
    store.ledger().record_activity(book, campaign, new).await
}

/// Awards what the platform recorded, until nothing waits.
pub(crate) async fn award_waiting(store: &Store, book: &RuleBook) {
    while store
        .ledger()
        .award_waiting_activities(book, 50)
        .await
        .unwrap()
        > 0
    {}
}

/// The fixture member's activities in the campaign, newest first.
async fn activities_of(store: &Store, campaign: &Campaign, kind: Option<&str>) -> Vec<Activity> {
    let member = of_member(store, campaign, opened("", "")).await.member_id;
    let page = Page {
        page: 1,
        limit: 100,
    };
    store
        .ledger()
        .list_activities(campaign, &member, kind, page)
        .await
        .unwrap()
        .items
}

/// What `activity` earned, over its awards.
pub(crate) fn tokens(activity: &Activity) -> Tokens {
    Tokens::from_micros(activity.awards.iter().map(|a| a.tokens.micros()).sum())
}

async fn activity_events(store: &Store, campaign: &Campaign) -> Vec<store::Event> {
    while store.events().dispatch_events(500).await.unwrap().full {}
    let filter = EventFilter {
        types: vec![EventType::ActivityRecorded],
        ..Default::default()
    };
    let page = Page {
        page: 1,
        limit: 100,
    };
    store
        .events()
        .feed(&campaign.org(), Some(&campaign.id), &filter, page)
        .await
        .unwrap()
        .items
}

async fn activities_earn_under_their_rules_once_each(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    // The fixture's wallet is the member's first: its sign-up waits for the worker.
    award_waiting(&store, &book).await;
    let signed_up = activities_of(&store, &s.campaign, Some("member.signed_up")).await;
    assert_eq!(signed_up.len(), 1);
    assert_eq!(signed_up[0].source, ActivitySource::Platform);
    assert_eq!(tokens(&signed_up[0]), Tokens::whole(50));
    assert_eq!(balance(&store, &s).await, Tokens::whole(50));

    let (first, new) = record(&store, &book, &s.campaign, opened("open-1", "ios"))
        .await
        .unwrap();
    assert!(new && first.awarded_at.is_some());
    assert_eq!(first.awards.len(), 1);
    let award = &first.awards[0];
    assert_eq!(
        (award.tokens, award.wallet_id.as_str()),
        (Tokens::whole(5), s.wallet.id.as_str())
    );
    // The award is an EARN named after the activity, carrying its type and attributes.
    let earned = store
        .ledger()
        .get_transaction(&s.campaign, &award.transaction_id)
        .await
        .unwrap();
    assert_eq!(
        earned.external_id.as_deref(),
        Some(format!("activity:{}", first.id).as_str())
    );
    assert_eq!(earned.description.as_deref(), Some("app.opened"));
    assert_eq!(earned.meta, Some(json!({ "device": "ios" })));

    // Once a day: the second opening is recorded, and its award cut to nothing by the limit.
    let (second, _) = record(&store, &book, &s.campaign, opened("open-2", "ios"))
        .await
        .unwrap();
    assert_eq!(tokens(&second), Tokens::ZERO);
    let trace = second.awards[0].trace.as_deref().unwrap_or_default();
    assert!(
        trace.contains("app"),
        "the trace names the cut rule: {trace}"
    );

    // The same activity again answers the first; another one under its id is refused.
    let (again, new) = record(&store, &book, &s.campaign, opened("open-1", "ios"))
        .await
        .unwrap();
    assert!(!new);
    assert_eq!(again, first);
    let other = record(&store, &book, &s.campaign, opened("open-1", "android")).await;
    assert_eq!(reused_for(&other), Some("attributes"));
    // The same body under another campaign's key is another activity: refused, not answered.
    let second = NewCampaign {
        name: "Second".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let org = s.campaign.org();
    let second = store.tenancy().create_campaign(&org, second).await.unwrap();
    let elsewhere = record(&store, &book, &second, opened("open-1", "ios")).await;
    assert_eq!(reused_for(&elsewhere), Some("campaignId"));

    // A purchase earns by the transaction rule alone; an activity never by it.
    store
        .ledger()
        .submit_earn(&s.campaign, earn("coffee", "7"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(balance(&store, &s).await, Tokens::whole(62));

    let listed = activities_of(&store, &s.campaign, None).await;
    assert_eq!(listed.len(), 3);
    assert_eq!(
        activities_of(&store, &s.campaign, Some("app.opened"))
            .await
            .len(),
        2
    );
    let events = activity_events(&store, &s.campaign).await;
    assert_eq!(
        events.len(),
        3,
        "one event per activity, when it is settled"
    );
    match EventData::of(&events[1].data).unwrap() {
        EventData::Activity(a) => assert_eq!(a.id, first.id),
        other => panic!("not an activity: {other:?}"),
    }
}

async fn malformed_activities_are_refused_naming_the_field(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    let refused = |result: Result<(Activity, bool), StoreError>| match result {
        Err(StoreError::Invalid { field, .. }) => field,
        other => panic!("not refused: {other:?}"),
    };
    let mut bad = opened("bad-1", "ios");
    bad.kind = "App Opened".into();
    assert_eq!(
        refused(record(&store, &book, &s.campaign, bad).await),
        "type"
    );
    let mut built_in = opened("bad-2", "ios");
    built_in.kind = "member.signed_up".into();
    assert_eq!(
        refused(record(&store, &book, &s.campaign, built_in).await),
        "type"
    );
    let mut far = opened("bad-3", "ios");
    far.occurred_at = Some(Utc::now() + Duration::days(3));
    assert_eq!(
        refused(record(&store, &book, &s.campaign, far).await),
        "occurredAt"
    );
    let mut list = opened("bad-4", "ios");
    list.attributes = Some(json!([1, 2]));
    assert_eq!(
        refused(record(&store, &book, &s.campaign, list).await),
        "attributes"
    );
    assert!(
        activities_of(&store, &s.campaign, Some("app.opened"))
            .await
            .is_empty()
    );
}

/// Twenty openings at once under a once-a-day limit: one earns. The same opening twelve times at
/// once: one activity, one EARN.
async fn concurrent_activities_keep_their_limit_and_their_key(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    award_waiting(&store, &book).await;
    let mut set = tokio::task::JoinSet::new();
    for i in 0..20 {
        let (store, book, campaign) = (store.clone(), book.clone(), s.campaign.clone());
        set.spawn(async move {
            record(&store, &book, &campaign, opened(&format!("o-{i}"), "ios"))
                .await
                .unwrap()
        });
    }
    for _ in 0..12 {
        let (store, book, campaign) = (store.clone(), book.clone(), s.campaign.clone());
        set.spawn(async move {
            record(&store, &book, &campaign, opened("same", "web"))
                .await
                .unwrap()
        });
    }
    let mut same = Vec::new();
    while let Some(done) = set.join_next().await {
        let (activity, _) = done.unwrap();
        if activity.external_id == "same" {
            same.push(activity);
        }
    }
    assert!(
        same.windows(2)
            .all(|w| w[0].id == w[1].id && w[0].awards == w[1].awards)
    );
    let opened = activities_of(&store, &s.campaign, Some("app.opened")).await;
    assert_eq!(opened.len(), 21);
    let gave: Vec<&Activity> = opened.iter().filter(|a| tokens(a) > Tokens::ZERO).collect();
    assert_eq!(gave.len(), 1, "once a day per member");
    assert_eq!(balance(&store, &s).await, Tokens::whole(55));
}

fn review(member: &str, voucher: &str, text: &str) -> NewReview {
    NewReview {
        member: member.into(),
        voucher_id: voucher.into(),
        partner_id: "p-1".into(),
        rating: 5,
        review_text: text.into(),
    }
}

/// The platform's own activities: a member's first wallet in a campaign (not its second), a
/// review when it is published (at once, or when approved), a first order (not the second).
async fn the_platform_records_its_own_activities_once(store: Store) {
    let c = crate::orders::setup(&store).await;
    let book = activate(&store, &c).await;
    let second = NewWallet {
        owner: Some("card-1".into()),
        external_id: Some("w-2".into()),
        name: None,
    };
    store.ledger().create_wallet(&c, second).await.unwrap();
    let rules = Moderation {
        profanity_threshold: 0.5,
        report_threshold: 2,
    };
    let community = store.community();
    community
        .create_review(&c, review("card-1", "mug", "Lovely mug"), &rules)
        .await
        .unwrap();
    let held = community
        .create_review(
            &c,
            review("card-1", "dinner", "this dinner was shit"),
            &rules,
        )
        .await
        .unwrap();
    for reference in ["o-1", "o-2"] {
        let lines = vec![crate::orders::line("mug", None, 1)];
        let order = crate::orders::order(Some(reference), lines);
        // Unpaid (no wallet named): an order is an order.
        store
            .orders()
            .place_order(&c, order, crate::orders::key())
            .await
            .unwrap();
    }
    award_waiting(&store, &book).await;
    let kinds = |list: &[Activity]| -> Vec<String> {
        let mut kinds: Vec<String> = list.iter().map(|a| a.kind.clone()).collect();
        kinds.sort();
        kinds
    };
    let listed = activities_of(&store, &c, None).await;
    assert_eq!(
        kinds(&listed),
        ["member.signed_up", "order.first", "review.published"],
        "the held review is not published; one sign-up, one first order"
    );
    assert!(listed.iter().all(|a| a.awarded_at.is_some()));
    let first_order = listed.iter().find(|a| a.kind == "order.first").unwrap();
    assert_eq!(first_order.attributes.as_ref().unwrap()["total"], json!(3));
    store
        .community()
        .moderate_review(&c.org(), &held.id, true)
        .await
        .unwrap();
    award_waiting(&store, &book).await;
    let published = activities_of(&store, &c, Some("review.published")).await;
    assert_eq!(published.len(), 2);
    assert!(published.iter().all(|a| tokens(a) == Tokens::whole(20)));
    // Every award went to the member's first wallet: 50 + 30 + 20 + 20.
    let first = store.ledger().get_wallet(&c, "w-1").await.unwrap();
    assert_eq!(first.balance, Tokens::whole(120));
}

/// Deleting a member erases its activities' attributes and what their events carry.
async fn erasure_takes_an_activitys_attributes(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    let (activity, _) = record(&store, &book, &s.campaign, opened("open-1", "Ada's phone"))
        .await
        .unwrap();
    store
        .members()
        .delete_member(&s.campaign.org(), &activity.member_id)
        .await
        .unwrap();
    let row = store
        .ledger()
        .activity(&s.campaign, &activity.id)
        .await
        .unwrap();
    assert_eq!(row.attributes, None);
    for event in activity_events(&store, &s.campaign).await {
        let text = serde_json::to_string(&event.data).unwrap();
        assert!(!text.contains("Ada's phone"), "{text}");
        let value: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["value"]["id"], json!(activity.member_id));
    }
}

/// An award is reversed like any EARN: its tokens taken back in full, and the limit's time given
/// back (the member's next opening that day earns again).
async fn an_award_is_reversed_and_gives_its_limit_back(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    award_waiting(&store, &book).await;
    let (first, _) = record(&store, &book, &s.campaign, opened("open-1", "ios"))
        .await
        .unwrap();
    let award = &first.awards[0].transaction_id;
    let reversal = crate::corrections::correction(award, "undo-open-1", None);
    let corrected = store.ledger().correct(&s.campaign, reversal).await.unwrap();
    assert_eq!(
        corrected.transaction.corrects.as_deref(),
        Some(award.as_str())
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(50));
    let (again, _) = record(&store, &book, &s.campaign, opened("open-2", "ios"))
        .await
        .unwrap();
    assert_eq!(tokens(&again), Tokens::whole(5));
    assert_eq!(balance(&store, &s).await, Tokens::whole(55));
}

/// Birthdays are the programme's days: in its time zone (Kiritimati, UTC+14, all year), once a
/// member and year however often the sweep looks, those born on 29 February on the 28th of a
/// year without one; the earn worker awards them.
async fn birthdays_are_recorded_once_a_year_in_the_programmes_zone(store: Store) {
    let s = setup(&store).await;
    let rules = "[programme]\ntime_zone = 'Pacific/Kiritimati'\n\
         [[rule]]\nid = 'birthday'\npriority = 1\non = 'activity'\n\
         when = \"activity.type == 'member.birthday'\"\naward = 100\n";
    store
        .programme()
        .set_rule_set(&s.campaign, rules)
        .await
        .unwrap();
    let book = RuleBook::new(store.programme().clone());
    let ada = of_member(&store, &s.campaign, opened("", ""))
        .await
        .member_id;
    let born = |day: &str| store::MemberPatch {
        birth_date: Some(Some(day.parse().unwrap())),
        ..Default::default()
    };
    let org = s.campaign.org();
    store
        .members()
        .update_member(&org, &ada, born("1990-06-02"))
        .await
        .unwrap();
    let at = |text: &str| text.parse::<chrono::DateTime<Utc>>().unwrap();
    let ledger = store.ledger();
    // 1 June, 09:00 UTC is 23:00 in Kiritimati: not yet.
    assert_eq!(
        ledger
            .record_birthdays(&book, at("2026-06-01T09:00:00Z"))
            .await
            .unwrap(),
        0
    );
    // 11:00 UTC is 2 June there: the birthday, looked for once that day.
    assert_eq!(
        ledger
            .record_birthdays(&book, at("2026-06-01T11:00:00Z"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        ledger
            .record_birthdays(&book, at("2026-06-01T12:00:00Z"))
            .await
            .unwrap(),
        0
    );
    award_waiting(&store, &book).await;
    assert_eq!(balance(&store, &s).await, Tokens::whole(100));
    let birthdays = activities_of(&store, &s.campaign, Some("member.birthday")).await;
    assert_eq!(birthdays.len(), 1);
    assert_eq!(birthdays[0].attributes, Some(json!({ "year": 2026 })));
    // Born on 29 February: on the 28th in 2027, and not again on 1 March.
    store
        .members()
        .update_member(&org, &ada, born("2000-02-29"))
        .await
        .unwrap();
    assert_eq!(
        ledger
            .record_birthdays(&book, at("2027-02-27T12:00:00Z"))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        ledger
            .record_birthdays(&book, at("2027-02-28T12:00:00Z"))
            .await
            .unwrap(),
        0
    );
    award_waiting(&store, &book).await;
    assert_eq!(balance(&store, &s).await, Tokens::whole(200));
}

/// A file's activity row taken up again by its own batch (after a crash) is recorded before, not
/// a duplicate; by another file, a duplicate; recorded and awarded once either way.
async fn a_files_activity_is_recorded_once_whoever_takes_it_up_again(store: Store) {
    let s = setup(&store).await;
    let book = activate(&store, &s.campaign).await;
    let row = store::FileActivity {
        row: 2,
        id: "f-open".into(),
        wallet: "w-1".into(),
        kind: "app.opened".into(),
        date: yesterday_noon(),
        attributes: Some(json!({ "device": "ios" })),
    };
    let org = s.campaign.org();
    let batches = store.batches();
    let rows = std::slice::from_ref(&row);
    let first = batches
        .record_file_activities(&book, &org, Some("b-1"), rows, false)
        .await
        .unwrap();
    assert!(
        matches!(&first[..], [store::ActivityOutcome::Recorded { tokens, .. }] if *tokens == Tokens::whole(5))
    );
    let again = batches
        .record_file_activities(&book, &org, Some("b-1"), rows, false)
        .await
        .unwrap();
    assert_eq!(again, [store::ActivityOutcome::RecordedBefore]);
    let other = batches
        .record_file_activities(&book, &org, Some("b-2"), rows, false)
        .await
        .unwrap();
    assert_eq!(other, [store::ActivityOutcome::Duplicate]);
    let checked = batches
        .record_file_activities(&book, &org, None, rows, true)
        .await
        .unwrap();
    assert_eq!(checked, [store::ActivityOutcome::Duplicate]);
    assert_eq!(balance(&store, &s).await, Tokens::whole(5));
}

backend_tests!(
    a_files_activity_is_recorded_once_whoever_takes_it_up_again,
    birthdays_are_recorded_once_a_year_in_the_programmes_zone,
    activities_earn_under_their_rules_once_each,
    an_award_is_reversed_and_gives_its_limit_back,
    malformed_activities_are_refused_naming_the_field,
    concurrent_activities_keep_their_limit_and_their_key,
    the_platform_records_its_own_activities_once,
    erasure_takes_an_activitys_attributes,
);
