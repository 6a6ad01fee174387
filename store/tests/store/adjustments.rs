//! Manual adjustments on both backends: a credit or debit recorded as a transaction naming its
//! adjustment and reason, limits per adjustment, four-eyes approval above a threshold, repeats
//! under a key, bulk files with a dry run, and two approvals racing.

use std::collections::HashMap;

use store::{
    AdjustmentFilter, AdjustmentLimits, AdjustmentReason, AdjustmentRules, AdjustmentStatus,
    NewAdjustment, Page, Requester, Role, RowOutcome, Store, StoreError, Tokens, TransactionFilter,
    TransactionKind, backend_tests,
};

use crate::ledger::{Setup, balance, setup};

fn adjustment(amount: i64, reason: AdjustmentReason) -> NewAdjustment {
    NewAdjustment {
        wallet: "w-1".into(),
        amount: Tokens::whole(amount),
        reason,
        comment: "The member called about a missing stamp".into(),
        external_id: None,
    }
}

fn operator(id: &str) -> Requester {
    Requester {
        id: id.into(),
        name: format!("{id}@example.com"),
    }
}

const FREE: AdjustmentRules = AdjustmentRules {
    limit: None,
    approval_over: None,
};

async fn clean(store: &Store) {
    let found = store.ledger().audit().await.unwrap();
    assert!(found.is_empty(), "{found:?}");
}

fn refused_code(err: StoreError) -> &'static str {
    match err {
        StoreError::Refused { code, .. } => code,
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A credit is an EARN and a debit a BURN, each naming its adjustment and reason in the
/// wallet's history; a debit the wallet cannot cover writes nothing.
async fn adjustments_are_linked_transactions_with_their_reason(store: Store) {
    let s = setup(&store).await;
    let ledger = store.ledger();
    let alice = operator("alice");
    let credit = ledger
        .adjust(
            &s.campaign,
            adjustment(50, AdjustmentReason::Goodwill),
            &alice,
            &FREE,
        )
        .await
        .unwrap();
    let a = &credit.adjustment;
    assert_eq!(a.status, AdjustmentStatus::Applied);
    assert_eq!(a.requested_by, "alice@example.com");
    let earn = ledger
        .get_transaction(&s.campaign, a.transaction_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        (earn.kind, earn.amount),
        (TransactionKind::Earn, Tokens::whole(50))
    );
    assert_eq!(
        earn.description.as_deref(),
        Some("Manual adjustment (goodwill)")
    );
    assert_eq!(earn.comment.as_deref(), Some(a.comment.as_str()));
    let meta = earn.meta.unwrap();
    assert_eq!(meta["adjustment"]["id"], a.id.as_str());
    assert_eq!(meta["adjustment"]["reason"], "goodwill");
    let wallet = ledger.get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        (wallet.balance, wallet.earned),
        (Tokens::whole(50), Tokens::whole(50))
    );

    let debit = ledger
        .adjust(
            &s.campaign,
            adjustment(-20, AdjustmentReason::Fraud),
            &alice,
            &FREE,
        )
        .await
        .unwrap()
        .adjustment;
    let burn = ledger
        .get_transaction(&s.campaign, debit.transaction_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        (burn.kind, burn.amount),
        (TransactionKind::Burn, Tokens::whole(20))
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(30));

    let err = ledger
        .adjust(
            &s.campaign,
            adjustment(-31, AdjustmentReason::Correction),
            &alice,
            &FREE,
        )
        .await
        .unwrap_err();
    assert!(
        matches!(err, StoreError::InsufficientBalance { .. }),
        "{err:?}"
    );
    let listed = ledger
        .list_adjustments(&s.campaign, &AdjustmentFilter::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(listed.total, 2, "the refused debit left no record");
    let filter = TransactionFilter {
        wallet_id: Some(s.wallet.id.clone()),
        ..TransactionFilter::default()
    };
    let history = ledger
        .list_transactions(&s.campaign, &filter, Page::default())
        .await
        .unwrap();
    assert_eq!(history.total, 2);
    assert_eq!(balance(&store, &s).await, Tokens::whole(30));
    clean(&store).await;

    for (bad, field) in [
        (
            NewAdjustment {
                comment: " ".into(),
                ..adjustment(1, AdjustmentReason::Goodwill)
            },
            "comment",
        ),
        (adjustment(0, AdjustmentReason::Goodwill), "amount"),
    ] {
        match ledger.adjust(&s.campaign, bad, &alice, &FREE).await {
            Err(StoreError::Invalid { field: f, .. }) => assert_eq!(f, field),
            other => panic!("expected {field} invalid, got {other:?}"),
        }
    }
    let unknown = NewAdjustment {
        wallet: "nobody".into(),
        ..adjustment(1, AdjustmentReason::Goodwill)
    };
    let err = ledger.adjust(&s.campaign, unknown, &alice, &FREE).await;
    assert!(matches!(err, Err(StoreError::NotFound { .. })), "{err:?}");
}

/// Over the threshold an adjustment waits; the one who asked cannot approve it, nor can an
/// operator whose own limit it passes; another approves it once, and then it is applied. A
/// limit refuses more at once; a request withdrawn by its requester writes nothing.
async fn four_eyes_approve_what_passes_the_threshold(store: Store) {
    let s = setup(&store).await;
    let ledger = store.ledger();
    let (alice, bob) = (operator("alice"), operator("bob"));
    let limited = AdjustmentRules {
        limit: Some(Tokens::whole(100)),
        approval_over: Some(Tokens::whole(50)),
    };
    let err = ledger
        .adjust(
            &s.campaign,
            adjustment(150, AdjustmentReason::Goodwill),
            &alice,
            &limited,
        )
        .await
        .unwrap_err();
    assert_eq!(refused_code(err), "over_limit");

    let waiting = ledger
        .adjust(
            &s.campaign,
            adjustment(80, AdjustmentReason::Migration),
            &alice,
            &limited,
        )
        .await
        .unwrap()
        .adjustment;
    assert_eq!(waiting.status, AdjustmentStatus::Pending);
    assert_eq!(waiting.transaction_id, None);
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);

    let own = ledger
        .approve_adjustment(&s.campaign, &waiting.id, &alice, &FREE)
        .await
        .unwrap_err();
    assert_eq!(refused_code(own), "own_request");
    let small = AdjustmentRules {
        limit: Some(Tokens::whole(10)),
        ..FREE
    };
    let over = ledger
        .approve_adjustment(&s.campaign, &waiting.id, &bob, &small)
        .await
        .unwrap_err();
    assert_eq!(refused_code(over), "over_limit");

    let approved = ledger
        .approve_adjustment(&s.campaign, &waiting.id, &bob, &limited)
        .await
        .unwrap();
    assert_eq!(approved.status, AdjustmentStatus::Applied);
    assert_eq!(approved.decided_by.as_deref(), Some("bob@example.com"));
    assert_eq!(balance(&store, &s).await, Tokens::whole(80));
    let earn = ledger
        .get_transaction(&s.campaign, approved.transaction_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(
        earn.meta.unwrap()["adjustment"]["approvedBy"],
        "bob@example.com"
    );
    let again = ledger
        .approve_adjustment(&s.campaign, &waiting.id, &operator("carol"), &FREE)
        .await
        .unwrap_err();
    assert_eq!(refused_code(again), "not_pending");
    assert_eq!(
        ledger
            .get_adjustment(&s.campaign, &waiting.id)
            .await
            .unwrap(),
        approved
    );

    let withdrawn = ledger
        .adjust(
            &s.campaign,
            adjustment(-60, AdjustmentReason::Correction),
            &alice,
            &limited,
        )
        .await
        .unwrap()
        .adjustment;
    let rejected = ledger
        .reject_adjustment(
            &s.campaign,
            &withdrawn.id,
            &alice,
            Some("typed wrong".into()),
        )
        .await
        .unwrap();
    assert_eq!(rejected.status, AdjustmentStatus::Rejected);
    assert_eq!(rejected.note.as_deref(), Some("typed wrong"));
    assert_eq!(balance(&store, &s).await, Tokens::whole(80));
    let pending = AdjustmentFilter {
        status: Some(AdjustmentStatus::Pending),
        ..AdjustmentFilter::default()
    };
    let listed = ledger
        .list_adjustments(&s.campaign, &pending, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.total, 0);
    clean(&store).await;
}

/// The same request again under its key answers the first; another under it is refused,
/// naming the field that differs.
async fn a_repeated_key_answers_the_first_adjustment(store: Store) {
    let s = setup(&store).await;
    let ledger = store.ledger();
    let keyed = |amount| NewAdjustment {
        external_id: Some("ticket-4411".into()),
        ..adjustment(amount, AdjustmentReason::Goodwill)
    };
    let alice = operator("alice");
    let first = ledger
        .adjust(&s.campaign, keyed(5), &alice, &FREE)
        .await
        .unwrap();
    let again = ledger
        .adjust(&s.campaign, keyed(5), &alice, &FREE)
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.adjustment, first.adjustment);
    let other = ledger
        .adjust(&s.campaign, keyed(6), &alice, &FREE)
        .await
        .unwrap_err();
    match other {
        StoreError::Refused { code, field, .. } => {
            assert_eq!((code, field.as_deref()), ("already_exists", Some("amount")));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(balance(&store, &s).await, Tokens::whole(5));
}

const FILE: &str = "wallet,amount,reason,comment\n\
    w-1,40,goodwill,Late delivery\n\
    w-1,12.5,birthday,Not a reason\n\
    nobody,5,goodwill,Unknown wallet\n\
    w-1,-30,fraud,Return abuse\n\
    w-1,-20,fraud,More than is left\n\
    w-1,500,migration,Old programme balance\n";

fn outcomes(report: &store::BulkReport) -> Vec<(u64, RowOutcome, Option<String>)> {
    report
        .rows
        .iter()
        .map(|r| (r.line, r.outcome, r.field.clone()))
        .collect()
}

/// A dry run says what each row would come to and writes nothing; the real run makes the same
/// of each row under one batch id; the same file again makes nothing twice.
async fn a_bulk_file_is_tried_then_made_row_by_row(store: Store) {
    let s = setup(&store).await;
    let ledger = store.ledger();
    let alice = operator("alice");
    let rules = AdjustmentRules {
        limit: None,
        approval_over: Some(Tokens::whole(100)),
    };
    let dry = ledger
        .adjust_bulk(&s.campaign, FILE.as_bytes(), &alice, &rules, true)
        .await
        .unwrap();
    let expected = |made: RowOutcome, waits: RowOutcome| {
        vec![
            (2, made, None),
            (3, RowOutcome::Refused, Some("reason".to_owned())),
            (4, RowOutcome::Refused, Some("wallet".to_owned())),
            (5, made, None),
            (6, RowOutcome::Refused, Some("amount".to_owned())),
            (7, waits, None),
        ]
    };
    assert_eq!(
        outcomes(&dry),
        expected(RowOutcome::WouldApply, RowOutcome::WouldWait)
    );
    assert_eq!((dry.applied, dry.pending, dry.refused), (2, 1, 3));
    assert_eq!(dry.batch_id, None);
    assert_eq!(
        balance(&store, &s).await,
        Tokens::ZERO,
        "a dry run writes nothing"
    );

    let made = ledger
        .adjust_bulk(&s.campaign, FILE.as_bytes(), &alice, &rules, false)
        .await
        .unwrap();
    assert_eq!(
        outcomes(&made),
        expected(RowOutcome::Applied, RowOutcome::Pending)
    );
    assert_eq!(made.rows[4].code.as_deref(), Some("insufficient_balance"));
    assert_eq!(balance(&store, &s).await, Tokens::whole(10));
    let batch = AdjustmentFilter {
        batch_id: made.batch_id.clone(),
        ..AdjustmentFilter::default()
    };
    let listed = ledger
        .list_adjustments(&s.campaign, &batch, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.total, 3);

    let again = ledger
        .adjust_bulk(&s.campaign, FILE.as_bytes(), &alice, &rules, false)
        .await
        .unwrap();
    let replayed: HashMap<u64, RowOutcome> =
        again.rows.iter().map(|r| (r.line, r.outcome)).collect();
    assert_eq!(replayed[&2], RowOutcome::Replayed);
    assert_eq!(replayed[&7], RowOutcome::Replayed);
    assert_eq!(again.replayed, 3);
    assert_eq!(balance(&store, &s).await, Tokens::whole(10));
    clean(&store).await;

    for (bad, says) in [
        ("wallet,amount\nw-1,5\n", "`reason` is missing"),
        ("wallet,amount,reason,comment\n", "no rows"),
    ] {
        match ledger
            .adjust_bulk(&s.campaign, bad.as_bytes(), &alice, &rules, true)
            .await
        {
            Err(StoreError::Invalid { field, message }) => {
                assert_eq!(field, "file");
                assert!(message.contains(says), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }
}

/// Two operators approving one adjustment at once: it is applied once.
async fn racing_approvals_apply_once(store: Store) {
    let s: Setup = setup(&store).await;
    let ledger = store.ledger();
    let rules = AdjustmentRules {
        limit: None,
        approval_over: Some(Tokens::whole(1)),
    };
    let waiting = ledger
        .adjust(
            &s.campaign,
            adjustment(70, AdjustmentReason::Goodwill),
            &operator("alice"),
            &rules,
        )
        .await
        .unwrap()
        .adjustment;
    let approve = |who: &'static str| {
        let (store, campaign, id) = (store.clone(), s.campaign.clone(), waiting.id.clone());
        tokio::spawn(async move {
            store
                .ledger()
                .approve_adjustment(&campaign, &id, &operator(who), &rules)
                .await
        })
    };
    let (one, two) = (approve("bob"), approve("carol"));
    let results = [one.await.unwrap(), two.await.unwrap()];
    let applied = results.iter().filter(|r| r.is_ok()).count();
    assert_eq!(applied, 1, "{results:?}");
    assert_eq!(balance(&store, &s).await, Tokens::whole(70));
    clean(&store).await;
}

/// An owner's limits are kept; the defaults hold until set; a limit below 0 is refused.
async fn adjustment_limits_are_kept(store: Store) {
    let operators = store.operators();
    let defaults = operators.adjustment_limits().await.unwrap();
    assert_eq!(defaults, AdjustmentLimits::default());
    assert_eq!(defaults.limit_of(Role::Support), Some(Tokens::whole(1_000)));
    assert_eq!(defaults.limit_of(Role::Viewer), Some(Tokens::ZERO));
    let set = AdjustmentLimits {
        owner: Some(Tokens::whole(1_000_000)),
        support: Some(Tokens::whole(250)),
        approval_over: Some(Tokens::whole(100)),
    };
    operators.set_adjustment_limits(set).await.unwrap();
    assert_eq!(operators.adjustment_limits().await.unwrap(), set);
    let rules = store.adjustment_rules(Role::Support).await.unwrap();
    assert_eq!(rules.limit, Some(Tokens::whole(250)));
    assert_eq!(rules.approval_over, Some(Tokens::whole(100)));
    let negative = AdjustmentLimits {
        support: Some(Tokens::whole(-1)),
        ..set
    };
    let err = operators.set_adjustment_limits(negative).await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Invalid {
                field: "support",
                ..
            }
        ),
        "{err:?}"
    );
    let none = AdjustmentLimits {
        owner: None,
        support: None,
        approval_over: None,
    };
    operators.set_adjustment_limits(none).await.unwrap();
    assert_eq!(operators.adjustment_limits().await.unwrap(), none);
}

backend_tests!(
    adjustments_are_linked_transactions_with_their_reason,
    four_eyes_approve_what_passes_the_threshold,
    a_repeated_key_answers_the_first_adjustment,
    a_bulk_file_is_tried_then_made_row_by_row,
    racing_approvals_apply_once,
    adjustment_limits_are_kept,
);
