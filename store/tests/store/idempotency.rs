//! Exact idempotency, on both backends: a key used again with the same request answers as the
//! first did, success or refusal; with another request it is `already_exists` naming the first
//! field that differs, whichever door (the API, a batch file) each came through.

use chrono::{DateTime, Duration, Utc};
use serde_json::json;
use store::{
    EarnInput, EarnStatus, FileEarn, FileOutcome, RuleBook, Store, Submission, backend_tests,
};

use crate::ledger::{drain, earn, reused_for, setup};

/// `earn`, dated `at`.
fn earn_at(id: &str, amount: &str, at: DateTime<Utc>) -> EarnInput {
    EarnInput {
        date: at,
        ..earn(id, amount)
    }
}

async fn an_api_earn_sent_again_answers_with_its_first_request(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.clone());
    let at = Utc::now();
    let first = store
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
    let repeat = store.submit_earn(&s.campaign, same.clone()).await.unwrap();
    assert_eq!(repeat.id, first.id);
    drain(&store, &book).await;
    let repeat = store.submit_earn(&s.campaign, same).await.unwrap();
    assert_eq!(
        (repeat.id, repeat.status),
        (first.id, EarnStatus::Completed)
    );
    assert_eq!(
        store.process_earns(&book, 50).await.unwrap(),
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
        let result = store.pending_earn(&s.campaign, other).await;
        assert_eq!(reused_for(&result), Some(field), "{field}");
    }
}

async fn twins_that_differ_are_told_apart_when_credited(store: Store) {
    let s = setup(&store).await;
    let book = RuleBook::new(store.clone());
    // Two requests under one id that both passed the check at submission (sent at once).
    let mut pending = Vec::new();
    for amount in ["10", "12"] {
        match store
            .pending_earn(&s.campaign, earn("e-1", amount))
            .await
            .unwrap()
        {
            Submission::New(p) => pending.push(p),
            Submission::Repeat(r) => panic!("a new id repeats {r:?}"),
        }
    }
    let stored = store.store_earns(pending).await.unwrap();
    drain(&store, &book).await;
    let mut outcomes = Vec::new();
    for request in &stored {
        outcomes.push(store.earn_request(&s.campaign, &request.id).await.unwrap());
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
    let book = RuleBook::new(store.clone());
    let org = s.campaign.org();
    let api = store
        .submit_earn(&s.campaign, earn("api-1", "10"))
        .await
        .unwrap();
    drain(&store, &book).await;
    let request = store.earn_request(&s.campaign, &api.id).await.unwrap();
    let credited = request.transaction_id.unwrap();
    let api_date = store
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
        .check_file_earns(&book, &org, None, &rows, &mut totals)
        .await
        .unwrap();
    let loaded = store
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
    let request = store.submit_earn(&s.campaign, same).await.unwrap();
    drain(&store, &book).await;
    let request = store.earn_request(&s.campaign, &request.id).await.unwrap();
    assert_eq!(request.status, EarnStatus::Duplicate);
    let other = earn_at("f-1", "6", now);
    let result = store.pending_earn(&s.campaign, other).await;
    assert_eq!(reused_for(&result), Some("amount"));
}

backend_tests!(
    an_api_earn_sent_again_answers_with_its_first_request,
    twins_that_differ_are_told_apart_when_credited,
    a_file_row_and_an_api_earn_share_one_id,
);
