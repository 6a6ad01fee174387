//! Orders and bookings for support through the admin API: a member's orders found and read
//! (codes masked), a line cancelled and then the order (points refunded each time), a booking
//! confirmed and moved; a viewer reads but may not cancel; refusals named; the trail records
//! each change.

use std::sync::Arc;

use chrono::{Datelike, Duration, FixedOffset, TimeZone};
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::{Catalogue, CodeKey, ImportOptions, NewBooking, NewLine, NewOrder, Role};

use crate::admin_tests;
use crate::helpers::{AdminApp, ok_operations};

/// The next Friday at 19:00 (UTC+2), at least a week away.
fn next_friday(app: &AdminApp) -> chrono::DateTime<FixedOffset> {
    let zone = FixedOffset::east_opt(2 * 3600).unwrap();
    let mut day = app.store.now().with_timezone(&zone).date_naive() + Duration::days(7);
    while day.weekday() != chrono::Weekday::Fri {
        day = day.succ_opt().unwrap();
    }
    zone.from_local_datetime(&day.and_hms_opt(19, 0, 0).unwrap())
        .unwrap()
}

fn line(product: &str, quantity: u32, booking: Option<NewBooking>) -> NewLine {
    NewLine {
        product_id: product.into(),
        variant_id: None,
        quantity,
        reference: None,
        booking,
        meta: None,
    }
}

async fn balance(app: &AdminApp, base: &str) -> f64 {
    let wallet = app.get(&format!("{base}/wallets/card-1"), &app.owner).await;
    wallet.expect(StatusCode::OK)["balance"].as_f64().unwrap()
}

async fn support_cancels_orders_and_changes_bookings(app: AdminApp) {
    let base = app.campaign_with_wallet().await;
    let campaign = app.store.tenancy().list_campaigns(&app.acme).await.unwrap()[0].clone();
    let doc = json!({"products": [
        {"id": "dinner", "name": "Dinner for two", "bookInAdvance": true,
         "weekdays": {"fri": true, "sat": true},
         "variants": [{"id": "dinner-std", "name": "Standard", "price": 25}]},
        {"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3, "stock": 3}]}
    ]});
    let catalogue = Catalogue::from_value(&doc).unwrap();
    let import = app.store.catalogue();
    let options = ImportOptions::default();
    import
        .import_catalogue(&campaign, &catalogue, options)
        .await
        .unwrap();
    let credit = json!({"walletId": "card-1", "amount": 100, "reason": "goodwill",
        "comment": "welcome"});
    let made = app
        .post(&format!("{base}/adjustments"), &app.owner, credit)
        .await;
    made.expect(StatusCode::CREATED);
    let dinner = NewBooking {
        first_name: "Ada".into(),
        last_name: "Lovelace".into(),
        email: None,
        phone: None,
        branch: None,
        date: next_friday(&app),
        pax: 2,
        notes: None,
        meta: None,
    };
    let order = NewOrder {
        owner: "cust-1".into(),
        wallet: Some("card-1".into()),
        lines: vec![line("mug", 2, None), line("dinner", 1, Some(dinner))],
        ..Default::default()
    };
    let key = Arc::new(CodeKey::new(&[7u8; 32]));
    let placed = app
        .store
        .orders()
        .place_order(&campaign, order, key)
        .await
        .unwrap();
    let order_id = placed.order.id.clone();
    // The mugs' 6 points burned; the dinner's 25 held until its booking is confirmed.
    assert_eq!(balance(&app, &base).await, 94.0);

    let support = app
        .operator("support@example.com", Role::Support, &[&app.acme])
        .await;
    let viewer = app
        .operator("viewer@example.com", Role::Viewer, &[&app.acme])
        .await;
    // Found by member, read with lines (codes masked).
    let orders = format!("{base}/orders");
    let listed = app
        .get(
            &format!("{orders}?ownerId=cust-1&includeLines=true"),
            &viewer,
        )
        .await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["data"][0]["lines"].as_array().unwrap().len(), 2);
    let none = app.get(&format!("{orders}?ownerId=nobody"), &viewer).await;
    assert_eq!(none.expect(StatusCode::OK)["total"], 0);
    let order = format!("{orders}/{order_id}");
    let shown = app.get(&order, &viewer).await;
    let shown = shown.expect(StatusCode::OK).clone();
    let lines = shown["lines"].as_array().unwrap();
    let mug = lines.iter().find(|l| l["productId"] == "mug").unwrap();
    let code = mug["codes"][0]["code"].as_str().unwrap();
    assert!(code.starts_with('•'), "a code in clear: {code}");
    let mug_line = mug["id"].as_str().unwrap().to_owned();

    // A viewer may not cancel; support cancels the mugs: their 6 points back.
    let cancel_line = format!("{order}/lines/{mug_line}/cancel");
    let reply = app.post(&cancel_line, &viewer, json!({})).await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let cancelled = app.post(&cancel_line, &support, json!({})).await;
    let cancelled = cancelled.expect(StatusCode::OK);
    let mug = cancelled["lines"]
        .as_array()
        .unwrap()
        .iter()
        .find(|l| l["id"] == mug_line.as_str());
    assert!(mug.unwrap()["cancelledAt"].is_string());
    assert_eq!(balance(&app, &base).await, 100.0);
    let reply = app
        .post(
            &format!("{order}/lines/no-such-line/cancel"),
            &support,
            json!({}),
        )
        .await;
    assert_eq!(reply.code(StatusCode::NOT_FOUND), "not_found");

    // The dinner's booking: found, its date moved and confirmed; a move it may not make named.
    let bookings = format!("{base}/bookings");
    let listed = app
        .get(&format!("{bookings}?ownerId=cust-1"), &viewer)
        .await;
    let listed = listed.expect(StatusCode::OK);
    assert_eq!(listed["total"], 1);
    let booking = format!("{bookings}/{}", listed["data"][0]["id"].as_str().unwrap());
    let later = (next_friday(&app) + Duration::days(7)).to_rfc3339();
    let change = json!({"date": later, "status": "CONFIRMED"});
    let reply = app
        .send(Method::PATCH, &booking, Some(&viewer), Some(change.clone()))
        .await;
    assert_eq!(reply.code(StatusCode::FORBIDDEN), "not_permitted");
    let changed = app
        .send(Method::PATCH, &booking, Some(&support), Some(change))
        .await;
    assert_eq!(changed.expect(StatusCode::OK)["status"], "CONFIRMED");
    // Confirmed: the held 25 taken.
    assert_eq!(balance(&app, &base).await, 75.0);
    let back = json!({"status": "REQUESTED"});
    let reply = app
        .send(Method::PATCH, &booking, Some(&support), Some(back))
        .await;
    assert_eq!(reply.code(StatusCode::CONFLICT), "illegal_transition");
    let reply = app
        .send(
            Method::PATCH,
            &booking,
            Some(&support),
            Some(json!({"pax": 0})),
        )
        .await;
    assert_eq!(reply.code(StatusCode::BAD_REQUEST), "validation_failed");
    assert_eq!(reply.body["field"], "pax");

    // The whole order: the dinner's 25 back too; again, nothing changes.
    let reply = app
        .post(&format!("{order}/cancel"), &support, json!({}))
        .await;
    reply.expect(StatusCode::OK);
    assert_eq!(balance(&app, &base).await, 100.0);
    app.post(&format!("{order}/cancel"), &support, json!({}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(balance(&app, &base).await, 100.0);
    let shown = app.get(&booking, &viewer).await;
    assert_eq!(shown.expect(StatusCode::OK)["status"], "CANCELLED");

    // Each change in the trail as support's.
    let trail = app
        .get(
            "/admin/v1/audit-log?actor=support%40example.com",
            &app.owner,
        )
        .await;
    let trail = trail.expect(StatusCode::OK);
    let ok = ok_operations(trail);
    for operation in ["order.cancel-line", "booking.update", "order.cancel"] {
        assert!(ok.iter().any(|o| o == operation), "{operation} in {ok:?}");
    }
}

admin_tests!(support_cancels_orders_and_changes_bookings);
