//! Orders over HTTP: totals and both versions' line shapes, the errors a client meets,
//! references, stock under concurrent orders, paying with points, codes decrypted and redeemed,
//! random orders, and tenant isolation. (The store's own tests cover each rule on both
//! backends in more detail.)

use api::views::{LineView, OrderView, RedeemedView, TransactionView};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use store::{NewKey, Tokens};

use crate::app_tests;
use crate::helpers::{TestApp, lines, next_friday, tokens};

async fn an_order_totals_its_lines_in_both_versions(app: TestApp) {
    app.ready_to_order().await;
    let order = app
        .place(json!([
            {"productId": "dinner", "variantId": "dinner-std", "quantity": 2, "reference": "l-1",
             "meta": {"seat": "window"}},
            {"productId": "mug"}
        ]))
        .await;
    assert_eq!(order.owner, "card-1");
    assert_eq!(order.total, Tokens::whole(54), "2 x 25.5 + 3");
    let line = &lines(&order)[0];
    assert_eq!(line.cost, tokens("25.5"));
    assert_eq!(line.qty, 2);
    assert_eq!(line.total, Tokens::whole(51));
    assert!(line.requires_booking);
    assert_eq!(line.meta, Some(json!({"seat": "window"})));
    let product = line
        .product
        .as_ref()
        .expect("1.9.5 lines carry the product");
    assert_eq!(product.name, "Dinner for two");
    assert_eq!(product.variant, "Standard");
    assert_eq!(product.offer_details.as_deref(), Some("Wine included"));
    assert_eq!(lines(&order)[1].variant_id, "mug-1", "the only variant");
    assert_eq!(line.codes.len(), 2, "one per unit");
    let masked = &line.codes[0].code;
    assert!(
        masked.starts_with("••••-••••-•") && masked.chars().count() == 15,
        "{masked}"
    );
    assert!(!line.codes[0].redeemed);

    let id = &order.id;
    let newer = app.get(&format!("/v1/orders/{id}")).await;
    assert_eq!(newer.status, StatusCode::OK);
    assert_eq!(
        newer.body["lines"][0]["product"]["primaryImage"],
        "https://img.example/dinner.jpg"
    );
    let older = app
        .send(
            Method::GET,
            &format!("/v1/orders/{id}"),
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(older.status, StatusCode::OK);
    assert!(
        older.body["lines"][0].get("product").is_none(),
        "1.6.2 lines have no summary"
    );
    assert_eq!(older.body["total"], 54.0);

    let list = app.get("/v1/orders?ownerId=card-1").await;
    assert_eq!(list.body["total"], 1);
    assert!(
        list.data()[0].get("lines").is_none(),
        "lines only when asked for"
    );
    let with_lines = app
        .get("/v1/orders?includeLines=true&acrossCampaigns=true")
        .await;
    assert_eq!(with_lines.data()[0]["lines"].as_array().unwrap().len(), 2);
    assert_eq!(app.get("/v1/orders?ownerId=nobody").await.body["total"], 0);
    let across = app
        .send(
            Method::GET,
            "/v1/orders?acrossCampaigns=true",
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(across.status, StatusCode::BAD_REQUEST, "{}", across.body);
    assert_eq!(across.fields(), ["acrossCampaigns"]);
    let not_theirs = app.get(&format!("/v1/orders/{id}?ownerId=somebody")).await;
    assert_eq!(not_theirs.status, StatusCode::NOT_FOUND);
}

async fn bad_orders_name_their_fields(app: TestApp) {
    app.ready_to_order().await;
    for (body, fields) in [
        (json!({"lines": [{"productId": "mug"}]}), vec!["owner"]),
        (json!({"owner": "card-1", "lines": []}), vec!["lines"]),
        (json!({"owner": "card-1"}), vec!["lines"]),
        (
            json!({"owner": "card-1", "lines": [{"productId": "mug", "quantity": 0},
                {"productId": "mug", "quantity": 101}, {"productId": "mug", "quantity": 1.5},
                {"quantity": 1}]}),
            vec![
                "lines[0].quantity",
                "lines[1].quantity",
                "lines[2].quantity",
                "lines[3].productId",
            ],
        ),
        (
            json!({"owner": "card-1", "lines": [{"productId": "dinner", "variantId": "dinner-std",
                "booking": {"firstName": "Ada", "date": "tomorrow", "pax": 0}}]}),
            vec![
                "lines[0].booking.lastName",
                "lines[0].booking.date",
                "lines[0].booking.pax",
            ],
        ),
        (
            json!({"owner": "card-1", "lines": [{"productId": "nothing"},
                {"productId": "dinner", "variantId": "mug-1"}, {"productId": "balloon"},
                {"productId": "dinner"}]}),
            vec![
                "lines[0].productId",
                "lines[1].variantId",
                "lines[2].variantId",
                "lines[3].variantId",
            ],
        ),
    ] {
        let reply = app.order(body.clone()).await;
        assert_eq!(
            reply.status,
            StatusCode::BAD_REQUEST,
            "{body}: {}",
            reply.body
        );
        assert_eq!(reply.fields(), fields, "{body}: {}", reply.body);
    }
    let unknown = app
        .order(json!({"owner": "nobody", "lines": [{"productId": "mug"}]}))
        .await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    assert_eq!(unknown.body["field"], "owner");
    let gold = app
        .order(json!({"owner": "card-1", "lines": [{"productId": "dinner", "variantId": "dinner-gold"}]}))
        .await;
    assert_eq!(gold.status, StatusCode::CONFLICT);
    assert_eq!(gold.problem().code, "tier_required", "{}", gold.body);

    // A reference: the same body again is the same order; another body with it is refused.
    let body = json!({"owner": "card-1", "reference": "r-1", "lines": [{"productId": "mug", "quantity": 2}]});
    let first = app.order(body.clone()).await;
    let again = app.order(body).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["id"], first.body["id"]);
    assert_eq!(
        again.body["lines"][0]["codes"],
        first.body["lines"][0]["codes"]
    );
    let other = app
        .order(json!({"owner": "card-1", "reference": "r-1", "lines": [{"productId": "mug"}]}))
        .await;
    assert_eq!(other.status, StatusCode::CONFLICT);
    let problem = other.problem();
    assert_eq!(
        (&*problem.code, problem.field.as_deref()),
        ("already_exists", Some("lines")),
        "the first field that differs from the order made under the reference"
    );
    // Stock was taken once: one mug left.
    let two = app
        .order(json!({"owner": "card-1", "lines": [{"productId": "mug", "quantity": 2}]}))
        .await;
    assert_eq!(two.status, StatusCode::CONFLICT);
    assert_eq!(two.problem().code, "out_of_stock");
    assert_eq!(two.body["field"], "lines[0].variantId");
}

async fn concurrent_orders_take_the_last_units_once(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(150)).await;
    let before = app.get("/v1/products/dinner").await;
    assert_eq!(before.body["variants"][1]["available"], true);
    let app = std::sync::Arc::new(app);
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let app = app.clone();
        tasks.push(tokio::spawn(async move {
            app.order(json!({"owner": "card-1", "lines": [{"productId": "dinner", "variantId": "dinner-gold"}]}))
                .await
        }));
    }
    let mut statuses = Vec::new();
    for task in tasks {
        let reply = task.await.unwrap();
        if reply.status == StatusCode::CONFLICT {
            assert_eq!(reply.problem().code, "out_of_stock", "{}", reply.body);
        }
        statuses.push(reply.status);
    }
    let ok = statuses.iter().filter(|s| **s == StatusCode::OK).count();
    let sold_out = statuses
        .iter()
        .filter(|s| **s == StatusCode::CONFLICT)
        .count();
    assert_eq!((ok, sold_out), (5, 45), "{statuses:?}");
    // The catalogue and its search show it sold out.
    let after = app.get("/v1/products/dinner").await;
    assert_eq!(
        after.body["variants"][1]["available"], false,
        "{}",
        after.body
    );
    let available = app.get("/v1/products?isAvailable=true").await;
    let ids: Vec<&Value> = available.data().iter().map(|p| &p["id"]).collect();
    assert!(
        ids.contains(&&json!("dinner")),
        "the standard variant is still there"
    );
    assert_eq!(app.get("/v1/orders").await.body["total"], 5);
}

async fn paying_with_points_spends_the_total_or_nothing(app: TestApp) {
    app.ready_to_order().await;
    app.earn("e-1", "w-1", json!(60)).await;
    let paid = app
        .order(json!({"owner": "card-1", "walletId": "w-1", "lines": [{"productId": "mug", "quantity": 2}]}))
        .await;
    assert_eq!(paid.status, StatusCode::OK, "{}", paid.body);
    assert_eq!(app.balance("w-1").await, Tokens::whole(54));
    let paid: OrderView = paid.view();
    let path = format!("/v1/transactions/{}", paid.transaction_id.unwrap());
    let transaction: TransactionView = app.get(&path).await.expect(StatusCode::OK);
    assert_eq!(transaction.kind, "BURN");
    assert_eq!(transaction.amount, Tokens::whole(6));
    assert_eq!(transaction.external_id, Some(format!("order:{}", paid.id)));

    let dear = app
        .order(
            json!({"owner": "card-1", "walletId": "w-1", "lines": [{"productId": "mug"},
            {"productId": "dinner", "variantId": "dinner-std", "quantity": 3}]}),
        )
        .await;
    assert_eq!(dear.status, StatusCode::PAYMENT_REQUIRED, "{}", dear.body);
    assert_eq!(dear.problem().code, "insufficient_balance");
    assert_eq!(app.get("/v1/orders").await.body["total"], 1, "no order");
    assert_eq!(app.balance("w-1").await, Tokens::whole(54));
    assert_eq!(
        app.transactions("type=BURN").await.total,
        1,
        "no transaction"
    );
    // The last mug was not taken by the refused order.
    let last = app
        .order(json!({"owner": "card-1", "lines": [{"productId": "mug"}]}))
        .await;
    assert_eq!(last.status, StatusCode::OK, "{}", last.body);

    let missing = app
        .order(json!({"owner": "card-1", "walletId": "nowhere", "lines": [{"productId": "dinner", "variantId": "dinner-std"}]}))
        .await;
    assert_eq!(missing.status, StatusCode::NOT_FOUND);
    assert_eq!(missing.body["field"], "walletId");
    app.create_member("card-2").await;
    app.create_wallet("card-2", "w-2").await;
    let theirs = app
        .order(json!({"owner": "card-1", "walletId": "w-2", "lines": [{"productId": "dinner", "variantId": "dinner-std"}]}))
        .await;
    assert_eq!(theirs.status, StatusCode::BAD_REQUEST);
    assert_eq!(theirs.fields(), ["walletId"]);
}

async fn codes_are_decrypted_on_request_and_redeemed_once(app: TestApp) {
    app.ready_to_order().await;
    let order = app
        .place(json!([{"productId": "dinner", "variantId": "dinner-std", "quantity": 2}]))
        .await;
    let (id, line) = (&order.id, &lines(&order)[0].id);
    let path = format!("/v1/orders/{id}/lines/{line}");
    let missing = app.get(&path).await;
    assert_eq!(missing.status, StatusCode::BAD_REQUEST);
    assert_eq!(missing.fields(), ["decrypt"]);
    let masked = app.get(&format!("{path}?decrypt=false")).await;
    assert_eq!(masked.view::<LineView>().codes, lines(&order)[0].codes);
    let clear = app
        .get(&format!("{path}?decrypt=true&ownerId=card-1"))
        .await;
    assert_eq!(clear.status, StatusCode::OK, "{}", clear.body);
    let code = clear.body["codes"][0]["code"].as_str().unwrap().to_string();
    assert_eq!(code.len(), 15);
    assert!(!code.contains('•'));
    assert!(lines(&order)[0].codes[0].code.ends_with(&code[11..]));
    let older = app
        .send(
            Method::GET,
            &format!("{path}?decrypt=true&ownerId=card-1"),
            Some(&app.key),
            Some("1.6.2"),
            None,
        )
        .await;
    assert_eq!(older.status, StatusCode::BAD_REQUEST, "ownerId is 1.9.5's");

    let refused = app.redeem(&app.key, &code).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN);
    assert_eq!(refused.problem().code, "permission_required");
    let partner = app.partner_key().await;
    let redeemed = app.redeem(&partner, &code.to_lowercase()).await;
    assert_eq!(redeemed.status, StatusCode::OK, "{}", redeemed.body);
    let redeemed: RedeemedView = redeemed.view();
    assert_eq!(&redeemed.line_id, line);
    assert_eq!(redeemed.product.name, "Dinner for two");
    let twice = app.redeem(&partner, &code).await;
    assert_eq!(twice.status, StatusCode::CONFLICT);
    assert_eq!(twice.problem().code, "already_redeemed");
    let unknown = app.redeem(&partner, "0000-0000-00000").await;
    assert_eq!(unknown.status, StatusCode::NOT_FOUND);
    let read = app.get(&format!("/v1/orders/{id}")).await;
    let flags: Vec<&Value> = read.body["lines"][0]["codes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| &c["redeemed"])
        .collect();
    assert_eq!(flags, [&json!(true), &json!(false)]);

    // Two partners at once: exactly one redeems the other code.
    let other = clear.body["codes"][1]["code"].as_str().unwrap().to_string();
    let app = std::sync::Arc::new(app);
    let tasks: Vec<_> = (0..2)
        .map(|_| {
            let (app, partner, other) = (app.clone(), partner.clone(), other.clone());
            tokio::spawn(async move { app.redeem(&partner, &other).await.status })
        })
        .collect();
    let mut statuses = Vec::new();
    for task in tasks {
        statuses.push(task.await.unwrap());
    }
    statuses.sort();
    assert_eq!(statuses, [StatusCode::OK, StatusCode::CONFLICT]);
}

async fn a_read_only_key_sees_codes_masked_only(app: TestApp) {
    app.ready_to_order().await;
    let order = app.place(json!([{"productId": "mug"}])).await;
    let (id, line) = (&order.id, &lines(&order)[0].id);
    let reader = app
        .issue_key(
            &app.org,
            &app.campaign,
            NewKey {
                read_only: true,
                ..Default::default()
            },
        )
        .await;
    let read = |path: String| {
        let (app, reader) = (&app, reader.clone());
        async move {
            app.send(Method::GET, &path, Some(&reader), None, None)
                .await
        }
    };
    let masked = read(format!("/v1/orders/{id}/lines/{line}?decrypt=false")).await;
    assert_eq!(masked.status, StatusCode::OK);
    assert_eq!(masked.view::<LineView>().codes, lines(&order)[0].codes);
    let clear = read(format!("/v1/orders/{id}/lines/{line}?decrypt=true")).await;
    assert_eq!(clear.status, StatusCode::FORBIDDEN);
    assert_eq!(clear.problem().code, "read_only_key");
    // Refused before anything is looked up: an order that does not exist answers the same.
    let unknown = read("/v1/orders/nope/lines/nope?decrypt=true".to_string()).await;
    assert_eq!(unknown.status, StatusCode::FORBIDDEN);
    let full = app
        .get(&format!("/v1/orders/{id}/lines/{line}?decrypt=true"))
        .await;
    assert_eq!(full.status, StatusCode::OK);
    assert!(
        !full.body["codes"][0]["code"]
            .as_str()
            .unwrap()
            .contains('•')
    );
}

async fn random_orders_draw_by_weight(app: TestApp) {
    app.ready_to_order().await;
    let default = app
        .post("/v1/orders/random", json!({"owner": "card-1"}))
        .await;
    assert_eq!(default.status, StatusCode::OK, "{}", default.body);
    assert_eq!(default.body["total"], 1.0, "the default cost");
    let nobody = app
        .post("/v1/orders/random", json!({"owner": "nobody"}))
        .await;
    assert_eq!(nobody.status, StatusCode::NOT_FOUND);
    let mut drawn = std::collections::HashSet::new();
    for i in 0..20 {
        let reply = app
            .post(
                "/v1/orders/random",
                json!({"owner": "card-1", "cost": 2.5, "reference": format!("r-{i}")}),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{}", reply.body);
        assert_eq!(reply.body["lines"][0]["cost"], 2.5);
        drawn.insert(
            reply.body["lines"][0]["productId"]
                .as_str()
                .unwrap()
                .to_string(),
        );
    }
    assert!(!drawn.contains("poster"), "a weight of 0 never wins");
    assert!(
        !drawn.contains("balloon"),
        "an unavailable product is never drawn"
    );
    let again = app
        .post(
            "/v1/orders/random",
            json!({"owner": "card-1", "cost": 2.5, "reference": "r-0"}),
        )
        .await;
    assert_eq!(again.status, StatusCode::OK);
    let first = app.get("/v1/orders?includeLines=true&limit=100").await;
    assert_eq!(first.body["total"], 21, "the repeat made no order");
    let bad = app
        .post("/v1/orders/random", json!({"owner": "card-1", "cost": -1}))
        .await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
    assert_eq!(bad.fields(), ["cost"]);

    // Nothing left to draw.
    let key = app.catalogue_key().await;
    let only_poster = json!({"products": [{"id": "poster", "name": "Poster", "weight": 0,
        "variants": [{"id": "poster-1", "name": "A2", "price": 1}]}]});
    let replaced = app.put_catalogue(&key, "?replace=true", only_poster).await;
    assert_eq!(replaced.status, StatusCode::OK, "{}", replaced.body);
    let nothing = app
        .post("/v1/orders/random", json!({"owner": "card-1"}))
        .await;
    assert_eq!(nothing.status, StatusCode::CONFLICT);
    assert_eq!(nothing.problem().code, "no_available_product");
    // Orders keep what they were, though their products are gone from the catalogue.
    assert_eq!(app.get("/v1/orders").await.body["total"], 21);
}

async fn other_organisations_see_none_of_it(app: TestApp) {
    app.ready_to_order().await;
    let order = app
        .place(json!([{"productId": "dinner", "variantId": "dinner-std",
            "booking": {"firstName": "Ada", "lastName": "Lovelace", "date": next_friday(), "branch": "cpt"}}]))
        .await;
    let (id, line) = (&order.id, &lines(&order)[0].id);
    let booking = &lines(&order)[0].booking.as_ref().unwrap().id;
    let other = app.other_tenant().await;
    let get = |path: String| {
        let other = other.clone();
        let app = &app;
        async move {
            app.send(Method::GET, &path, Some(&other), None, None)
                .await
                .status
        }
    };
    assert_eq!(get(format!("/v1/orders/{id}")).await, StatusCode::NOT_FOUND);
    assert_eq!(
        get(format!("/v1/orders/{id}?acrossCampaigns=true")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(format!("/v1/orders/{id}/lines/{line}?decrypt=true")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        get(format!("/v1/bookings/{booking}")).await,
        StatusCode::NOT_FOUND
    );
    let list = app
        .send(
            Method::GET,
            "/v1/orders?acrossCampaigns=true",
            Some(&other),
            None,
            None,
        )
        .await;
    assert_eq!(list.body["total"], 0);
    let booked = app
        .send(
            Method::POST,
            &format!("/v1/redemptions/{line}/bookings"),
            Some(&other),
            None,
            Some(json!({"firstName": "Eve", "lastName": "X", "date": next_friday()})),
        )
        .await;
    assert_eq!(booked.status, StatusCode::NOT_FOUND);
    let moved = app
        .send(
            Method::PATCH,
            &format!("/v1/bookings/{booking}"),
            Some(&other),
            None,
            Some(json!({"status": "CANCELLED"})),
        )
        .await;
    assert_eq!(moved.status, StatusCode::NOT_FOUND);
    // Their partner cannot redeem our codes.
    let code = app
        .get(&format!("/v1/orders/{id}/lines/{line}?decrypt=true"))
        .await
        .body["codes"][0]["code"]
        .as_str()
        .unwrap()
        .to_string();
    let store = &app.store;
    let theirs = store
        .tenancy()
        .authenticate(&other.api_key, &other.secret)
        .await
        .unwrap()
        .unwrap();
    let partner = app
        .issue_key(
            &theirs.key.org(),
            &theirs.campaign.id,
            store::NewKey {
                permissions: vec![store::Permission::RedeemCodes],
                ..Default::default()
            },
        )
        .await;
    assert_eq!(
        app.redeem(&partner, &code).await.status,
        StatusCode::NOT_FOUND
    );
}

app_tests!(
    an_order_totals_its_lines_in_both_versions,
    bad_orders_name_their_fields,
    concurrent_orders_take_the_last_units_once,
    paying_with_points_spends_the_total_or_nothing,
    codes_are_decrypted_on_request_and_redeemed_once,
    a_read_only_key_sees_codes_masked_only,
    random_orders_draw_by_weight,
    other_organisations_see_none_of_it,
);
