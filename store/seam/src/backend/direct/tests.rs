//! The writer thread's bulk writes: when they commit, and what a failure undoes; its page cache.

use std::time::{Duration, Instant};

use super::{
    BULK_CACHE_KIB, Direct, KEEP_LARGE, SMALL_CACHE_KIB, WriterCache, committed, execute, row,
};

/// A writer and its readers on a fresh file with one table, kept while the folder lives.
async fn scratch() -> (Direct, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let direct = Direct::open(&dir.path().join("scratch.db")).unwrap();
    direct
        .write(|c| execute(c, "CREATE TABLE scratch (n INTEGER UNIQUE)", &[]))
        .await
        .unwrap();
    (direct, dir)
}

fn insert(n: i64) -> impl FnOnce(&rusqlite::Connection) -> Result<usize, crate::StoreError> {
    move |c| execute(c, "INSERT INTO scratch (n) VALUES ($1)", args![n])
}

fn count(direct: &Direct) -> i64 {
    direct
        .read(|c| row::<(i64,)>(c, "SELECT count(*) FROM scratch", &[]))
        .unwrap()
        .map_or(0, |(n,)| n)
}

#[tokio::test]
async fn bulk_writes_commit_with_the_next_other_write() {
    let (direct, _dir) = scratch().await;
    let direct = &direct;
    let (_, first) = direct.write_bulk(insert(1)).await.unwrap();
    let (_, second) = direct.write_bulk(insert(2)).await.unwrap();
    direct.write(insert(3)).await.unwrap();
    committed(first).await.unwrap();
    committed(second).await.unwrap();
    assert_eq!(count(direct), 3);
}

#[tokio::test]
async fn bulk_writes_left_alone_are_committed() {
    let (direct, _dir) = scratch().await;
    let direct = &direct;
    let (_, commit) = direct.write_bulk(insert(1)).await.unwrap();
    committed(commit).await.unwrap();
    assert_eq!(count(direct), 1);
}

#[tokio::test]
async fn a_failing_bulk_write_undoes_its_transaction() {
    let (direct, _dir) = scratch().await;
    let direct = &direct;
    // Queued together, so they share a transaction; the second repeats the first's number.
    let (first, second) = tokio::join!(direct.write_bulk(insert(1)), direct.write_bulk(insert(1)));
    let (_, first) = first.unwrap();
    assert!(second.is_err());
    let undone = committed(first).await.unwrap_err();
    assert!(undone.to_string().contains("undone"), "{undone}");
    assert_eq!(count(direct), 0);
}

#[tokio::test]
async fn a_failing_write_beside_bulk_writes_undoes_only_itself() {
    let (direct, _dir) = scratch().await;
    let direct = &direct;
    let (bulk, other) = tokio::join!(direct.write_bulk(insert(1)), direct.write(insert(1)));
    let (_, commit) = bulk.unwrap();
    assert!(other.is_err());
    committed(commit).await.unwrap();
    assert_eq!(count(direct), 1);
}

/// The writer's cache is small for requests' writes, large from a bulk write on, and small
/// again once bulk writes have stopped for `KEEP_LARGE`.
#[test]
fn the_writers_cache_is_large_only_around_bulk_writes() {
    let connection = rusqlite::Connection::open_in_memory().unwrap();
    let size = || -> i64 {
        connection
            .query_row("PRAGMA cache_size", [], |r| r.get(0))
            .unwrap()
    };
    let mut cache = WriterCache::new(&connection);
    assert_eq!(size(), -SMALL_CACHE_KIB);
    let start = Instant::now();
    cache.fit(&connection, false, start);
    assert_eq!(size(), -SMALL_CACHE_KIB, "no bulk write yet");
    cache.fit(&connection, true, start);
    assert_eq!(size(), -BULK_CACHE_KIB);
    let during = start + KEEP_LARGE - Duration::from_millis(1);
    cache.fit(&connection, false, during);
    assert_eq!(
        size(),
        -BULK_CACHE_KIB,
        "a request's write between a file's chunks"
    );
    cache.fit(&connection, false, start + KEEP_LARGE);
    assert_eq!(size(), -SMALL_CACHE_KIB);
    cache.fit(&connection, true, start + KEEP_LARGE * 2);
    assert_eq!(size(), -BULK_CACHE_KIB, "the next file");
}
