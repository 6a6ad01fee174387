//! Files in a client's own layout (through a mapping), acceptance policies, dry runs and XLSX
//! workbooks, on both backends.

use std::io::Write;

use crate::common::{balance, dry_run, receive, receive_bytes, rejected_codes, result, wallets};
use ingest::batch::mapping::Mapping;
use serde_json::{Value, json};
use store::{BatchState, Page, RuleBook, Store, Tokens, TransactionFilter, backend_tests};

async fn set_mapping(store: &Store, org: &store::OrgScope, document: Value) {
    let mapping = Mapping::parse(&document).unwrap();
    store
        .batches()
        .set_mapping(org, &mapping.pattern, &document)
        .await
        .unwrap();
}

async fn process(store: &Store, data: &std::path::Path, batch: &store::Batch) -> BatchState {
    let book = RuleBook::new(store.programme().clone());
    ingest::batch::pipeline::process(store, &book, data, batch, &|_| {})
        .await
        .unwrap()
        .state
}

/// A till export: a title line, then a `;`-separated header, Windows-1252 text, decimal commas
/// with thousands points, day-first local times in Paris, a yes/no column.
const TILL: &[u8] = b"Export from till 7;;;;;\r
Ticket;Card;Total;When;Shop;Member?;Note\r
T1;w-1;1.234,50;20/11/2026 10:15;A1;Y;Caf\xe9 cr\xe8me\r
T2;w-2;2,5;20/11/2026 23:30;B2;N;\r
T3;w-1;12.50;20/11/2026 10:15;A1;Y;\r
T4;w-2;5;32/11/2026 10:00;A1;Y;\r
T5;w-2;5;20/11/2026 10:00;A1;maybe;\r
T6;w-2;5\r
";

async fn a_file_in_the_clients_layout_is_read_through_its_mapping(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    set_mapping(
        &store,
        &org,
        json!({
            "pattern": "till_*.csv",
            "delimiter": ";",
            "header_row": 2,
            "encoding": "windows-1252",
            "columns": {
                "id": "Ticket",
                "walletId": "Card",
                "amount": { "column": "Total", "decimal_separator": ",", "thousands_separator": "." },
                "date": { "column": "When", "format": "%d/%m/%Y %H:%M", "timezone": "Europe/Paris" },
                "description": { "column": "Note", "default": "In-store purchase" },
            },
            "meta": {
                "store.code": "Shop",
                "member": { "column": "Member?", "type": "boolean", "true_values": ["Y"], "false_values": ["N"] },
            },
        }),
    )
    .await;
    let batch = receive_bytes(&store, dir.path(), &org, "till_2026-11-20.csv", TILL).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(1234));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(2));
    let transactions = store
        .ledger()
        .list_transactions(&campaign, &TransactionFilter::default(), Page::default())
        .await
        .unwrap()
        .items;
    let t1 = transactions
        .iter()
        .find(|t| t.external_id.as_deref() == Some("T1"))
        .unwrap();
    assert_eq!(t1.description.as_deref(), Some("Café crème"));
    assert_eq!(
        t1.meta,
        Some(json!({"store": {"code": "A1"}, "member": true}))
    );
    assert_eq!(t1.date.to_rfc3339(), "2026-11-20T09:15:00+00:00");
    assert_eq!(t1.source_amount.as_deref(), Some("1234.5"));
    let t2 = transactions
        .iter()
        .find(|t| t.external_id.as_deref() == Some("T2"))
        .unwrap();
    assert_eq!(t2.description.as_deref(), Some("In-store purchase"));
    assert_eq!(t2.date.to_rfc3339(), "2026-11-20T22:30:00+00:00");
    assert_eq!(
        rejected_codes(dir.path(), &org, "till_2026-11-20.csv.rejected.csv"),
        [
            (5, "bad_decimal".to_string()),
            (6, "bad_date".to_string()),
            (7, "bad_boolean".to_string()),
            (8, "ragged_row".to_string()),
        ]
    );
    let summary = result(dir.path(), &org, "till_2026-11-20.csv.result.json");
    assert_eq!(summary["mapping"], "till_*.csv");
    assert_eq!(
        (summary["rows"].clone(), summary["loaded"].clone()),
        (json!(6), json!(2))
    );

    // Another file name does not match the pattern: the canonical layout applies, and the
    // till's header is refused.
    let content = [TILL, b"T7;w-1;1;20/11/2026 10:15;A1;Y;\r\n"].concat();
    let other = receive_bytes(&store, dir.path(), &org, "other.csv", &content).await;
    assert_eq!(
        process(&store, dir.path(), &other).await,
        BatchState::Failed
    );
}

const MIXED: &str = "id,walletId,amount,date
a-1,w-1,10,2026-11-20
a-2,w-2,20,2026-11-20
a-3,nobody,30,2026-11-20
a-4,w-1,40,2026-11-20
";

async fn an_all_or_nothing_file_with_a_bad_row_loads_nothing(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let columns = json!({ "id": "id", "walletId": "walletId", "amount": "amount", "date": "date" });
    set_mapping(
        &store,
        &org,
        json!({ "columns": columns, "acceptance": { "policy": "all-or-nothing" } }),
    )
    .await;
    let batch = receive(&store, dir.path(), &org, "mixed.csv", MIXED).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Failed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::ZERO);
    let recorded = store.batches().get_batch(&org, &batch.id).await.unwrap();
    assert!(
        recorded
            .error
            .as_deref()
            .unwrap()
            .contains("all-or-nothing"),
        "{recorded:?}"
    );
    assert_eq!(recorded.rows_loaded, Some(0));
    assert_eq!(
        rejected_codes(dir.path(), &org, "mixed.csv.rejected.csv"),
        [(4, "unknown_wallet".to_string())],
        "the report says which row stopped the file"
    );

    // A threshold of 10% refuses one bad row in four too; one of one bad row allowed loads the
    // good rows. (A failed file may be sent again.)
    let threshold = |acceptance: Value| json!({ "columns": columns, "acceptance": acceptance });
    set_mapping(
        &store,
        &org,
        threshold(json!({ "max_rejected_percent": 10 })),
    )
    .await;
    let batch = receive(&store, dir.path(), &org, "mixed.csv", MIXED).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Failed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);
    set_mapping(&store, &org, threshold(json!({ "max_rejected_rows": 1 }))).await;
    let batch = receive(&store, dir.path(), &org, "mixed.csv", MIXED).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(50));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(20));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn a_dry_run_reports_what_would_happen_and_changes_nothing(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    crate::common::earn_by_api(&store, &campaign, "a-2", "w-2", "20").await;
    let mapping = Mapping::canonical();
    let outcome = dry_run(&store, dir.path(), &org, "mixed.csv", MIXED, &mapping).await;
    assert_eq!((outcome.rows, outcome.loaded, outcome.rejected), (4, 2, 2));
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(20));
    let summary = result(dir.path(), &org, "mixed.csv.dry-run.result.json");
    assert_eq!(summary["dryRun"], true);
    assert_eq!(summary["tokens"], 50);
    assert_eq!(
        rejected_codes(dir.path(), &org, "mixed.csv.dry-run.rejected.csv"),
        [
            (3, "already_exists".to_string()),
            (4, "unknown_wallet".to_string())
        ]
    );
    let batches = store
        .batches()
        .list_batches(&org, Page::default())
        .await
        .unwrap();
    assert_eq!(batches.total, 0, "a dry run records no batch");
}

/// Receives and processes a file that must fail whole; returns why it failed.
async fn refused(
    store: &Store,
    data: &std::path::Path,
    org: &store::OrgScope,
    name: &str,
    content: &[u8],
) -> String {
    let batch = receive_bytes(store, data, org, name, content).await;
    assert_eq!(process(store, data, &batch).await, BatchState::Failed);
    let recorded = store.batches().get_batch(org, &batch.id).await.unwrap();
    recorded.error.unwrap()
}

fn workbook(rows: Vec<Vec<&str>>) -> Vec<u8> {
    let mut out = std::io::Cursor::new(Vec::new());
    let rows = rows
        .into_iter()
        .map(|r| r.into_iter().map(String::from).collect());
    generators::xlsx::write(rows, &mut out).unwrap();
    out.into_inner()
}

async fn xlsx_files_are_read_and_unsafe_ones_refused(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let bytes = workbook(vec![
        vec!["id", "walletId", "amount", "date", "meta.store"],
        vec!["x-1", "w-1", "12.5", "2026-11-20", "007"],
        vec!["x-2", "w-2", "7", "2026-11-20T10:00:00Z", "B2"],
        vec!["x-3", "w-2", "seven", "2026-11-20", ""],
    ]);
    let batch = receive_bytes(&store, dir.path(), &org, "earns.xlsx", &bytes).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(12));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(7));
    assert_eq!(
        rejected_codes(dir.path(), &org, "earns.xlsx.rejected.csv"),
        [(4, "bad_decimal".to_string())]
    );

    // 10,001 records: refused whole, with the advice to send CSV.
    let mut big = vec![vec![
        "id".to_string(),
        "walletId".into(),
        "amount".into(),
        "date".into(),
    ]];
    for i in 0..10_001 {
        big.push(vec![
            format!("b-{i}"),
            "w-1".into(),
            "1".into(),
            "2026-11-20".into(),
        ]);
    }
    let mut out = std::io::Cursor::new(Vec::new());
    generators::xlsx::write(big, &mut out).unwrap();
    let error = refused(&store, dir.path(), &org, "big.xlsx", out.get_ref()).await;
    assert!(
        error.contains("10000 records") && error.contains("CSV"),
        "{error}"
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(12));

    // A zip bomb: 100 MiB of spaces in a few hundred KiB.
    let mut out = std::io::Cursor::new(Vec::new());
    let mut zip = zip::ZipWriter::new(&mut out);
    let options = zip::write::SimpleFileOptions::default();
    zip.start_file("xl/worksheets/sheet1.xml", options).unwrap();
    let spaces = vec![b' '; 1 << 20];
    for _ in 0..100 {
        zip.write_all(&spaces).unwrap();
    }
    zip.finish().unwrap();
    let error = refused(&store, dir.path(), &org, "bomb.xlsx", out.get_ref()).await;
    assert!(error.contains("refused as unsafe"), "{error}");
}

backend_tests!(
    a_file_in_the_clients_layout_is_read_through_its_mapping,
    an_all_or_nothing_file_with_a_bad_row_loads_nothing,
    a_dry_run_reports_what_would_happen_and_changes_nothing,
    xlsx_files_are_read_and_unsafe_ones_refused,
);
