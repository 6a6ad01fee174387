//! The intake: a file moved to the spool before the process stopped, with no batch recorded yet,
//! is recorded at the next start; files already recorded are left as they are.

use store::testing::TestStore;
use store::{BatchState, Page};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_spooled_before_a_crash_is_recorded_at_restart() {
    let db = TestStore::sqlite().await;
    let store = db.store.clone();
    let org = store.tenancy().create_org("Acme").await.unwrap().scope();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();

    // One file received properly...
    let inbox = data.join("inbox-file.csv");
    std::fs::write(&inbox, "id,walletId,amount,date\n").unwrap();
    let received = ingest::intake::receive(
        &store,
        data,
        &org,
        &inbox,
        "first.csv",
        "sftp",
        Some("alice"),
    )
    .await
    .unwrap();
    // ...and one the process had moved when it was killed.
    let spool = ingest::intake::spool_dir(data, org.id());
    let orphan = spool.join(format!("{}__inbox__second.csv", store::new_id()));
    std::fs::write(&orphan, "id,walletId,amount,date\ne-1,w-1,1,2026-11-20\n").unwrap();

    assert_eq!(ingest::intake::recover(&store, data).await.unwrap(), 1);
    assert_eq!(
        ingest::intake::recover(&store, data).await.unwrap(),
        0,
        "once"
    );
    let batches = store
        .batches()
        .list_batches(&org, Page { page: 1, limit: 10 })
        .await
        .unwrap();
    assert_eq!(batches.total, 2);
    let second = batches
        .items
        .iter()
        .find(|b| b.file_name == "second.csv")
        .unwrap();
    assert_eq!(
        (second.state, second.source.as_str()),
        (BatchState::Received, "inbox")
    );
    assert!(orphan.exists(), "the file stays for processing");
    assert_eq!(
        store
            .batches()
            .get_batch(&org, &received.id)
            .await
            .unwrap()
            .state,
        BatchState::Received
    );
}
