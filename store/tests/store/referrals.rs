//! Referrals on both backends: a code made once, members referred at creation or sign-up, the
//! refusals (unknown code, self, twice, a member with a wallet, a cycle), the conversion on the
//! referee's first completed earn by every door (API earn, a file's chunk written with `COPY`)
//! or on the activity its campaign names, once however many earns race, both members rewarded
//! by the rules with the referrer's tier and limit, and the referrer's erasure.

use std::collections::BTreeMap;

use serde_json::json;
use store::{
    Activity, ActivitySource, Campaign, EventFilter, EventType, NewActivity, NewMember, NewWallet,
    Page, Referral, ReferralRole, ReferralStatus, RuleBook, Store, StoreError, Tokens,
    backend_tests,
};

use crate::activities::{award_waiting, tokens};
use crate::ledger::{drain, earn, setup};

/// A token per unit of a purchase; the referee 50 on conversion, the referrer 100 for at most
/// two referees a month, and 500 more at its third.
const PROGRAMME: &str = "[[rule]]\nid = 'purchase'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'referee'\npriority = 2\non = 'activity'\n\
     when = \"activity.type == 'referral.converted' && activity.attributes.role == 'referee'\"\n\
     award = 50\n\
     [[rule]]\nid = 'referrer'\npriority = 3\non = 'activity'\n\
     when = \"activity.type == 'referral.converted' && activity.attributes.role == 'referrer'\"\n\
     award = 100\nlimits = [{ scope = 'member', period = 'month', times = 2 }]\n\
     [[rule]]\nid = 'third'\npriority = 4\non = 'activity'\n\
     when = \"activity.type == 'referral.converted' && activity.attributes.role == 'referrer' \
     && activity.attributes.converted == 3\"\naward = 500\n";

async fn activate(store: &Store, campaign: &Campaign, rules: &str) -> RuleBook {
    let programme = store.programme();
    programme.set_rule_set(campaign, rules).await.unwrap();
    RuleBook::new(programme.clone())
}

/// A member `reference` (its external and user id), referred by `code` if given.
async fn member(
    store: &Store,
    c: &Campaign,
    reference: &str,
    code: Option<&str>,
) -> Result<String, StoreError> {
    let new = NewMember {
        first_name: reference.into(),
        idp: "reference".into(),
        user_id: reference.into(),
        external_id: reference.into(),
        referral_code: code.map(str::to_string),
        ..Default::default()
    };
    Ok(store.members().create_member(&c.org(), new).await?.id)
}

/// A wallet `reference` of member `owner` (an external id).
async fn wallet(store: &Store, c: &Campaign, owner: &str, reference: &str) -> String {
    let new = NewWallet {
        owner: Some(owner.into()),
        external_id: Some(reference.into()),
        name: None,
    };
    store.ledger().create_wallet(c, new).await.unwrap().id
}

/// Earns 10 over the API into wallet `reference` (dated this day's start, so the same id again
/// is the same earn), processed.
async fn earn_into(store: &Store, book: &RuleBook, c: &Campaign, id: &str, reference: &str) {
    let mut input = earn(id, "10");
    input.wallet = reference.into();
    input.date = input
        .date
        .date_naive()
        .and_time(Default::default())
        .and_utc();
    store.ledger().submit_earn(c, input).await.unwrap();
    drain(store, book).await;
}

const ALL: Page = Page {
    page: 1,
    limit: 100,
};

async fn referrals(store: &Store, c: &Campaign, member: &str) -> Vec<Referral> {
    let role = Some(ReferralRole::Referrer);
    let members = store.members();
    members
        .list_referrals(&c.org(), member, role, ALL)
        .await
        .unwrap()
        .items
}

/// Member `member`'s `referral.converted` activities in the campaign.
async fn conversions(store: &Store, c: &Campaign, member: &str) -> Vec<Activity> {
    let kind = Some("referral.converted");
    let ledger = store.ledger();
    ledger
        .list_activities(c, member, kind, ALL)
        .await
        .unwrap()
        .items
}

async fn converted_events(store: &Store, c: &Campaign) -> Vec<store::Event> {
    while store.events().dispatch_events(500).await.unwrap().full {}
    let filter = EventFilter {
        types: vec![EventType::ReferralConverted],
        ..Default::default()
    };
    let events = store.events();
    events
        .feed(&c.org(), Some(&c.id), &filter, ALL)
        .await
        .unwrap()
        .items
}

/// The refusal's code and field, if `result` is one.
fn refused<T: std::fmt::Debug>(result: Result<T, StoreError>) -> (String, Option<String>) {
    match result {
        Err(StoreError::Refused { code, field, .. }) => (code.to_string(), field),
        Err(StoreError::Invalid { field, .. }) => ("invalid".into(), Some(field.to_string())),
        other => panic!("not refused: {other:?}"),
    }
}

async fn referees_convert_once_on_their_first_earn_and_reward_both(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    let book = activate(&store, c, PROGRAMME).await;
    let ada = s.wallet.owner_id.clone();
    let code = store.members().referral_code(&c.org(), &ada).await.unwrap();
    let again = store.members().referral_code(&c.org(), &ada).await.unwrap();
    assert_eq!(code, again, "made once");
    assert_eq!(code.code.len(), 9, "{}", code.code);
    // Typed as people type it: in lower case, without the dash.
    let typed = code.code.to_lowercase().replace('-', "");
    let mut referees = BTreeMap::new();
    for name in ["bo", "cy", "di"] {
        let id = member(&store, c, name, Some(&typed)).await.unwrap();
        wallet(&store, c, name, &format!("w-{name}")).await;
        referees.insert(name, id);
    }
    let listed = referrals(&store, c, &ada).await;
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|r| r.status == ReferralStatus::Pending));
    assert!(listed.iter().all(|r| r.code == code.code));

    earn_into(&store, &book, c, "bo-1", "w-bo").await;
    // A second earn, and the same one again, convert nothing more.
    earn_into(&store, &book, c, "bo-2", "w-bo").await;
    earn_into(&store, &book, c, "bo-1", "w-bo").await;
    award_waiting(&store, &book).await;
    let bo = &referees["bo"];
    let of_bo = conversions(&store, c, bo).await;
    assert_eq!(of_bo.len(), 1);
    assert_eq!(of_bo[0].source, ActivitySource::Platform);
    assert_eq!(
        of_bo[0].attributes.as_ref().unwrap()["role"],
        json!("referee")
    );
    assert_eq!(tokens(&of_bo[0]), Tokens::whole(50));
    let converted = referrals(&store, c, &ada).await;
    let bo_referral = converted.iter().find(|r| &r.referee_id == bo).unwrap();
    assert_eq!(bo_referral.status, ReferralStatus::Converted);
    assert_eq!(bo_referral.campaign_id.as_deref(), Some(c.id.as_str()));
    assert!(bo_referral.converted_at.is_some());

    earn_into(&store, &book, c, "cy-1", "w-cy").await;
    earn_into(&store, &book, c, "di-1", "w-di").await;
    award_waiting(&store, &book).await;
    // The referrer's count of converted referees, the limit of two a month, the third's bonus.
    let mut of_ada = conversions(&store, c, &ada).await;
    of_ada.reverse();
    let counts: Vec<_> = of_ada
        .iter()
        .map(|a| a.attributes.as_ref().unwrap()["converted"].clone())
        .collect();
    assert_eq!(counts, [json!(1), json!(2), json!(3)]);
    let earned: Vec<Tokens> = of_ada.iter().map(tokens).collect();
    let expected = [100, 100, 500].map(Tokens::whole);
    assert_eq!(earned, expected);
    let held = store.members().referral_code(&c.org(), &ada).await.unwrap();
    assert_eq!(held.converted, 3);
    let events = converted_events(&store, c).await;
    assert_eq!(events.len(), 3, "one event a conversion");
}

/// A file's chunk large enough to be written with `COPY` on PostgreSQL converts its referees
/// as an API earn does, and names no member twice.
async fn a_files_earns_convert_their_referees(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    let book = activate(&store, c, PROGRAMME).await;
    let ada = s.wallet.owner_id.clone();
    let code = store.members().referral_code(&c.org(), &ada).await.unwrap();
    let mut referees = Vec::new();
    for name in ["bo", "cy"] {
        referees.push(member(&store, c, name, Some(&code.code)).await.unwrap());
        wallet(&store, c, name, &format!("w-{name}")).await;
    }
    let rows: Vec<store::FileEarn> = (0..1_200)
        .map(|i| {
            let mut input = earn(&format!("f-{i}"), "1");
            input.wallet = ["w-1", "w-bo"][i % 2].into();
            store::FileEarn {
                row: 2 + i as u64,
                earn: input,
            }
        })
        .collect();
    let batches = store.batches();
    batches
        .credit_file_earns(&book, &c.org(), "batch-1", &rows)
        .await
        .unwrap();
    award_waiting(&store, &book).await;
    let listed = referrals(&store, c, &ada).await;
    let status = |id: &str| listed.iter().find(|r| r.referee_id == id).unwrap().status;
    assert_eq!(status(&referees[0]), ReferralStatus::Converted);
    assert_eq!(status(&referees[1]), ReferralStatus::Pending, "no earn yet");
    assert_eq!(conversions(&store, c, &referees[0]).await.len(), 1);
    assert_eq!(conversions(&store, c, &ada).await.len(), 1);
}

async fn referrals_refuse_unknown_codes_self_repeats_members_and_cycles(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    let (org, members) = (c.org(), store.members());
    let ada = s.wallet.owner_id.clone();
    let ada_code = members.referral_code(&org, &ada).await.unwrap().code;

    let unknown = member(&store, c, "zed", Some("ZZZZ-ZZZZ")).await;
    assert_eq!(
        refused(unknown),
        ("invalid".into(), Some("referralCode".into()))
    );
    let zed = members.member_id_of(org.id(), "zed").await;
    assert_eq!(zed.unwrap(), None, "not created");

    let own = members.refer(&org, &ada, &ada_code).await;
    assert_eq!(refused(own).0, "self_referral");

    let bo = member(&store, c, "bo", Some(&ada_code)).await.unwrap();
    let twice = members.refer(&org, &bo, &ada_code).await;
    assert_eq!(refused(twice).0, "already_referred");

    // A member with a wallet is no new member.
    let bo_code = members.referral_code(&org, &bo).await.unwrap().code;
    let member_already = members.refer(&org, &ada, &bo_code).await;
    assert_eq!(refused(member_already).0, "already_a_member");

    // Eve brings Fay, Fay brings Gus: neither may bring Eve.
    let eve = member(&store, c, "eve", None).await.unwrap();
    let eve_code = members.referral_code(&org, &eve).await.unwrap().code;
    let fay = member(&store, c, "fay", Some(&eve_code)).await.unwrap();
    let fay_code = members.referral_code(&org, &fay).await.unwrap().code;
    let gus = member(&store, c, "gus", Some(&fay_code)).await.unwrap();
    let gus_code = members.referral_code(&org, &gus).await.unwrap().code;
    for code in [&fay_code, &gus_code] {
        let cycle = members.refer(&org, &eve, code).await;
        assert_eq!(
            refused(cycle),
            ("referral_cycle".into(), Some("referralCode".into()))
        );
    }
    // Signing up later with a code is a referral like one at creation.
    let hal = member(&store, c, "hal", None).await.unwrap();
    let referral = members.refer(&org, &hal, &gus_code).await.unwrap();
    assert_eq!(
        (referral.referrer_id.as_str(), referral.status),
        (gus.as_str(), ReferralStatus::Pending)
    );
    let of_hal = members
        .list_referrals(&org, &hal, Some(ReferralRole::Referee), ALL)
        .await
        .unwrap();
    assert_eq!(of_hal.items, [referral]);

    // An erased member's code is no code any more.
    members.delete_member(&org, &gus).await.unwrap();
    let ivy = member(&store, c, "ivy", Some(&gus_code)).await;
    assert_eq!(refused(ivy).0, "invalid");
}

/// A campaign that names an activity converts on it, not on an earn; the referrer erased
/// before the conversion is rewarded no more, its referee still is.
async fn a_campaign_converts_on_the_activity_it_names(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    let rules = format!("[programme]\nreferral_converts_on = 'app.installed'\n{PROGRAMME}");
    let book = activate(&store, c, &rules).await;
    let ada = s.wallet.owner_id.clone();
    let code = store.members().referral_code(&c.org(), &ada).await.unwrap();
    let bo = member(&store, c, "bo", Some(&code.code)).await.unwrap();
    wallet(&store, c, "bo", "w-bo").await;
    earn_into(&store, &book, c, "bo-1", "w-bo").await;
    let pending = referrals(&store, c, &ada).await;
    assert_eq!(
        pending[0].status,
        ReferralStatus::Pending,
        "an earn does not"
    );

    store.members().delete_member(&c.org(), &ada).await.unwrap();
    let installed = NewActivity {
        campaign_id: c.id.clone(),
        member_id: bo.clone(),
        external_id: "install-1".into(),
        kind: "app.installed".into(),
        occurred_at: None,
        attributes: None,
        source: ActivitySource::Api,
        batch_id: None,
    };
    store
        .ledger()
        .record_activity(&book, c, installed)
        .await
        .unwrap();
    award_waiting(&store, &book).await;
    let list = store
        .members()
        .list_referrals(&c.org(), &bo, None, ALL)
        .await;
    let converted = list.unwrap().items;
    assert_eq!(converted[0].status, ReferralStatus::Converted);
    let of_bo = conversions(&store, c, &bo).await;
    assert_eq!(
        of_bo.iter().map(tokens).collect::<Vec<_>>(),
        [Tokens::whole(50)]
    );
    assert!(conversions(&store, c, &ada).await.is_empty());

    for bad in ["referral.converted", "Not A Type"] {
        let rules = format!("[programme]\nreferral_converts_on = '{bad}'\n");
        let err = store.programme().set_rule_set(c, &rules).await.unwrap_err();
        assert!(
            err.to_string().contains("programme.referral_converts_on"),
            "{err}"
        );
    }
}

/// Twenty earns of one referee at once, each processed by its own worker: one conversion.
async fn racing_first_earns_convert_once(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    let book = activate(&store, c, PROGRAMME).await;
    let ada = s.wallet.owner_id.clone();
    let code = store.members().referral_code(&c.org(), &ada).await.unwrap();
    let bo = member(&store, c, "bo", Some(&code.code)).await.unwrap();
    wallet(&store, c, "bo", "w-bo").await;
    let tasks: Vec<_> = (0..20)
        .map(|i| {
            let (store, book, c) = (store.clone(), book.clone(), c.clone());
            tokio::spawn(async move {
                let mut input = earn(&format!("race-{i}"), "1");
                input.wallet = "w-bo".into();
                store.ledger().submit_earn(&c, input).await.unwrap();
                store.ledger().process_earns(&book, 5).await.unwrap();
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    drain(&store, &book).await;
    award_waiting(&store, &book).await;
    assert_eq!(conversions(&store, c, &bo).await.len(), 1);
    assert_eq!(conversions(&store, c, &ada).await.len(), 1);
    let held = store.members().referral_code(&c.org(), &ada).await.unwrap();
    assert_eq!(held.converted, 1);
    assert_eq!(converted_events(&store, c).await.len(), 1);
}

backend_tests!(
    referees_convert_once_on_their_first_earn_and_reward_both,
    a_files_earns_convert_their_referees,
    referrals_refuse_unknown_codes_self_repeats_members_and_cycles,
    a_campaign_converts_on_the_activity_it_names,
    racing_first_earns_convert_once,
);
