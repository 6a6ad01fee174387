//! Returns in batch files: a row with a `reverses` cell takes back (part of) the earn it names,
//! under its own id (shared with the API's reversals); a return of an earn not credited yet, in
//! another wallet, beyond what is left, or repeated is refused with its own reason; a file run
//! again reverses nothing twice. On both backends.

use crate::common::{balance, dry_run, receive, rejected_codes, result, retried, wallets};
use ingest::batch::mapping::Mapping;
use serde_json::json;
use store::Spend;
use store::{
    BatchState, NewBurn, NewCorrection, Policy, RuleBook, Shortfall, Store, StoreError, Tokens,
    TransactionFilter, TransactionKind, backend_tests,
};

/// Earns and returns together: r-3 returns an earn of a later row, r-5 names the other wallet,
/// r-6 returns more than is left, then a repeated id, a 0, 7 decimals and an earn row without a
/// wallet.
const MIXED: &str = "id,walletId,amount,date,reverses,description
e-1,w-1,20,2026-11-20,,Shoes
r-1,,5,,e-1,Returned laces
r-2,w-1,,2026-11-21T09:00:00Z,api-1,
r-3,,1,,e-9,
e-9,w-2,4,2026-11-20,,
r-4,,1,,nothing,
r-5,w-2,1,,e-1,
r-6,,100,,e-1,
r-1,,5,,e-1,
r-7,,0,,e-1,
r-8,,1.1234567,,e-1,
e-10,,3,2026-11-20,,
";

async fn process(store: &Store, data: &std::path::Path, batch: &store::Batch) -> BatchState {
    let book = RuleBook::new(store.programme().clone());
    ingest::batch::pipeline::process(store, &book, data, batch, &|_| {})
        .await
        .unwrap()
        .state
}

async fn return_rows_reverse_their_earns_and_refusals_have_their_reasons(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    crate::common::earn_by_api(&store, &campaign, "api-1", "w-1", "10").await;
    let batch = receive(&store, dir.path(), &org, "mixed.csv", MIXED).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );

    // 10 by the API + 20, less 5 (a quarter of e-1) and all of api-1.
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(15));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(4));
    let wallet = store.ledger().get_wallet(&campaign, "w-1").await.unwrap();
    assert_eq!(wallet.earned, Tokens::whole(15), "lifetime earnings fall");
    let summary = result(dir.path(), &org, "mixed.csv.result.json");
    assert_eq!(
        (
            &summary["loaded"],
            &summary["returns"],
            &summary["tokensReversed"]
        ),
        (&json!(4), &json!(2), &json!(15))
    );
    assert_eq!(
        rejected_codes(dir.path(), &org, "mixed.csv.rejected.csv"),
        [
            (5, "earn_not_credited".to_string()),
            (7, "earn_not_credited".to_string()),
            (8, "wallet_mismatch".to_string()),
            (9, "reversal_exceeds_earn".to_string()),
            (10, "duplicate_in_file".to_string()),
            (11, "not_positive".to_string()),
            (12, "bad_decimal".to_string()),
            (13, "missing_field".to_string()),
        ]
    );

    // Each return is a REVERSAL naming its earn, dated as its row says (or when written).
    let reversals = TransactionFilter {
        kinds: vec![TransactionKind::Reversal],
        ..Default::default()
    };
    let page = store::Page { page: 1, limit: 10 };
    let listed = store
        .ledger()
        .list_transactions(&campaign, &reversals, page)
        .await
        .unwrap();
    assert_eq!(listed.total, 2);
    let r2 = listed
        .items
        .iter()
        .find(|t| t.external_id.as_deref() == Some("r-2"))
        .unwrap();
    assert_eq!(r2.amount, Tokens::whole(10));
    assert_eq!(r2.date.to_rfc3339(), "2026-11-21T09:00:00+00:00");
    let r1 = listed
        .items
        .iter()
        .find(|t| t.external_id.as_deref() == Some("r-1"))
        .unwrap();
    let e1 = r1.corrects.clone().unwrap();
    assert_eq!(r1.description.as_deref(), Some("Returned laces"));

    // The row's id is the correction's key through the API too: the same return is the
    // file's, another is refused naming what differs.
    let again = |amount: &str| NewCorrection {
        transaction_id: e1.clone(),
        external_id: "r-1".into(),
        amount: Some(amount.parse().unwrap()),
        description: Some("Returned laces".into()),
        comment: None,
        meta: None,
    };
    let replayed = store.ledger().correct(&campaign, again("5")).await.unwrap();
    assert!(replayed.replayed);
    assert_eq!(replayed.transaction.id, r1.id);
    match store.ledger().correct(&campaign, again("6")).await {
        Err(StoreError::Refused { code, field, .. }) => {
            assert_eq!((code, field.as_deref()), ("already_exists", Some("amount")));
        }
        other => panic!("{other:?}"),
    }

    // Run again, as after a crash: nothing is reversed twice.
    assert_eq!(
        process(&store, dir.path(), &retried(&batch)).await,
        BatchState::Completed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(15));
    let recorded = store.batches().get_batch(&org, &batch.id).await.unwrap();
    assert_eq!(recorded.summary.unwrap()["loadedBeforeRestart"], 4);

    // Another file with the same return ids: duplicates, and one reusing an id for another
    // return is refused naming the field that differs.
    let next =
        "id,amount,reverses,description\nr-1,5,e-1,Returned laces\nr-2,1,e-1,\nr-9,15,e-1,\n";
    let batch = receive(&store, dir.path(), &org, "next.csv", next).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(
        rejected_codes(dir.path(), &org, "next.csv.rejected.csv"),
        [
            (2, "duplicate_transaction".to_string()),
            (3, "already_exists".to_string()),
        ]
    );
    // r-9 returned the rest of e-1: 15 tokens.
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A client's own layout maps its column of original receipts to `reverses`; a dry run of a
/// returns file checks the earns it names and changes nothing.
async fn a_mapping_maps_the_reversed_earn_and_a_dry_run_changes_nothing(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    crate::common::earn_by_api(&store, &campaign, "T1", "w-1", "8").await;
    let document = json!({
        "pattern": "returns_*.csv",
        "delimiter": ";",
        "columns": {
            "id": "Return",
            "amount": { "column": "Value", "decimal_separator": "," },
            "reverses": "Receipt",
        },
    });
    let mapping = Mapping::parse(&document).unwrap();
    store
        .batches()
        .set_mapping(&org, &mapping.pattern, &document)
        .await
        .unwrap();
    let content = "Return;Receipt;Value\nR1;T1;2,5\nR2;T7;1\n";

    let outcome = dry_run(&store, dir.path(), &org, "returns_1.csv", content, &mapping).await;
    assert_eq!((outcome.rows, outcome.loaded, outcome.rejected), (2, 1, 1));
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(8));

    let batch = receive(&store, dir.path(), &org, "returns_1.csv", content).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    // 2.5 of 8 returned: 2 tokens, rounded down to whole tokens as the default rules round.
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(6));
    assert_eq!(
        rejected_codes(dir.path(), &org, "returns_1.csv.rejected.csv"),
        [(3, "earn_not_credited".to_string())]
    );
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// Under a campaign that refuses a shortfall, a return row is refused only once it has taken
/// the lots (the shortfall is known then): what it took is put back, so the next row of the
/// same chunk finds the lots as they were.
async fn a_refused_shortfall_undoes_its_row_and_the_chunk_goes_on(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let policy = Policy {
        shortfall: Shortfall::Refuse,
        ..Default::default()
    };
    store
        .programme()
        .set_policy(&campaign, policy)
        .await
        .unwrap();
    crate::common::earn_by_api(&store, &campaign, "api-1", "w-1", "10").await;
    let burn = NewBurn {
        spend: Spend {
            wallet: "w-1".into(),
            external_id: "spent".into(),
            amount: Tokens::whole(8),
            description: "A gift".into(),
            comment: None,
            meta: None,
        },
        date: None,
    };
    store.ledger().burn(&campaign, burn).await.unwrap();
    crate::common::earn_by_api(&store, &campaign, "api-2", "w-1", "5").await;

    // r-1 would take api-1's 2 left and 5 of api-2's lot, and still be 3 short.
    let file = "id,amount,reverses\nr-1,,api-1\nr-2,,api-2\n";
    let batch = receive(&store, dir.path(), &org, "returns.csv", file).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(
        rejected_codes(dir.path(), &org, "returns.csv.rejected.csv"),
        [(2, "reversal_shortfall".to_string())]
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(2));
    let wallet = store.ledger().get_wallet(&campaign, "w-1").await.unwrap();
    assert_eq!(wallet.earned, Tokens::whole(10));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A file of two chunks (5,000 rows each): an id repeated in the second chunk, from the first
/// or from its own, is `duplicate_in_file` (credited earlier in the file, found in the journal;
/// or not credited: refused, or the API's), as a dry run, which holds every id, says too; a
/// return takes back an earn of an earlier row, from either chunk, and never one of a later
/// row, even when that row is credited before the return is.
async fn repeats_and_returns_across_chunks_are_told_from_earlier_rows(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    crate::common::earn_by_api(&store, &campaign, "api-1", "w-1", "10").await;
    let mut content = String::from("id,walletId,amount,date,reverses\n");
    for i in 0..4_999 {
        match i {
            // The API's id, for another earn (another date); a wallet no one has.
            100 => content.push_str("api-1,w-1,10,2026-11-20,\n"),
            101 => content.push_str("e-101,nobody,1,2026-11-20,\n"),
            _ => content.push_str(&format!("e-{i},w-{},1,2026-11-20,\n", 1 + i % 2)),
        }
    }
    // Row 5,001 ends the first chunk: its earn is credited by the second.
    content.push_str("r-a,,,,e-5005\n");
    for line in [
        "e-10,w-1,1,2026-11-20,",
        "r-b,,,,e-20",
        "r-c,,,,e-5006",
        "e-5005,w-1,1,2026-11-20,",
        "e-5006,w-2,1,2026-11-20,",
        "e-5006,w-2,1,2026-11-20,",
        "r-d,,,,e-5005",
        "e-30,w-1,7,2026-11-20,",
        "api-1,w-1,10,2026-11-20,",
        "e-101,w-1,1,2026-11-20,",
    ] {
        content.push_str(line);
        content.push('\n');
    }
    let expected = [
        (102, "already_exists".to_string()),
        (103, "unknown_wallet".to_string()),
        (5_001, "earn_not_credited".to_string()),
        (5_002, "duplicate_in_file".to_string()),
        (5_004, "earn_not_credited".to_string()),
        (5_007, "duplicate_in_file".to_string()),
        (5_009, "duplicate_in_file".to_string()),
        (5_010, "duplicate_in_file".to_string()),
        (5_011, "duplicate_in_file".to_string()),
    ];
    let mapping = Mapping::canonical();
    let checked = dry_run(&store, dir.path(), &org, "two.csv", &content, &mapping).await;
    assert_eq!(
        rejected_codes(dir.path(), &org, "two.csv.dry-run.rejected.csv"),
        expected
    );
    assert_eq!((checked.rows, checked.rejected), (5_010, 9));

    let batch = receive(&store, dir.path(), &org, "two.csv", &content).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(
        rejected_codes(dir.path(), &org, "two.csv.rejected.csv"),
        expected
    );
    let summary = result(dir.path(), &org, "two.csv.result.json");
    assert_eq!(
        (
            &summary["loaded"],
            &summary["returns"],
            &summary["rejected"]
        ),
        (&json!(5_001), &json!(2), &json!(9))
    );
    // The API's 10 and 4,999 earns of a token, e-20 and e-5005 returned.
    let w1 = balance(&store, &campaign, "w-1").await;
    let w2 = balance(&store, &campaign, "w-2").await;
    assert_eq!((w1, w2), (Tokens::whole(2_508), Tokens::whole(2_499)));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

backend_tests!(
    repeats_and_returns_across_chunks_are_told_from_earlier_rows,
    return_rows_reverse_their_earns_and_refusals_have_their_reasons,
    a_mapping_maps_the_reversed_earn_and_a_dry_run_changes_nothing,
    a_refused_shortfall_undoes_its_row_and_the_chunk_goes_on,
);
