//! Parquet earn files through the batch pipeline: typed columns (decimal amounts, UTC
//! timestamps, a struct `meta`) credited as the same rows in CSV would be, string columns read
//! as CSV cells are, and each bad row rejected with the CSV reason codes and its row number
//! (the first row is 1: Parquet has no header line).

use crate::common::{balance, receive_bytes, rejected_codes, result, wallets};
use columnar::{ParquetSink, Values};
use store::{BatchState, RuleBook, Store, Tokens, backend_tests};

fn text(values: &[Option<&str>]) -> Values {
    Values::Text(values.iter().map(|v| v.map(str::to_string)).collect())
}

/// Writes `columns` as one Parquet file (one row group) and returns its bytes.
fn parquet(columns: Vec<(&str, Values)>) -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("f.parquet");
    let mut sink = ParquetSink::create(&path).unwrap();
    sink.write(
        columns
            .into_iter()
            .map(|(name, values)| (name.to_string(), values))
            .collect(),
    )
    .unwrap();
    sink.finish().unwrap();
    std::fs::read(&path).unwrap()
}

const NOV_20: i64 = 1_763_596_800_000_000; // 2025-11-20T00:00:00Z in microseconds

async fn typed_rows_are_credited_and_bad_ones_reported(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    crate::common::earn_by_api(&store, &campaign, "api-1", "w-1", "3").await;
    let some = |v: &str| Some(v.to_string());
    let file = parquet(vec![
        (
            "id",
            text(&[
                Some("f-1"),
                Some("f-2"),
                Some("f-3"),
                Some("f-1"),
                Some("api-1"),
                Some("f-4"),
                Some("f-5"),
                Some("f-6"),
                None,
            ]),
        ),
        (
            "walletId",
            text(&[
                Some("w-1"),
                Some("w-2"),
                Some("nobody"),
                Some("w-1"),
                Some("w-1"),
                Some("w-1"),
                Some("w-1"),
                Some("w-1"),
                Some("w-1"),
            ]),
        ),
        (
            "amount",
            Values::Decimal {
                values: vec![
                    some("10.00"),
                    some("2.50"),
                    some("5"),
                    some("10"),
                    some("3"),
                    None,
                    some("-5"),
                    some("1"),
                    some("1"),
                ],
                precision: 18,
                scale: 2,
            },
        ),
        (
            "date",
            Values::Timestamp {
                micros: vec![Some(NOV_20); 7]
                    .into_iter()
                    .chain([None, Some(NOV_20)])
                    .collect(),
                utc: true,
            },
        ),
        (
            "meta",
            Values::Struct(vec![("store".to_string(), text(&[Some("A1"); 9]))]),
        ),
    ]);
    let batch = receive_bytes(&store, dir.path(), &org, "earns.parquet", &file).await;
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Completed);
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(13));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(2));
    let summary = result(dir.path(), &org, "earns.parquet.result.json");
    assert_eq!(
        (&summary["rows"], &summary["loaded"]),
        (&9.into(), &2.into()),
        "{summary}"
    );
    assert_eq!(
        rejected_codes(dir.path(), &org, "earns.parquet.rejected.csv"),
        vec![
            (3, "unknown_wallet".to_string()),
            (4, "duplicate_in_file".to_string()),
            (5, "already_exists".to_string()),
            (6, "missing_field".to_string()),
            (7, "negative_amount".to_string()),
            (8, "missing_field".to_string()),
            (9, "missing_field".to_string()),
        ]
    );
}

async fn string_columns_are_read_as_csv_cells(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let file = parquet(vec![
        (
            "id",
            text(&[Some("s-1"), Some("s-2"), Some("s-3"), Some("s-4")]),
        ),
        (
            "walletId",
            text(&[Some("w-1"), Some("w-1"), Some("w-1"), Some("w-2")]),
        ),
        (
            "amount",
            text(&[Some("7.5"), Some("12;50"), Some("1"), Some("4")]),
        ),
        (
            "date",
            text(&[
                Some("2026-11-20"),
                Some("2026-11-20"),
                Some("20/11/2026"),
                Some("2026-11-20T10:00:00+02:00"),
            ]),
        ),
        (
            "description",
            text(&[Some("Coffee"), None, None, Some(&"x".repeat(300))]),
        ),
    ]);
    let batch = receive_bytes(&store, dir.path(), &org, "strings.parquet", &file).await;
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Completed);
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(7));
    assert_eq!(
        rejected_codes(dir.path(), &org, "strings.parquet.rejected.csv"),
        vec![
            (2, "bad_decimal".to_string()),
            (3, "bad_date".to_string()),
            (4, "too_long".to_string()),
        ]
    );
}

async fn a_file_that_is_not_parquet_or_lacks_columns_fails_whole(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, _campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let csv = b"id,walletId,amount,date\nt-1,w-1,5,2026-11-20\n";
    let batch = receive_bytes(&store, dir.path(), &org, "renamed.parquet", csv).await;
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Failed);
    let summary = result(dir.path(), &org, "renamed.parquet.result.json");
    let reason = summary["error"].as_str().unwrap_or_default();
    assert!(reason.contains("not Parquet"), "{summary}");

    let partial = parquet(vec![
        ("id", text(&[Some("t-1")])),
        ("amount", text(&[Some("5")])),
    ]);
    let batch = receive_bytes(&store, dir.path(), &org, "partial.parquet", &partial).await;
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Failed);
    let summary = result(dir.path(), &org, "partial.parquet.result.json");
    let reason = summary["error"].as_str().unwrap_or_default();
    assert!(
        reason.contains("walletId") && reason.contains("date"),
        "{summary}"
    );
}

backend_tests!(
    typed_rows_are_credited_and_bad_ones_reported,
    string_columns_are_read_as_csv_cells,
    a_file_that_is_not_parquet_or_lacks_columns_fails_whole,
    mapped_parquet_files_reject_with_the_remaining_reason_codes,
);

/// The reason codes a Parquet file can still earn beyond the canonical ones: bytes that are not
/// UTF-8, a boolean the mapping cannot read, an amount the ledger cannot hold. (A ragged row
/// cannot happen: every Parquet column has every row.) The mapping's day-first date format does
/// not stop a typed timestamp column from being read.
async fn mapped_parquet_files_reject_with_the_remaining_reason_codes(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let document = serde_json::json!({
        "pattern": "*.parquet",
        "columns": {
            "id": "Ticket",
            "walletId": "Card",
            "amount": "Total",
            "date": { "column": "When", "format": "%d/%m/%Y %H:%M", "timezone": "Europe/Paris" },
            "description": "Note",
        },
        "meta": { "member": { "column": "Member", "type": "boolean", "true_values": ["Y"], "false_values": ["N"] } },
    });
    let mapping = ingest::batch::mapping::Mapping::parse(&document).unwrap();
    store
        .batches()
        .set_mapping(&org, &mapping.pattern, &document)
        .await
        .unwrap();
    let some = |v: &str| Some(v.to_string());
    let file = parquet(vec![
        (
            "Ticket",
            text(&[Some("r-1"), Some("r-2"), Some("r-3"), Some("r-4")]),
        ),
        ("Card", text(&[Some("w-1"); 4])),
        (
            "Total",
            Values::Decimal {
                values: vec![
                    some("5.00"),
                    some("1.00"),
                    some("1.00"),
                    // Within the API's bound, but more tokens than a wallet holds.
                    some("1000000000000000.00"),
                ],
                precision: 38,
                scale: 2,
            },
        ),
        (
            "When",
            Values::Timestamp {
                micros: vec![Some(NOV_20); 4],
                utc: true,
            },
        ),
        (
            "Note",
            Values::Bytes(vec![
                Some(b"Caf\xc3\xa9".to_vec()),
                Some(b"caf\xe9".to_vec()),
                None,
                None,
            ]),
        ),
        (
            "Member",
            text(&[Some("Y"), Some("N"), Some("maybe"), Some("Y")]),
        ),
    ]);
    let batch = receive_bytes(&store, dir.path(), &org, "till.parquet", &file).await;
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Completed);
    assert_eq!(
        rejected_codes(dir.path(), &org, "till.parquet.rejected.csv"),
        vec![
            (2, "bad_encoding".to_string()),
            (3, "bad_boolean".to_string()),
            (4, "rules_refused".to_string()),
        ]
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(5));
    let credited = store
        .ledger()
        .list_transactions(
            &campaign,
            &store::TransactionFilter::default(),
            store::Page::default(),
        )
        .await
        .unwrap()
        .items;
    assert_eq!(credited.len(), 1);
    assert_eq!(credited[0].date.timestamp_micros(), NOV_20);
    assert_eq!(credited[0].description.as_deref(), Some("Café"));
    assert_eq!(credited[0].meta, Some(serde_json::json!({"member": true})));
}
