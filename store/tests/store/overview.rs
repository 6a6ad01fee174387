//! A campaign at a glance, on both backends: its wallets, what it owes, its tiers, and the
//! tokens recorded per day by type.

use chrono::{Duration, DurationRound, Utc};
use store::{RuleBook, Store, Tokens, TransactionKind, backend_tests};

use crate::ledger::{burn, drain, earn, setup};

async fn a_campaign_is_summed_and_its_days_recorded(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let ledger = store.ledger();
    for (id, amount) in [("e-1", "10"), ("e-2", "25")] {
        ledger
            .submit_earn(&s.campaign, earn(id, amount))
            .await
            .unwrap();
    }
    drain(&store, &book).await;
    ledger.burn(&s.campaign, burn("b-1", 5)).await.unwrap();
    let before = Utc::now() - Duration::hours(1);
    let figures = ledger.campaign_figures(&s.campaign, before).await.unwrap();
    assert_eq!((figures.wallets, figures.active_wallets), (1, 1));
    assert_eq!(figures.outstanding, Tokens::whole(30));
    assert_eq!(figures.tiers.iter().map(|t| t.2).sum::<u64>(), 1);
    let later = ledger
        .campaign_figures(&s.campaign, Utc::now() + Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(later.active_wallets, 0, "no balance changed since then");

    let today = Utc::now().duration_trunc(Duration::days(1)).unwrap();
    let days = ledger
        .recorded_by_day(
            &s.campaign,
            today - Duration::days(89),
            today + Duration::days(1),
        )
        .await
        .unwrap();
    let of = |kind: TransactionKind| days.iter().find(|d| d.kind == kind).unwrap();
    assert!(days.iter().all(|d| d.day == today), "{days:?}");
    assert_eq!(
        (
            of(TransactionKind::Earn).tokens,
            of(TransactionKind::Earn).transactions
        ),
        (Tokens::whole(35), 2)
    );
    assert_eq!(of(TransactionKind::Burn).tokens, Tokens::whole(5));
    let none = ledger
        .recorded_by_day(&s.campaign, today - Duration::days(9), today)
        .await
        .unwrap();
    assert!(none.is_empty(), "nothing recorded before today: {none:?}");
}

backend_tests!(a_campaign_is_summed_and_its_days_recorded);
