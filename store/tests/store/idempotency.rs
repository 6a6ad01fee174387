//! Exact idempotency, on both backends: a key used again with the same request answers as the
//! first did, success or refusal; with another request it is `already_exists` naming the first
//! field that differs, whichever door (the API, a batch file) each came through.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use store::{
    EarnInput, EarnStatus, FileEarn, FileOutcome, FileReturn, ReturnOutcome, RuleBook, Shortfall,
    Store, StoreError, Tokens, backend_tests,
};

use crate::corrections::{correction, credit, set_shortfall};
use crate::ledger::{balance, burn, drain, earn, reused_for, setup};
use crate::orders;

/// `earn`, dated `at`.
fn earn_at(id: &str, amount: &str, at: DateTime<Utc>) -> EarnInput {
    EarnInput {
        date: at,
        ..earn(id, amount)
    }
}

async fn an_api_earn_sent_again_answers_with_its_first_request(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let at = Utc::now();
    let first = store
        .ledger()
        .submit_earn(&s.campaign, earn_at("e-1", "10", at))
        .await
        .unwrap();
    // The same earn, its wallet named by id instead of reference and its amount written
    // otherwise: the first request, before and after it is processed.
    let same = EarnInput {
        wallet: s.wallet.id.clone(),
        amount: "10.00".into(),
        ..earn_at("e-1", "10", at)
    };
    let repeat = store
        .ledger()
        .submit_earn(&s.campaign, same.clone())
        .await
        .unwrap();
    assert_eq!(repeat.id, first.id);
    drain(&store, &book).await;
    let repeat = store.ledger().submit_earn(&s.campaign, same).await.unwrap();
    assert_eq!(
        (repeat.id, repeat.status),
        (first.id, EarnStatus::Completed)
    );
    assert_eq!(
        store.ledger().process_earns(&book, 50).await.unwrap(),
        0,
        "nothing new"
    );

    // Another earn under the id: refused at once, naming what differs.
    let others = [
        ("amount", earn_at("e-1", "11", at)),
        ("date", earn_at("e-1", "10", at + Duration::seconds(1))),
        (
            "description",
            EarnInput {
                description: None,
                ..earn_at("e-1", "10", at)
            },
        ),
        (
            "meta",
            EarnInput {
                meta: Some(json!({"a": 1})),
                ..earn_at("e-1", "10", at)
            },
        ),
    ];
    for (field, other) in others {
        let result = store.ledger().submit_earn(&s.campaign, other).await;
        assert_eq!(reused_for(&result), Some(field), "{field}");
    }
}

/// Earns gathered into one write: a repeat within the batch is answered with its first
/// request, another earn under its id is refused.
async fn a_batch_of_submissions_tells_its_own_repeats_apart(store: Store) {
    let s = setup(&store).await;
    let at = Utc::now();
    let mut pending = Vec::new();
    for amount in ["1", "1.0", "2"] {
        let earn = earn_at("e-5", amount, at);
        pending.push(
            store
                .ledger()
                .pending_earn(&s.campaign, earn)
                .await
                .unwrap(),
        );
    }
    let answers = store.ledger().store_earns(pending).await.unwrap();
    let first = answers[0].as_ref().unwrap();
    assert_eq!(answers[1].as_ref().unwrap().id, first.id);
    assert_eq!(reused_for(&answers[2]), Some("amount"));
}

async fn twins_that_differ_are_told_apart_when_credited(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    // Two requests under one id that both passed the check at submission (sent at once to two
    // nodes).
    let mut pending = Vec::new();
    for amount in ["10", "12"] {
        let earn = earn("e-1", amount);
        pending.push(
            store
                .ledger()
                .pending_earn(&s.campaign, earn)
                .await
                .unwrap(),
        );
    }
    let stored = store::testing::store_unchecked(&store, pending).await;
    drain(&store, &book).await;
    let mut outcomes = Vec::new();
    for request in &stored {
        outcomes.push(
            store
                .ledger()
                .earn_request(&s.campaign, &request.id)
                .await
                .unwrap(),
        );
    }
    // Which one is credited is the writer's choice; the other is refused.
    outcomes.sort_by_key(|r| r.status != EarnStatus::Completed);
    let [first, second] = &outcomes[..] else {
        panic!("two requests")
    };
    assert_eq!(first.status, EarnStatus::Completed);
    assert_eq!(second.status, EarnStatus::Rejected);
    assert_eq!(second.transaction_id, first.transaction_id);
    let reason = second.reason.clone().unwrap();
    assert!(reason.starts_with("already_exists"), "{reason}");
    assert!(reason.contains("amount"), "{reason}");
}

async fn a_file_row_and_an_api_earn_share_one_id(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let org = s.campaign.org();
    let api = store
        .ledger()
        .submit_earn(&s.campaign, earn("api-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    let request = store
        .ledger()
        .earn_request(&s.campaign, &api.id)
        .await
        .unwrap();
    let credited = request.transaction_id.unwrap();
    let api_date = store
        .ledger()
        .get_transaction(&s.campaign, &credited)
        .await
        .unwrap()
        .date;
    let now = Utc::now();
    let row = |row: u64, id: &str, amount: &str, date| FileEarn {
        row,
        earn: earn_at(id, amount, date),
    };
    let rows = vec![
        row(2, "api-1", "10", api_date),
        row(3, "api-1", "99", api_date),
        row(4, "f-1", "5", now),
    ];
    let mut totals = Default::default();
    let checked = store
        .batches()
        .check_file_earns(&book, &org, None, &rows, &mut totals)
        .await
        .unwrap();
    let loaded = store
        .batches()
        .credit_file_earns(&book, &org, "batch-1", &rows)
        .await
        .unwrap();
    for outcomes in [&checked, &loaded] {
        assert!(
            matches!(outcomes[0], FileOutcome::Duplicate { .. }),
            "{outcomes:?}"
        );
        assert!(
            matches!(
                outcomes[1],
                FileOutcome::Conflict {
                    field: "amount",
                    ..
                }
            ),
            "{outcomes:?}"
        );
        assert!(matches!(outcomes[2], FileOutcome::Credited { .. }));
    }
    // The file's earn under the API: the same earn answers as a duplicate of it; another is
    // refused at once.
    let same = earn_at("f-1", "5", now);
    let request = store.ledger().submit_earn(&s.campaign, same).await.unwrap();
    drain(&store, &book).await;
    let request = store
        .ledger()
        .earn_request(&s.campaign, &request.id)
        .await
        .unwrap();
    assert_eq!(request.status, EarnStatus::Duplicate);
    let other = earn_at("f-1", "6", now);
    let result = store.ledger().submit_earn(&s.campaign, other).await;
    assert_eq!(reused_for(&result), Some("amount"));
}

/// The refusal `result` is, if it is one: its code and field, or the tokens that were
/// available for a balance that could not cover it.
fn refused<T: std::fmt::Debug>(result: &Result<T, StoreError>) -> String {
    match result {
        Err(StoreError::InsufficientBalance { available }) => format!("short: {available}"),
        Err(StoreError::Refused { code, field, .. }) => format!("{code}: {field:?}"),
        other => panic!("not a refusal: {other:?}"),
    }
}

async fn a_refused_burn_is_refused_again_under_its_key(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    credit(&store, &s, "e-1", "5", 1).await;
    let first = store.ledger().burn(c, burn("b-1", 8)).await;
    assert_eq!(refused(&first), "short: 5");
    // The balance now covers it: the same request is refused as it was; another under the key
    // names what differs; a new key is burned.
    credit(&store, &s, "e-2", "10", 1).await;
    assert_eq!(
        refused(&store.ledger().burn(c, burn("b-1", 8)).await),
        "short: 5"
    );
    let other = store.ledger().burn(c, burn("b-1", 9)).await;
    assert_eq!(reused_for(&other), Some("amount"));
    store.ledger().burn(c, burn("b-2", 8)).await.unwrap();
    assert_eq!(balance(&store, &s).await, Tokens::whole(7));
    assert!(store.ledger().audit().await.unwrap().is_empty());

    // Twins of one request sent at once while the balance changes all answer alike.
    for round in 0..5 {
        let key = format!("t-{round}");
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (store, c, key) = (store.clone(), c.clone(), key.clone());
            tasks.push(tokio::spawn(async move {
                if i == 4 {
                    let e = earn(&format!("top-{round}"), "20");
                    store.ledger().submit_earn(&c, e).await.unwrap();
                    drain(&store, &RuleBook::new(store.programme().clone())).await;
                }
                store
                    .ledger()
                    .burn(&c, burn(&key, 25))
                    .await
                    .map(|b| b.transaction.id)
            }));
        }
        let mut answers = Vec::new();
        for task in tasks {
            answers.push(match task.await.unwrap() {
                Ok(id) => id,
                err => refused(&err),
            });
        }
        assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    }
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn a_refused_return_is_refused_again_under_its_key(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    set_shortfall(&store, &s, Shortfall::Refuse).await;
    let e = credit(&store, &s, "e-1", "10", 2).await;
    store.ledger().burn(c, burn("b-1", 8)).await.unwrap();
    let first = store.ledger().correct(c, correction(&e, "r-1", None)).await;
    assert_eq!(refused(&first), "reversal_shortfall: Some(\"amount\")");
    // The member earns enough to cover it: the same return is still refused; a new key returns.
    credit(&store, &s, "e-2", "20", 1).await;
    let again = store.ledger().correct(c, correction(&e, "r-1", None)).await;
    assert_eq!(refused(&again), refused(&first));
    let other = store
        .ledger()
        .correct(c, correction(&e, "r-1", Some("5")))
        .await;
    assert_eq!(reused_for(&other), Some("amount"));
    store
        .ledger()
        .correct(c, correction(&e, "r-2", None))
        .await
        .unwrap();
    assert_eq!(balance(&store, &s).await, Tokens::whole(12));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A file's return row and an API return under one id are one request: a row refused for its
/// shortfall is refused again through the API, and another return under its id is a conflict.
async fn a_return_refused_in_a_file_is_refused_again_by_the_api(store: Store) {
    let s = setup(&store).await;
    let c = &s.campaign;
    set_shortfall(&store, &s, Shortfall::Refuse).await;
    let e = credit(&store, &s, "e-1", "10", 2).await;
    store.ledger().burn(c, burn("b-1", 8)).await.unwrap();
    let row = FileReturn {
        row: 2,
        id: "ret-1".into(),
        reverses: "e-1".into(),
        earn_earlier_in_file: false,
        amount: None,
        wallet: None,
        date: None,
        description: Some("Returned voucher".into()),
        comment: None,
        meta: None,
    };
    let outcomes = store
        .batches()
        .reverse_file_rows(&c.org(), "batch-1", vec![row])
        .await
        .unwrap();
    assert!(
        matches!(
            outcomes[..],
            [ReturnOutcome::Refused {
                code: "reversal_shortfall",
                ..
            }]
        ),
        "{outcomes:?}"
    );
    credit(&store, &s, "e-2", "20", 1).await;
    let again = store
        .ledger()
        .correct(c, correction(&e, "ret-1", None))
        .await;
    assert_eq!(refused(&again), "reversal_shortfall: Some(\"amount\")");
    let other = store
        .ledger()
        .correct(c, correction(&e, "ret-1", Some("1")))
        .await;
    assert_eq!(reused_for(&other), Some("amount"));
    assert_eq!(balance(&store, &s).await, Tokens::whole(22));
}

async fn a_refused_order_is_refused_again_under_its_reference(store: Store) {
    let c = orders::setup(&store).await;
    orders::earn(&store, &c, "e-1", "5").await;
    let mut mug = orders::order(Some("o-1"), vec![orders::line("mug", None, 2)]);
    mug.wallet = Some("w-1".into());
    let first = store
        .orders()
        .place_order(&c, mug.clone(), orders::key())
        .await;
    assert_eq!(refused(&first), "short: 5");
    orders::earn(&store, &c, "e-2", "10").await;
    let again = store
        .orders()
        .place_order(&c, mug.clone(), orders::key())
        .await;
    assert_eq!(refused(&again), "short: 5");
    let mut three = mug.clone();
    three.lines[0].quantity = 3;
    let other = store.orders().place_order(&c, three, orders::key()).await;
    assert_eq!(reused_for(&other), Some("lines"));
    // Nothing of the refused order was kept: the stock is whole; a new reference is placed.
    mug.reference = Some("o-2".into());
    store
        .orders()
        .place_order(&c, mug, orders::key())
        .await
        .unwrap();
    let wallet = store.ledger().get_wallet(&c, "w-1").await.unwrap();
    assert_eq!(wallet.balance, Tokens::whole(9));
    let products = store.catalogue().catalogue_products(&c).await.unwrap();
    let mug = products.iter().find(|p| p.id == "mug").unwrap();
    assert_eq!(mug.variants[0].stock, Some(1), "3 less the 2 sold");
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

backend_tests!(
    an_api_earn_sent_again_answers_with_its_first_request,
    twins_that_differ_are_told_apart_when_credited,
    a_batch_of_submissions_tells_its_own_repeats_apart,
    a_file_row_and_an_api_earn_share_one_id,
    a_refused_burn_is_refused_again_under_its_key,
    a_refused_return_is_refused_again_under_its_key,
    a_return_refused_in_a_file_is_refused_again_by_the_api,
    a_refused_order_is_refused_again_under_its_reference,
);
