//! Processing a received CSV file: good rows credited through the rules, every bad row reported
//! with its reason code, ids already credited (by the API or earlier in the file) credit nothing,
//! and a file whose header is wrong fails whole with the reason.

use crate::common::{balance, receive, wallets};
use store::{BatchState, RuleBook, Store, Tokens, backend_tests};

const FILE: &str = "id,walletId,amount,date,description,meta.store
f-1,w-1,10,2026-11-20,Coffee,A1
f-2,w-2,2.5,2026-11-20T10:00:00Z,,B2
f-3,w-1,12;50,2026-11-20,,
f-4,nobody,5,2026-11-20,,
f-1,w-1,10,2026-11-20,again,
api-1,w-1,3,2026-11-20,,
f-5,w-1,1,20/11/2026,,
f-6,w-2
";

async fn good_rows_are_credited_and_bad_rows_reported_by_reason(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    crate::common::earn_by_api(&store, &campaign, "api-1", "w-1", "3").await;

    // The other reason codes: a missing id, a negative amount, a description too long, text that
    // is not UTF-8, an amount whose tokens the ledger cannot hold, and an amount past the most
    // the API takes too.
    let mut content = FILE.as_bytes().to_vec();
    content.extend_from_slice(b",w-1,1,2026-11-20,,\nf-7,w-1,-5,2026-11-20,,\n");
    content.extend_from_slice(format!("f-8,w-1,1,2026-11-20,{},\n", "x".repeat(300)).as_bytes());
    content.extend_from_slice(b"f-9,w-1,1,2026-11-20,caf\xe9,\n");
    content.extend_from_slice(b"f-10,w-1,1000000000000000,2026-11-20,,\n");
    content.extend_from_slice(b"f-11,w-1,99999999999999999999,2026-11-20,,\n");
    // Dated outside the window (before 1970, a typo's year 0226, centuries ahead), and an
    // amount with more decimals than tokens have.
    content.extend_from_slice(b"f-12,w-1,1,1969-12-31,,\nf-13,w-1,1,0226-11-20,,\n");
    content.extend_from_slice(b"f-14,w-1,1,2999-01-01,,\nf-15,w-1,1.0000001,2026-11-20,,\n");
    let batch = crate::common::receive_bytes(&store, dir.path(), &org, "earns.csv", &content).await;
    let started = std::time::Instant::now();
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    let took = started.elapsed();
    assert_eq!(outcome.state, BatchState::Completed);
    // The log's profile of the file: every stage was timed, and the stages on the pipeline's
    // own path add up to no more than the file took.
    let stages = outcome.stages.each();
    for (name, time) in stages {
        assert!(!time.is_zero(), "{name} was timed: {}", outcome.stages);
    }
    let on_path: std::time::Duration = stages[..7].iter().map(|(_, time)| *time).sum();
    assert!(on_path <= took, "{} within {took:?}", outcome.stages);
    assert_eq!(
        balance(&store, &campaign, "w-1").await,
        Tokens::whole(13),
        "3 by API + 10"
    );
    // The default rules: one token per whole unit of amount.
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(2));

    let recorded = store.batches().get_batch(&org, &batch.id).await.unwrap();
    assert_eq!(recorded.state, BatchState::Completed);
    assert_eq!(
        (
            recorded.rows_total,
            recorded.rows_loaded,
            recorded.rows_rejected
        ),
        (Some(18), Some(2), Some(16))
    );
    let reports = dir.path().join("sftp").join(org.id()).join("reports");
    let result: serde_json::Value =
        serde_json::from_slice(&std::fs::read(reports.join("earns.csv.result.json")).unwrap())
            .unwrap();
    assert_eq!(result["loaded"], 2);
    assert_eq!(result["tokens"], 12);
    assert_eq!(result["state"], "completed");

    let rejected = std::fs::read_to_string(reports.join("earns.csv.rejected.csv")).unwrap();
    let mut lines = rejected.lines();
    assert_eq!(
        lines.next().unwrap(),
        "row,code,column,value,message,id,walletId,amount,date,description,meta.store"
    );
    let codes: Vec<(String, String)> = lines
        .map(|l| {
            let mut parts = l.split(',');
            (
                parts.next().unwrap().to_string(),
                parts.next().unwrap().to_string(),
            )
        })
        .collect();
    let expected = [
        ("4", "bad_decimal"),
        ("5", "unknown_wallet"),
        ("6", "duplicate_in_file"),
        ("7", "already_exists"),
        ("8", "bad_date"),
        ("9", "ragged_row"),
        ("10", "missing_field"),
        ("11", "negative_amount"),
        ("12", "too_long"),
        ("13", "bad_encoding"),
        ("14", "rules_refused"),
        ("15", "amount_too_large"),
        ("16", "bad_date"),
        ("17", "bad_date"),
        ("18", "bad_date"),
        ("19", "bad_decimal"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(r, c)| (r.to_string(), c.to_string()))
        .collect();
    assert_eq!(codes, expected, "in row order: {rejected}");
    assert!(store.ledger().audit().await.unwrap().is_empty());

    // Processing the same batch again (as after a crash) credits nothing twice.
    let retried = crate::common::retried(&batch);
    ingest::batch::pipeline::process(&store, &book, dir.path(), &retried, &|_| {})
        .await
        .unwrap();
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(13));
    let recorded = store.batches().get_batch(&org, &batch.id).await.unwrap();
    assert_eq!(
        (recorded.rows_loaded, recorded.rows_rejected),
        (Some(2), Some(16)),
        "the rows credited before count as loaded, not as duplicates"
    );
    assert_eq!(recorded.summary.unwrap()["loadedBeforeRestart"], 2);
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

async fn a_wrong_header_fails_the_file_with_the_reason(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, _) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let batch = receive(
        &store,
        dir.path(),
        &org,
        "bad.csv",
        "id,walet,amout,date\n1,w-1,5,2026-11-20\n",
    )
    .await;
    let state = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap()
        .state;
    assert_eq!(state, BatchState::Failed);
    let recorded = store.batches().get_batch(&org, &batch.id).await.unwrap();
    let error = recorded.error.unwrap();
    assert!(
        error.contains("`walletId` is missing") && error.contains("unknown column `walet`"),
        "{error}"
    );
}

/// Hostile CSV files end cleanly: a header of millions of columns is refused for its width
/// before anything is kept per column, a quote left open swallows no rows, and a line of
/// megabytes is one rejected row.
async fn hostile_csv_files_end_with_a_clear_outcome(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let process = |batch| {
        let (store, book, dir) = (store.clone(), book.clone(), dir.path().to_path_buf());
        async move {
            ingest::batch::pipeline::process(&store, &book, &dir, &batch, &|_| {})
                .await
                .unwrap();
            store
                .batches()
                .get_batch(&batch.org(), &batch.id)
                .await
                .unwrap()
        }
    };

    let wide = "x,".repeat(3_000_000) + "x\n";
    let batch =
        crate::common::receive_bytes(&store, dir.path(), &org, "wide.csv", wide.as_bytes()).await;
    let recorded = process(batch).await;
    assert_eq!(recorded.state, BatchState::Failed);
    let error = recorded.error.unwrap();
    assert!(error.contains("more than 1024 fields"), "{error}");

    let mut open = String::from("id,walletId,amount,date\nq-1,w-1,1,2026-11-20\n");
    open.push_str("q-2,w-1,\"1,2026-11-20\n");
    for i in 3..=1_000 {
        open.push_str(&format!("q-{i},w-1,1,2026-11-20\n"));
    }
    let batch =
        crate::common::receive_bytes(&store, dir.path(), &org, "open.csv", open.as_bytes()).await;
    let recorded = process(batch).await;
    assert_eq!(recorded.state, BatchState::Completed);
    assert_eq!(
        (
            recorded.rows_total,
            recorded.rows_loaded,
            recorded.rows_rejected
        ),
        (Some(1_000), Some(999), Some(1))
    );
    let reports = dir.path().join("sftp").join(org.id()).join("reports");
    let rejected = std::fs::read_to_string(reports.join("open.csv.rejected.csv")).unwrap();
    assert!(
        rejected
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("3,unterminated_quote,"),
        "{rejected}"
    );

    let mut long = String::from("id,walletId,amount,date\nl-1,w-1,1,2026-11-20\n");
    long.push_str(&format!("l-2,w-1,1,2026-11-20,{}\n", "y".repeat(5 << 20)));
    long.push_str("l-3,w-1,1,2026-11-20\n");
    let batch =
        crate::common::receive_bytes(&store, dir.path(), &org, "long.csv", long.as_bytes()).await;
    let recorded = process(batch).await;
    assert_eq!(
        (
            recorded.rows_total,
            recorded.rows_loaded,
            recorded.rows_rejected
        ),
        (Some(3), Some(2), Some(1))
    );
    let rejected = std::fs::read_to_string(reports.join("long.csv.rejected.csv")).unwrap();
    assert!(
        rejected
            .lines()
            .nth(1)
            .unwrap()
            .starts_with("3,row_too_long,"),
        "{rejected}"
    );
    assert_eq!(
        balance(&store, &campaign, "w-1").await,
        Tokens::whole(999 + 2)
    );
}

/// The rows read are the bytes recorded: a spooled file written to after it was received (a
/// second handle on the upload) is refused whole, nothing of it credited; and they are the bytes
/// the client's checksum sidecar names, when it sent one.
async fn a_file_changed_after_it_was_received_is_refused(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    let book = RuleBook::new(store.programme().clone());
    let content = "id,walletId,amount,date\nc-1,w-1,5,2026-11-20\n";
    let batch = receive(&store, dir.path(), &org, "changed.csv", content).await;
    let spooled = ingest::batch::pipeline::spooled(dir.path(), &batch).unwrap();
    let mut more = std::fs::OpenOptions::new()
        .append(true)
        .open(&spooled)
        .unwrap();
    std::io::Write::write_all(&mut more, b"c-2,w-1,7,2026-11-20\n").unwrap();
    let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
        .await
        .unwrap();
    assert_eq!(outcome.state, BatchState::Failed);
    let error = outcome.error.unwrap();
    assert!(error.contains("changed after it was received"), "{error}");
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);

    // A checksum sidecar sent before the file: the file is read only if it matches.
    let sha256 = |bytes: &[u8]| {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(bytes);
        digest
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    for (name, matches, state) in [
        ("checked.csv", true, BatchState::Completed),
        ("damaged.csv", false, BatchState::Failed),
    ] {
        let content = content.replace("c-1", &format!("c-1-{name}"));
        let digest = if matches {
            sha256(content.as_bytes())
        } else {
            sha256(b"the bytes the client meant")
        };
        let sidecar = format!("{digest}  {name}\n");
        std::fs::write(dir.path().join(format!("{name}.sha256")), sidecar).unwrap();
        let batch = receive(&store, dir.path(), &org, name, &content).await;
        let outcome = ingest::batch::pipeline::process(&store, &book, dir.path(), &batch, &|_| {})
            .await
            .unwrap();
        assert_eq!(outcome.state, state, "{name}: {:?}", outcome.error);
        if !matches {
            let error = outcome.error.unwrap();
            assert!(error.contains("damaged on the way"), "{error}");
        }
    }
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(5));
}

backend_tests!(
    a_file_changed_after_it_was_received_is_refused,
    good_rows_are_credited_and_bad_rows_reported_by_reason,
    a_wrong_header_fails_the_file_with_the_reason,
    hostile_csv_files_end_with_a_clear_outcome,
);
