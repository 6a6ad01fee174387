//! Pending points on both backends: earns whose tokens wait out a return window (by the
//! campaign's policy or a rule), spendable by nothing until the sweep vests them, once; a
//! reversal meanwhile cancels them; tiers and expiry as the policy says; audited throughout.

use chrono::{DateTime, Duration, Utc};
use store::{
    Campaign, Expiry, ExpiryFrom, NewTier, Page, Policy, RuleBook, Store, StoreError, Tokens,
    Transaction, TransactionKind, Wallet, backend_tests,
};

use crate::corrections::correction;
use crate::holds::hold;
use crate::ledger::{Setup, burn, drain, earn, earn_on, setup};

/// The campaign's policy: tokens pending `days`, the rest as `policy` says.
async fn pending_for(store: &Store, s: &Setup, days: u32, policy: Policy) {
    let policy = Policy {
        pending_days: days,
        ..policy
    };
    store
        .programme()
        .set_policy(&s.campaign, policy)
        .await
        .unwrap();
}

async fn wallet(store: &Store, s: &Setup) -> Wallet {
    store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap()
}

/// The wallet's balance, pending and lifetime earnings, in whole tokens.
async fn figures(store: &Store, s: &Setup) -> (Tokens, Tokens, Tokens) {
    let w = wallet(store, s).await;
    (w.balance, w.pending, w.earned)
}

fn whole(balance: i64, pending: i64, earned: i64) -> (Tokens, Tokens, Tokens) {
    (
        Tokens::whole(balance),
        Tokens::whole(pending),
        Tokens::whole(earned),
    )
}

/// The EARN credited for earn id `external_id`.
async fn earn_of(store: &Store, campaign: &Campaign, external_id: &str) -> Transaction {
    let all = store
        .ledger()
        .list_transactions(campaign, &Default::default(), Page::default())
        .await
        .unwrap()
        .items;
    let found = all
        .into_iter()
        .find(|t| t.kind == TransactionKind::Earn && t.external_id.as_deref() == Some(external_id));
    let id = found.expect("the earn").id;
    store.ledger().get_transaction(campaign, &id).await.unwrap()
}

async fn audited(store: &Store) {
    assert_eq!(store.ledger().audit().await.unwrap(), []);
}

/// The campaign's rules set to `rules`, with expiry 30 days counted from vesting and `days`
/// pending by default; a book that reads them at once.
async fn with_rules(store: &Store, s: &Setup, rules: &str, days: u32) -> RuleBook {
    store
        .programme()
        .set_rule_set(&s.campaign, rules)
        .await
        .unwrap();
    let policy = Policy {
        expiry: Expiry::Days(30),
        expiry_from: ExpiryFrom::Vest,
        ..Policy::default()
    };
    pending_for(store, s, days, policy).await;
    RuleBook::fresh_for(store.programme().clone(), std::time::Duration::ZERO)
}

/// The wallet's tokens expiring by `within` days from now, per day.
async fn expiring_days(store: &Store, s: &Setup, within: i64) -> Vec<(chrono::NaiveDate, Tokens)> {
    let expiring = store
        .ledger()
        .expiring(&s.campaign, "w-1", Utc::now() + Duration::days(within))
        .await
        .unwrap();
    expiring.iter().map(|d| (d.date, d.tokens)).collect()
}

/// The days from an earn's date to its vesting, if it is pending.
fn vests(t: &Transaction) -> Option<i64> {
    t.vests_at.map(|v: DateTime<Utc>| (v - t.date).num_days())
}

/// The day `days` after an earn's date.
fn on(t: &Transaction, days: i64) -> chrono::NaiveDate {
    (t.date + Duration::days(days)).date_naive()
}

/// A pending earn counts toward nothing spendable (burns, holds, transfers' lots, expiry) until
/// its day; an earn whose window has passed by its credit is not pending; the sweep vests each
/// one once, and its tokens then spend and count toward tiers like any.
async fn pending_earns_wait_for_their_day_then_vest_once(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let policy = Policy {
        expiry: Expiry::Days(90),
        ..Policy::default()
    };
    pending_for(&store, &s, 30, policy).await;
    let silver = NewTier {
        name: "silver".into(),
        precedence: 1,
        threshold: Tokens::whole(50),
        ..Default::default()
    };
    store
        .programme()
        .create_tier(&s.campaign, silver)
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn("fresh", "100"))
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("old", "10", 40))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(figures(&store, &s).await, whole(10, 100, 10));
    assert!(wallet(&store, &s).await.tier.is_none(), "pending: no tier");
    let fresh = earn_of(&store, &s.campaign, "fresh").await;
    assert!(fresh.pending);
    let vests_at = fresh.vests_at.expect("a vesting day");
    assert_eq!(vests_at, fresh.date + Duration::days(30));
    let old = earn_of(&store, &s.campaign, "old").await;
    assert_eq!(
        (old.pending, old.vests_at),
        (false, None),
        "its window passed"
    );
    audited(&store).await;

    let refused = store.ledger().burn(&s.campaign, burn("b-1", 11)).await;
    assert!(
        matches!(refused, Err(StoreError::InsufficientBalance { .. })),
        "{refused:?}"
    );
    store
        .ledger()
        .burn(&s.campaign, burn("b-2", 10))
        .await
        .unwrap();
    let held = store.ledger().hold(&s.campaign, hold("h-1", 1)).await;
    assert!(
        matches!(held, Err(StoreError::InsufficientBalance { .. })),
        "{held:?}"
    );
    // Nothing of it expires meanwhile, even long past its expiry.
    assert_eq!(store.ledger().expire(Utc::now()).await.unwrap(), 0);
    assert_eq!(
        store.ledger().vest_pending(Utc::now()).await.unwrap(),
        0,
        "not yet"
    );
    audited(&store).await;

    let due = vests_at + Duration::seconds(1);
    let (first, second) = tokio::join!(
        store.ledger().vest_pending(due),
        store.ledger().vest_pending(due)
    );
    assert_eq!(first.unwrap() + second.unwrap(), 1, "vested once");
    assert_eq!(store.ledger().vest_pending(due).await.unwrap(), 0);
    assert_eq!(figures(&store, &s).await, whole(100, 0, 110));
    let w = wallet(&store, &s).await;
    assert_eq!(w.tier.map(|t| t.name).as_deref(), Some("silver"));
    let fresh = earn_of(&store, &s.campaign, "fresh").await;
    assert_eq!((fresh.pending, fresh.vests_at), (false, Some(vests_at)));
    audited(&store).await;

    // Its expiry counts from the earn (the policy's default): 90 days after its date.
    let dates = expiring_days(&store, &s, 95).await;
    assert_eq!(dates, [(on(&fresh, 90), Tokens::whole(100))]);
    store
        .ledger()
        .burn(&s.campaign, burn("b-3", 100))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, whole(0, 0, 110));
    audited(&store).await;
}

/// A reversal of a pending earn takes the tokens off what is pending (the balance and the
/// lots untouched): in part, the rest vests; in whole, the earn is cancelled and never vests.
/// Tokens counted toward tiers while pending (the policy's choice) leave lifetime earnings.
async fn a_reversal_of_a_pending_earn_cancels_it(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    pending_for(&store, &s, 30, Policy::default()).await;
    for (id, amount) in [("e-1", "100"), ("e-2", "50")] {
        store
            .ledger()
            .submit_earn(&s.campaign, earn(id, amount))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    assert_eq!(figures(&store, &s).await, whole(0, 150, 0));
    let e1 = earn_of(&store, &s.campaign, "e-1").await;
    let e2 = earn_of(&store, &s.campaign, "e-2").await;
    let part = store
        .ledger()
        .correct(&s.campaign, correction(&e1.id, "r-1", Some("40")))
        .await
        .unwrap();
    assert_eq!(part.transaction.kind, TransactionKind::Reversal);
    assert_eq!(part.transaction.amount, Tokens::whole(40));
    assert_eq!(figures(&store, &s).await, whole(0, 110, 0));
    store
        .ledger()
        .correct(&s.campaign, correction(&e2.id, "r-2", None))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, whole(0, 60, 0));
    let e2 = earn_of(&store, &s.campaign, "e-2").await;
    assert!(!e2.pending, "cancelled");
    assert_eq!(e2.corrected, Tokens::whole(50));
    audited(&store).await;
    let refused = store
        .ledger()
        .correct(&s.campaign, correction(&e2.id, "r-3", Some("1")))
        .await;
    assert!(
        matches!(
            refused,
            Err(StoreError::Refused {
                code: "reversal_exceeds_earn",
                ..
            })
        ),
        "{refused:?}"
    );

    let due = Utc::now() + Duration::days(31);
    assert_eq!(
        store.ledger().vest_pending(due).await.unwrap(),
        1,
        "e-1 only"
    );
    assert_eq!(figures(&store, &s).await, whole(60, 0, 60));
    audited(&store).await;
    // Once vested, a reversal takes from the lot as for any earn.
    store
        .ledger()
        .correct(&s.campaign, correction(&e1.id, "r-4", None))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, whole(0, 0, 0));
    audited(&store).await;

    // Counted toward tiers when earned: lifetime earnings move at once, and back on reversal.
    let counted = Policy {
        pending_counts_tier: true,
        ..Policy::default()
    };
    pending_for(&store, &s, 30, counted).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-5", "70"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(figures(&store, &s).await, whole(0, 70, 70));
    let e5 = earn_of(&store, &s.campaign, "e-5").await;
    store
        .ledger()
        .correct(&s.campaign, correction(&e5.id, "r-5", Some("20")))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, whole(0, 50, 50));
    audited(&store).await;
    // The policy changing meanwhile does not count the earn twice.
    pending_for(&store, &s, 30, Policy::default()).await;
    store.ledger().vest_pending(due).await.unwrap();
    assert_eq!(figures(&store, &s).await, whole(50, 0, 50));
    audited(&store).await;
}

/// A rule decides which earns are pending, over the campaign's days (0: at once); an expiry
/// counted from vesting starts on the vesting day.
async fn a_rule_decides_which_earns_are_pending(store: Store) {
    let s = setup(&store).await;
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
                 [[rule]]\nid = 'fashion'\npriority = 2\nwhen = \"meta.category == 'fashion'\"\n\
                 pending_days = 14\n\
                 [[rule]]\nid = 'trusted'\npriority = 3\nwhen = \"meta.trusted == true\"\n\
                 pending_days = 0\n";
    let book = with_rules(&store, &s, rules, 7).await;
    let with_meta = |id: &str, meta: serde_json::Value| store::EarnInput {
        meta: Some(meta),
        ..earn(id, "10")
    };
    for (id, meta) in [
        ("plain", serde_json::json!({})),
        ("fashion", serde_json::json!({"category": "fashion"})),
        (
            "trusted",
            serde_json::json!({"category": "fashion", "trusted": true}),
        ),
    ] {
        store
            .ledger()
            .submit_earn(&s.campaign, with_meta(id, meta))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let plain = earn_of(&store, &s.campaign, "plain").await;
    let fashion = earn_of(&store, &s.campaign, "fashion").await;
    let trusted = earn_of(&store, &s.campaign, "trusted").await;
    assert_eq!(vests(&plain), Some(7), "the policy's days");
    assert_eq!(vests(&fashion), Some(14), "the rule's days");
    assert_eq!(vests(&trusted), None, "a later rule's 0: at once");
    assert_eq!(figures(&store, &s).await, whole(10, 20, 10));

    store
        .ledger()
        .vest_pending(Utc::now() + Duration::days(15))
        .await
        .unwrap();
    assert_eq!(figures(&store, &s).await, whole(30, 0, 30));
    audited(&store).await;
    // Expiry counts from each one's vesting day (the trusted earn's: its own date).
    let days = expiring_days(&store, &s, 50).await;
    let ten = Tokens::whole(10);
    assert_eq!(
        days,
        [
            (on(&trusted, 30), ten),
            (on(&plain, 37), ten),
            (on(&fashion, 44), ten)
        ]
    );
}

/// A limited rule's pending days hold only while its limit lasts: an earn past the limit is
/// credited at once, and its expiry counts from its own date, not from the vesting day the
/// rule would have given it had the limit not been reached.
async fn a_limit_reached_takes_its_rules_pending_days_and_their_expiry_away(store: Store) {
    let s = setup(&store).await;
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
                 [[rule]]\nid = 'first'\npriority = 2\npending_days = 14\n\
                 limits = [{ scope = 'member', period = 'month', times = 1 }]\n";
    let book = with_rules(&store, &s, rules, 0).await;
    for id in ["first", "second"] {
        store
            .ledger()
            .submit_earn(&s.campaign, earn(id, "10"))
            .await
            .unwrap();
        drain(&store, &book).await;
    }
    let first = earn_of(&store, &s.campaign, "first").await;
    let second = earn_of(&store, &s.campaign, "second").await;
    assert_eq!(vests(&first), Some(14), "within the limit: the rule's days");
    assert_eq!(vests(&second), None, "past it: at once");
    assert_eq!(figures(&store, &s).await, whole(10, 10, 10));
    store
        .ledger()
        .vest_pending(Utc::now() + Duration::days(15))
        .await
        .unwrap();
    audited(&store).await;
    let days = expiring_days(&store, &s, 50).await;
    let ten = Tokens::whole(10);
    assert_eq!(days, [(on(&second, 30), ten), (on(&first, 44), ten)]);
}

/// A batch file's rows credited pending (a large chunk goes through `COPY` on PostgreSQL, a
/// small one through multi-row statements) vest alike.
async fn a_file_of_pending_earns_vests_alike(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    pending_for(&store, &s, 30, Policy::default()).await;
    let rows = |prefix: &str, n: u64| -> Vec<store::FileEarn> {
        (0..n)
            .map(|i| store::FileEarn {
                row: 2 + i,
                earn: earn(&format!("{prefix}-{i}"), "1"),
            })
            .collect()
    };
    for (batch, prefix, n) in [("batch-1", "big", 1_200), ("batch-2", "small", 3)] {
        store
            .batches()
            .credit_file_earns(&book, &s.campaign.org(), batch, &rows(prefix, n))
            .await
            .unwrap();
    }
    assert_eq!(figures(&store, &s).await, whole(0, 1_203, 0));
    audited(&store).await;
    let vested = store
        .ledger()
        .vest_pending(Utc::now() + Duration::days(31))
        .await
        .unwrap();
    assert_eq!(vested, 1_203);
    assert_eq!(figures(&store, &s).await, whole(1_203, 0, 1_203));
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 1_203))
        .await
        .unwrap();
    audited(&store).await;
}

backend_tests!(
    pending_earns_wait_for_their_day_then_vest_once,
    a_reversal_of_a_pending_earn_cancels_it,
    a_rule_decides_which_earns_are_pending,
    a_limit_reached_takes_its_rules_pending_days_and_their_expiry_away,
    a_file_of_pending_earns_vests_alike
);
