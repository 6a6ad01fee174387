//! Cancelling orders and their lines over HTTP: points refunded into the wallet's lots, stock
//! returned, codes voided, bookings cancelled; a redeemed line refused; another organisation's
//! order unknown.

use api::views::{OrderView, TransactionView};
use reqwest::{Method, StatusCode};
use serde_json::json;
use store::Tokens;

use crate::app_tests;
use crate::helpers::{Reply, TestApp, lines, next_friday, tokens};

async fn cancel(app: &TestApp, order: &str, line: Option<&str>) -> Reply {
    let path = match line {
        Some(line) => format!("/v1/orders/{order}/lines/{line}/cancel"),
        None => format!("/v1/orders/{order}/cancel"),
    };
    app.post(&path, json!({})).await
}

/// The clear code of unit `unit` of `line` of `order`.
async fn clear_code(app: &TestApp, order: &str, line: &str, unit: usize) -> String {
    let path = format!("/v1/orders/{order}/lines/{line}?decrypt=true");
    let reply = app.get(&path).await;
    reply.body["codes"][unit]["code"]
        .as_str()
        .unwrap()
        .to_string()
}

async fn a_cancelled_line_gives_back_points_and_stock_and_voids_its_codes(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(100)).await;
    let body = json!({"owner": "card-1", "walletId": "w-1", "lines": [
        {"productId": "mug", "quantity": 2},
        {"productId": "dinner", "variantId": "dinner-std",
         "booking": {"firstName": "Ada", "lastName": "Lovelace", "date": next_friday(), "branch": "cpt"}}]});
    let order: OrderView = app.order(body).await.expect(StatusCode::OK);
    // The mugs are burned; the dinner, which needs a booking, is held.
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held, wallet.available),
        (Tokens::whole(94), tokens("25.5"), tokens("68.5"))
    );
    assert!(lines(&order)[1].hold_id.is_some() && lines(&order)[0].hold_id.is_none());
    let (mugs, dinner) = (lines(&order)[0].id.clone(), lines(&order)[1].id.clone());
    let mug_code = clear_code(&app, &order.id, &mugs, 0).await;
    // One mug is left; the cancel gives back the two ordered.
    let cancelled: OrderView = cancel(&app, &order.id, Some(&mugs))
        .await
        .expect(StatusCode::OK);
    let line = &lines(&cancelled)[0];
    assert!(line.cancelled_at.is_some());
    assert!(line.codes.iter().all(|c| c.voided && !c.redeemed));
    assert!(
        lines(&cancelled)[1].cancelled_at.is_none(),
        "the dinner stays"
    );
    assert_eq!(app.wallet("w-1").await.available, tokens("74.5"));
    let partner = app.partner_key().await;
    let voided = app.redeem(&partner, &mug_code).await;
    assert_eq!(voided.status, StatusCode::CONFLICT);
    assert_eq!(voided.problem().code, "code_voided");
    let three: OrderView = app
        .order(json!({"owner": "card-1", "lines": [{"productId": "mug", "quantity": 3}]}))
        .await
        .expect(StatusCode::OK);
    assert_eq!(lines(&three)[0].qty, 3, "the stock came back");
    // The refund names the order's burn and is listed as an EARN.
    let refunds = app.transactions("type=EARN").await;
    let refund: &TransactionView = &refunds.data[0];
    assert_eq!(refund.reversal_of, order.transaction_id);
    assert_eq!(refund.amount, Tokens::whole(6));
    // Again: nothing more happens.
    let again: OrderView = cancel(&app, &order.id, Some(&mugs))
        .await
        .expect(StatusCode::OK);
    assert_eq!(again, cancelled);
    assert_eq!(app.wallet("w-1").await.available, tokens("74.5"));

    // The whole order: the rest (the dinner) is released and its booking cancelled.
    let whole: OrderView = cancel(&app, &order.id, None).await.expect(StatusCode::OK);
    let dinner_line = &lines(&whole)[1];
    assert_eq!(dinner_line.id, dinner);
    assert!(dinner_line.cancelled_at.is_some());
    assert_eq!(dinner_line.booking.as_ref().unwrap().status, "CANCELLED");
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (Tokens::whole(100), Tokens::ZERO)
    );
    let burn = format!("/v1/transactions/{}", order.transaction_id.unwrap());
    let burn: TransactionView = app.get(&burn).await.expect(StatusCode::OK);
    assert_eq!(
        burn.reversed,
        Some(Tokens::whole(6)),
        "the burn paid the mugs only"
    );
    let hold = format!("/v1/holds/{}", dinner_line.hold_id.as_deref().unwrap());
    assert_eq!(app.get(&hold).await.body["status"], "voided");
}

async fn a_redeemed_line_cannot_be_cancelled(app: TestApp) {
    app.ready_to_order().await;
    let order = app
        .place(json!([{"productId": "mug"}, {"productId": "poster"}]))
        .await;
    let (mug, poster) = (lines(&order)[0].id.clone(), lines(&order)[1].id.clone());
    let code = clear_code(&app, &order.id, &mug, 0).await;
    let partner = app.partner_key().await;
    assert_eq!(app.redeem(&partner, &code).await.status, StatusCode::OK);
    for line in [None, Some(&mug[..])] {
        let refused = cancel(&app, &order.id, line).await;
        assert_eq!(refused.status, StatusCode::CONFLICT, "{}", refused.body);
        let problem = refused.problem();
        assert_eq!(problem.code, "line_redeemed");
        assert_eq!(problem.field.as_deref(), Some("lineId"));
        assert!(problem.detail.contains(&mug), "{}", problem.detail);
    }
    let read: OrderView = app
        .get(&format!("/v1/orders/{}", order.id))
        .await
        .expect(StatusCode::OK);
    assert!(
        lines(&read).iter().all(|l| l.cancelled_at.is_none()),
        "nothing changed"
    );
    // The other line alone may go.
    let one: OrderView = cancel(&app, &order.id, Some(&poster))
        .await
        .expect(StatusCode::OK);
    assert!(lines(&one)[1].cancelled_at.is_some());

    for (order, line) in [("nope", None), (order.id.as_str(), Some("nope"))] {
        assert_eq!(
            cancel(&app, order, line).await.status,
            StatusCode::NOT_FOUND
        );
    }
    let other = app.other_tenant().await;
    let theirs = app
        .send(
            Method::POST,
            &format!("/v1/orders/{}/cancel", order.id),
            Some(&other),
            None,
            Some(json!({})),
        )
        .await;
    assert_eq!(theirs.status, StatusCode::NOT_FOUND);
}

/// Ten cancels of one paid order at once: one refund, the stock back once.
async fn concurrent_cancels_refund_once(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(10)).await;
    let body = json!({"owner": "card-1", "walletId": "w-1", "lines": [{"productId": "mug", "quantity": 3}]});
    let order: OrderView = app.order(body).await.expect(StatusCode::OK);
    let app = std::sync::Arc::new(app);
    let tasks: Vec<_> = (0..10)
        .map(|_| {
            let (app, id) = (app.clone(), order.id.clone());
            tokio::spawn(async move { cancel(&app, &id, None).await.status })
        })
        .collect();
    for task in tasks {
        assert_eq!(task.await.unwrap(), StatusCode::OK);
    }
    assert_eq!(app.balance("w-1").await, Tokens::whole(10));
    assert_eq!(
        app.transactions("type=EARN").await.total,
        2,
        "the earn and one refund"
    );
    let four = app
        .order(json!({"owner": "card-1", "lines": [{"productId": "mug", "quantity": 4}]}))
        .await;
    assert_eq!(four.status, StatusCode::CONFLICT, "3 in stock, not 6");
}

/// A random order is cancelled as any other: its price back, its code voided.
async fn a_random_order_is_cancelled_too(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(10)).await;
    let body = json!({"owner": "card-1", "cost": 4, "walletId": "w-1"});
    let order: OrderView = app
        .post("/v1/orders/random", body)
        .await
        .expect(StatusCode::OK);
    // Paid by a burn, or held when the draw needs a booking.
    assert_eq!(app.wallet("w-1").await.available, Tokens::whole(6));
    let cancelled: OrderView = cancel(&app, &order.id, None).await.expect(StatusCode::OK);
    let line = &lines(&cancelled)[0];
    assert!(line.cancelled_at.is_some() && line.codes.iter().all(|c| c.voided));
    assert_eq!(app.balance("w-1").await, Tokens::whole(10));
}

/// The keys the service makes for itself are its own: a client's burn, hold or refund under
/// one is refused naming `externalId`. An order's payment and its lines' holds are given back
/// and settled only through the order, which so can always be cancelled.
async fn an_orders_payment_and_holds_are_the_orders_own(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(100)).await;
    let body = json!({"owner": "card-1", "walletId": "w-1", "lines": [
        {"productId": "mug", "quantity": 2},
        {"productId": "dinner", "variantId": "dinner-std",
         "booking": {"firstName": "Ada", "lastName": "Lovelace", "date": next_friday(), "branch": "cpt"}}]});
    let order: OrderView = app.order(body).await.expect(StatusCode::OK);
    for key in ["order:x", "hold:h-1", "cancel:l-1", "transfer:t-1", "lot:1"] {
        let burned = app.burn(key, "w-1", json!(1)).await;
        assert_eq!(burned.status, StatusCode::BAD_REQUEST, "{key}");
        assert_eq!(burned.fields(), ["externalId"], "{key}");
    }
    let hold = json!({"walletId": "w-1", "externalId": format!("order:{}:x", order.id),
        "amount": 1, "description": "x"});
    assert_eq!(app.post("/v1/holds", hold).await.fields(), ["externalId"]);
    let payment = order.transaction_id.clone().unwrap();
    let refund = app
        .post(
            &format!("/v1/transactions/{payment}/reversals"),
            json!({"externalId": "r-1"}),
        )
        .await;
    assert_eq!(refund.status, StatusCode::CONFLICT, "{}", refund.body);
    assert_eq!(refund.problem().code, "pays_order");
    let own: TransactionView = app
        .burn("b-1", "w-1", json!(4))
        .await
        .expect(StatusCode::OK);
    let keyed = app
        .post(
            &format!("/v1/transactions/{}/reversals", own.id),
            json!({"externalId": format!("cancel:{}", lines(&order)[0].id)}),
        )
        .await;
    assert_eq!(keyed.fields(), ["externalId"]);
    let hold = lines(&order)[1].hold_id.clone().unwrap();
    for settle in ["capture", "void"] {
        let settled = app
            .post(&format!("/v1/holds/{hold}/{settle}"), json!({}))
            .await;
        assert_eq!(
            settled.status,
            StatusCode::CONFLICT,
            "{settle}: {}",
            settled.body
        );
        assert_eq!(settled.problem().code, "pays_order", "{settle}");
    }
    let cancelled: OrderView = cancel(&app, &order.id, None).await.expect(StatusCode::OK);
    assert!(lines(&cancelled).iter().all(|l| l.cancelled_at.is_some()));
    let wallet = app.wallet("w-1").await;
    assert_eq!(
        (wallet.balance, wallet.held),
        (Tokens::whole(96), Tokens::ZERO)
    );
}

app_tests!(
    an_orders_payment_and_holds_are_the_orders_own,
    a_cancelled_line_gives_back_points_and_stock_and_voids_its_codes,
    a_redeemed_line_cannot_be_cancelled,
    concurrent_cancels_refund_once,
    a_random_order_is_cancelled_too,
);
