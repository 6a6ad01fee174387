//! Ledger exports: files read back with polars hold the ledger's transactions with its types
//! (exact decimal amounts, UTC timestamps) and totals; bounds by date, campaign and type pick
//! the right rows; CSV holds the same columns; a scheduled day is written once by two nodes.

use std::path::Path;

use crate::common::{balance, receive, wallets};
use chrono::{Duration, NaiveDate, NaiveTime, Utc};
use polars::prelude::*;
use store::Spend;
use store::{
    Campaign, ExportFilter, ExportFormat, ExportTime, NewBurn, RuleBook, Store, Tokens,
    TransactionKind, backend_tests, testing::TestStore,
};

/// Three earns from a batch file (dated on the 2nd, 3rd and 4th of November 2026), one by the
/// API (dated now) and a burn; the batch's id.
async fn ledger(store: &Store, data: &Path, org: &store::OrgScope, campaign: &Campaign) -> String {
    let book = RuleBook::new(store.programme().clone());
    let file = "id,walletId,amount,date,description,meta.store\n\
                f-1,w-1,10.25,2026-11-02,Coffee,A1\n\
                f-2,w-2,4,2026-11-03,Tea,B2\n\
                f-3,w-1,1.5,2026-11-04T23:30:00Z,,\n";
    let batch = receive(store, data, org, "earns.csv", file).await;
    ingest::batch::pipeline::process(store, &book, data, &batch, &|_| {})
        .await
        .unwrap();
    crate::common::earn_by_api(store, campaign, "api-1", "w-2", "3").await;
    let burn = NewBurn {
        spend: Spend {
            wallet: "w-1".into(),
            external_id: "order-1".into(),
            amount: Tokens::from_text("2.5").unwrap(),
            description: "Reward".into(),
            comment: None,
            meta: None,
        },
        date: None,
    };
    store.ledger().burn(campaign, burn).await.unwrap();
    batch.id
}

/// The organisation's transactions that `filter` picks, written to `path`; how many.
async fn export(
    store: &Store,
    org: &store::OrgScope,
    filter: &ExportFilter,
    path: &Path,
    format: ExportFormat,
) -> u64 {
    exports::export(store, org, filter, path, format, |_| {})
        .await
        .unwrap()
}

fn read(path: &Path) -> DataFrame {
    ParquetReader::new(std::fs::File::open(path).unwrap())
        .finish()
        .unwrap()
}

fn texts(frame: &DataFrame, column: &str) -> Vec<Option<String>> {
    let series = frame.column(column).unwrap().as_materialized_series();
    let values = series.str().unwrap();
    (0..values.len())
        .map(|i| values.get(i).map(str::to_string))
        .collect()
}

/// The `amount` column in micro-tokens.
fn micros(frame: &DataFrame) -> Vec<i128> {
    let series = frame.column("amount").unwrap().as_materialized_series();
    let values = series.decimal().unwrap().physical();
    (0..values.len()).map(|i| values.get(i).unwrap()).collect()
}

async fn parquet_exports_keep_the_ledgers_types_and_totals(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let batch_id = ledger(&store, dir.path(), &org, &campaign).await;
    let path = dir.path().join("ledger.parquet");
    let rows = export(
        &store,
        &org,
        &ExportFilter::all(),
        &path,
        ExportFormat::Parquet,
    )
    .await;
    assert_eq!(rows, 5);
    let frame = read(&path);
    let names: Vec<String> = frame
        .get_column_names()
        .iter()
        .map(std::string::ToString::to_string)
        .collect();
    assert_eq!(names, exports::COLUMNS);
    let dtype = |c: &str| frame.column(c).unwrap().dtype().clone();
    assert_eq!(dtype("amount"), DataType::Decimal(38, 6));
    let utc = DataType::Datetime(TimeUnit::Microseconds, Some(TimeZone::UTC));
    assert_eq!((dtype("date"), dtype("createdAt")), (utc.clone(), utc));
    assert_eq!(dtype("rulesVersion"), DataType::Int64);

    // Totals equal the ledger's: what was earned less what was burned is what the wallets hold.
    let kinds = texts(&frame, "type");
    let amounts = micros(&frame);
    let net: i128 = kinds
        .iter()
        .zip(&amounts)
        .map(|(kind, amount)| match kind.as_deref() {
            Some("EARN") => *amount,
            _ => -*amount,
        })
        .sum();
    // The default rules give a token per whole unit of amount: 10 + 4 + 1 + 3, less 2.5.
    assert_eq!(net, 15_500_000);
    let w1 = balance(&store, &campaign, "w-1").await;
    let held = w1.checked_add(balance(&store, &campaign, "w-2").await);
    assert_eq!(held, Some(Tokens::from_text("15.5").unwrap()));

    // Each row says where it came from.
    let ids = texts(&frame, "externalId");
    let row = |id: &str| ids.iter().position(|v| v.as_deref() == Some(id)).unwrap();
    let (coffee, api, burn) = (row("f-1"), row("api-1"), row("order-1"));
    assert_eq!(
        texts(&frame, "walletReference")[coffee].as_deref(),
        Some("w-1")
    );
    assert_eq!(
        texts(&frame, "batchId")[coffee].as_deref(),
        Some(batch_id.as_str())
    );
    assert_eq!(texts(&frame, "batchId")[api], None);
    assert_eq!(
        texts(&frame, "sourceAmount")[coffee].as_deref(),
        Some("10.25")
    );
    let meta: serde_json::Value =
        serde_json::from_str(texts(&frame, "meta")[coffee].as_deref().unwrap()).unwrap();
    assert_eq!(meta, serde_json::json!({"store": "A1"}));
    assert_eq!(texts(&frame, "type")[burn].as_deref(), Some("BURN"));
    assert_eq!(amounts[coffee], 10_000_000);
    let member = store
        .ledger()
        .get_wallet(&campaign, "w-1")
        .await
        .unwrap()
        .owner_id;
    assert_eq!(
        texts(&frame, "memberId")[coffee].as_deref(),
        Some(member.as_str())
    );
    let dates = frame
        .column("date")
        .unwrap()
        .as_materialized_series()
        .datetime()
        .unwrap()
        .physical()
        .clone();
    let late = NaiveDate::from_ymd_opt(2026, 11, 4)
        .unwrap()
        .and_hms_opt(23, 30, 0)
        .unwrap()
        .and_utc();
    assert_eq!(dates.get(row("f-3")), Some(late.timestamp_micros()));
}

async fn csv_exports_hold_the_same_columns_as_text(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    ledger(&store, dir.path(), &org, &campaign).await;
    let path = dir.path().join("ledger.csv");
    let rows = export(&store, &org, &ExportFilter::all(), &path, ExportFormat::Csv).await;
    assert_eq!(rows, 5);
    let mut reader = csv::Reader::from_path(&path).unwrap();
    let header: Vec<String> = reader
        .headers()
        .unwrap()
        .iter()
        .map(str::to_string)
        .collect();
    assert_eq!(header, exports::COLUMNS);
    let records: Vec<csv::StringRecord> = reader.records().map(Result::unwrap).collect();
    let coffee = records.iter().find(|r| &r[9] == "f-1").unwrap();
    assert_eq!((&coffee[5], &coffee[6], &coffee[3]), ("EARN", "10", "w-1"));
    assert_eq!(&coffee[10], "10.25");
    assert_eq!(&coffee[8], "2026-11-02T00:00:00Z");
    let burn = records.iter().find(|r| &r[9] == "order-1").unwrap();
    assert_eq!((&burn[5], &burn[6]), ("BURN", "2.5"));
    // The file is in place only once complete: no temporary file is left beside it.
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(
        !left.iter().any(|n| n.to_string_lossy().ends_with(".tmp")),
        "{left:?}"
    );
}

async fn bounds_pick_days_campaigns_and_types(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    ledger(&store, dir.path(), &org, &campaign).await;
    let day = |d: u32| {
        NaiveDate::from_ymd_opt(2026, 11, d)
            .unwrap()
            .and_time(NaiveTime::MIN)
            .and_utc()
    };
    let picked = |filter: ExportFilter| {
        let (store, org, dir) = (store.clone(), org.clone(), dir.path().to_owned());
        async move {
            let path = dir.join("picked.parquet");
            export(&store, &org, &filter, &path, ExportFormat::Parquet).await;
            let mut ids: Vec<String> = texts(&read(&path), "externalId")
                .into_iter()
                .flatten()
                .collect();
            ids.sort();
            assert_eq!(
                store.count_export(&org, &filter).await.unwrap(),
                ids.len() as u64
            );
            ids
        }
    };
    // The 3rd and 4th of November, whole days: the last earn at 23:30 is in.
    let days = ExportFilter {
        from: Some(day(3)),
        until: Some(day(5)),
        ..ExportFilter::all()
    };
    assert_eq!(picked(days.clone()).await, ["f-2", "f-3"]);
    let burns = ExportFilter {
        kinds: vec![TransactionKind::Burn],
        ..ExportFilter::all()
    };
    assert_eq!(picked(burns).await, ["order-1"]);
    // By the day the ledger recorded them, everything is today's.
    let today = Utc::now().date_naive().and_time(NaiveTime::MIN).and_utc();
    let recorded = ExportFilter {
        from: Some(today),
        until: Some(today + Duration::days(1)),
        by: ExportTime::Recorded,
        ..ExportFilter::all()
    };
    assert_eq!(
        picked(recorded).await,
        ["api-1", "f-1", "f-2", "f-3", "order-1"]
    );
    // Another campaign has none of them; another organisation sees nothing.
    let other = store
        .tenancy()
        .create_campaign(
            &org,
            store::NewCampaign {
                name: "Other".into(),
                currency: "PTS".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let elsewhere = ExportFilter {
        campaign_id: Some(other.id),
        ..ExportFilter::all()
    };
    assert!(picked(elsewhere).await.is_empty());
    let mine = ExportFilter {
        campaign_id: Some(campaign.id.clone()),
        ..days
    };
    assert_eq!(picked(mine).await, ["f-2", "f-3"]);
    let stranger = store
        .tenancy()
        .create_org("Stranger")
        .await
        .unwrap()
        .scope();
    let path = dir.path().join("stranger.parquet");
    let rows = export(
        &store,
        &stranger,
        &ExportFilter::all(),
        &path,
        ExportFormat::Parquet,
    )
    .await;
    assert_eq!((rows, read(&path).height()), (0, 0));
    assert_eq!(read(&path).get_column_names().len(), exports::COLUMNS.len());
}

backend_tests!(
    parquet_exports_keep_the_ledgers_types_and_totals,
    csv_exports_hold_the_same_columns_as_text,
    bounds_pick_days_campaigns_and_types,
);

/// Two nodes on one database look for due days at the same moment: each past day's file is
/// written once, the day being recorded is not due, and a second look writes nothing.
async fn a_scheduled_day_is_written_once_by_two_nodes(db: TestStore) {
    let dir = tempfile::tempdir().unwrap();
    let store = db.store.clone();
    let (org, campaign) = wallets(&store).await;
    ledger(&store, dir.path(), &org, &campaign).await;
    // `today` as the schedule sees it: a day is due `SETTLE` after its end, so in the first
    // minutes after midnight the day before is not due yet.
    let today = (Utc::now() - store::EXPORT_SETTLE).date_naive();
    let yesterday = today.pred_opt().unwrap();
    // The batch file's rows were recorded yesterday at noon; the rest now (not due).
    store
        .execute_raw(&format!(
            "UPDATE transactions SET created_at = '{yesterday}T12:00:00+00:00' WHERE batch_id IS NOT NULL"
        ))
        .await
        .unwrap();
    let first = today - Duration::days(2);
    store
        .set_export_schedule(&org, 0, ExportFormat::Parquet, first)
        .await
        .unwrap();
    let other = db.another_node().await;
    let (a, b) = tokio::join!(
        exports::scheduled::export_due_days(&store, dir.path(), &org),
        exports::scheduled::export_due_days(&other, dir.path(), &org),
    );
    assert_eq!(a + b, 2, "two past days, each written once");
    let exports = dir.path().join("sftp").join(org.id()).join("exports");
    let mut files: Vec<String> = std::fs::read_dir(&exports)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    files.sort();
    assert_eq!(
        files,
        [
            format!("transactions-{first}.parquet"),
            format!("transactions-{yesterday}.parquet")
        ]
    );
    assert_eq!(read(&exports.join(&files[0])).height(), 0);
    let mut ids: Vec<String> = texts(&read(&exports.join(&files[1])), "externalId")
        .into_iter()
        .flatten()
        .collect();
    ids.sort();
    assert_eq!(ids, ["f-1", "f-2", "f-3"]);
    let schedule = store.export_schedule(&org).await.unwrap().unwrap();
    assert_eq!(schedule.next_day, today);
    assert_eq!(
        schedule.last.map(|(file, rows, _)| (file, rows)),
        Some((files[1].clone(), 3))
    );
    assert_eq!(
        exports::scheduled::export_due_days(&other, dir.path(), &org).await,
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqlite_a_scheduled_day_is_written_once_by_two_nodes() {
    a_scheduled_day_is_written_once_by_two_nodes(TestStore::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn postgres_a_scheduled_day_is_written_once_by_two_nodes() {
    a_scheduled_day_is_written_once_by_two_nodes(TestStore::postgres().await).await;
}
