//! A wallet in time, on both backends: what its lots lose to expiry over the days ahead.

use chrono::{Duration, Utc};
use store::{Expiry, Page, RuleBook, Store, Tokens, TransactionKind, backend_tests};

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

backend_tests!(what_expires_is_listed_per_day);
