//! Bookings over HTTP: created for an order line, found and read, moved along the state
//! machine (every pair of statuses), and refused for a bad date, weekday or branch. (The store's
//! tests cover the same rules on both backends in more detail.)

use chrono::{DateTime, Duration};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};

use crate::app_tests;
use crate::helpers::{Reply, TestApp, lines, next_friday, tokens};
use store::Tokens;

const STATUSES: [&str; 5] = [
    "REQUESTED",
    "PENDING",
    "CONFIRMED",
    "UNSUCCESSFUL",
    "CANCELLED",
];

fn legal(from: &str, to: &str) -> bool {
    from == to
        || matches!(
            (from, to),
            (
                "REQUESTED",
                "PENDING" | "CONFIRMED" | "UNSUCCESSFUL" | "CANCELLED"
            ) | ("PENDING", "CONFIRMED" | "UNSUCCESSFUL" | "CANCELLED")
                | ("CONFIRMED", "CANCELLED")
        )
}

fn ada(date: &str) -> Value {
    json!({"firstName": "Ada", "lastName": "Lovelace", "date": date, "branch": "cpt", "pax": 2,
        "email": "ada@example.com"})
}

impl TestApp {
    /// A new order of one dinner for `card-1`; its line's id.
    async fn dinner_line(&self) -> String {
        let order = self
            .place(json!([{"productId": "dinner", "variantId": "dinner-std"}]))
            .await;
        lines(&order)[0].id.clone()
    }

    async fn book(&self, line: &str, body: Value) -> Reply {
        self.post(&format!("/v1/redemptions/{line}/bookings"), body)
            .await
    }
}

async fn a_line_is_booked_found_and_read(app: TestApp) {
    app.ready_to_order().await;
    let line = app.dinner_line().await;
    let friday = next_friday();
    let booked = app.book(&line, ada(&friday)).await;
    assert_eq!(booked.status, StatusCode::OK, "{}", booked.body);
    assert_eq!(booked.body["status"], "REQUESTED");
    assert_eq!(booked.body["redemptionId"], line);
    assert_eq!(booked.body["pax"], 2);
    assert_eq!(booked.body["branch"], "cpt");
    let when = DateTime::parse_from_rfc3339(booked.body["date"].as_str().unwrap()).unwrap();
    assert_eq!(when, DateTime::parse_from_rfc3339(&friday).unwrap());
    let id = booked.body["id"].as_str().unwrap();

    let again = app.book(&line, ada(&friday)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.problem().code, "booking_exists");
    let mug = app.place(json!([{"productId": "mug"}])).await;
    let mug_line = &lines(&mug)[0].id;
    let needless = app.book(mug_line, ada(&friday)).await;
    assert_eq!(needless.status, StatusCode::CONFLICT);
    assert_eq!(needless.problem().code, "booking_not_required");
    assert_eq!(
        app.book("no-such-line", ada(&friday)).await.status,
        StatusCode::NOT_FOUND
    );

    let read = app.get(&format!("/v1/bookings/{id}")).await;
    assert_eq!(read.status, StatusCode::OK);
    assert_eq!(read.body, booked.body);
    assert_eq!(
        app.get("/v1/bookings/no-such-booking").await.status,
        StatusCode::NOT_FOUND
    );
    let by_owner = app.get("/v1/bookings?ownerId=card-1").await;
    assert_eq!(by_owner.body["total"], 1);
    assert_eq!(by_owner.data()[0]["id"], id);
    assert_eq!(
        app.get(&format!("/v1/bookings?id={id}")).await.body["total"],
        1
    );
    assert_eq!(
        app.get("/v1/bookings?ownerId=nobody").await.body["total"],
        0
    );
    // The order shows its line's booking.
    let orders = app.get("/v1/orders?includeLines=true").await;
    let dinner = orders
        .data()
        .iter()
        .find(|o| o["lines"][0]["id"] == line.as_str())
        .unwrap();
    assert_eq!(dinner["lines"][0]["booking"]["id"], id);
}

async fn every_move_of_the_state_machine(app: TestApp) {
    app.ready_to_order().await;
    let friday = next_friday();
    for from in STATUSES {
        for to in STATUSES {
            let line = app.dinner_line().await;
            let booked = app.book(&line, ada(&friday)).await;
            let id = booked.body["id"].as_str().unwrap().to_string();
            if from != "REQUESTED" {
                let step = app.patch_booking(&id, json!({"status": from})).await;
                assert_eq!(step.status, StatusCode::OK, "{}", step.body);
            }
            let before = app.get(&format!("/v1/bookings/{id}")).await.body;
            let moved = app.patch_booking(&id, json!({"status": to})).await;
            if legal(from, to) {
                assert_eq!(
                    moved.status,
                    StatusCode::OK,
                    "{from} -> {to}: {}",
                    moved.body
                );
                assert_eq!(moved.body["status"], to);
                if from == to {
                    assert_eq!(moved.body, before, "{from} again changes nothing");
                }
            } else {
                assert_eq!(moved.status, StatusCode::CONFLICT, "{from} -> {to}");
                assert_eq!(moved.problem().code, "illegal_transition");
                let detail = moved.body["detail"].as_str().unwrap();
                assert!(detail.contains(from) && detail.contains(to), "{detail}");
                let after = app.get(&format!("/v1/bookings/{id}")).await.body;
                assert_eq!(after, before, "a refused move changes nothing");
            }
        }
    }
    // A line whose booking was cancelled may be booked again.
    let line = app.dinner_line().await;
    let first = app.book(&line, ada(&friday)).await.body["id"].clone();
    let cancel = json!({"status": "CANCELLED"});
    app.patch_booking(first.as_str().unwrap(), cancel).await;
    assert_eq!(app.book(&line, ada(&friday)).await.status, StatusCode::OK);
}

async fn dates_weekdays_and_branches_are_checked(app: TestApp) {
    app.ready_to_order().await;
    let line = app.dinner_line().await;
    let friday = DateTime::parse_from_rfc3339(&next_friday()).unwrap();
    let thursday = (friday - Duration::days(1)).to_rfc3339();
    let past = (friday - Duration::days(21)).to_rfc3339();
    let with = |field: &str, value: Value| {
        let mut body = ada(&friday.to_rfc3339());
        body[field] = value;
        body
    };
    for (body, field) in [
        (with("date", json!(thursday)), "date"),
        (with("date", json!(past)), "date"),
        (with("date", json!("next friday")), "date"),
        (with("branch", json!("nowhere")), "branch"),
        (with("branch", Value::Null), "branch"),
        (with("pax", json!(0)), "pax"),
        (with("firstName", Value::Null), "firstName"),
        (with("email", json!("not an address")), "email"),
    ] {
        let reply = app.book(&line, body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), [field], "{body}: {}", reply.body);
    }
    // Late on Friday in UTC+2 is Saturday in UTC; the date's own offset decides the weekday.
    let late = (friday + Duration::minutes(270)).to_rfc3339();
    let booked = app.book(&line, ada(&late)).await;
    assert_eq!(booked.status, StatusCode::OK, "{}", booked.body);
    let id = booked.body["id"].as_str().unwrap();

    let moved = app.patch_booking(id, json!({"date": thursday})).await;
    assert_eq!(moved.status, StatusCode::BAD_REQUEST);
    assert_eq!(moved.fields(), ["date"]);
    let bad = app
        .patch_booking(id, json!({"status": "LOST", "pax": 0}))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST, "{}", bad.body);
    let saturday = (friday + Duration::days(1)).to_rfc3339();
    let changed = app
        .patch_booking(id, json!({"date": saturday, "pax": 4, "notes": "Window"}))
        .await;
    assert_eq!(changed.status, StatusCode::OK, "{}", changed.body);
    assert_eq!(
        (changed.body["pax"].clone(), changed.body["notes"].clone()),
        (json!(4), json!("Window"))
    );
    let cleared = app.patch_booking(id, json!({"notes": null})).await;
    assert_eq!(cleared.body["notes"], Value::Null);
    app.patch_booking(id, json!({"status": "CANCELLED"})).await;
    let closed = app.patch_booking(id, json!({"pax": 5})).await;
    assert_eq!(closed.status, StatusCode::CONFLICT);
    assert_eq!(closed.problem().code, "booking_closed");
    let older = app
        .send(
            Method::GET,
            &format!("/v1/bookings/{id}"),
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(older.status, StatusCode::OK);
    assert_eq!(older.body["status"], "CANCELLED");
}

/// A line that needs a booking, paid with points, is paid through a hold: captured when its
/// booking is confirmed; a booking the partner could not honour cancels the line and releases
/// the points.
async fn a_booking_is_paid_for_once_it_is_confirmed(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(100)).await;
    let dinner = json!([{"productId": "dinner", "variantId": "dinner-std"}]);
    let order = |n: u32| {
        let body = json!({"owner": "card-1", "walletId": "w-1", "reference": format!("o-{n}"),
            "lines": dinner.clone()});
        let app = &app;
        async move {
            app.order(body)
                .await
                .expect::<api::views::OrderView>(StatusCode::OK)
        }
    };
    let (first, second) = (order(1).await, order(2).await);
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (Tokens::whole(100), Tokens::whole(51))
    );
    assert_eq!(first.transaction_id, None, "nothing burned yet");
    assert_eq!(first.wallet_id.as_deref(), Some(wallet.id.as_str()));

    let friday = next_friday();
    let line = &lines(&first)[0];
    let booked = app.book(&line.id, ada(&friday)).await;
    let id = booked.body["id"].as_str().unwrap().to_string();
    let confirmed = app.patch_booking(&id, json!({"status": "CONFIRMED"})).await;
    assert_eq!(confirmed.status, StatusCode::OK, "{}", confirmed.body);
    let hold_path = format!("/v1/holds/{}", line.hold_id.as_deref().unwrap());
    let hold = app.get(&hold_path).await.body;
    assert_eq!(hold["status"], "captured");
    let burn = app
        .get(&format!(
            "/v1/transactions/{}",
            hold["transactionId"].as_str().unwrap()
        ))
        .await;
    assert_eq!(burn.body["type"], "BURN");
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (tokens("74.5"), tokens("25.5"))
    );

    let line = &lines(&second)[0];
    let booked = app.book(&line.id, ada(&friday)).await;
    let id = booked.body["id"].as_str().unwrap().to_string();
    let refused = app
        .patch_booking(&id, json!({"status": "UNSUCCESSFUL"}))
        .await;
    assert_eq!(refused.status, StatusCode::OK, "{}", refused.body);
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (tokens("74.5"), Tokens::ZERO)
    );
    let order = app.get(&format!("/v1/orders/{}", second.id)).await.body;
    assert!(order["lines"][0]["cancelledAt"].is_string(), "{order}");
    let again = app.book(&line.id, ada(&friday)).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert_eq!(again.problem().code, "line_cancelled");
}

app_tests!(
    a_line_is_booked_found_and_read,
    every_move_of_the_state_machine,
    dates_weekdays_and_branches_are_checked,
    a_booking_is_paid_for_once_it_is_confirmed,
);
