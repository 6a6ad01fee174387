//! Holds on both backends: tokens reserved, captured in part or whole, voided or lapsed, beside
//! burns, expiry and reversals, under concurrency, audited.

use chrono::{DateTime, Duration, Utc};
use store::Spend;
use store::{
    Expiry, HoldFilter, HoldStatus, NewHold, Page, Policy, RuleBook, Store, StoreError, Tokens,
    TransactionKind, backend_tests,
};

use crate::corrections::correction;
use crate::ledger::{Setup, burn, drain, earn, earn_on, reused_for, set_expiry, setup};

pub(crate) fn hold(external_id: &str, amount: i64) -> NewHold {
    NewHold {
        spend: Spend {
            wallet: "w-1".into(),
            external_id: external_id.into(),
            amount: Tokens::whole(amount),
            description: "Checkout".into(),
            comment: None,
            meta: None,
        },
        expires_at: None,
    }
}

/// The wallet's balance and what is held of it, in whole tokens.
async fn figures(store: &Store, s: &Setup) -> (Tokens, Tokens) {
    let wallet = store
        .ledger()
        .get_wallet(&s.campaign, &s.wallet.id)
        .await
        .unwrap();
    (wallet.balance, wallet.held)
}

fn refused_with<T: std::fmt::Debug>(result: &Result<T, StoreError>) -> Option<(&str, &str)> {
    match result {
        Err(StoreError::Refused { code, field, .. }) => Some((code, field.as_deref()?)),
        _ => None,
    }
}

/// A campaign whose wallet holds `earns` earns of 10, each its own lot.
async fn funded(store: &Store, earns: usize) -> Setup {
    let s = setup(store).await;
    for i in 0..earns {
        store
            .ledger()
            .submit_earn(&s.campaign, earn(&format!("e-{i}"), "10"))
            .await
            .unwrap();
    }
    drain(store, &RuleBook::new(store.programme().clone())).await;
    s
}

async fn clean(store: &Store) {
    let found = store.ledger().audit().await.unwrap();
    assert!(found.is_empty(), "{found:?}");
}

/// A hold reserves tokens a burn cannot take; a capture spends part of them as a BURN from the
/// oldest lots and releases the rest; the same capture again answers the first, another is
/// refused, and a settled hold is neither captured nor voided again.
async fn a_hold_reserves_tokens_until_its_capture_spends_them(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("old", "10", 3))
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn("newer", "20"))
        .await
        .unwrap();
    drain(&store, &book).await;

    let placed = store
        .ledger()
        .hold(&s.campaign, hold("h-1", 15))
        .await
        .unwrap();
    assert!(!placed.replayed);
    assert_eq!(placed.hold.status, HoldStatus::Held);
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(30), Tokens::whole(15))
    );
    let over = store.ledger().burn(&s.campaign, burn("b-1", 16)).await;
    assert!(
        matches!(over, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(15)),
        "{over:?}"
    );
    store
        .ledger()
        .burn(&s.campaign, burn("b-2", 15))
        .await
        .unwrap();
    let another = store.ledger().hold(&s.campaign, hold("h-2", 1)).await;
    assert!(
        matches!(another, Err(StoreError::InsufficientBalance { .. })),
        "{another:?}"
    );
    clean(&store).await;

    let too_much = store
        .ledger()
        .capture_hold(&s.campaign, "h-1", Some(Tokens::whole(16)))
        .await;
    assert_eq!(
        refused_with(&too_much),
        Some(("capture_exceeds_hold", "amount"))
    );
    let captured = store
        .ledger()
        .capture_hold(&s.campaign, "h-1", Some(Tokens::whole(12)))
        .await
        .unwrap();
    assert!(captured.settled_now);
    assert_eq!(captured.hold.status, HoldStatus::Captured);
    assert_eq!(captured.hold.captured, Some(Tokens::whole(12)));
    let burn_tx = captured.transaction.clone().unwrap();
    assert_eq!(burn_tx.kind, TransactionKind::Burn);
    assert_eq!(burn_tx.amount, Tokens::whole(12));
    assert_eq!(burn_tx.external_id.as_deref(), Some("hold:h-1"));
    assert_eq!(
        captured.hold.transaction_id.as_deref(),
        Some(burn_tx.id.as_str())
    );
    // 30 - 15 burned - 12 captured; the hold's other 3 released.
    assert_eq!(figures(&store, &s).await, (Tokens::whole(3), Tokens::ZERO));
    clean(&store).await;

    let again = store
        .ledger()
        .capture_hold(&s.campaign, &placed.hold.id, Some(Tokens::whole(12)))
        .await
        .unwrap();
    assert!(!again.settled_now);
    assert_eq!(again.transaction.map(|t| t.id), Some(burn_tx.id.clone()));
    let whole_again = store
        .ledger()
        .capture_hold(&s.campaign, "h-1", None)
        .await
        .unwrap();
    assert!(
        !whole_again.settled_now,
        "no amount: whatever it was captured for"
    );
    let other = store
        .ledger()
        .capture_hold(&s.campaign, "h-1", Some(Tokens::whole(2)))
        .await;
    assert_eq!(refused_with(&other), Some(("hold_closed", "id")));
    let void = store.ledger().void_hold(&s.campaign, "h-1").await;
    assert_eq!(refused_with(&void), Some(("hold_closed", "id")));
    // The capture is a burn like any other: refunded into the lots it took.
    let refund = correction(&burn_tx.id, "r-1", None);
    store.ledger().correct(&s.campaign, refund).await.unwrap();
    assert_eq!(figures(&store, &s).await, (Tokens::whole(15), Tokens::ZERO));
    clean(&store).await;
}

/// A void releases every token; voiding again answers the hold as it is; a voided hold is
/// not captured. The hold's request under its key: the same again replays, another is
/// refused naming what differs, a refusal for the balance is kept.
async fn a_void_releases_and_a_hold_is_idempotent_by_its_key(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;

    let first = store
        .ledger()
        .hold(&s.campaign, hold("h-1", 4))
        .await
        .unwrap();
    let replay = store
        .ledger()
        .hold(&s.campaign, hold("h-1", 4))
        .await
        .unwrap();
    assert!(replay.replayed);
    assert_eq!(replay.hold.id, first.hold.id);
    let by_id_not_ref = NewHold {
        spend: Spend {
            wallet: s.wallet.id.clone(),
            ..(hold("h-1", 4)).spend
        },
        ..hold("h-1", 4)
    };
    let other = store.ledger().hold(&s.campaign, by_id_not_ref).await;
    assert_eq!(reused_for(&other), Some("walletId"));
    let other = store.ledger().hold(&s.campaign, hold("h-1", 5)).await;
    assert_eq!(reused_for(&other), Some("amount"));
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(10), Tokens::whole(4))
    );

    let short = store.ledger().hold(&s.campaign, hold("h-2", 7)).await;
    assert!(
        matches!(short, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(6)),
        "{short:?}"
    );
    let voided = store.ledger().void_hold(&s.campaign, "h-1").await.unwrap();
    assert!(voided.settled_now);
    assert_eq!(voided.hold.status, HoldStatus::Voided);
    assert_eq!(figures(&store, &s).await, (Tokens::whole(10), Tokens::ZERO));
    // Kept: refused the same way though the balance would now allow it.
    let short_again = store.ledger().hold(&s.campaign, hold("h-2", 7)).await;
    assert!(
        matches!(short_again, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(6)),
        "{short_again:?}"
    );
    let again = store
        .ledger()
        .void_hold(&s.campaign, &first.hold.id)
        .await
        .unwrap();
    assert!(!again.settled_now);
    assert_eq!(again.hold.status, HoldStatus::Voided);
    let capture = store.ledger().capture_hold(&s.campaign, "h-1", None).await;
    assert_eq!(refused_with(&capture), Some(("hold_closed", "id")));
    let unknown = store
        .ledger()
        .capture_hold(&s.campaign, "no-such", None)
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound { what: "hold" })),
        "{unknown:?}"
    );
    let nowhere = NewHold {
        spend: Spend {
            wallet: "no-such".into(),
            ..(hold("h-3", 1)).spend
        },
        ..hold("h-3", 1)
    };
    let nowhere = store.ledger().hold(&s.campaign, nowhere).await;
    assert!(
        matches!(nowhere, Err(StoreError::NotFound { what: "wallet" })),
        "{nowhere:?}"
    );

    // The campaign's minimum balance counts as for a burn.
    let policy = Policy {
        min_balance: Tokens::whole(3),
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
    let below = store.ledger().hold(&s.campaign, hold("h-4", 8)).await;
    assert!(
        matches!(below, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(7)),
        "{below:?}"
    );
    store
        .ledger()
        .hold(&s.campaign, hold("h-5", 7))
        .await
        .unwrap();

    let open = HoldFilter {
        status: Some(HoldStatus::Held),
        ..Default::default()
    };
    let listed = store
        .ledger()
        .list_holds(&s.campaign, &open, Page::default())
        .await
        .unwrap();
    let ids: Vec<&str> = listed
        .items
        .iter()
        .map(|h| h.external_id.as_str())
        .collect();
    assert_eq!(ids, ["h-5"]);
    clean(&store).await;
}

/// Tokens held do not expire while held; released after their date, they expire at the next
/// sweep.
async fn held_tokens_wait_out_their_expiry_and_expire_once_released(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("old", "10", 25))
        .await
        .unwrap(); // due in 5 days
    drain(&store, &book).await;
    store
        .ledger()
        .hold(&s.campaign, hold("h-1", 8))
        .await
        .unwrap();
    let later = Utc::now() + Duration::days(6);
    assert_eq!(
        store.ledger().expire(later).await.unwrap(),
        1,
        "the 2 not held"
    );
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(8), Tokens::whole(8))
    );
    store.ledger().void_hold(&s.campaign, "h-1").await.unwrap();
    assert_eq!(
        store.ledger().expire(later).await.unwrap(),
        1,
        "the 8 released"
    );
    assert_eq!(figures(&store, &s).await, (Tokens::ZERO, Tokens::ZERO));
    clean(&store).await;
}

/// A hold lapses at its expiry: the sweep releases it once, however many sweep at once; one
/// whose expiry came before the sweep is not captured (it lapses then).
async fn a_hold_lapses_once_at_its_expiry(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    let now = Utc::now();
    let expiring = |id: &str, amount, at: DateTime<Utc>| NewHold {
        expires_at: Some(at),
        ..hold(id, amount)
    };
    store
        .ledger()
        .hold(&s.campaign, expiring("h-1", 3, now + Duration::hours(1)))
        .await
        .unwrap();
    store
        .ledger()
        .hold(&s.campaign, expiring("h-2", 2, now + Duration::hours(1)))
        .await
        .unwrap();
    store
        .ledger()
        .hold(&s.campaign, expiring("h-3", 1, now + Duration::hours(3)))
        .await
        .unwrap();
    assert_eq!(store.ledger().lapse_holds(now).await.unwrap(), 0);
    let at = now + Duration::hours(2);
    let (a, b) = tokio::join!(
        store.ledger().lapse_holds(at),
        store.ledger().lapse_holds(at)
    );
    assert_eq!(a.unwrap() + b.unwrap(), 2, "each lapses once");
    assert_eq!(store.ledger().lapse_holds(at).await.unwrap(), 0);
    let lapsed = store.ledger().get_hold(&s.campaign, "h-1").await.unwrap();
    assert_eq!(lapsed.status, HoldStatus::Lapsed);
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(10), Tokens::whole(1))
    );
    let capture = store.ledger().capture_hold(&s.campaign, "h-2", None).await;
    assert_eq!(refused_with(&capture), Some(("hold_closed", "id")));

    // Due before any sweep ran: a capture finds it lapsed, and lapses it.
    store
        .ledger()
        .hold(
            &s.campaign,
            expiring("h-4", 4, Utc::now() - Duration::seconds(1)),
        )
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await.1, Tokens::whole(5));
    let capture = store.ledger().capture_hold(&s.campaign, "h-4", None).await;
    assert_eq!(refused_with(&capture), Some(("hold_closed", "id")));
    assert_eq!(
        store
            .ledger()
            .get_hold(&s.campaign, "h-4")
            .await
            .unwrap()
            .status,
        HoldStatus::Lapsed
    );
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(10), Tokens::whole(1))
    );
    clean(&store).await;
}

/// A return of the earn whose tokens a hold reserved cannot take them: as for a burn, the
/// campaign's shortfall policy says what happens (by default the wallet owes them).
async fn a_return_does_not_take_held_tokens(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    store
        .ledger()
        .hold(&s.campaign, hold("h-1", 10))
        .await
        .unwrap();
    let earn_id = store
        .ledger()
        .list_transactions(&s.campaign, &Default::default(), Page::default())
        .await
        .unwrap()
        .items[0]
        .id
        .clone();
    store
        .ledger()
        .correct(&s.campaign, correction(&earn_id, "r-1", None))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, (Tokens::ZERO, Tokens::whole(10)));
    clean(&store).await;
    // A hold is a burn waiting to happen: captured, the wallet owes what it spent.
    store
        .ledger()
        .capture_hold(&s.campaign, "h-1", None)
        .await
        .unwrap();
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(-10), Tokens::ZERO)
    );
    clean(&store).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-2", "15"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(figures(&store, &s).await, (Tokens::whole(5), Tokens::ZERO));
    clean(&store).await;
}

/// 200 holds, burns, captures and voids at once on one wallet never take it below zero, and
/// what they come to adds up.
async fn concurrent_holds_and_burns_never_overdraw(store: Store) {
    let s = funded(&store, 10).await;
    let mut tasks = Vec::new();
    for i in 0..200i64 {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tasks.push(tokio::spawn(async move {
            let amount = 1 + i % 3;
            match i % 4 {
                0 => store
                    .ledger()
                    .burn(&campaign, burn(&format!("b-{i}"), amount))
                    .await
                    .map(|_| Tokens::ZERO),
                1 => {
                    let placed = store
                        .ledger()
                        .hold(&campaign, hold(&format!("h-{i}"), amount))
                        .await?;
                    let captured = store
                        .ledger()
                        .capture_hold(&campaign, &placed.hold.id, None)
                        .await?;
                    Ok(captured.hold.captured.unwrap())
                }
                2 => {
                    let placed = store
                        .ledger()
                        .hold(&campaign, hold(&format!("h-{i}"), amount))
                        .await?;
                    store
                        .ledger()
                        .void_hold(&campaign, &placed.hold.id)
                        .await
                        .map(|_| Tokens::ZERO)
                }
                _ => store
                    .ledger()
                    .hold(&campaign, hold(&format!("h-{i}"), amount))
                    .await
                    .map(|_| Tokens::ZERO),
            }
        }));
    }
    let mut refused = 0;
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => {}
            Err(StoreError::InsufficientBalance { .. }) => refused += 1,
            Err(err) => panic!("{err}"),
        }
        let (balance, held) = figures(&store, &s).await;
        assert!(balance >= held, "{balance} < {held}");
    }
    assert!(refused > 0, "100 tokens cannot cover 400");
    let (balance, held) = figures(&store, &s).await;
    assert!(balance >= held && held >= Tokens::ZERO);
    clean(&store).await;
}

/// Twins of one hold racing each other place it once (the others replay it); captures of one
/// hold racing each other and a void settle it once, and every capture answers the one BURN.
async fn racing_twins_and_settlements_take_effect_once(store: Store) {
    let s = funded(&store, 3).await;
    let twins = (0..20).map(|_| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tokio::spawn(async move { store.ledger().hold(&campaign, hold("h-1", 12)).await })
    });
    let mut placed = Vec::new();
    for twin in twins {
        placed.push(twin.await.unwrap().unwrap());
    }
    let ids: std::collections::HashSet<&str> = placed.iter().map(|p| p.hold.id.as_str()).collect();
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(placed.iter().filter(|p| !p.replayed).count(), 1);
    assert_eq!(
        figures(&store, &s).await,
        (Tokens::whole(30), Tokens::whole(12))
    );

    let settlements = (0..20).map(|i| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tokio::spawn(async move {
            match i {
                7 => store.ledger().void_hold(&campaign, "h-1").await,
                _ => store.ledger().capture_hold(&campaign, "h-1", None).await,
            }
        })
    });
    let mut answers = Vec::new();
    for settlement in settlements {
        answers.push(settlement.await.unwrap());
    }
    let now: Vec<_> = answers
        .iter()
        .filter_map(|a| a.as_ref().ok())
        .filter(|a| a.settled_now)
        .collect();
    assert_eq!(now.len(), 1, "{answers:?}");
    let (balance, held) = figures(&store, &s).await;
    assert_eq!(held, Tokens::ZERO);
    if now[0].hold.status == HoldStatus::Captured {
        assert_eq!(balance, Tokens::whole(18));
        let burn = now[0].transaction.as_ref().unwrap();
        for answer in &answers[..7] {
            let answer = answer.as_ref().unwrap();
            assert_eq!(answer.transaction.as_ref().map(|t| &t.id), Some(&burn.id));
            assert_eq!(answer.hold.captured, Some(Tokens::whole(12)));
        }
        assert_eq!(refused_with(&answers[7]), Some(("hold_closed", "id")));
    } else {
        assert_eq!(balance, Tokens::whole(30));
        let closed = answers.iter().filter(|a| refused_with(a).is_some()).count();
        assert_eq!(closed, 19, "{answers:?}");
    }
    clean(&store).await;
}

backend_tests!(
    a_hold_reserves_tokens_until_its_capture_spends_them,
    a_void_releases_and_a_hold_is_idempotent_by_its_key,
    held_tokens_wait_out_their_expiry_and_expire_once_released,
    a_hold_lapses_once_at_its_expiry,
    a_return_does_not_take_held_tokens,
    concurrent_holds_and_burns_never_overdraw,
    racing_twins_and_settlements_take_effect_once,
);
