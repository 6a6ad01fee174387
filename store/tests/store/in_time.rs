//! A wallet in time, on both backends: its balance, held and pending tokens at past instants,
//! and what its lots lose to expiry over the days ahead.

use chrono::{DateTime, Duration, DurationRound, SecondsFormat, Utc};
use store::{Expiry, Page, Policy, RuleBook, Store, Tokens, TransactionKind, backend_tests};

use crate::corrections::correction;
use crate::holds::hold;
use crate::ledger::{burn, drain, earn_on, set_expiry, setup};

/// Per day, what each lot holds now: less what was spent, held or returned, more what a refund
/// gave back (to a lot behind the spending position too).
async fn what_expires_is_listed_per_day(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    for (id, amount, days_ago) in [("e-1", "10", 25), ("e-2", "20", 10), ("e-3", "5", 0)] {
        store
            .submit_earn(&s.campaign, earn_on(id, amount, days_ago))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let now = Utc::now();
    let day = |days: i64| (now + Duration::days(days)).date_naive();
    let expiring = |days: i64| {
        let (store, campaign) = (store.clone(), s.campaign.clone());
        async move {
            let until = now + Duration::days(days);
            let found = store.expiring(&campaign, "w-1", until).await.unwrap();
            found
                .into_iter()
                .map(|d| (d.date, d.tokens))
                .collect::<Vec<_>>()
        }
    };
    store.burn(&s.campaign, burn("b-1", 4)).await.unwrap();
    store.hold(&s.campaign, hold("h-1", 3)).await.unwrap();
    assert_eq!(expiring(7).await, [(day(5), Tokens::whole(3))]);
    assert_eq!(
        expiring(25).await,
        [(day(5), Tokens::whole(3)), (day(20), Tokens::whole(20))]
    );
    // A return takes e-2's own tokens; a burn then spends up to e-3, whose refund gives them
    // back to e-1 and e-2 behind the position.
    let earns = store
        .list_transactions(&s.campaign, &Default::default(), Page::default())
        .await
        .unwrap()
        .items;
    let e2 = earns
        .iter()
        .find(|t| t.kind == TransactionKind::Earn && t.external_id.as_deref() == Some("e-2"))
        .unwrap();
    store
        .correct(&s.campaign, correction(&e2.id, "r-1", Some("5")))
        .await
        .unwrap();
    assert_eq!(expiring(25).await[1], (day(20), Tokens::whole(15)));
    let spent = store.burn(&s.campaign, burn("b-2", 23)).await.unwrap();
    assert!(expiring(40).await.is_empty(), "every lot spent or held");
    store
        .correct(&s.campaign, correction(&spent.transaction.id, "r-2", None))
        .await
        .unwrap();
    let all = expiring(40).await;
    assert_eq!(
        all,
        [
            (day(5), Tokens::whole(3)),
            (day(20), Tokens::whole(15)),
            (day(30), Tokens::whole(5))
        ]
    );
    let total: Tokens = all
        .iter()
        .fold(Tokens::ZERO, |sum, (_, t)| sum.checked_add(*t).unwrap());
    let wallet = store.get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        total,
        wallet.balance.checked_sub(wallet.held).unwrap(),
        "every lot expires"
    );
    let unknown = store.expiring(&s.campaign, "nope", now).await;
    assert!(unknown.is_err());
}

/// Moves what `sql` (an UPDATE with `{at}`) names to the instant `at`: the history a wallet
/// would have had if each step had been recorded then.
async fn recorded_at(store: &Store, sql: &str, at: DateTime<Utc>) {
    let at = at.to_rfc3339_opts(SecondsFormat::AutoSi, false);
    store
        .execute_raw(&sql.replace("{at}", &format!("'{at}'")))
        .await
        .unwrap();
}

/// The balance, held and pending tokens at an instant are those recorded by then: before the
/// wallet's first transaction nothing, after each step what it left, and now what the wallet
/// shows. The same again, once the days before today are summed, gives the same figures.
async fn a_balance_at_an_instant_is_what_was_recorded_by_then(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.clone());
    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let t = |days: i64, hours: i64| today - Duration::days(days) + Duration::hours(hours);
    const TX: &str = "UPDATE transactions SET created_at = {at} WHERE external_id = ";
    store
        .submit_earn(&s.campaign, earn_on("e-1", "100", 12))
        .await
        .unwrap();
    drain(&store, &book).await;
    recorded_at(&store, &format!("{TX}'e-1'"), t(12, 10)).await;
    store.burn(&s.campaign, burn("b-1", 30)).await.unwrap();
    recorded_at(&store, &format!("{TX}'b-1'"), t(9, 10)).await;
    store.hold(&s.campaign, hold("h-1", 20)).await.unwrap();
    let placed = "UPDATE holds SET created_at = {at}, updated_at = {at}";
    recorded_at(&store, placed, t(7, 10)).await;
    let pending = Policy {
        pending_days: 30,
        ..Policy::default()
    };
    store.set_policy(&s.campaign, pending).await.unwrap();
    store
        .submit_earn(&s.campaign, earn_on("e-2", "50", 5))
        .await
        .unwrap();
    drain(&store, &book).await;
    recorded_at(&store, &format!("{TX}'e-2'"), t(5, 10)).await;
    recorded_at(
        &store,
        "UPDATE pending_earns SET created_at = {at}",
        t(5, 10),
    )
    .await;
    let e2 = store
        .list_transactions(&s.campaign, &Default::default(), Page::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|t| t.external_id.as_deref() == Some("e-2"))
        .unwrap();
    store
        .correct(&s.campaign, correction(&e2.id, "r-1", Some("10")))
        .await
        .unwrap();
    recorded_at(&store, &format!("{TX}'r-1'"), t(4, 10)).await;
    store.capture_hold(&s.campaign, "h-1", None).await.unwrap();
    recorded_at(&store, &format!("{TX}'hold:h-1'"), t(3, 10)).await;
    recorded_at(&store, "UPDATE holds SET updated_at = {at}", t(3, 10)).await;
    // It vests (its day brought forward) two days ago, as the sweep then would have.
    recorded_at(&store, "UPDATE pending_earns SET vests_at = {at}", t(2, 10)).await;
    store.vest_pending(Utc::now()).await.unwrap();
    recorded_at(
        &store,
        "UPDATE pending_earns SET settled_at = {at}",
        t(2, 10),
    )
    .await;
    store.burn(&s.campaign, burn("b-2", 5)).await.unwrap();

    let whole = |b: i64, h: i64, p: i64| (Tokens::whole(b), Tokens::whole(h), Tokens::whole(p));
    let expected = [
        (t(20, 0), whole(0, 0, 0)),
        (t(12, 9), whole(0, 0, 0)),
        (t(12, 10), whole(100, 0, 0)),
        (t(9, 11), whole(70, 0, 0)),
        (t(7, 11), whole(70, 20, 0)),
        (t(5, 11), whole(70, 20, 50)),
        (t(4, 11), whole(70, 20, 40)),
        (t(3, 11), whole(50, 0, 40)),
        (t(2, 11), whole(90, 0, 0)),
        (Utc::now() + Duration::days(1), whole(85, 0, 0)),
    ];
    for round in ["first", "with the days summed"] {
        for (at, figures) in &expected {
            let found = store.balance_at(&s.campaign, "w-1", *at).await.unwrap();
            assert_eq!(
                (found.balance, found.held, found.pending),
                *figures,
                "at {at} ({round})"
            );
        }
    }
    let now = store
        .balance_at(&s.campaign, "w-1", Utc::now())
        .await
        .unwrap();
    let wallet = store.get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        (now.balance, now.held, now.pending),
        (wallet.balance, wallet.held, wallet.pending),
        "now: what the wallet shows"
    );
    assert!(now.at <= Utc::now(), "a later instant is answered as now");
    assert!(
        store
            .balance_at(&s.campaign, "nope", Utc::now())
            .await
            .is_err()
    );
}

backend_tests!(
    what_expires_is_listed_per_day,
    a_balance_at_an_instant_is_what_was_recorded_by_then
);
