//! The ledger on both backends: earning through the rules, duplicates, burns under
//! concurrency, replays, minimum balances and tiers.

use chrono::{Duration, Utc};
use store::Spend;
use store::{
    Campaign, EarnInput, EarnStatus, Expiry, FileEarn, NewBurn, NewTier, Page, Policy, RuleBook,
    Store, StoreError, Tokens, TransactionFilter, TransactionKind, Wallet, backend_tests,
};

pub(crate) struct Setup {
    pub campaign: Campaign,
    pub wallet: Wallet,
}

pub(crate) async fn setup(store: &Store) -> Setup {
    let (campaign, wallet) = store::testing::wallet_fixture(store).await;
    Setup { campaign, wallet }
}

pub(crate) fn earn(id: &str, amount: &str) -> EarnInput {
    EarnInput {
        activity: None,
        earn_id: id.into(),
        wallet: "w-1".into(),
        amount: amount.into(),
        date: Utc::now(),
        description: Some("Coffee".into()),
        comment: None,
        meta: None,
    }
}

/// Processes until nothing waits.
pub(crate) async fn drain(store: &Store, book: &RuleBook) {
    while store.ledger().process_earns(book, 50).await.unwrap() > 0 {}
}

pub(crate) async fn balance(store: &Store, s: &Setup) -> Tokens {
    store
        .ledger()
        .get_wallet(&s.campaign, &s.wallet.id)
        .await
        .unwrap()
        .balance
}

/// The campaign's policy becomes `expiry`, everything else as by default.
pub(crate) async fn set_expiry(store: &Store, s: &Setup, expiry: Expiry) {
    let policy = Policy {
        expiry,
        ..Default::default()
    };
    let c = &s.campaign;
    store.programme().set_policy(c, policy).await.unwrap();
}

/// The field a refusal of a used key names (`already_exists`), if `result` is one.
pub(crate) fn reused_for<T>(result: &Result<T, StoreError>) -> Option<&str> {
    match result {
        Err(StoreError::Refused {
            code: "already_exists",
            field,
            ..
        }) => field.as_deref(),
        _ => None,
    }
}

pub(crate) fn burn(external_id: &str, amount: i64) -> NewBurn {
    NewBurn {
        spend: Spend {
            wallet: "w-1".into(),
            external_id: external_id.into(),
            amount: Tokens::whole(amount),
            description: "Voucher".into(),
            comment: None,
            meta: None,
        },
        date: None,
    }
}

async fn earns_are_credited_by_the_active_rules(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let request = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "12.99"))
        .await
        .unwrap();
    assert_eq!(request.status, EarnStatus::Accepted);
    drain(&store, &book).await;
    let done = store
        .ledger()
        .earn_request(&s.campaign, &request.id)
        .await
        .unwrap();
    assert_eq!(done.status, EarnStatus::Completed);
    assert_eq!(
        done.tokens,
        Some(Tokens::whole(12)),
        "the default: one token per unit, rounded down"
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(12));

    let transaction = store
        .ledger()
        .get_transaction(&s.campaign, done.transaction_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(transaction.amount, Tokens::whole(12));
    assert_eq!(transaction.source_amount.as_deref(), Some("12.99"));
    assert_eq!(
        transaction.trace.as_deref(),
        Some("one-per-unit:+12.99;~:-0.99")
    );
    assert_eq!(transaction.rule_version, None);

    let rules = "[[rule]]\nid = 'double'\npriority = 1\naward = 'amount * 2'\n";
    store
        .programme()
        .set_rule_set(&s.campaign, rules)
        .await
        .unwrap();
    // A book whose window has always passed: each look checks the active version (the service's
    // book trusts its cache for `FRESH_FOR`, a second).
    let fresh = RuleBook::fresh_for(store.programme().clone(), std::time::Duration::ZERO);
    let second = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-2", "10"))
        .await
        .unwrap();
    drain(&store, &fresh).await;
    let second = store
        .ledger()
        .earn_request(&s.campaign, &second.id)
        .await
        .unwrap();
    assert_eq!(second.tokens, Some(Tokens::whole(20)));
    let transaction = store
        .ledger()
        .get_transaction(&s.campaign, second.transaction_id.as_deref().unwrap())
        .await
        .unwrap();
    assert_eq!(transaction.rule_version, Some(1));

    // A running book picks up a new version once its window has passed, with no restart.
    store
        .programme()
        .set_rule_set(&s.campaign, &rules.replace("* 2", "* 3"))
        .await
        .unwrap();
    let third = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-3", "10"))
        .await
        .unwrap();
    drain(&store, &fresh).await;
    assert_eq!(
        store
            .ledger()
            .earn_request(&s.campaign, &third.id)
            .await
            .unwrap()
            .tokens,
        Some(Tokens::whole(30))
    );
}

async fn the_same_earn_id_credits_once(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let e = earn("e-1", "10");
    // Ten requests that each passed the check at once (as on ten nodes): all are stored.
    let pending = store
        .ledger()
        .pending_earn(&s.campaign, e.clone())
        .await
        .unwrap();
    let stored = store::testing::store_unchecked(&store, vec![pending; 10]).await;
    let requests: Vec<String> = stored.into_iter().map(|r| r.id).collect();
    // Ten more, while workers run: each is answered with the first request.
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (store, campaign, e) = (store.clone(), s.campaign.clone(), e.clone());
        tasks.push(tokio::spawn(async move {
            store.ledger().submit_earn(&campaign, e).await.unwrap().id
        }));
    }
    // Several workers at once, as several server processes would.
    let mut workers = Vec::new();
    for _ in 0..4 {
        let (store, book) = (store.clone(), book.clone());
        workers.push(tokio::spawn(async move { drain(&store, &book).await }));
    }
    for task in tasks {
        assert_eq!(task.await.unwrap(), requests[0]);
    }
    for worker in workers {
        worker.await.unwrap();
    }
    drain(&store, &book).await;
    let mut completed = 0;
    let mut duplicates = 0;
    for id in &requests {
        match store
            .ledger()
            .earn_request(&s.campaign, id)
            .await
            .unwrap()
            .status
        {
            EarnStatus::Completed => completed += 1,
            EarnStatus::Duplicate => duplicates += 1,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!((completed, duplicates), (1, 9));
    assert_eq!(balance(&store, &s).await, Tokens::whole(10));
    let earns = store
        .ledger()
        .list_transactions(&s.campaign, &TransactionFilter::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(earns.total, 1);
}

async fn concurrent_burns_never_overdraw(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .programme()
        .set_policy(
            &s.campaign,
            Policy {
                min_balance: Tokens::whole(5),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "50"))
        .await
        .unwrap();
    drain(&store, &book).await;

    let mut tasks = Vec::new();
    for i in 0..200 {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        tasks.push(tokio::spawn(async move {
            store
                .ledger()
                .burn(&campaign, burn(&format!("b-{i}"), 1))
                .await
        }));
    }
    let (mut ok, mut refused) = (0, 0);
    for task in tasks {
        match task.await.unwrap() {
            Ok(_) => ok += 1,
            Err(StoreError::InsufficientBalance { .. }) => refused += 1,
            Err(other) => panic!("{other}"),
        }
    }
    assert_eq!((ok, refused), (45, 155), "50 earned, 5 must stay");
    assert_eq!(balance(&store, &s).await, Tokens::whole(5));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn a_repeated_burn_is_a_replay_or_a_conflict(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "100"))
        .await
        .unwrap();
    drain(&store, &book).await;

    let first = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 30))
        .await
        .unwrap();
    assert!(!first.replayed);
    let again = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 30))
        .await
        .unwrap();
    assert!(again.replayed);
    assert_eq!(again.transaction.id, first.transaction.id);
    assert_eq!(balance(&store, &s).await, Tokens::whole(70), "debited once");
    let different = store.ledger().burn(&s.campaign, burn("b-1", 31)).await;
    assert_eq!(
        reused_for(&different),
        Some("amount"),
        "the first field that differs"
    );

    let too_much = store.ledger().burn(&s.campaign, burn("b-2", 71)).await;
    assert!(
        matches!(too_much, Err(StoreError::InsufficientBalance { available }) if available == Tokens::whole(70))
    );
    let unknown = NewBurn {
        spend: Spend {
            wallet: "nope".into(),
            ..(burn("b-3", 1)).spend
        },
        ..burn("b-3", 1)
    };
    assert!(matches!(
        store.ledger().burn(&s.campaign, unknown).await,
        Err(StoreError::NotFound { .. })
    ));
    // b-1's id reused on a wallet that does not exist: still the conflict, not "not found".
    let elsewhere = NewBurn {
        spend: Spend {
            wallet: "nope".into(),
            ..(burn("b-1", 30)).spend
        },
        ..burn("b-1", 30)
    };
    let elsewhere = store.ledger().burn(&s.campaign, elsewhere).await;
    assert_eq!(reused_for(&elsewhere), Some("walletId"));
    // With the balance spent, a repeat is still answered with the burn it repeats.
    store
        .ledger()
        .burn(&s.campaign, burn("b-4", 70))
        .await
        .unwrap();
    let late = store
        .ledger()
        .burn(&s.campaign, burn("b-1", 30))
        .await
        .unwrap();
    assert!(late.replayed);
    assert_eq!(late.transaction.id, first.transaction.id);
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
}

async fn tiers_follow_lifetime_earnings(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    for (name, precedence, threshold) in [("silver", 2, 100), ("gold", 1, 500)] {
        let tier = NewTier {
            name: name.into(),
            precedence,
            threshold: Tokens::whole(threshold),
            ..Default::default()
        };
        store
            .programme()
            .create_tier(&s.campaign, tier)
            .await
            .unwrap();
    }
    let tier = |w: Wallet| w.tier.map(|t| t.name);
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "150"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(
        tier(store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap()).as_deref(),
        Some("silver")
    );
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-2", "400"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(
        tier(store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap()).as_deref(),
        Some("gold")
    );
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 500))
        .await
        .unwrap();
    assert_eq!(
        tier(store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap()).as_deref(),
        Some("gold"),
        "spending keeps the tier"
    );

    store
        .programme()
        .remove_tier(&s.campaign, "gold")
        .await
        .unwrap();
    assert_eq!(
        tier(store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap()).as_deref(),
        Some("silver")
    );
    let listed: Vec<_> = store
        .programme()
        .list_tiers(&s.campaign)
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(listed, ["silver"]);
}

async fn transactions_filter_by_kind_wallet_and_date(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "100"))
        .await
        .unwrap();
    drain(&store, &book).await;
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 10))
        .await
        .unwrap();
    let all = store
        .ledger()
        .list_transactions(&s.campaign, &TransactionFilter::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(all.total, 2);
    let burns = TransactionFilter {
        kinds: vec![store::TransactionKind::Burn],
        ..Default::default()
    };
    let only = store
        .ledger()
        .list_transactions(&s.campaign, &burns, Page::default())
        .await
        .unwrap();
    assert_eq!(only.total, 1);
    assert_eq!(only.items[0].external_id.as_deref(), Some("b-1"));
    let future = TransactionFilter {
        date_from: Some(Utc::now() + chrono::Duration::hours(1)),
        ..Default::default()
    };
    assert_eq!(
        store
            .ledger()
            .list_transactions(&s.campaign, &future, Page::default())
            .await
            .unwrap()
            .total,
        0
    );
    let past = TransactionFilter {
        date_to: Some(Utc::now() + chrono::Duration::hours(1)),
        wallet_id: Some(s.wallet.id.clone()),
        ..Default::default()
    };
    assert_eq!(
        store
            .ledger()
            .list_transactions(&s.campaign, &past, Page::default())
            .await
            .unwrap()
            .total,
        2
    );
}

pub(crate) fn earn_on(id: &str, amount: &str, days_ago: i64) -> EarnInput {
    EarnInput {
        date: Utc::now() - Duration::days(days_ago),
        ..earn(id, amount)
    }
}

async fn burns_take_the_oldest_tokens_and_expiry_takes_the_rest_once(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("old", "10", 40))
        .await
        .unwrap(); // due 10 days ago
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("newer", "20", 20))
        .await
        .unwrap(); // due in 10 days
    drain(&store, &book).await;
    // Taken from the oldest lot first: all 10 of "old", then 5 of "newer".
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 15))
        .await
        .unwrap();
    assert_eq!(
        store.ledger().expire(Utc::now()).await.unwrap(),
        0,
        "the old lot was spent, nothing left to expire"
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(15));

    let later = Utc::now() + Duration::days(11);
    assert_eq!(store.ledger().expire(later).await.unwrap(), 1);
    assert_eq!(
        store.ledger().expire(later).await.unwrap(),
        0,
        "exactly once"
    );
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    let expiries = TransactionFilter {
        kinds: vec![TransactionKind::Expiry],
        ..Default::default()
    };
    let listed = store
        .ledger()
        .list_transactions(&s.campaign, &expiries, Page::default())
        .await
        .unwrap();
    assert_eq!(listed.total, 1);
    assert_eq!(listed.items[0].amount, Tokens::whole(15));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// Ten earns of one token, dated one to ten days ago and arriving in no order: a burn of 7.5
/// takes the seven oldest whole and half of the eighth, across more lots than one read hands
/// over; expiry then takes the rest in date order.
async fn a_burn_over_many_lots_takes_them_by_earn_date(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(20)).await;
    for days_ago in [4, 9, 1, 7, 10, 2, 5, 8, 3, 6] {
        let id = format!("day-{days_ago}");
        store
            .ledger()
            .submit_earn(&s.campaign, earn_on(&id, "1", days_ago))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let spend = NewBurn {
        spend: Spend {
            amount: Tokens::from_text("7.5").unwrap(),
            ..(burn("b-many", 0)).spend
        },
        ..burn("b-many", 0)
    };
    store.ledger().burn(&s.campaign, spend).await.unwrap();
    assert_eq!(balance(&store, &s).await, Tokens::from_text("2.5").unwrap());
    // A lot earned k days ago is due in 20 - k days. Left: half of day 3's, days 2 and 1.
    let expired = |at| store.ledger().expire(Utc::now() + at);
    assert_eq!(expired(Duration::hours(17 * 24 + 12)).await.unwrap(), 1);
    assert_eq!(balance(&store, &s).await, Tokens::whole(2), "day 3's half");
    assert_eq!(expired(Duration::hours(19 * 24 + 12)).await.unwrap(), 2);
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn two_sweepers_at_once_expire_each_lot_once(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::EndOfMonth).await;
    for i in 0..60 {
        store
            .ledger()
            .submit_earn(&s.campaign, earn_on(&format!("e-{i}"), "3", 62))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let sweepers: Vec<_> = (0..2)
        .map(|_| {
            let store = store.clone();
            tokio::spawn(async move { store.ledger().expire(Utc::now()).await.unwrap() })
        })
        .collect();
    let mut written = 0;
    for sweeper in sweepers {
        written += sweeper.await.unwrap();
    }
    assert_eq!(written, 60);
    let expiries = TransactionFilter {
        kinds: vec![TransactionKind::Expiry],
        ..Default::default()
    };
    assert_eq!(
        store
            .ledger()
            .list_transactions(&s.campaign, &expiries, Page { page: 1, limit: 0 })
            .await
            .unwrap()
            .total,
        60
    );
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn rules_see_the_wallet_and_member(store: Store) {
    let s = setup(&store).await;
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
                 [[rule]]\nid = 'context'\npriority = 2\n\
                 when = \"currency == 'PTS' && member.status == 'active' && wallet.balance == 0\"\nmultiply = 3\n";
    store
        .programme()
        .set_rule_set(&s.campaign, rules)
        .await
        .unwrap();
    let book = RuleBook::new(store.programme().clone());
    let first = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(
        store
            .ledger()
            .earn_request(&s.campaign, &first.id)
            .await
            .unwrap()
            .tokens,
        Some(Tokens::whole(30))
    );
    // The balance is no longer 0, so the second earn gets the base only.
    let second = store
        .ledger()
        .submit_earn(&s.campaign, earn("e-2", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    assert_eq!(
        store
            .ledger()
            .earn_request(&s.campaign, &second.id)
            .await
            .unwrap()
            .tokens,
        Some(Tokens::whole(10))
    );
}

/// Writes of every kind at once (members through one path, earns and burns through another on
/// SQLite): none is refused for a busy database and none is lost.
async fn writes_of_every_kind_interleave_without_loss(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    store
        .ledger()
        .submit_earn(&s.campaign, earn("e-0", "100"))
        .await
        .unwrap();
    drain(&store, &book).await;

    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..40 {
        let (store, campaign, book) = (store.clone(), s.campaign.clone(), book.clone());
        tasks.spawn(async move {
            let member = store::NewMember {
                first_name: format!("M{i}"),
                idp: "reference".into(),
                user_id: format!("u-m{i}"),
                external_id: format!("card-m{i}"),
                ..Default::default()
            };
            store
                .members()
                .create_member(&campaign.org(), member)
                .await?;
            store
                .ledger()
                .submit_earn(&campaign, earn(&format!("e-{}", i + 1), "1"))
                .await?;
            store
                .ledger()
                .burn(&campaign, burn(&format!("b-{i}"), 1))
                .await?;
            store.ledger().process_earns(&book, 8).await?;
            Ok::<_, StoreError>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap()
            .unwrap_or_else(|e| panic!("a write failed: {e}"));
    }
    drain(&store, &book).await;
    // 100 + 40 earned, 40 burned.
    assert_eq!(balance(&store, &s).await, Tokens::whole(100));
    let members = store
        .members()
        .list_members(&s.campaign.org(), Page { page: 1, limit: 0 })
        .await
        .unwrap();
    assert_eq!(members.total, 41);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// Batch-file rows: found by wallet id or reference, credited through the rules, and an id
/// credited before (by the API or earlier in the file) credits nothing.
async fn file_rows_share_the_api_idempotency_key(store: Store) {
    file_rows(store, 0).await;
}

/// The same, in a chunk large enough for PostgreSQL's `COPY` path, with text that CSV must
/// quote, and lots that expire.
async fn a_large_chunk_of_file_rows_is_credited_alike(store: Store) {
    file_rows(store, 1_200).await;
}

/// A large chunk whose ids are all new (on PostgreSQL, `COPY` straight into the journal), then
/// one that names an id twice, as a row credited meanwhile by another writer would (on
/// PostgreSQL that `COPY` fails on the unique key and the chunk goes through the staging
/// table): both credit every row once, with their text and expiry intact.
async fn a_large_chunk_of_new_rows_is_credited_once(store: Store) {
    let s = setup(&store).await;
    set_expiry(&store, &s, Expiry::Days(30)).await;
    let book = RuleBook::new(store.programme().clone());
    let tricky = "Fish, \"chips\"\nand \\ peas";
    let rows = |prefix: &str| -> Vec<store::FileEarn> {
        (0..1_200)
            .map(|i| {
                let mut earn = earn(&format!("{prefix}-{i}"), "1");
                earn.description = Some(tricky.into());
                earn.meta = Some(serde_json::json!({"note": tricky, "n": i}));
                store::FileEarn { row: 2 + i, earn }
            })
            .collect()
    };
    let credited = |outcome: &store::FileOutcome| match outcome {
        store::FileOutcome::Credited {
            transaction_id: Some(id),
            ..
        } => id.clone(),
        other => panic!("{other:?}"),
    };
    let first = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-1", &rows("n"))
        .await
        .unwrap();
    let last = store
        .ledger()
        .get_transaction(&s.campaign, &credited(&first[1_199]))
        .await
        .unwrap();
    assert_eq!(last.description.as_deref(), Some(tricky));
    assert_eq!(
        last.meta,
        Some(serde_json::json!({"note": tricky, "n": 1_199}))
    );
    assert_eq!(last.external_id.as_deref(), Some("n-1199"));
    assert!(first.iter().all(|o| !credited(o).is_empty()));
    assert_eq!(balance(&store, &s).await, Tokens::whole(1_200));

    let mut twice = rows("m");
    let mut again = twice[0].clone();
    again.row = 1_202;
    twice.push(again);
    let second = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-2", &twice)
        .await
        .unwrap();
    assert!(second[..1_200].iter().all(|o| !credited(o).is_empty()));
    assert!(matches!(
        &second[1_200],
        store::FileOutcome::CreditedBefore { transaction_id } if *transaction_id == credited(&second[0])
    ));
    assert_eq!(balance(&store, &s).await, Tokens::whole(2_400));
    assert!(store.ledger().audit().await.unwrap().is_empty());
    // Both chunks' earns were written with their expiry: 30 days after their date.
    let expired = |days: i64| store.ledger().expire(Utc::now() + Duration::days(days));
    assert_eq!(expired(29).await.unwrap(), 0);
    assert_eq!(expired(31).await.unwrap(), 2_400);
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn file_rows(store: Store, padding: usize) {
    let s = setup(&store).await;
    set_expiry(&store, &s, Expiry::Days(30)).await;
    let book = RuleBook::new(store.programme().clone());
    let api_earn = earn("api-1", "10");
    store
        .ledger()
        .submit_earn(&s.campaign, api_earn.clone())
        .await
        .unwrap();
    drain(&store, &book).await;
    // One date for every row: a row repeating an id is the same earn.
    let at = Utc::now();
    let row = |row: u64, id: &str, wallet: &str, amount: &str| FileEarn {
        row,
        earn: EarnInput {
            wallet: wallet.into(),
            date: at,
            ..earn(id, amount)
        },
    };
    let mut rows = vec![
        row(2, "f-1", "w-1", "5"),
        row(3, "f-2", &s.wallet.id, "7"),
        FileEarn {
            row: 4,
            earn: api_earn,
        },
        row(5, "f-1", "w-1", "5"),
        row(6, "f-3", "no-such-wallet", "1"),
    ];
    let tricky = "Fish, \"chips\"\nand \\ peas";
    for i in 0..padding {
        let mut padded = row(7 + i as u64, &format!("p-{i}"), "w-1", "1");
        padded.earn.description = Some(tricky.into());
        padded.earn.comment = None;
        padded.earn.meta = Some(serde_json::json!({"note": tricky, "n": i}));
        rows.push(padded);
    }
    let outcomes = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-1", &rows)
        .await
        .unwrap();
    assert!(
        matches!(&outcomes[0], store::FileOutcome::Credited { tokens, .. } if *tokens == Tokens::whole(5))
    );
    assert!(
        matches!(&outcomes[1], store::FileOutcome::Credited { tokens, .. } if *tokens == Tokens::whole(7))
    );
    assert!(matches!(
        &outcomes[2],
        store::FileOutcome::Duplicate {
            transaction_id: Some(_)
        }
    ));
    // The same id twice in one batch: the batch credited it already (files reject such rows
    // before they get here, as duplicate_in_file).
    assert!(matches!(
        &outcomes[3],
        store::FileOutcome::CreditedBefore { .. }
    ));
    assert_eq!(outcomes[4], store::FileOutcome::UnknownWallet);
    let padded = Tokens::whole(padding as i64);
    assert_eq!(
        balance(&store, &s).await,
        Tokens::whole(22).checked_add(padded).unwrap()
    );
    if padding > 0 {
        let Some(store::FileOutcome::Credited {
            transaction_id: Some(id),
            ..
        }) = outcomes.last()
        else {
            panic!("{:?}", outcomes.last())
        };
        let t = store
            .ledger()
            .get_transaction(&s.campaign, id)
            .await
            .unwrap();
        assert_eq!(t.description.as_deref(), Some(tricky));
        assert_eq!(t.comment, None);
        let n = padding - 1;
        assert_eq!(t.meta, Some(serde_json::json!({"note": tricky, "n": n})));
        assert_eq!(t.external_id.as_deref(), Some(format!("p-{n}").as_str()));
    }
    // The same batch taken up again after a crash recognises what it credited; another file
    // with the same ids credits nothing.
    let again = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-1", &rows)
        .await
        .unwrap();
    let kinds: Vec<&str> = again
        .iter()
        .map(|o| match o {
            store::FileOutcome::CreditedBefore { .. } => "before",
            store::FileOutcome::Duplicate { .. } => "duplicate",
            store::FileOutcome::UnknownWallet => "unknown",
            _ => "other",
        })
        .collect();
    assert_eq!(
        kinds[..5],
        ["before", "before", "duplicate", "before", "unknown"]
    );
    assert!(kinds[5..].iter().all(|k| *k == "before"));
    let other = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-2", &rows)
        .await
        .unwrap();
    assert!(
        other[..4]
            .iter()
            .all(|o| matches!(o, store::FileOutcome::Duplicate { .. })),
        "{other:?}"
    );
    assert_eq!(
        balance(&store, &s).await,
        Tokens::whole(22).checked_add(padded).unwrap()
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A file's chunks credited as bulk writes, with an API earn between them: each id counts once,
/// a later chunk sees the earlier one before it commits, and `finish` returns once both are in
/// the ledger.
async fn file_chunks_commit_with_the_writes_beside_them(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let org = &s.campaign.org();
    let at = Utc::now();
    let row = |row: u64, id: &str| store::FileEarn {
        row,
        earn: EarnInput {
            date: at,
            ..earn(id, "2")
        },
    };
    let totals = &mut store::FileTotals::default();
    let first = store
        .batches()
        .evaluate_file_earns(&book, org, &[row(2, "c-1"), row(3, "c-2")], totals)
        .await
        .unwrap();
    let mut load = store.batches().file_load(org, "batch-1");
    let chunk = load.credit(first).await;
    let credited = load.outcomes(chunk).await.unwrap();
    assert!(
        credited
            .iter()
            .all(|o| matches!(o, store::FileOutcome::Credited { .. }))
    );
    store
        .ledger()
        .submit_earn(&s.campaign, row(0, "api-1").earn)
        .await
        .unwrap();
    drain(&store, &book).await;
    let second = store
        .batches()
        .evaluate_file_earns(
            &book,
            org,
            &[row(4, "c-3"), row(5, "c-1"), row(6, "api-1")],
            totals,
        )
        .await
        .unwrap();
    let chunk = load.credit(second).await;
    let credited = load.outcomes(chunk).await.unwrap();
    load.finish().await.unwrap();
    assert!(matches!(
        credited[..],
        [
            store::FileOutcome::Credited { .. },
            store::FileOutcome::CreditedBefore { .. },
            store::FileOutcome::Duplicate { .. },
        ]
    ));
    // c-1, c-2, c-3 and api-1.
    assert_eq!(balance(&store, &s).await, Tokens::whole(8));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// File rows dated before tokens the wallet already spent (a late file) are spent and expired
/// in their date order, not the order they arrived: through a chunk large enough for
/// A file's rows cannot take a wallet past the ledger's ceiling, whether they meet in one chunk
/// or in chunks whose writes have not committed yet: the row that would pass it is refused with
/// its own outcome, and the others are credited.
async fn file_rows_stop_at_the_ledger_ceiling(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let org = &s.campaign.org();
    let row = |row: u64, id: &str, amount: &str| store::FileEarn {
        row,
        earn: earn(id, amount),
    };
    let totals = &mut store::FileTotals::default();
    let chunk = [row(2, "a", "600000000000"), row(3, "b", "600000000000")];
    let first = store
        .batches()
        .evaluate_file_earns(&book, org, &chunk, totals);
    let mut load = store.batches().file_load(org, "batch-1");
    let chunk = load.credit(first.await.unwrap()).await;
    let credited = load.outcomes(chunk).await.unwrap();
    assert!(matches!(credited[0], store::FileOutcome::Credited { .. }));
    assert!(matches!(credited[1], store::FileOutcome::OverCeiling(_)));
    let chunk = [row(4, "c", "400000000001"), row(5, "d", "400000000000")];
    let second = store
        .batches()
        .evaluate_file_earns(&book, org, &chunk, totals);
    let chunk = load.credit(second.await.unwrap()).await;
    let credited = load.outcomes(chunk).await.unwrap();
    load.finish().await.unwrap();
    assert!(matches!(credited[0], store::FileOutcome::OverCeiling(_)));
    assert!(matches!(credited[1], store::FileOutcome::Credited { .. }));
    assert_eq!(balance(&store, &s).await, Tokens::MAX);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A file's own total stops at the ceiling too, whichever wallets its rows go to.
async fn a_files_total_stops_at_the_ledger_ceiling(store: Store) {
    let s = setup(&store).await;
    let other = store::NewWallet {
        owner: Some("card-1".into()),
        external_id: Some("w-2".into()),
        name: None,
    };
    store
        .ledger()
        .create_wallet(&s.campaign, other)
        .await
        .unwrap();
    let book = RuleBook::new(store.programme().clone());
    let rows = [("a", "w-1"), ("b", "w-2")].map(|(id, wallet)| store::FileEarn {
        row: 2,
        earn: EarnInput {
            wallet: wallet.into(),
            ..earn(id, "600000000000")
        },
    });
    let outcomes = store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-1", &rows)
        .await
        .unwrap();
    assert!(matches!(outcomes[0], store::FileOutcome::Credited { .. }));
    let store::FileOutcome::OverCeiling(reason) = &outcomes[1] else {
        panic!("{:?}", outcomes[1]);
    };
    assert!(reason.contains("the file's credited total"), "{reason}");
}

/// PostgreSQL's bulk path.
async fn backdated_file_rows_are_spent_and_expire_in_date_order(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("a", "10", 10))
        .await
        .unwrap();
    drain(&store, &book).await;
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 6))
        .await
        .unwrap();
    // A file arrives: one row dated 20 days ago, behind the 6 tokens already spent, and 1,200
    // rows of today.
    let row = |row: u64, earn: EarnInput| store::FileEarn {
        row,
        earn: EarnInput {
            wallet: s.wallet.id.clone(),
            ..earn
        },
    };
    let mut rows = vec![row(2, earn_on("late", "4", 20))];
    rows.extend((0..1_200).map(|i| row(3 + i, earn(&format!("p-{i}"), "1"))));
    store
        .batches()
        .credit_file_earns(&book, &s.campaign.org(), "batch-1", &rows)
        .await
        .unwrap();
    assert_eq!(balance(&store, &s).await, Tokens::whole(1_208));
    assert!(store.ledger().audit().await.unwrap().is_empty());
    // The oldest tokens are the late row's: 3 of its 4 go.
    store
        .ledger()
        .burn(&s.campaign, burn("b-2", 3))
        .await
        .unwrap();
    assert!(store.ledger().audit().await.unwrap().is_empty());
    let expired = |days: i64| {
        store
            .ledger()
            .expire(Utc::now() + Duration::hours(days * 24 + 12))
    };
    // Due in 10 days: what is left of the late row (1).
    assert_eq!(expired(10).await.unwrap(), 1);
    assert_eq!(balance(&store, &s).await, Tokens::whole(1_204));
    // Due in 20 days: a's 4 left.
    assert_eq!(expired(20).await.unwrap(), 1);
    assert_eq!(balance(&store, &s).await, Tokens::whole(1_200));
    assert_eq!(expired(20).await.unwrap(), 0, "exactly once");
    // Due in 30 days: today's rows, one EXPIRY each.
    assert_eq!(expired(30).await.unwrap(), 1_200);
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A programme whose expiry was shortened: an earn after it expires before older ones, out of
/// its turn; burns then skip it and expiry takes the older ones when they are due.
async fn an_earn_that_expires_out_of_turn_is_skipped_by_burns(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(60)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("long", "5", 10))
        .await
        .unwrap();
    drain(&store, &book).await;
    set_expiry(&store, &s, Expiry::Days(20)).await;
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("short", "3", 5))
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(&s.campaign, earn_on("later", "2", 1))
        .await
        .unwrap();
    drain(&store, &book).await;
    // "short" is due in 15 days, "long" in 50, "later" in 19.
    assert_eq!(
        store
            .ledger()
            .expire(Utc::now() + Duration::days(16))
            .await
            .unwrap(),
        1
    );
    assert_eq!(balance(&store, &s).await, Tokens::whole(7));
    // 6 tokens: the 5 of "long", then not the expired "short" but 1 of "later".
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 6))
        .await
        .unwrap();
    assert!(store.ledger().audit().await.unwrap().is_empty());
    assert_eq!(
        store
            .ledger()
            .expire(Utc::now() + Duration::days(20))
            .await
            .unwrap(),
        1
    );
    assert_eq!(balance(&store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A ledger written in the lot-per-earn schema (migration 11): two open lots (one partly
/// spent), one spent lot dated between them and the burn that spent them. Migrated, it agrees
/// with itself, keeps its balance and its earn and burn ids (migrations 13-14 change the
/// idempotency key), sets aside only what breaks the date order, spends the old lots oldest
/// first beside new earns and expires each once, when due.
async fn a_ledger_of_lots_migrates(db: store::testing::TestStore) {
    let store = &db.store;
    let made = store::testing::campaign_fixture(store).await;
    let (org, campaign, wallet) = (&made.org_id, &made.id, "w-old");
    // The member and wallet as that schema kept them: today's writers also record events,
    // which it has no table for.
    let holder = format!(
        "INSERT INTO members (id, org_id, first_name, status, idp, user_id, external_id, \
         created_at, updated_at) VALUES ('m-old', '{org}', 'Ada', 'active', 'reference', 'u-1', \
         'card-1', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00'); \
         INSERT INTO wallets (id, org_id, campaign_id, owner_id, external_id, currency, \
         created_at, updated_at) VALUES ('{wallet}', '{org}', '{campaign}', 'm-old', 'w-1', \
         'PTS', '2026-01-01T00:00:00+00:00', '2026-01-01T00:00:00+00:00');"
    );
    let earn = |id: &str, tokens: i64, date: &str| {
        format!(
            "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
             external_id, currency, date, created_at) VALUES ('{id}', '{org}', '{campaign}', \
             '{wallet}', 'EARN', {tokens}000000, '{id}', 'PTS', '{date}T00:00:00+00:00', \
             '2026-01-10T00:00:00+00:00');"
        )
    };
    let lot = |id: &str, tokens: i64, remaining: i64, date: &str, expires: &str| {
        format!(
            "INSERT INTO lots (id, wallet_id, transaction_id, amount, remaining, earned_at, \
             expires_at) VALUES ('lot-{id}', '{wallet}', '{id}', {tokens}000000, \
             {remaining}000000, '{date}T00:00:00+00:00', '{expires}T00:00:00+00:00');"
        )
    };
    let old = [
        holder,
        earn("t1", 5, "2026-01-01"),
        lot("t1", 5, 2, "2026-01-01", "2026-03-01"),
        earn("t2", 5, "2026-01-05"),
        lot("t2", 5, 5, "2026-01-05", "2026-03-05"),
        earn("t3", 4, "2026-01-03"),
        lot("t3", 4, 0, "2026-01-03", "2026-03-03"),
        format!(
            "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
             external_id, currency, date, created_at) VALUES ('b1', '{org}', '{campaign}', \
             '{wallet}', 'BURN', 7000000, 'b1', 'PTS', '2026-01-10T00:00:00+00:00', \
             '2026-01-10T00:00:00+00:00');"
        ),
        format!("UPDATE wallets SET balance = 7000000, earned = 14000000 WHERE id = '{wallet}';"),
        // More earns than a step of SQLite's idempotency-key fill (10,000 rows), of no tokens
        // and dated before the rest, so they change nothing else.
        format!(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 25000) \
             INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
             external_id, currency, date, created_at) SELECT 'z' || n.i, '{org}', '{campaign}', \
             '{wallet}', 'EARN', 0, 'z' || n.i, 'PTS', '2025-12-01T00:00:00+00:00', \
             '2026-01-10T00:00:00+00:00' FROM n;"
        ),
    ];
    store.execute_raw(&old.concat()).await.unwrap();
    store.migrate().await.unwrap();
    let s = Setup {
        wallet: store.ledger().get_wallet(&made, wallet).await.unwrap(),
        campaign: made,
    };
    assert!(store.ledger().audit().await.unwrap().is_empty());
    // Every earn and burn id of the old ledger is still taken: idempotency holds across the
    // change of its key, at the start, the middle and the end of the fill.
    // (The old earns kept no purchase amount, so an earn under their id is another earn.)
    for id in ["t1", "t3", "z1", "z10000", "z10001", "z25000"] {
        let reused = store
            .ledger()
            .submit_earn(&s.campaign, crate::ledger::earn(id, "50"))
            .await;
        assert_eq!(reused_for(&reused), Some("amount"), "{id}");
    }
    let reused = store.ledger().burn(&s.campaign, burn("b1", 1)).await;
    assert_eq!(
        reused_for(&reused),
        Some("externalId"),
        "a burn from before fields were kept cannot say which differs: {reused:?}"
    );
    assert_eq!(balance(store, &s).await, Tokens::whole(7));
    // The position is t1 (the oldest open lot, 3 of 5 taken); t2 follows whole. Only t3, spent
    // out of turn behind it, needs a row of its own.
    let aside = store
        .stored_bytes("SELECT transaction_id FROM lots_aside")
        .await;
    assert_eq!(aside, [b"t3".to_vec()]);

    set_expiry(store, &s, Expiry::Days(30)).await;
    let new = EarnInput {
        date: "2026-01-20T00:00:00Z".parse().unwrap(),
        ..earn_on("new", "3", 0)
    };
    store.ledger().submit_earn(&s.campaign, new).await.unwrap();
    drain(store, &RuleBook::new(store.programme().clone())).await;
    // 4 tokens: t1's 2 (1 January), then 2 of t2's 5 (5 January); "new" is untouched.
    store
        .ledger()
        .burn(&s.campaign, burn("b2", 4))
        .await
        .unwrap();
    assert!(store.ledger().audit().await.unwrap().is_empty());
    let at = |day: &str| format!("{day}T12:00:00Z").parse().unwrap();
    assert_eq!(
        store.ledger().expire(at("2026-02-19")).await.unwrap(),
        1,
        "new's 3"
    );
    assert_eq!(balance(store, &s).await, Tokens::whole(3));
    assert_eq!(
        store.ledger().expire(at("2026-03-02")).await.unwrap(),
        0,
        "t1 was spent"
    );
    assert_eq!(
        store.ledger().expire(at("2026-03-05")).await.unwrap(),
        1,
        "t2's 3"
    );
    assert_eq!(store.ledger().expire(at("2026-03-05")).await.unwrap(), 0);
    assert_eq!(balance(store, &s).await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// The schema before the spending position (lots, one per earn).
const LOTS_SCHEMA: i64 = 11;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_ledger_of_lots_migrates_on_sqlite() {
    a_ledger_of_lots_migrates(store::testing::TestStore::sqlite_at(LOTS_SCHEMA).await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn a_ledger_of_lots_migrates_on_postgres() {
    a_ledger_of_lots_migrates(store::testing::TestStore::postgres_at(LOTS_SCHEMA).await).await;
}

backend_tests!(
    backdated_file_rows_are_spent_and_expire_in_date_order,
    an_earn_that_expires_out_of_turn_is_skipped_by_burns,
    a_burn_over_many_lots_takes_them_by_earn_date,
    rules_see_the_wallet_and_member,
    burns_take_the_oldest_tokens_and_expiry_takes_the_rest_once,
    two_sweepers_at_once_expire_each_lot_once,
    earns_are_credited_by_the_active_rules,
    the_same_earn_id_credits_once,
    concurrent_burns_never_overdraw,
    writes_of_every_kind_interleave_without_loss,
    file_rows_share_the_api_idempotency_key,
    a_large_chunk_of_file_rows_is_credited_alike,
    a_large_chunk_of_new_rows_is_credited_once,
    file_chunks_commit_with_the_writes_beside_them,
    file_rows_stop_at_the_ledger_ceiling,
    a_files_total_stops_at_the_ledger_ceiling,
    a_repeated_burn_is_a_replay_or_a_conflict,
    tiers_follow_lifetime_earnings,
    transactions_filter_by_kind_wallet_and_date,
);
