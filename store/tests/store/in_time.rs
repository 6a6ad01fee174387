//! A wallet in time, on both backends: its balance, held and pending tokens at past instants,
//! and what its lots lose to expiry over the days ahead.

use chrono::{DateTime, Duration, DurationRound, SecondsFormat, Utc};
use store::{
    EarnInput, Expiry, NewBurn, Page, Policy, RuleBook, Store, Tokens, TransactionKind,
    backend_tests,
};

use crate::corrections::correction;
use crate::holds::hold;
use crate::ledger::{burn, drain, earn, earn_on, set_expiry, setup};

/// Per day, what each lot holds now: less what was spent, held or returned, more what a refund
/// gave back (to a lot behind the spending position too).
async fn what_expires_is_listed_per_day(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    set_expiry(&store, &s, Expiry::Days(30)).await;
    for (id, amount, days_ago) in [("e-1", "10", 25), ("e-2", "20", 10), ("e-3", "5", 0)] {
        store
            .ledger()
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
            let found = store
                .ledger()
                .expiring(&campaign, "w-1", until)
                .await
                .unwrap();
            found
                .into_iter()
                .map(|d| (d.date, d.tokens))
                .collect::<Vec<_>>()
        }
    };
    store
        .ledger()
        .burn(&s.campaign, burn("b-1", 4))
        .await
        .unwrap();
    store
        .ledger()
        .hold(&s.campaign, hold("h-1", 3))
        .await
        .unwrap();
    assert_eq!(expiring(7).await, [(day(5), Tokens::whole(3))]);
    assert_eq!(
        expiring(25).await,
        [(day(5), Tokens::whole(3)), (day(20), Tokens::whole(20))]
    );
    // A return takes e-2's own tokens; a burn then spends up to e-3, whose refund gives them
    // back to e-1 and e-2 behind the position.
    let earns = store
        .ledger()
        .list_transactions(&s.campaign, &Default::default(), Page::default())
        .await
        .unwrap()
        .items;
    let e2 = earns
        .iter()
        .find(|t| t.kind == TransactionKind::Earn && t.external_id.as_deref() == Some("e-2"))
        .unwrap();
    store
        .ledger()
        .correct(&s.campaign, correction(&e2.id, "r-1", Some("5")))
        .await
        .unwrap();
    assert_eq!(expiring(25).await[1], (day(20), Tokens::whole(15)));
    let spent = store
        .ledger()
        .burn(&s.campaign, burn("b-2", 23))
        .await
        .unwrap();
    assert!(expiring(40).await.is_empty(), "every lot spent or held");
    store
        .ledger()
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
    let wallet = store.ledger().get_wallet(&s.campaign, "w-1").await.unwrap();
    assert_eq!(
        total,
        wallet.balance.checked_sub(wallet.held).unwrap(),
        "every lot expires"
    );
    let unknown = store.ledger().expiring(&s.campaign, "nope", now).await;
    assert!(unknown.is_err());
}

/// Sets what `sql` (an UPDATE with `{at}`) names to the instant `at`: the times a hold or a
/// vesting would have had, had they happened then.
async fn as_if_at(store: &Store, sql: &str, at: DateTime<Utc>) {
    let at = at.to_rfc3339_opts(SecondsFormat::AutoSi, false);
    store
        .execute_raw(&sql.replace("{at}", &format!("'{at}'")))
        .await
        .unwrap();
}

/// An instant and a wallet's balance, held and pending tokens then.
type Figures = (DateTime<Utc>, (Tokens, Tokens, Tokens));

fn earn_at(id: &str, amount: &str, date: DateTime<Utc>) -> EarnInput {
    EarnInput {
        date,
        ..earn(id, amount)
    }
}

fn burn_at(id: &str, amount: i64, date: DateTime<Utc>) -> NewBurn {
    NewBurn {
        date: Some(date),
        ..burn(id, amount)
    }
}

/// The balance, held and pending tokens at an instant are what the transactions dated by then
/// say (and the holds open then): before the wallet's first transaction nothing, after each
/// step what it left, and now what the wallet shows. Asked again once the days are summed, the
/// same; after an earn and a burn dated days back, every answer from their dates on moves.
async fn a_balance_at_an_instant_is_what_the_transactions_dated_by_then_say(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let t = |days: i64, hours: i64| today - Duration::days(days) + Duration::hours(hours);
    let c = &s.campaign;
    store
        .ledger()
        .submit_earn(c, earn_at("e-1", "100", t(12, 10)))
        .await
        .unwrap();
    drain(&store, &book).await;
    store
        .ledger()
        .burn(c, burn_at("b-1", 30, t(9, 10)))
        .await
        .unwrap();
    store.ledger().hold(c, hold("h-1", 20)).await.unwrap();
    as_if_at(
        &store,
        "UPDATE holds SET created_at = {at}, updated_at = {at}",
        t(7, 10),
    )
    .await;
    let pending = Policy {
        pending_days: 30,
        ..Policy::default()
    };
    store.programme().set_policy(c, pending).await.unwrap();
    store
        .ledger()
        .submit_earn(c, earn_at("e-2", "50", t(5, 10)))
        .await
        .unwrap();
    drain(&store, &book).await;
    let e2 = store
        .ledger()
        .list_transactions(c, &Default::default(), Page::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|t| t.external_id.as_deref() == Some("e-2"))
        .unwrap();
    assert!(e2.pending);
    store
        .ledger()
        .correct(c, correction(&e2.id, "r-1", Some("10")))
        .await
        .unwrap();
    as_if_at(
        &store,
        "UPDATE transactions SET date = {at} WHERE external_id = 'r-1'",
        t(4, 10),
    )
    .await;
    store.ledger().capture_hold(c, "h-1", None).await.unwrap();
    let captured = "UPDATE transactions SET date = {at} WHERE external_id = 'hold:h-1'";
    as_if_at(&store, captured, t(3, 10)).await;
    as_if_at(&store, "UPDATE holds SET updated_at = {at}", t(3, 10)).await;
    // It vests (its day brought forward) two days ago.
    as_if_at(&store, "UPDATE pending_earns SET vests_at = {at}", t(2, 10)).await;
    store.ledger().vest_pending(Utc::now()).await.unwrap();
    store.ledger().burn(c, burn("b-2", 5)).await.unwrap();

    let whole = |b: i64, h: i64, p: i64| (Tokens::whole(b), Tokens::whole(h), Tokens::whole(p));
    let mut expected = [
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
    let answers = |expected: [Figures; 10], round: &str| {
        let (store, campaign, round) = (store.clone(), c.clone(), round.to_string());
        async move {
            for (at, figures) in &expected {
                let found = store
                    .ledger()
                    .balance_at(&campaign, "w-1", *at)
                    .await
                    .unwrap();
                assert_eq!(
                    (found.balance, found.held, found.pending),
                    *figures,
                    "at {at} ({round})"
                );
            }
        }
    };
    answers(expected, "first").await;
    answers(expected, "with the days summed").await;
    // Dated back, after the days were summed (each answered before the next): 1 spent eight
    // days ago, then 7 earned ten days ago (vested at once).
    let moved = |expected: &mut [Figures], since, tokens| {
        for (_, (balance, ..)) in expected.iter_mut().filter(|(at, _)| *at >= since) {
            *balance = balance.checked_add(Tokens::whole(tokens)).unwrap();
        }
    };
    store
        .ledger()
        .burn(c, burn_at("b-3", 1, t(8, 10)))
        .await
        .unwrap();
    moved(&mut expected, t(8, 10), -1);
    answers(expected, "after a burn dated back").await;
    store
        .programme()
        .set_policy(c, Policy::default())
        .await
        .unwrap();
    store
        .ledger()
        .submit_earn(c, earn_at("e-3", "7", t(10, 10)))
        .await
        .unwrap();
    drain(&store, &book).await;
    moved(&mut expected, t(10, 10), 7);
    answers(expected, "after an earn dated back").await;
    let now = store
        .ledger()
        .balance_at(c, "w-1", Utc::now())
        .await
        .unwrap();
    let wallet = store.ledger().get_wallet(c, "w-1").await.unwrap();
    assert_eq!(
        (now.balance, now.held, now.pending),
        (wallet.balance, wallet.held, wallet.pending),
        "now: what the wallet shows"
    );
    assert!(
        store
            .ledger()
            .balance_at(c, "nope", Utc::now())
            .await
            .is_err()
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());
    // A day's sum changed behind the ledger's back: the audit finds it.
    store
        .execute_raw(
            "UPDATE balance_days SET net = net + 1000000 \
             WHERE day = (SELECT MIN(day) FROM balance_days)",
        )
        .await
        .unwrap();
    let found = store.ledger().audit().await.unwrap();
    // Their total, and a balance at an instant read through them.
    let checks: Vec<&str> = found.iter().map(|d| d.check).collect();
    assert_eq!(checks, ["days", "at"], "{found:?}");
    for found in &found {
        assert_eq!(
            found.recorded.checked_sub(found.computed),
            Some(Tokens::whole(1))
        );
    }
}

/// Wallet w-1's balance at `at`.
async fn balance_then(store: &Store, s: &crate::ledger::Setup, at: &str) -> Tokens {
    let at: DateTime<Utc> = at.parse().unwrap();
    store
        .ledger()
        .balance_at(&s.campaign, "w-1", at)
        .await
        .unwrap()
        .balance
}

/// Transactions an earlier version recorded outside the window (it took the years 1 to 9999,
/// and a day of such a date was not cut at its first instant): once asked about later in their
/// day, a balance earlier that day counts none of them, a third that day sums again without
/// breaking the day sums, and the audit agrees.
async fn far_dates_recorded_before_the_window_keep_a_right_balance(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    for id in ["e-1", "e-2", "e-3"] {
        store
            .ledger()
            .submit_earn(&s.campaign, earn(id, "10"))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    let dated = "UPDATE transactions SET date = {at} WHERE external_id = ";
    for (id, at) in [
        ("e-1", "0226-11-20T08:00:00Z"),
        ("e-2", "0226-11-20T09:00:00Z"),
    ] {
        as_if_at(&store, &format!("{dated}'{id}'"), at.parse().unwrap()).await;
    }
    assert_eq!(
        balance_then(&store, &s, "0226-11-20T10:00:00Z").await,
        Tokens::whole(20)
    );
    assert_eq!(
        balance_then(&store, &s, "0226-11-20T07:00:00Z").await,
        Tokens::ZERO
    );
    assert_eq!(
        balance_then(&store, &s, "0226-11-20T08:30:00Z").await,
        Tokens::whole(10)
    );
    as_if_at(
        &store,
        &format!("{dated}'e-3'"),
        "0226-11-20T11:00:00Z".parse().unwrap(),
    )
    .await;
    store
        .execute_raw("UPDATE wallets SET summed_to = NULL")
        .await
        .unwrap();
    assert_eq!(
        balance_then(&store, &s, "0226-11-21T00:00:00Z").await,
        Tokens::whole(30)
    );
    assert_eq!(
        balance_then(&store, &s, "0226-11-20T10:30:00Z").await,
        Tokens::whole(20)
    );
    assert_eq!(
        balance_then(&store, &s, "2026-01-01T00:00:00Z").await,
        Tokens::whole(30)
    );
    let found = store.ledger().audit().await.unwrap();
    assert!(found.is_empty(), "{found:?}");
}

/// Day sums that add up to the right total but sit on the wrong days pass a check of their
/// total; the audit's balances at instants find them.
async fn the_audit_finds_day_sums_on_the_wrong_days(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let c = &s.campaign;
    for (id, amount, days) in [("e-1", "10", 3), ("e-2", "5", 2)] {
        let at = today - Duration::days(days) + Duration::hours(8);
        store
            .ledger()
            .submit_earn(c, earn_at(id, amount, at))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    store
        .ledger()
        .balance_at(c, "w-1", Utc::now())
        .await
        .unwrap();
    assert!(store.ledger().audit().await.unwrap().is_empty());
    store
        .execute_raw(
            "UPDATE balance_days SET net = CASE WHEN net = 10000000 THEN 5000000 ELSE 10000000 END",
        )
        .await
        .unwrap();
    let found = store.ledger().audit().await.unwrap();
    let checks: Vec<&str> = found.iter().map(|d| d.check).collect();
    assert_eq!(checks, ["at"], "{found:?}");
    assert_eq!(
        (found[0].recorded, found[0].computed),
        (Tokens::whole(5), Tokens::whole(10))
    );
}

/// The schema before migration 27, which rebuilds the day sums an earlier defect summed wrong.
const BEFORE_THE_WINDOW: i64 = 26;

/// A wallet with transactions outside chrono's nanosecond range, summed to an instant that is
/// not a day's first, loses its day sums to migration 27 and has them summed again, right, on
/// the next question; a wallet summed right keeps its own.
async fn migration_27_rebuilds_wrong_day_sums(db: store::testing::TestStore) {
    let store = &db.store;
    let (campaign, wallets) = store::testing::old_schema_fixture(store, &["w-1", "w-2"]).await;
    let (wrong, right) = (&wallets[0], &wallets[1]);
    let (org, c) = (&campaign.org_id, &campaign.id);
    let earn = |id: &str, wallet: &str, date: &str| {
        format!(
            "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, \
             external_id, currency, date, created_at) VALUES ('{id}', '{org}', '{c}', \
             '{wallet}', 'EARN', 10000000, '{id}', 'PTS', '{date}', '2026-11-20T08:00:00+00:00');"
        )
    };
    let (w1, w2) = (&wrong.id, &right.id);
    let old = [
        earn("t1", w1, "0226-11-20T08:00:00+00:00"),
        earn("t2", w1, "0226-11-20T09:00:00+00:00"),
        earn("t3", w2, "2026-11-20T08:00:00+00:00"),
        format!(
            "UPDATE wallets SET balance = 20000000, earned = 20000000, \
             summed_to = '0226-11-20T10:00:00+00:00' WHERE id = '{w1}';"
        ),
        format!(
            "UPDATE wallets SET balance = 10000000, earned = 10000000, \
             summed_to = '2026-11-21T00:00:00+00:00' WHERE id = '{w2}';"
        ),
        format!(
            "INSERT INTO balance_days (wallet_id, day, net) VALUES \
             ('{w1}', '0226-11-20T00:00:00+00:00', 20000000), \
             ('{w2}', '2026-11-20T00:00:00+00:00', 10000000);"
        ),
    ];
    store.execute_raw(&old.concat()).await.unwrap();
    store.migrate().await.unwrap();
    let kept = store
        .stored_bytes("SELECT wallet_id FROM balance_days ORDER BY wallet_id")
        .await;
    assert_eq!(
        kept,
        [w2.as_bytes().to_vec()],
        "only the right wallet's sums stay"
    );
    let at = |text: &str| text.parse::<DateTime<Utc>>().unwrap();
    for (instant, balance) in [
        ("0226-11-20T07:00:00Z", 0),
        ("0226-11-20T08:30:00Z", 10),
        ("0226-11-20T10:00:00Z", 20),
    ] {
        let then = store
            .ledger()
            .balance_at(&campaign, "w-1", at(instant))
            .await
            .unwrap();
        assert_eq!(then.balance, Tokens::whole(balance), "{instant}");
    }
    let then = store
        .ledger()
        .balance_at(&campaign, "w-2", at("2026-11-20T12:00:00Z"))
        .await
        .unwrap();
    assert_eq!(then.balance, Tokens::whole(10));
    let found = store.ledger().audit().await.unwrap();
    assert!(found.is_empty(), "{found:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn migration_27_rebuilds_wrong_day_sums_on_sqlite() {
    migration_27_rebuilds_wrong_day_sums(
        store::testing::TestStore::sqlite_at(BEFORE_THE_WINDOW).await,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn migration_27_rebuilds_wrong_day_sums_on_postgres() {
    migration_27_rebuilds_wrong_day_sums(
        store::testing::TestStore::postgres_at(BEFORE_THE_WINDOW).await,
    )
    .await;
}

backend_tests!(
    what_expires_is_listed_per_day,
    a_balance_at_an_instant_is_what_the_transactions_dated_by_then_say,
    far_dates_recorded_before_the_window_keep_a_right_balance,
    the_audit_finds_day_sums_on_the_wrong_days,
);
