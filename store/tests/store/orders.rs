//! Orders on both backends: totals, idempotent references, stock under concurrency, paying with
//! points, sealed codes and their redeeming, and the booking state machine.

use std::sync::Arc;

use chrono::{Datelike, Duration, FixedOffset, TimeZone, Utc};
use serde_json::json;
use store::{
    BookingPatch, BookingStatus, Campaign, Catalogue, CodeKey, EarnInput, ImportOptions,
    NewBooking, NewLine, NewOrder, NewWallet, OrderScope, Page, RuleBook, Store, StoreError,
    Tokens, TransactionFilter, TransactionKind, backend_tests,
};

pub(crate) fn key() -> Arc<CodeKey> {
    Arc::new(CodeKey::new(&[7u8; 32]))
}

/// A campaign with member `card-1` (wallet `w-1`) and a catalogue: `dinner` (bookable on
/// Fridays and Saturdays at two branches; a standard variant and a gold one with 5 units),
/// `mug` (one variant, 3 units), `balloon` (unavailable).
pub(crate) async fn setup(store: &Store) -> Campaign {
    let (campaign, _) = store::testing::wallet_fixture(store).await;
    let doc = json!({
        "tiers": [{"id": "gold", "name": "Gold", "precedence": 1, "threshold": 100}],
        "products": [
            {"id": "dinner", "name": "Dinner for two", "description": "Three courses",
             "primaryImage": "https://img.example/dinner.jpg",
             "bookInAdvance": true, "weekdays": {"fri": true, "sat": true},
             "branches": [{"id": "cpt", "name": "Cape Town"}, {"id": "jhb", "name": "Johannesburg"}],
             "variants": [
                 {"id": "dinner-std", "name": "Standard", "price": 25.5,
                  "description": "Set menu", "offerDetails": "Wine included",
                  "termsAndConditions": "Book 2 days ahead"},
                 {"id": "dinner-gold", "name": "Chef's table", "price": 80, "tier": "gold", "stock": 5}
             ]},
            {"id": "mug", "name": "Mug", "variants": [{"id": "mug-1", "name": "Blue", "price": 3, "stock": 3}]},
            {"id": "balloon", "name": "Balloon flight",
             "variants": [{"id": "balloon-1", "name": "Sunrise", "price": 120, "available": false}]}
        ]
    });
    let catalogue = Catalogue::from_value(&doc).expect("a valid catalogue");
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    campaign
}

pub(crate) fn line(product: &str, variant: Option<&str>, quantity: u32) -> NewLine {
    NewLine {
        product_id: product.into(),
        variant_id: variant.map(Into::into),
        quantity,
        reference: None,
        booking: None,
        meta: None,
    }
}

pub(crate) fn order(reference: Option<&str>, lines: Vec<NewLine>) -> NewOrder {
    NewOrder {
        owner: "card-1".into(),
        reference: reference.map(Into::into),
        lines,
        ..Default::default()
    }
}

pub(crate) async fn earn(store: &Store, campaign: &Campaign, id: &str, amount: &str) {
    let input = EarnInput {
        activity: None,
        earn_id: id.into(),
        wallet: "w-1".into(),
        amount: amount.into(),
        date: Utc::now(),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().submit_earn(campaign, input).await.unwrap();
    let book = RuleBook::new(store.programme().clone());
    while store.ledger().process_earns(&book, 50).await.unwrap() > 0 {}
}

/// The next Friday at 19:00 in South Africa (UTC+2), at least a week away.
pub(crate) fn next_friday() -> chrono::DateTime<FixedOffset> {
    let zone = FixedOffset::east_opt(2 * 3600).unwrap();
    let mut day = Utc::now().with_timezone(&zone).date_naive() + Duration::days(7);
    while day.weekday() != chrono::Weekday::Fri {
        day = day.succ_opt().unwrap();
    }
    zone.from_local_datetime(&day.and_hms_opt(19, 0, 0).unwrap())
        .unwrap()
}

fn booking(date: chrono::DateTime<FixedOffset>, branch: Option<&str>) -> NewBooking {
    NewBooking {
        first_name: "Ada".into(),
        last_name: "Lovelace".into(),
        email: None,
        phone: None,
        branch: branch.map(Into::into),
        date,
        pax: 2,
        notes: None,
        meta: None,
    }
}

async fn orders_total_their_lines_and_keep_what_was_ordered(store: Store) {
    let c = setup(&store).await;
    let placed = store
        .orders()
        .place_order(
            &c,
            order(
                Some("o-1"),
                vec![line("dinner", Some("dinner-std"), 2), line("mug", None, 1)],
            ),
            key(),
        )
        .await
        .unwrap();
    assert!(!placed.replayed);
    let o = &placed.order;
    assert_eq!(o.total, Tokens::from_text("54").unwrap(), "2 x 25.5 + 3");
    assert_eq!(o.owner, "card-1");
    assert_eq!(o.lines[0].cost, Tokens::from_text("25.5").unwrap());
    assert_eq!(o.lines[0].total, Tokens::whole(51));
    assert!(o.lines[0].requires_booking && !o.lines[1].requires_booking);
    assert_eq!(o.lines[1].variant_id, "mug-1", "the product's only variant");
    assert_eq!(o.lines[0].codes.len(), 2, "one code per unit");
    assert!(o.lines[0].codes[0].code.starts_with("••••-••••-•"));
    let summary = &o.lines[0].product;
    assert_eq!(
        (summary.name.as_str(), summary.variant.as_str()),
        ("Dinner for two", "Standard")
    );
    assert_eq!(summary.offer_details.as_deref(), Some("Wine included"));

    // Read back: the same order, and the product as it was even after the catalogue changes.
    let scope = OrderScope::campaign(&c);
    let read = store.orders().get_order(&scope, &o.id, None).await.unwrap();
    assert_eq!(&read, o);
    let renamed = json!({"products": [{"id": "dinner", "name": "Supper",
        "variants": [{"id": "dinner-std", "name": "Basic", "price": 99}]}]});
    store
        .catalogue()
        .import_catalogue(
            &c,
            &Catalogue::from_value(&renamed).unwrap(),
            ImportOptions {
                replace: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let after = store.orders().get_order(&scope, &o.id, None).await.unwrap();
    assert_eq!(after.lines[0].product.name, "Dinner for two");
    assert_eq!(after.total, o.total);

    let list = store
        .orders()
        .list_orders(&scope, Some("card-1"), false, Page::default())
        .await
        .unwrap();
    assert_eq!(list.total, 1);
    assert!(list.items[0].lines.is_empty());
    let nobody = store
        .orders()
        .list_orders(&scope, Some("nobody"), true, Page::default())
        .await
        .unwrap();
    assert_eq!(nobody.total, 0);
}

async fn a_reference_makes_an_order_once(store: Store) {
    let c = setup(&store).await;
    let first = store
        .orders()
        .place_order(&c, order(Some("r-1"), vec![line("mug", None, 2)]), key())
        .await
        .unwrap();
    let again = store
        .orders()
        .place_order(&c, order(Some("r-1"), vec![line("mug", None, 2)]), key())
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.order.id, first.order.id);
    let other = store
        .orders()
        .place_order(&c, order(Some("r-1"), vec![line("mug", None, 1)]), key())
        .await;
    assert_eq!(
        crate::ledger::reused_for(&other),
        Some("lines"),
        "the first field that differs: {other:?}"
    );
    // Stock was taken once: one unit is left.
    let last = store
        .orders()
        .place_order(&c, order(None, vec![line("mug", None, 2)]), key())
        .await;
    assert!(
        matches!(&last, Err(StoreError::Refused { code: "out_of_stock", field: Some(f), .. }) if f == "lines[0].variantId"),
        "{last:?}"
    );

    // Concurrent twins: one order.
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, c) = (store.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            store
                .orders()
                .place_order(
                    &c,
                    order(Some("twin"), vec![line("dinner", Some("dinner-std"), 1)]),
                    key(),
                )
                .await
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        ids.insert(task.await.unwrap().unwrap().order.id);
    }
    assert_eq!(ids.len(), 1);
}

async fn problems_with_lines_are_named(store: Store) {
    let c = setup(&store).await;
    let bad = order(
        None,
        vec![
            line("nothing", None, 1),
            line("dinner", Some("mug-1"), 1),
            line("balloon", Some("balloon-1"), 1),
            line("dinner", None, 1),
            line("mug", Some("nothing"), 1),
        ],
    );
    let err = store
        .orders()
        .place_order(&c, bad, key())
        .await
        .unwrap_err();
    let StoreError::Rejected(problems) = err else {
        panic!("{err:?}");
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "lines[0].productId",
            "lines[1].variantId",
            "lines[2].variantId",
            "lines[3].variantId",
            "lines[4].variantId"
        ],
        "{problems:?}"
    );
    let mut unknown = order(None, vec![line("mug", None, 1)]);
    unknown.owner = "nobody".into();
    let err = store
        .orders()
        .place_order(&c, unknown, key())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::UnknownReference { field: "owner", .. }),
        "{err:?}"
    );

    // The gold variant needs a wallet that reached Gold (100 earned).
    let gold = || order(None, vec![line("dinner", Some("dinner-gold"), 1)]);
    let err = store
        .orders()
        .place_order(&c, gold(), key())
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::Refused {
                code: "tier_required",
                ..
            }
        ),
        "{err:?}"
    );
    earn(&store, &c, "e-1", "150").await;
    store.orders().place_order(&c, gold(), key()).await.unwrap();
    assert!(
        store
            .orders()
            .list_orders(&OrderScope::campaign(&c), None, false, Page::default())
            .await
            .unwrap()
            .total
            == 1
    );
}

async fn concurrent_orders_never_oversell(store: Store) {
    let c = setup(&store).await;
    earn(&store, &c, "e-1", "150").await;
    let version = store.catalogue().catalogue_version(&c).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (store, c) = (store.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            store
                .orders()
                .place_order(
                    &c,
                    order(None, vec![line("dinner", Some("dinner-gold"), 1)]),
                    key(),
                )
                .await
        }));
    }
    let (mut ok, mut sold_out, mut sold_out_flags) = (0, 0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Ok(placed) => {
                ok += 1;
                sold_out_flags += usize::from(placed.sold_out);
            }
            Err(StoreError::Refused {
                code: "out_of_stock",
                ..
            }) => sold_out += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!((ok, sold_out), (5, 45));
    assert_eq!(
        sold_out_flags, 1,
        "the order that took the last unit says so"
    );
    assert!(
        store.catalogue().catalogue_version(&c).await.unwrap() > version,
        "search indexes go stale"
    );
    let products = store.catalogue().catalogue_products(&c).await.unwrap();
    let gold = products[0]
        .variants
        .iter()
        .find(|v| v.id == "dinner-gold")
        .unwrap();
    assert_eq!(gold.stock, Some(0));
    assert!(!gold.can_be_ordered());
}

async fn paying_with_points_burns_in_the_same_transaction(store: Store) {
    let c = setup(&store).await;
    earn(&store, &c, "e-1", "60").await;
    let mut paid = order(Some("p-1"), vec![line("mug", None, 2)]);
    paid.wallet = Some("w-1".into());
    let placed = store.orders().place_order(&c, paid, key()).await.unwrap();
    let wallet = store.ledger().get_wallet(&c, "w-1").await.unwrap();
    assert_eq!(wallet.balance, Tokens::whole(54));
    let burn_id = placed.order.transaction_id.clone().unwrap();
    let burn = store.ledger().get_transaction(&c, &burn_id).await.unwrap();
    assert_eq!(burn.kind, TransactionKind::Burn);
    assert_eq!(burn.amount, Tokens::whole(6));
    assert_eq!(burn.external_id, Some(format!("order:{}", placed.order.id)));
    assert_eq!(placed.order.wallet_id.as_deref(), Some(wallet.id.as_str()));

    // Too dear: no order, no stock taken, no transaction.
    let mut dear = order(Some("p-2"), vec![line("dinner", Some("dinner-std"), 3)]);
    dear.wallet = Some("w-1".into());
    let err = store
        .orders()
        .place_order(&c, dear, key())
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::InsufficientBalance { .. }),
        "{err:?}"
    );
    let mut last_mug = order(
        Some("p-3"),
        vec![line("mug", None, 1), line("dinner", Some("dinner-std"), 3)],
    );
    last_mug.wallet = Some("w-1".into());
    assert!(
        store
            .orders()
            .place_order(&c, last_mug, key())
            .await
            .is_err()
    );
    let scope = OrderScope::campaign(&c);
    assert_eq!(
        store
            .orders()
            .list_orders(&scope, None, false, Page::default())
            .await
            .unwrap()
            .total,
        1
    );
    let mug = store.catalogue().catalogue_products(&c).await.unwrap();
    let mug = mug.iter().find(|p| p.id == "mug").unwrap();
    assert_eq!(mug.variants[0].stock, Some(1), "3 less the 2 sold");
    let burns = TransactionFilter {
        kinds: vec![TransactionKind::Burn],
        ..Default::default()
    };
    let listed = store
        .ledger()
        .list_transactions(&c, &burns, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(
        store.ledger().get_wallet(&c, "w-1").await.unwrap().balance,
        Tokens::whole(54)
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());

    // Another member's wallet cannot pay.
    store
        .members()
        .create_member(
            &c.org(),
            store::NewMember {
                first_name: "Bo".into(),
                idp: "reference".into(),
                user_id: "u-2".into(),
                external_id: "card-2".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store
        .ledger()
        .create_wallet(
            &c,
            NewWallet {
                owner: Some("card-2".into()),
                external_id: Some("w-2".into()),
                name: None,
            },
        )
        .await
        .unwrap();
    let mut theirs = order(None, vec![line("mug", None, 1)]);
    theirs.wallet = Some("w-2".into());
    let err = store
        .orders()
        .place_order(&c, theirs, key())
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Invalid {
                field: "walletId",
                ..
            }
        ),
        "{err:?}"
    );
}

async fn codes_are_sealed_and_redeemed_once(store: Store) {
    let c = setup(&store).await;
    let placed = store
        .orders()
        .place_order(
            &c,
            order(None, vec![line("dinner", Some("dinner-std"), 3)]),
            key(),
        )
        .await
        .unwrap();
    let scope = OrderScope::campaign(&c);
    let line_id = placed.order.lines[0].id.clone();
    let clear = store
        .orders()
        .order_line(&scope, &placed.order.id, &line_id, None, Some(&key()))
        .await
        .unwrap();
    let codes: Vec<String> = clear.codes.iter().map(|c| c.code.clone()).collect();
    assert_eq!(codes.len(), 3);
    for (code, masked) in codes.iter().zip(&placed.order.lines[0].codes) {
        assert_eq!(code.len(), 15, "{code}");
        assert_eq!(store::masked_code(code), masked.code);
    }

    // Nothing stored holds a code in clear: every column of every code row is read.
    let mut stored = Vec::new();
    for column in [
        "id",
        "org_id",
        "line_id",
        "sealed",
        "lookup",
        "tail",
        "redeemed_by",
    ] {
        let sql = format!("SELECT {column} FROM redemption_codes");
        stored.extend(store.stored_bytes(&sql).await);
    }
    assert_eq!(stored.len(), 3 * 6, "every column but redeemed_by is set");
    for code in &codes {
        for clear in [code.clone(), code.replace('-', "")] {
            let found = stored
                .iter()
                .any(|v| v.windows(clear.len()).any(|w| w == clear.as_bytes()));
            assert!(!found, "{clear} is stored in clear");
        }
    }

    // Two partners at once: exactly one redeems it; typed loosely, it is the same code.
    let loose = codes[0].to_lowercase().replace('-', " ");
    let redeem = |code: String, partner: &'static str| {
        let (store, org) = (store.clone(), c.org());
        tokio::spawn(async move {
            store
                .orders()
                .redeem_code(&org, &code, &key(), partner)
                .await
        })
    };
    let (a, b) = (redeem(codes[0].clone(), "key-a"), redeem(loose, "key-b"));
    let outcomes = [a.await.unwrap(), b.await.unwrap()];
    assert_eq!(
        outcomes.iter().filter(|r| r.is_ok()).count(),
        1,
        "{outcomes:?}"
    );
    assert!(outcomes.iter().any(|r| matches!(
        r,
        Err(StoreError::Refused {
            code: "already_redeemed",
            ..
        })
    )));
    let redeemed = outcomes.into_iter().find_map(Result::ok).unwrap();
    assert_eq!(redeemed.line_id, line_id);
    assert_eq!(redeemed.product.name, "Dinner for two");
    let unknown = store
        .orders()
        .redeem_code(&c.org(), "0000-0000-00000", &key(), "k")
        .await;
    assert!(matches!(unknown, Err(StoreError::NotFound { .. })));
    let other_org = store.tenancy().create_org("Other").await.unwrap();
    let elsewhere = store
        .orders()
        .redeem_code(&other_org.scope(), &codes[1], &key(), "k")
        .await;
    assert!(
        matches!(elsewhere, Err(StoreError::NotFound { .. })),
        "codes are the organisation's"
    );

    let read = store
        .orders()
        .get_order(&scope, &placed.order.id, None)
        .await
        .unwrap();
    let flags: Vec<bool> = read.lines[0]
        .codes
        .iter()
        .map(|c| c.redeemed_at.is_some())
        .collect();
    assert_eq!(flags, [true, false, false]);
    // Another key cannot open them.
    let wrong = CodeKey::new(&[8u8; 32]);
    let err = store
        .orders()
        .order_line(&scope, &placed.order.id, &line_id, None, Some(&wrong))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::UnknownStored { .. }), "{err:?}");
}

async fn bookings_follow_the_state_machine(store: Store) {
    let c = setup(&store).await;
    let mut dinner = line("dinner", Some("dinner-std"), 1);
    dinner.booking = Some(booking(next_friday(), Some("cpt")));
    let placed = store
        .orders()
        .place_order(&c, order(None, vec![dinner, line("mug", None, 1)]), key())
        .await
        .unwrap();
    let inline = placed.order.lines[0]
        .booking
        .clone()
        .expect("booked with the order");
    assert_eq!(inline.status, BookingStatus::Requested);
    assert_eq!(inline.branch.as_deref(), Some("cpt"));
    let line_id = placed.order.lines[0].id.clone();
    let mug_line = placed.order.lines[1].id.clone();

    // One booking going ahead per line; a line that needs none takes none.
    let again = store
        .orders()
        .create_booking(&c, &line_id, booking(next_friday(), Some("jhb")))
        .await;
    assert!(
        matches!(
            again,
            Err(StoreError::Refused {
                code: "booking_exists",
                ..
            })
        ),
        "{again:?}"
    );
    let mug = store
        .orders()
        .create_booking(&c, &mug_line, booking(next_friday(), None))
        .await;
    assert!(
        matches!(
            mug,
            Err(StoreError::Refused {
                code: "booking_not_required",
                ..
            })
        ),
        "{mug:?}"
    );

    use BookingStatus::*;
    let all = [Requested, Pending, Confirmed, Unsuccessful, Cancelled];
    let legal = |from: BookingStatus, to: BookingStatus| {
        from == to
            || matches!(
                (from, to),
                (Requested, Pending | Confirmed | Unsuccessful | Cancelled)
                    | (Pending, Confirmed | Unsuccessful | Cancelled)
                    | (Confirmed, Cancelled)
            )
    };
    // Every pair: a fresh booking brought to `from` along legal moves, then asked to go to
    // `to` (the one before is cancelled first, so that the line can be booked again).
    let path_to = |s: BookingStatus| if s == Requested { vec![] } else { vec![s] };
    let (mut current, mut active) = (inline.id.clone(), true);
    for from in all {
        for to in all {
            let set = |status| BookingPatch {
                status: Some(status),
                ..Default::default()
            };
            if active {
                store
                    .orders()
                    .update_booking(&c, &current, set(Cancelled))
                    .await
                    .unwrap();
            }
            current = store
                .orders()
                .create_booking(&c, &line_id, booking(next_friday(), Some("jhb")))
                .await
                .unwrap()
                .id;
            for step in path_to(from) {
                store
                    .orders()
                    .update_booking(&c, &current, set(step))
                    .await
                    .unwrap();
            }
            let before = store.orders().get_booking(&c, &current).await.unwrap();
            assert_eq!(before.status, from);
            let moved = store.orders().update_booking(&c, &current, set(to)).await;
            if legal(from, to) {
                let moved = moved.unwrap_or_else(|e| panic!("{from:?} -> {to:?}: {e}"));
                assert_eq!(moved.status, to);
                if from == to {
                    assert_eq!(moved, before, "nothing changed");
                }
                active = to.is_active();
            } else {
                let err = moved.unwrap_err();
                assert!(
                    matches!(&err, StoreError::Refused { code: "illegal_transition", message, .. }
                        if message.contains(from.as_str()) && message.contains(to.as_str())),
                    "{from:?} -> {to:?}: {err:?}"
                );
                active = from.is_active();
            }
        }
    }
}

async fn booking_dates_and_branches_are_checked(store: Store) {
    let c = setup(&store).await;
    let placed = store
        .orders()
        .place_order(
            &c,
            order(None, vec![line("dinner", Some("dinner-std"), 1)]),
            key(),
        )
        .await
        .unwrap();
    let line_id = placed.order.lines[0].id.clone();
    let friday = next_friday();
    let thursday = friday - Duration::days(1);
    let past = friday - Duration::days(21);
    for (new, path) in [
        (booking(thursday, Some("cpt")), "date"),
        (booking(past, Some("cpt")), "date"),
        (booking(friday, Some("nowhere")), "branch"),
        (booking(friday, None), "branch"),
        (
            NewBooking {
                pax: 0,
                ..booking(friday, Some("cpt"))
            },
            "pax",
        ),
    ] {
        let err = store
            .orders()
            .create_booking(&c, &line_id, new)
            .await
            .unwrap_err();
        let StoreError::Rejected(problems) = &err else {
            panic!("{err:?}");
        };
        assert_eq!(problems[0].path, path, "{problems:?}");
    }
    // Friday 23:30 at UTC+2 is Friday there, though Friday 21:30 in UTC: the offset given counts.
    let late = friday + Duration::minutes(270);
    assert_eq!(late.weekday(), chrono::Weekday::Fri);
    let b = store
        .orders()
        .create_booking(&c, &line_id, booking(late, Some("cpt")))
        .await
        .unwrap();
    // Moving it: the same checks; notes and pax change freely.
    let patch = BookingPatch {
        date: Some(thursday),
        ..Default::default()
    };
    let err = store
        .orders()
        .update_booking(&c, &b.id, patch)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::Rejected(_)), "{err:?}");
    let patch = BookingPatch {
        date: Some(friday + Duration::days(1)),
        pax: Some(4),
        notes: Some(Some("Window".into())),
        ..Default::default()
    };
    let moved = store
        .orders()
        .update_booking(&c, &b.id, patch)
        .await
        .unwrap();
    assert_eq!((moved.pax, moved.notes.as_deref()), (4, Some("Window")));
    // A cancelled booking keeps its details.
    let cancel = BookingPatch {
        status: Some(BookingStatus::Cancelled),
        ..Default::default()
    };
    store
        .orders()
        .update_booking(&c, &b.id, cancel)
        .await
        .unwrap();
    let late_change = BookingPatch {
        pax: Some(5),
        ..Default::default()
    };
    let err = store
        .orders()
        .update_booking(&c, &b.id, late_change)
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Refused {
                code: "booking_closed",
                ..
            }
        ),
        "{err:?}"
    );

    let listed = store
        .orders()
        .list_bookings(
            &c,
            &store::BookingFilter {
                owner: Some("card-1".into()),
                ..Default::default()
            },
            Page::default(),
        )
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    let read = store
        .orders()
        .get_order(&OrderScope::campaign(&c), &placed.order.id, None)
        .await
        .unwrap();
    assert_eq!(
        read.lines[0].booking.as_ref().map(|b| b.status),
        Some(BookingStatus::Cancelled)
    );
}

async fn other_organisations_see_nothing(store: Store) {
    let c = setup(&store).await;
    let placed = store
        .orders()
        .place_order(
            &c,
            order(None, vec![line("dinner", Some("dinner-std"), 1)]),
            key(),
        )
        .await
        .unwrap();
    let other_org = store.tenancy().create_org("Other").await.unwrap();
    let other = store
        .tenancy()
        .create_campaign(
            &other_org.scope(),
            store::NewCampaign {
                name: "X".into(),
                currency: "EUR".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let scope = OrderScope::organisation(&other);
    let err = store
        .orders()
        .get_order(&scope, &placed.order.id, None)
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }));
    let line_id = &placed.order.lines[0].id;
    let err = store
        .orders()
        .create_booking(&other, line_id, booking(next_friday(), Some("cpt")))
        .await
        .unwrap_err();
    assert!(matches!(err, StoreError::NotFound { .. }));
    assert_eq!(
        store
            .orders()
            .list_orders(&scope, None, true, Page::default())
            .await
            .unwrap()
            .total,
        0
    );
    // The same organisation's other campaign sees it only across campaigns.
    let sibling = store
        .tenancy()
        .create_campaign(
            &c.org(),
            store::NewCampaign {
                name: "Y".into(),
                currency: "PTS".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(
        store
            .orders()
            .get_order(&OrderScope::campaign(&sibling), &placed.order.id, None)
            .await
            .is_err()
    );
    assert!(
        store
            .orders()
            .get_order(&OrderScope::organisation(&sibling), &placed.order.id, None)
            .await
            .is_ok()
    );
}

backend_tests!(
    orders_total_their_lines_and_keep_what_was_ordered,
    a_reference_makes_an_order_once,
    problems_with_lines_are_named,
    concurrent_orders_never_oversell,
    paying_with_points_burns_in_the_same_transaction,
    codes_are_sealed_and_redeemed_once,
    bookings_follow_the_state_machine,
    booking_dates_and_branches_are_checked,
    other_organisations_see_nothing,
);
