//! The inbox watcher: files put into an inbox by other means are received once complete;
//! temporary names and uploads in progress are left alone.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use store::testing::TestStore;
use store::{Batch, Page, Store};

/// The quiet period the tests run the watcher with.
const QUIET: Duration = Duration::from_millis(300);

struct Watched {
    passes: Arc<AtomicU64>,
    _db: TestStore,
    store: Store,
    org: store::OrgScope,
    inbox: PathBuf,
    _dir: tempfile::TempDir,
    _stop: tokio::sync::oneshot::Sender<()>,
}

async fn watched() -> Watched {
    let db = TestStore::sqlite().await;
    let store = db.store.clone();
    let org = store.tenancy().create_org("Acme").await.unwrap().scope();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().to_owned();
    let inbox = ingest::folders::Tree::open(&data, org.id())
        .unwrap()
        .folder(ingest::folders::Folder::Inbox);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let watching = ingest::watcher::Watching {
        quiet: QUIET,
        ..Default::default()
    };
    let passes = watching.passes.clone();
    tokio::spawn(ingest::watcher::watch(
        store.clone(),
        data,
        watching,
        async {
            let _ = stopped.await;
        },
    ));
    Watched {
        passes,
        _db: db,
        store,
        org,
        inbox,
        _dir: dir,
        _stop: stop,
    }
}

impl Watched {
    /// Moves the store's clock past the quiet period, between whole passes of the watcher: a
    /// file it was going to take by then, it has taken.
    async fn past_the_quiet_period(&self) {
        // Every file written so far is seen before the clock moves.
        self.passes(2).await;
        let quiet = chrono::Duration::from_std(QUIET).unwrap();
        self.store.clock().advance(quiet);
        self.passes(2).await;
    }

    /// Waits until the watcher has made `count` whole passes from now.
    async fn passes(&self, count: u64) {
        let from = self.passes.load(Ordering::SeqCst);
        let started = Instant::now();
        while self.passes.load(Ordering::SeqCst) < from + count {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "the watcher stopped"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    async fn batches(&self) -> Vec<Batch> {
        let page = Page {
            page: 1,
            limit: 100,
        };
        self.store
            .batches()
            .list_batches(&self.org, page)
            .await
            .unwrap()
            .items
    }

    /// Waits until `count` batches exist (or fails after a while).
    async fn wait_for(&self, count: usize) -> Vec<Batch> {
        let started = Instant::now();
        loop {
            let batches = self.batches().await;
            if batches.len() >= count {
                return batches;
            }
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "still {} batches",
                batches.len()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_placed_in_the_inbox_is_received_once_complete() {
    let watched = watched().await;
    std::fs::write(watched.inbox.join("edge.csv"), "id,walletId,amount,date\n").unwrap();
    let batches = watched.wait_for(1).await;
    assert_eq!(batches[0].file_name, "edge.csv");
    assert_eq!(batches[0].source, "inbox");
    assert!(
        !watched.inbox.join("edge.csv").exists(),
        "moved to the spool"
    );
    watched.past_the_quiet_period().await;
    assert_eq!(watched.batches().await.len(), 1, "received once");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn temporary_names_and_uploads_in_progress_wait() {
    let watched = watched().await;
    let uploading = watched.inbox.join("slow.csv");
    let marker = ingest::folders::upload_marker(&uploading);
    ingest::folders::mark_upload(&uploading).unwrap();
    std::fs::write(&uploading, "id,walletId,amount,date\n").unwrap();
    std::fs::write(watched.inbox.join("later.csv.part"), "id\n").unwrap();
    watched.past_the_quiet_period().await;
    assert!(watched.batches().await.is_empty(), "nothing complete yet");

    std::fs::remove_file(&marker).unwrap();
    std::fs::rename(
        watched.inbox.join("later.csv.part"),
        watched.inbox.join("later.csv"),
    )
    .unwrap();
    let batches = watched.wait_for(2).await;
    let mut names: Vec<&str> = batches.iter().map(|b| b.file_name.as_str()).collect();
    names.sort();
    assert_eq!(names, ["later.csv", "slow.csv"]);
}

/// An upload left by a process of this host that is gone (the service killed mid-upload, then
/// started again) is deleted with its marker, and the client finds a record of it in
/// `reports/`; a marker of a live process is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_upload_interrupted_by_a_crash_is_cleared_with_a_record() {
    let watched = watched().await;
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let pid = gone.id();
    gone.wait().unwrap();
    let partial = watched.inbox.join("midupload.csv");
    std::fs::write(&partial, "id,walletId,amount,date\ne-1,w-1,5,").unwrap();
    let marker = ingest::folders::upload_marker(&partial);
    std::fs::write(&marker, format!("{}\n{pid}\n12345\n", host.trim())).unwrap();
    let live = watched.inbox.join("live.csv");
    ingest::folders::mark_upload(&live).unwrap();
    std::fs::write(&live, "id\n").unwrap();

    let report = watched
        .inbox
        .parent()
        .unwrap()
        .join("reports")
        .join("midupload.csv.interrupted.json");
    let started = Instant::now();
    while !report.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no record of the interrupted upload"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let record: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
    assert_eq!(record["state"], "interrupted");
    assert!(!partial.exists() && !marker.exists());
    assert!(live.exists(), "a live upload is left alone");
    assert!(watched.batches().await.is_empty());
}
