//! Reviews over HTTP: creating (every field checked and named), profanity scores, one review per
//! member and voucher, reports by number or string, what lists show and average, and tenancy.

use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::{Reply, TestApp};

/// Members `ada`, `alan`, `grace`, `edsger` and a member whose external id is `12345`; a
/// catalogue with product `spa` (variant `spa-day`) and product `mug`.
async fn setup(app: &TestApp) {
    for reference in ["ada", "alan", "grace", "edsger", "12345"] {
        app.create_member(reference).await;
    }
    app.import_catalogue(json!({"products": [
        {"id": "spa", "name": "Spa", "variants": [{"id": "spa-day", "name": "Day", "price": 10}]},
        {"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3}]}
    ]}))
    .await;
}

fn review(member: &str, voucher: &str, rating: u8, text: &str) -> Value {
    json!({"memberId": member, "voucherId": voucher, "partnerId": "partner-7",
        "rating": rating, "reviewText": text})
}

async fn create(app: &TestApp, body: Value) -> Value {
    let reply = app.post("/v1/reviews", body).await;
    assert_eq!(reply.status, StatusCode::CREATED, "{}", reply.body);
    reply.body
}

async fn report(app: &TestApp, review: &Value, reporter: Value) -> Reply {
    let path = format!("/v1/reviews/{}/report", review["id"].as_str().unwrap());
    app.post(&path, json!({"reporterId": reporter})).await
}

/// The texts a list shows, and its average rating.
async fn listed(app: &TestApp, query: &str) -> (Vec<String>, Value) {
    let reply = app.get(&format!("/v1/reviews?{query}")).await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
    let texts = reply
        .data()
        .iter()
        .map(|r| r["reviewText"].as_str().unwrap().to_string())
        .collect();
    (texts, reply.body["averageRating"].clone())
}

async fn a_review_is_created_once_with_every_field_checked(app: TestApp) {
    setup(&app).await;
    let made = create(&app, review("ada", "spa", 5, "Lovely, would go again")).await;
    for (field, value) in [
        ("rating", json!(5)),
        ("reviewText", json!("Lovely, would go again")),
        ("profanityScore", json!(0.0)),
        ("voucherId", json!("spa")),
        ("partnerId", json!("partner-7")),
        ("reportedById", Value::Null),
        ("reports", json!(0)),
        ("status", json!("visible")),
    ] {
        assert_eq!(made[field], value, "{field}: {made}");
    }
    let member = app.get("/v1/members?limit=100").await;
    let ada = member
        .data()
        .iter()
        .find(|m| m["externalId"] == "ada")
        .unwrap();
    assert_eq!(
        made["memberId"], ada["id"],
        "the member's id, whichever was given"
    );
    assert!(made["createdAt"].as_str().is_some());
    let read = app
        .get(&format!("/v1/reviews/{}", made["id"].as_str().unwrap()))
        .await;
    assert_eq!(read.body, made);

    let again = app
        .post("/v1/reviews", review("ada", "spa", 1, "again"))
        .await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.problem().code, "already_reviewed");
    // A variant is a voucher of its own.
    create(&app, review("ada", "spa-day", 4, "The day pass")).await;

    let empty = app.post("/v1/reviews", json!({})).await;
    assert_eq!(empty.status, StatusCode::BAD_REQUEST);
    assert_eq!(
        empty.fields(),
        vec!["memberId", "voucherId", "partnerId", "rating", "reviewText"]
    );
    for (body, field) in [
        (review("alan", "spa", 0, "x"), "rating"),
        (review("alan", "spa", 6, "x"), "rating"),
        (
            json!({"memberId": "alan", "voucherId": "spa", "partnerId": "p", "rating": 2.5,
            "reviewText": "x"}),
            "rating",
        ),
        (
            json!({"memberId": "alan", "voucherId": "spa", "partnerId": "p", "rating": "5",
            "reviewText": "x"}),
            "rating",
        ),
        (review("alan", "spa", 3, "   "), "reviewText"),
        (review("alan", "spa", 3, &"a".repeat(4001)), "reviewText"),
        (
            json!({"memberId": "alan", "voucherId": "spa", "partnerId": "", "rating": 3,
            "reviewText": "x"}),
            "partnerId",
        ),
    ] {
        let reply = app.post("/v1/reviews", body).await;
        assert_eq!(reply.status, StatusCode::BAD_REQUEST, "{}", reply.body);
        assert_eq!(reply.fields(), vec![field], "{}", reply.body);
    }
    create(&app, review("alan", "spa", 3, &"a".repeat(4000))).await;

    let unknown_member = app
        .post("/v1/reviews", review("nobody", "spa", 3, "x"))
        .await;
    assert_eq!(unknown_member.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown_member.body["field"], "memberId");
    let unknown_voucher = app
        .post("/v1/reviews", review("grace", "balloon", 3, "x"))
        .await;
    assert_eq!(unknown_voucher.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown_voucher.body["field"], "voucherId");
}

async fn offensive_reviews_are_held_back_and_place_names_are_not(app: TestApp) {
    setup(&app).await;
    let rude = create(&app, review("ada", "spa", 1, "f u c k this sh1t place")).await;
    assert!(rude["profanityScore"].as_f64().unwrap() >= 0.5, "{rude}");
    assert_eq!(rude["status"], "pending");
    let place = create(&app, review("alan", "spa", 4, "Better than Scunthorpe")).await;
    assert_eq!(place["profanityScore"], 0.0);
    assert_eq!(place["status"], "visible");
    let (texts, average) = listed(&app, "voucherId=spa").await;
    assert_eq!(texts, vec!["Better than Scunthorpe"]);
    assert_eq!(average, json!(4.0));
    // Still readable on its own, with its status.
    let read = app
        .get(&format!("/v1/reviews/{}", rude["id"].as_str().unwrap()))
        .await;
    assert_eq!(read.body["status"], "pending");
}

async fn reports_count_each_member_once_and_enough_hide_a_review(app: TestApp) {
    setup(&app).await;
    let made = create(&app, review("ada", "spa", 4, "Nice")).await;

    let own = report(&app, &made, json!("ada")).await;
    assert_eq!(own.status, StatusCode::CONFLICT);
    assert_eq!(own.problem().code, "own_review");
    // A whole number names the member with that external id.
    let by_number = report(&app, &made, json!(12345)).await;
    assert_eq!(by_number.status, StatusCode::OK, "{}", by_number.body);
    assert_eq!(by_number.body["reports"], 1);
    let again = report(&app, &made, json!("12345")).await;
    assert_eq!(
        again.body, by_number.body,
        "the same member again changes nothing"
    );
    let by_alan = report(&app, &made, json!("alan")).await;
    assert_eq!(by_alan.body["reports"], 2);
    assert_ne!(by_alan.body["reportedById"], by_number.body["reportedById"]);
    assert_eq!(listed(&app, "voucherId=spa").await.0, vec!["Nice"]);

    let third = report(&app, &made, json!("grace")).await;
    assert_eq!(third.body["reports"], 3);
    assert_eq!(third.body["status"], "pending");
    assert_eq!(listed(&app, "voucherId=spa").await, (vec![], Value::Null));

    for (reporter, status, field) in [
        (json!("nobody"), StatusCode::NOT_FOUND, "reporterId"),
        (json!(true), StatusCode::BAD_REQUEST, "reporterId"),
        (json!(1.5), StatusCode::BAD_REQUEST, "reporterId"),
        (
            serde_json::from_str::<Value>("-18446744073709551617").unwrap(),
            StatusCode::BAD_REQUEST,
            "reporterId",
        ),
        (Value::Null, StatusCode::BAD_REQUEST, "reporterId"),
    ] {
        let reply = report(&app, &made, reporter.clone()).await;
        assert_eq!(reply.status, status, "{reporter}: {}", reply.body);
        assert_eq!(reply.body["field"], field);
    }
    let missing = app
        .post(
            "/v1/reviews/no-such-review/report",
            json!({"reporterId": "alan"}),
        )
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
}

async fn lists_filter_page_and_average(app: TestApp) {
    setup(&app).await;
    create(&app, review("ada", "spa", 5, "first")).await;
    create(&app, review("alan", "spa", 2, "second")).await;
    let mut other = review("grace", "mug", 3, "third");
    other["partnerId"] = json!("partner-9");
    create(&app, other).await;

    assert_eq!(
        listed(&app, "voucherId=spa").await,
        (vec!["second".into(), "first".into()], json!(3.5))
    );
    assert_eq!(listed(&app, "partnerId=partner-9").await.0, vec!["third"]);
    assert_eq!(listed(&app, "memberId=alan").await.0, vec!["second"]);
    assert_eq!(listed(&app, "memberId=nobody").await, (vec![], Value::Null));
    let page = app.get("/v1/reviews?page=2&limit=2").await;
    assert_eq!(page.status, StatusCode::OK);
    assert_eq!(page.body["total"], 3);
    assert_eq!(page.body["totalPages"], 2);
    assert_eq!(page.data().len(), 1);
    assert_eq!(page.data()[0]["reviewText"], "first");
    let average = page.body["averageRating"].as_f64().unwrap();
    assert!(
        (average - 10.0 / 3.0).abs() < 1e-9,
        "over all, not the page"
    );
}

async fn another_organisation_sees_none_of_it(app: TestApp) {
    setup(&app).await;
    let made = create(&app, review("ada", "spa", 4, "Nice")).await;
    let other = app.other_tenant().await;
    let id = made["id"].as_str().unwrap();
    let read = app
        .send(
            Method::GET,
            &format!("/v1/reviews/{id}"),
            Some(&other),
            None,
            None,
        )
        .await;
    assert_eq!(read.status, StatusCode::NOT_FOUND);
    let reported = app
        .send(
            Method::POST,
            &format!("/v1/reviews/{id}/report"),
            Some(&other),
            None,
            Some(json!({"reporterId": "alan"})),
        )
        .await;
    assert_eq!(reported.status, StatusCode::NOT_FOUND);
    let list = app
        .send(Method::GET, "/v1/reviews", Some(&other), None, None)
        .await;
    assert_eq!(list.body["total"], 0);
    let theirs = app
        .send(
            Method::POST,
            "/v1/reviews",
            Some(&other),
            None,
            Some(review("alan", "spa", 3, "x")),
        )
        .await;
    assert_eq!(
        theirs.status,
        StatusCode::NOT_FOUND,
        "our members are not theirs"
    );
}

app_tests!(
    a_review_is_created_once_with_every_field_checked,
    offensive_reviews_are_held_back_and_place_names_are_not,
    reports_count_each_member_once_and_enough_hide_a_review,
    lists_filter_page_and_average,
    another_organisation_sees_none_of_it,
);
