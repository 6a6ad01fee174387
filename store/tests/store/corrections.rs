//! Corrections on both backends: refunds of burns and reversals of earns (returns), with the
//! campaign's shortfall policy, under concurrency, audited.

use chrono::{Duration, Utc};
use store::{
    Expiry, NewCorrection, NewTier, Page, Policy, RuleBook, Shortfall, Store, StoreError, Tokens,
    TransactionFilter, TransactionKind, backend_tests,
};

use crate::ledger::{Setup, balance, burn, drain, earn, earn_on, reused_for, set_expiry, setup};

/// A correction of transaction `id` under `external_id`: of `amount` (tokens for a burn, the
/// value returned for an earn), or all that is left.
pub(crate) fn correction(id: &str, external_id: &str, amount: Option<&str>) -> NewCorrection {
    NewCorrection {
        transaction_id: id.into(),
        external_id: external_id.into(),
        amount: amount.map(|a| a.parse().unwrap()),
        description: Some("Returned voucher".into()),
        comment: None,
        meta: None,
    }
}

/// A refund gives a burn's tokens back into the lots it took them from: a lot already past its
/// expiry expires again at the next sweep, as a transaction of its own; never more than the
/// burn in total; the same request again is answered with the first refund, another under the
/// same key is a conflict; only a burn of the campaign is refunded.
async fn refunds_give_back_to_the_lots_a_burn_took_from(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("old", "10", 25))
        .await
        .unwrap(); // due in 5 days
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("newer", "20", 5))
        .await
        .unwrap(); // due in 25 days
    drain(&store, &book).await;
    let burned = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 15))
        .await
        .unwrap();
    let burn_id = burned.transaction.id.clone();
    // The old lot's other tokens are spent before it is due; 5 of "newer" were burned.
    let refund = correction(&burn_id, "r-1", Some("4"));
    let first = store
        .ledger()
        .correct(&s.campaign, refund.clone())
        .await
        .unwrap();
    assert!(!first.replayed);
    assert_eq!(first.transaction.kind, TransactionKind::Refund);
    assert_eq!(first.transaction.amount, Tokens::whole(4));
    assert_eq!(balance(&store, &s).await, Tokens::whole(19));
    // Given back to the newest lot first: "newer" holds 19 again, "old" none.
    let later = Utc::now() + Duration::days(6);
    assert_eq!(
        store.ledger().expire(later).await.unwrap(),
        0,
        "nothing of old is back"
    );

    let again = store.ledger().correct(&s.campaign, refund).await.unwrap();
    assert!(again.replayed);
    assert_eq!(again.transaction.id, first.transaction.id);
    let other = store
        .ledger()
        .correct(&s.campaign, correction(&burn_id, "r-1", Some("3")))
        .await;
    assert_eq!(reused_for(&other), Some("amount"), "{other:?}");
    let too_much = store
        .ledger()
        .correct(&s.campaign, correction(&burn_id, "r-2", Some("12")))
        .await;
    assert!(
        matches!(&too_much, Err(StoreError::Refused { code: "refund_exceeds_burn", field: Some(f), .. }) if f == "amount"),
        "11 are left: {too_much:?}"
    );
    // The rest: 1 to "newer", then 10 to "old", which has expired by now.
    let rest = store
        .ledger()
        .correct(&s.campaign, correction(&burn_id, "r-3", None))
        .await
        .unwrap();
    assert_eq!(rest.transaction.amount, Tokens::whole(11));
    assert_eq!(balance(&store, &s).await, Tokens::whole(30));
    assert_eq!(
        store.ledger().expire(later).await.unwrap(),
        1,
        "old's 10 expire again"
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(20));
    let none_left = store
        .ledger()
        .correct(&s.campaign, correction(&burn_id, "r-4", None))
        .await;
    assert!(
        matches!(
            none_left,
            Err(StoreError::Refused {
                code: "refund_exceeds_burn",
                ..
            })
        ),
        "{none_left:?}"
    );

    // Only an earn or a burn, of this campaign.
    let expiries = TransactionFilter {
        kinds: vec![TransactionKind::Expiry],
        ..Default::default()
    };
    let an_expiry = store
        .ledger()
        .list_transactions(&s.campaign, &expiries, Page::default())
        .await
        .unwrap()
        .items
        .remove(0);
    let not_correctable = store
        .ledger()
        .correct(&s.campaign, correction(&an_expiry.id, "r-5", None))
        .await;
    assert!(
        matches!(&not_correctable, Err(StoreError::Refused { code: "not_correctable", field: Some(f), .. }) if f == "id"),
        "{not_correctable:?}"
    );
    let unknown = store
        .ledger()
        .correct(&s.campaign, correction("no-such", "r-6", None))
        .await;
    assert!(
        matches!(unknown, Err(StoreError::NotFound { .. })),
        "{unknown:?}"
    );
    let elsewhere = store::testing::campaign_fixture(&store).await;
    let theirs = store
        .ledger()
        .correct(&elsewhere, correction(&burn_id, "r-7", None))
        .await;
    assert!(
        matches!(theirs, Err(StoreError::NotFound { .. })),
        "{theirs:?}"
    );
    let zero = store
        .ledger()
        .correct(&s.campaign, correction(&burn_id, "r-8", Some("0")))
        .await;
    assert!(matches!(zero, Err(StoreError::Invalid { .. })), "{zero:?}");
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// Credits earn `id` of `amount`, dated `days_ago`: its EARN transaction's id.
pub(crate) async fn credit(
    store: &Store,
    s: &Setup,
    id: &str,
    amount: &str,
    days_ago: i64,
) -> String {
    let request = store
        .ledger()
        .submit_earn(&s.campaign, earn_on(id, amount, days_ago))
        .await
        .unwrap();
    drain(store, &RuleBook::new(store.programme().clone())).await;
    let done = store
        .ledger()
        .earn_request(&s.campaign, &request.id)
        .await
        .unwrap();
    done.transaction_id.expect("credited")
}

/// The refusal's code and field, if `result` is one.
pub(crate) fn refusal<T>(result: &Result<T, StoreError>) -> Option<(&'static str, Option<&str>)> {
    match result {
        Err(StoreError::Refused { code, field, .. }) => Some((code, field.as_deref())),
        _ => None,
    }
}

pub(crate) async fn set_shortfall(store: &Store, s: &Setup, shortfall: Shortfall) {
    let policy = Policy {
        shortfall,
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
}

/// A return of part of a purchase takes the same part of its tokens, rounded as the campaign
/// rounds; the last takes exactly what is left, so the returns add up to the earn. The tokens
/// leave the returned earn's own lot; lifetime earnings fall and the tier follows them. The
/// same request again is a replay; a used id (of a refund too) with another request a conflict.
async fn returns_take_back_their_share_of_an_earn(store: Store) {
    let s = setup(&store).await;
    set_expiry(&store, &s, Expiry::Days(30)).await;
    let gold = NewTier {
        name: "Gold".into(),
        precedence: 1,
        threshold: Tokens::whole(100),
        benefits: vec![],
        image_url: None,
    };
    store
        .programme()
        .create_tier(&s.campaign, gold)
        .await
        .unwrap();
    credit(&store, &s, "old", "10", 25).await; // due in 5 days
    let big = credit(&store, &s, "big", "100", 5).await;
    let wallet = store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(wallet.tier.map(|t| t.name).as_deref(), Some("Gold"));

    // A third of the value, twice: a third of the tokens each, rounded down (the default rules).
    let first = correction(&big, "ret-1", Some("33.33"));
    let one = store
        .ledger()
        .correct(&s.campaign, first.clone())
        .await
        .unwrap();
    let t = &one.transaction;
    assert_eq!(
        (t.kind, t.amount),
        (TransactionKind::Reversal, Tokens::whole(33))
    );
    assert_eq!(t.source_amount.as_deref(), Some("33.33"));
    assert_eq!(t.corrects.as_deref(), Some(big.as_str()));
    let again = store.ledger().correct(&s.campaign, first).await.unwrap();
    assert!(again.replayed && again.transaction.id == one.transaction.id);
    for other in [
        correction(&big, "ret-1", Some("33")),
        correction(&big, "ret-1", None),
    ] {
        let conflict = store.ledger().correct(&s.campaign, other).await;
        assert_eq!(reused_for(&conflict), Some("amount"), "{conflict:?}");
    }
    let two = store
        .ledger()
        .correct(&s.campaign, correction(&big, "ret-2", Some("33.33")))
        .await
        .unwrap();
    assert_eq!(two.transaction.amount, Tokens::whole(33));
    let wallet = store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        (wallet.balance, wallet.earned),
        (Tokens::whole(44), Tokens::whole(44))
    );
    assert!(wallet.tier.is_none(), "below Gold's 100 now");
    let too_much = store
        .ledger()
        .correct(&s.campaign, correction(&big, "ret-3", Some("33.35")))
        .await;
    assert_eq!(
        refusal(&too_much),
        Some(("reversal_exceeds_earn", Some("amount")))
    );

    // The rest of the value takes exactly the tokens left: the returns add up to the earn.
    let rest = store
        .ledger()
        .correct(&s.campaign, correction(&big, "ret-5", None))
        .await
        .unwrap();
    assert_eq!(rest.transaction.amount, Tokens::whole(34));
    assert_eq!(rest.transaction.source_amount.as_deref(), Some("33.34"));
    let original = store
        .ledger()
        .get_transaction(&s.campaign, &big)
        .await
        .unwrap();
    assert_eq!(original.corrected, Tokens::whole(100));
    let nothing_left = store
        .ledger()
        .correct(&s.campaign, correction(&big, "ret-4", Some("0.01")))
        .await;
    assert_eq!(
        refusal(&nothing_left),
        Some(("reversal_exceeds_earn", Some("amount")))
    );
    let nothing_left = store
        .ledger()
        .correct(&s.campaign, correction(&big, "ret-6", None))
        .await;
    assert_eq!(
        refusal(&nothing_left),
        Some(("reversal_exceeds_earn", Some("amount")))
    );

    // "old" was not touched: it expires whole.
    assert_eq!(
        store
            .ledger()
            .expire(Utc::now() + Duration::days(6))
            .await
            .unwrap(),
        1
    );
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);

    // Corrections share their ids: a refund under a reversal's id is a conflict.
    credit(&store, &s, "more", "5", 0).await;
    let b = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 2))
        .await
        .unwrap();
    let reused = store
        .ledger()
        .correct(&s.campaign, correction(&b.transaction.id, "ret-1", None))
        .await;
    assert_eq!(
        reused_for(&reused),
        Some("id"),
        "another transaction: {reused:?}"
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A part of an earn made by a rule set takes its share rounded by that set's rounding and
/// decimals.
async fn a_part_is_rounded_by_the_rules_that_made_the_earn(store: Store) {
    let s = setup(&store).await;
    let rules = "[programme]\nrounding = 'round'\ndecimals = 1\n\n\
                 [[rule]]\nid = 'more'\npriority = 1\naward = 'amount * 1.5'\n";
    store
        .programme()
        .set_rule_set(&s.campaign, rules)
        .await
        .unwrap();
    let request = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "7"))
        .await
        .unwrap();
    drain(
        &store,
        &RuleBook::fresh_for(store.programme().clone(), std::time::Duration::ZERO),
    )
    .await;
    let done = store
        .ledger()
        .earn_request(&s.campaign, &request.id)
        .await
        .unwrap();
    assert_eq!(done.tokens, Some(Tokens::from_text("10.5").unwrap()));
    let e = done.transaction_id.unwrap();
    // 10.5 x 0.5 / 7 = 0.75: 0.8 rounded half away from zero to one decimal (0.7 by floor).
    let part = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret-1", Some("0.5")))
        .await
        .unwrap();
    assert_eq!(part.transaction.amount, Tokens::from_text("0.8").unwrap());
    let rest = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret-2", None))
        .await
        .unwrap();
    assert_eq!(rest.transaction.amount, Tokens::from_text("9.7").unwrap());
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// When the member has spent what a return takes back, the campaign's policy decides: a debt
/// (the default) that blocks burns and that the next tokens credited pay before anything else
/// can spend or expire them; taking only what is left; or refusing, naming the shortfall.
async fn a_return_of_spent_tokens_follows_the_shortfall_policy(store: Store) {
    // Debt.
    let s = setup(&store).await;
    set_expiry(&store, &s, Expiry::Days(30)).await;
    let e = credit(&store, &s, "e", "10", 2).await;
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 8))
        .await
        .unwrap();
    let back = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret", None))
        .await
        .unwrap();
    assert_eq!(back.transaction.amount, Tokens::whole(10));
    assert_eq!(balance(&store, &s).await, Tokens::whole(-8));
    let blocked = store.ledger().burn(&s.campaign, burn("b-2", 1)).await;
    assert!(
        matches!(blocked, Err(StoreError::InsufficientBalance { .. })),
        "{blocked:?}"
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());
    credit(&store, &s, "older", "5", 25).await; // due in 5 days, behind the position
    assert_eq!(balance(&store, &s).await, Tokens::whole(-3));
    credit(&store, &s, "newer", "10", 1).await;
    assert_eq!(balance(&store, &s).await, Tokens::whole(7));
    assert!(store.ledger().audit().await.unwrap().is_empty());
    // The debt takes "older" (its 5) before it can expire, and 3 of "newer".
    let later = Utc::now() + Duration::days(6);
    assert_eq!(store.ledger().expire(later).await.unwrap(), 0);
    assert_eq!(balance(&store, &s).await, Tokens::whole(7));
    store
        .ledger()
        .burn(&s.campaign, burn("b-3", 7))
        .await
        .unwrap();
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());

    // Clip: the wallet gives what it has; the earn counts as reversed whole.
    let s = setup(&store).await;
    set_shortfall(&store, &s, Shortfall::Clip).await;
    let e = credit(&store, &s, "e", "10", 1).await;
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 8))
        .await
        .unwrap();
    let back = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret", None))
        .await
        .unwrap();
    assert_eq!(back.transaction.amount, Tokens::whole(2));
    let wallet = store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        (wallet.balance, wallet.earned),
        (Tokens::ZERO, Tokens::ZERO)
    );
    let original = store
        .ledger()
        .get_transaction(&s.campaign, &e)
        .await
        .unwrap();
    assert_eq!(original.corrected, Tokens::whole(10));
    let again = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret-2", None))
        .await;
    assert_eq!(
        refusal(&again),
        Some(("reversal_exceeds_earn", Some("amount")))
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());

    // Refuse: nothing changes; a return the wallet can cover goes through.
    let s = setup(&store).await;
    set_shortfall(&store, &s, Shortfall::Refuse).await;
    let e = credit(&store, &s, "e", "10", 1).await;
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 8))
        .await
        .unwrap();
    let refused = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret", None))
        .await;
    assert_eq!(
        refusal(&refused),
        Some(("reversal_shortfall", Some("amount")))
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(2));
    let part = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret-2", Some("2")))
        .await
        .unwrap();
    assert_eq!(part.transaction.amount, Tokens::whole(2));
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// 100 returns of one earn racing 30 burns of its wallet: the returns take exactly the earn's
/// tokens, no lot goes below zero, and what the burns spent is owed.
async fn concurrent_returns_and_burns_end_exact(store: Store) {
    let s = setup(&store).await;
    let e = credit(&store, &s, "e", "100", 1).await;
    let mut returns = Vec::new();
    for i in 0..100 {
        let (store, campaign, e) = (store.clone(), s.campaign.clone(), e.clone());
        returns.push(tokio::spawn(async move {
            let c = correction(&e, &format!("ret-{i}"), Some("1.5"));
            store.ledger().correct(&campaign, c).await
        }));
    }
    let mut burns = Vec::new();
    for i in 0..30 {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        burns.push(tokio::spawn(async move {
            store
                .ledger()
                .burn(&campaign, burn(&format!("b-{i}"), 1))
                .await
        }));
    }
    let (mut taken, mut over) = (Tokens::ZERO, 0);
    for task in returns {
        match task.await.unwrap() {
            Ok(c) => taken = taken.checked_add(c.transaction.amount).unwrap(),
            Err(StoreError::Refused {
                code: "reversal_exceeds_earn",
                ..
            }) => over += 1,
            Err(other) => panic!("{other}"),
        }
    }
    let mut burned = 0;
    for task in burns {
        match task.await.unwrap() {
            Ok(_) => burned += 1,
            Err(StoreError::InsufficientBalance { .. }) => {}
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!(
        (taken, over),
        (Tokens::whole(66), 34),
        "66 x 1.5 of the 100"
    );
    let rest = store
        .ledger()
        .correct(&s.campaign, correction(&e, "ret-rest", None))
        .await
        .unwrap();
    assert_eq!(rest.transaction.amount, Tokens::whole(34));
    assert_eq!(balance(&store, &s).await, Tokens::whole(-burned));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A wallet holding many aside rows (each partial return of an earn it has not spent yet makes
/// one) is spent in date order across them, however many a burn reads at a time.
async fn a_burn_over_many_aside_rows_takes_them_in_date_order(store: Store) {
    let s = setup(&store).await;
    let mut earns = Vec::new();
    for i in 0..40 {
        // Oldest first: earn i is dated 40 - i days back.
        earns.push(credit(&store, &s, &format!("e-{i}"), "10", 40 - i).await);
    }
    // Half of each earn returned: 40 aside rows of 5 tokens, all after the position.
    for (i, e) in earns.iter().enumerate() {
        let half = correction(e, &format!("r-{i}"), Some("5"));
        store.ledger().correct(&s.campaign, half).await.unwrap();
    }
    assert_eq!(balance(&store, &s).await, Tokens::whole(200));
    // 3 earns and a part, then 30 more and a part over two burns: the oldest lots each time.
    let first = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 17))
        .await
        .unwrap();
    let took = store
        .ledger()
        .spends_of(&first.transaction.id)
        .await
        .unwrap();
    let mut expected: Vec<(String, i64)> = earns[..4]
        .iter()
        .zip([5, 5, 5, 2])
        .map(|(e, t)| (e.clone(), t * 1_000_000))
        .collect();
    expected.sort();
    assert_eq!(took, expected);
    store
        .ledger()
        .burn(&s.campaign, burn("b-2", 153))
        .await
        .unwrap();
    let lots = store.ledger().lots_of(&s.wallet.id).await.unwrap();
    let mut left: Vec<(String, i64)> = earns[34..].iter().map(|e| (e.clone(), 5_000_000)).collect();
    left.sort();
    assert_eq!(lots, left, "the six newest are whole");
    assert_eq!(balance(&store, &s).await, Tokens::whole(30));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

backend_tests!(
    a_burn_over_many_aside_rows_takes_them_in_date_order,
    refunds_give_back_to_the_lots_a_burn_took_from,
    returns_take_back_their_share_of_an_earn,
    a_part_is_rounded_by_the_rules_that_made_the_earn,
    a_return_of_spent_tokens_follows_the_shortfall_policy,
    concurrent_returns_and_burns_end_exact,
);
