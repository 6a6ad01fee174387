//! Referrals over HTTP: a member's code (the same on every request), a member created with it
//! or signing up with it later, every refusal with its code and field, the conversion on the
//! referee's first earn rewarding both members, the list with its role filter, the
//! `referral.converted` event, and the member's own data.

use std::time::Duration;

use api::views::{ActivityView, EventView, ReferralCodeView, ReferralView};
use reqwest::{Method, StatusCode};
use serde_json::json;

use crate::app_tests;
use crate::helpers::{TestApp, tokens};

/// A token per unit of a purchase; 50 to a referee and 100 to its referrer on conversion.
const RULES: &str = "[[rule]]\nid = 'purchase'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'referee'\npriority = 2\non = 'activity'\n\
     when = \"activity.type == 'referral.converted' && activity.attributes.role == 'referee'\"\n\
     award = 50\n\
     [[rule]]\nid = 'referrer'\npriority = 3\non = 'activity'\n\
     when = \"activity.type == 'referral.converted' && activity.attributes.role == 'referrer'\"\n\
     award = 100\n";

/// The campaign runs `RULES`; member `card-1` has wallet `w-1`.
async fn setup(app: &TestApp) {
    let campaign = app.campaign().await;
    app.store
        .programme()
        .set_rule_set(&campaign, RULES)
        .await
        .unwrap();
    app.member_with_wallet().await;
}

async fn code_of(app: &TestApp, member: &str) -> ReferralCodeView {
    let path = format!("/v1/members/{member}/referral-code");
    app.post(&path, json!({})).await.expect(StatusCode::OK)
}

async fn referrals(app: &TestApp, member: &str, query: &str) -> Vec<ReferralView> {
    let reply = app
        .get(&format!("/v1/members/{member}/referrals?{query}"))
        .await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let data = reply.data();
    data.iter()
        .map(|r| serde_json::from_value(r.clone()).unwrap())
        .collect()
}

/// Member `member`'s `referral.converted` activities, once the worker awarded them.
async fn awarded_conversions(app: &TestApp, member: &str) -> Vec<ActivityView> {
    let path = format!("/v1/members/{member}/activities?type=referral.converted");
    for _ in 0..200 {
        let listed: Vec<ActivityView> = app
            .get(&path)
            .await
            .data()
            .iter()
            .map(|a| serde_json::from_value(a.clone()).unwrap())
            .collect();
        if !listed.is_empty() && listed.iter().all(|a| a.awarded_at.is_some()) {
            return listed;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{member}'s conversion was not awarded");
}

async fn a_referee_converts_on_its_first_earn_and_both_are_rewarded(app: TestApp) {
    setup(&app).await;
    let code = code_of(&app, "card-1").await;
    assert_eq!(code_of(&app, "card-1").await, code, "the same code again");
    assert_eq!(code.converted, 0);
    let typed = code.code.to_lowercase().replace('-', " ");
    let bo = app
        .create_member_from(
            json!({"firstName": "Bo", "userId": "u-bo", "externalId": "bo",
            "referralCode": typed}),
        )
        .await;
    let listed = referrals(&app, "card-1", "role=referrer").await;
    assert_eq!(listed.len(), 1);
    assert_eq!(
        (listed[0].referee_id.as_str(), listed[0].code.as_str()),
        (bo.id.as_str(), code.code.as_str())
    );
    assert_eq!(listed[0].status, api::views::ReferralStatus::Pending);
    assert!(referrals(&app, "card-1", "role=referee").await.is_empty());
    assert_eq!(referrals(&app, "bo", "role=referee").await, listed);

    app.create_wallet("bo", "w-bo").await;
    app.earn("bo-1", "w-bo", json!(10)).await;
    let of_bo = awarded_conversions(&app, "bo").await;
    assert_eq!(of_bo.len(), 1);
    assert_eq!(of_bo[0].awards[0].tokens, tokens("50"));
    let of_referrer = awarded_conversions(&app, "card-1").await;
    assert_eq!(of_referrer[0].attributes.as_ref().unwrap()["converted"], 1);
    assert_eq!(of_referrer[0].awards[0].tokens, tokens("100"));
    assert_eq!(app.balance("w-bo").await, tokens("60"));
    assert_eq!(app.balance("w-1").await, tokens("100"));
    let converted = referrals(&app, "bo", "").await;
    assert_eq!(converted[0].status, api::views::ReferralStatus::Converted);
    assert_eq!(
        converted[0].campaign_id.as_deref(),
        Some(app.campaign.as_str())
    );
    assert_eq!(code_of(&app, "card-1").await.converted, 1);

    // A second earn converts nothing more.
    app.earn("bo-2", "w-bo", json!(10)).await;
    assert_eq!(awarded_conversions(&app, "bo").await.len(), 1);

    let mut events = Vec::new();
    for _ in 0..200 {
        let feed = app.get("/v1/events?type=referral.converted").await;
        assert_eq!(feed.status, StatusCode::OK, "{}", feed.body);
        events = feed.data().to_vec();
        if !events.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(events.len(), 1);
    let event: EventView = serde_json::from_value(events[0].clone()).unwrap();
    assert_eq!(event.data["refereeId"], json!(bo.id));
    assert_eq!(event.data["status"], "converted");

    let key = app.member_data_key().await;
    let data = app
        .send(Method::GET, "/v1/members/bo/data", Some(&key), None, None)
        .await;
    assert_eq!(data.status, StatusCode::OK, "{}", data.body);
    assert_eq!(data.body["referrals"][0]["id"], json!(converted[0].id));
    assert_eq!(data.body["referralCode"], serde_json::Value::Null);
}

async fn bad_referrals_are_refused_with_their_reason(app: TestApp) {
    setup(&app).await;
    let code = code_of(&app, "card-1").await.code;
    for (body, status) in [
        (json!({}), StatusCode::BAD_REQUEST),
        (json!({"referralCode": "???"}), StatusCode::BAD_REQUEST),
        (
            json!({"referralCode": "ZZZZ-ZZZZ"}),
            StatusCode::BAD_REQUEST,
        ),
    ] {
        let reply = app.post("/v1/members/card-1/referral", body.clone()).await;
        assert_eq!(reply.status, status, "{body}: {}", reply.body);
        assert_eq!(reply.fields(), ["referralCode"], "{body}");
    }
    let unknown = app
        .post(
            "/v1/members",
            json!({"firstName": "Zed", "userId": "u-zed", "externalId": "zed",
                "referralCode": "ZZZZ-ZZZZ"}),
        )
        .await;
    assert_eq!(unknown.status, StatusCode::BAD_REQUEST, "{}", unknown.body);
    assert_eq!(unknown.fields(), ["referralCode"]);
    assert_eq!(
        app.get("/v1/members/zed").await.status,
        StatusCode::NOT_FOUND
    );

    let refused = |reply: crate::helpers::Reply| {
        assert_eq!(reply.status, StatusCode::CONFLICT, "{}", reply.body);
        let problem = reply.problem();
        assert_eq!(problem.field.as_deref(), Some("referralCode"));
        problem.code
    };
    let own = app
        .post("/v1/members/card-1/referral", json!({"referralCode": code}))
        .await;
    assert_eq!(refused(own), "self_referral");
    // A member created without a code signs up with one later: a referral like any.
    app.create_member("bo").await;
    let signed: ReferralView = app
        .post("/v1/members/bo/referral", json!({"referralCode": code}))
        .await
        .expect(StatusCode::CREATED);
    assert_eq!(signed.status, api::views::ReferralStatus::Pending);
    let twice = app
        .post("/v1/members/bo/referral", json!({"referralCode": code}))
        .await;
    assert_eq!(refused(twice), "already_referred");
    let bo_code = code_of(&app, "bo").await.code;
    let member = app
        .post(
            "/v1/members/card-1/referral",
            json!({"referralCode": bo_code}),
        )
        .await;
    assert_eq!(refused(member), "already_a_member");
    // Eve brought Fay: Eve may not be Fay's referee.
    app.create_member("eve").await;
    let eve_code = code_of(&app, "eve").await.code;
    app.create_member_from(
        json!({"firstName": "Fay", "userId": "u-fay", "externalId": "fay",
        "referralCode": eve_code}),
    )
    .await;
    let fay_code = code_of(&app, "fay").await.code;
    let cycle = app
        .post(
            "/v1/members/eve/referral",
            json!({"referralCode": fay_code}),
        )
        .await;
    assert_eq!(refused(cycle), "referral_cycle");
    let nobody = app
        .post("/v1/members/nobody/referral", json!({"referralCode": code}))
        .await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND, "{}", nobody.body);
    let no_code = app
        .post("/v1/members/nobody/referral-code", json!({}))
        .await;
    assert_eq!(no_code.status, StatusCode::NOT_FOUND, "{}", no_code.body);
    let role = app.get("/v1/members/card-1/referrals?role=friend").await;
    assert_eq!(role.status, StatusCode::BAD_REQUEST, "{}", role.body);
}

app_tests!(
    a_referee_converts_on_its_first_earn_and_both_are_rewarded,
    bad_referrals_are_refused_with_their_reason,
);
