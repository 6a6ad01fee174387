//! The audit trail's chain on both backends: an entry edited, removed or moved in the database
//! itself is found, and named.

use store::audit::chain::{Fault, verify};
use store::audit::{Action, Actor, Record};
use store::{Store, backend_tests};

/// Five entries, numbered 1 to 5 (the operation says which).
async fn five_entries(store: &Store) {
    for n in 1..=5 {
        store
            .write(Record {
                actor: Actor::local("ops"),
                action: Action::new(format!("step.{n}")).target(format!("t-{n}")),
                outcome: "ok".into(),
                at: store.now(),
            })
            .await
            .unwrap();
    }
    let verdict = verify(store.db()).await.unwrap();
    assert!(verdict.intact(), "{verdict:?}");
    assert_eq!(
        (verdict.entries, verdict.first_seq, verdict.last_seq),
        (5, 1, 5)
    );
}

fn faults(verdict: &store::audit::chain::Verdict) -> Vec<(i64, Fault)> {
    verdict.problems.iter().map(|p| (p.seq, p.fault)).collect()
}

async fn an_edited_entry_is_found(store: Store) {
    five_entries(&store).await;
    store
        .execute_raw("UPDATE audit_log SET outcome = 'failed' WHERE seq = 3")
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(faults(&verdict), [(3, Fault::Edited)], "{verdict:?}");
    assert!(verdict.problems[0].message.contains("entry 3 was edited"));
}

/// An edit whose author also wrote the entry's new hash is found at the entry after it, which
/// follows the entry as it was.
async fn a_rehashed_edit_is_found(store: Store) {
    five_entries(&store).await;
    let all = store::audit::log::list(
        store.db(),
        &store::audit::log::AuditFilter::default(),
        store::Page::default(),
    )
    .await
    .unwrap();
    let mut second = all.items.into_iter().find(|e| e.seq == 2).unwrap();
    second.outcome = "failed".into();
    let rehashed = second.digest();
    store
        .execute_raw(&format!(
            "UPDATE audit_log SET outcome = 'failed', hash = '{rehashed}' WHERE seq = 2"
        ))
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(faults(&verdict), [(3, Fault::Removed)], "{verdict:?}");
    assert!(
        verdict.problems[0].message.contains("entry 2 was replaced"),
        "{verdict:?}"
    );
}

async fn a_removed_entry_is_found(store: Store) {
    five_entries(&store).await;
    store
        .execute_raw("DELETE FROM audit_log WHERE seq = 3")
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(faults(&verdict), [(4, Fault::Removed)], "{verdict:?}");
    assert!(verdict.problems[0].message.contains("entry 3 was removed"));
    // The last entry removed: only the head knows it was there.
    store
        .execute_raw("DELETE FROM audit_log WHERE seq = 5")
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(
        faults(&verdict),
        [(4, Fault::Removed), (5, Fault::Removed)],
        "{verdict:?}"
    );
}

/// Two entries' numbers swapped: each now follows the wrong entry, and the walk says which.
async fn reordered_entries_are_found(store: Store) {
    five_entries(&store).await;
    store
        .execute_raw(
            "UPDATE audit_log SET seq = 100 WHERE seq = 3; \
             UPDATE audit_log SET seq = 3 WHERE seq = 4; \
             UPDATE audit_log SET seq = 4 WHERE seq = 100;",
        )
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(
        faults(&verdict),
        [
            (3, Fault::Reordered),
            (4, Fault::Reordered),
            (5, Fault::Reordered)
        ],
        "{verdict:?}"
    );
    assert!(
        verdict.problems[0]
            .message
            .contains("it follows entry 4, not entry 2"),
        "{verdict:?}"
    );
}

/// Appends from many tasks at once chain one after another, never two to one entry.
async fn concurrent_appends_make_one_chain(store: Store) {
    let writes = (0..16).map(|n| {
        let store = store.clone();
        tokio::spawn(async move {
            store
                .write(Record {
                    actor: Actor::local("ops"),
                    action: Action::new(format!("step.{n}")),
                    outcome: "ok".into(),
                    at: store.now(),
                })
                .await
        })
    });
    for write in writes.collect::<Vec<_>>() {
        write.await.unwrap().unwrap();
    }
    let verdict = verify(store.db()).await.unwrap();
    assert!(verdict.intact(), "{verdict:?}");
    assert_eq!(verdict.entries, 16);
}

/// Entries past the retention period go, the prune is itself an entry, and the chain kept
/// still verifies from its new start.
async fn pruning_keeps_a_verifiable_chain(store: Store) {
    for n in 1..=5 {
        store
            .write(Record {
                actor: Actor::local("ops"),
                action: Action::new(format!("step.{n}")),
                outcome: "ok".into(),
                at: store.now(),
            })
            .await
            .unwrap();
        store.clock().advance(chrono::Duration::days(1));
    }
    // Between the second entry and the third (each a day apart, the last five days ago).
    let before = store.now() - chrono::Duration::hours(84);
    let removed = store::audit::chain::prune(store.db(), &Actor::local("ops"), before)
        .await
        .unwrap();
    assert_eq!(removed, 2);
    let verdict = verify(store.db()).await.unwrap();
    assert!(verdict.intact(), "{verdict:?}");
    assert_eq!(
        (verdict.entries, verdict.first_seq, verdict.last_seq),
        (4, 3, 6)
    );
    let newest = store::audit::log::list(
        store.db(),
        &store::audit::log::AuditFilter::default(),
        store::Page::default(),
    )
    .await
    .unwrap();
    assert_eq!(newest.items[0].operation, "audit-log.prune");
    assert!(
        newest.items[0]
            .after
            .as_deref()
            .unwrap()
            .contains(r#""removedThrough":2"#)
    );
    // Nothing more is old enough: a second prune removes nothing and writes nothing.
    let again = store::audit::chain::prune(store.db(), &Actor::local("ops"), before)
        .await
        .unwrap();
    assert_eq!(again, 0);
    // A removal inside the kept chain is still found.
    store
        .execute_raw("DELETE FROM audit_log WHERE seq = 4")
        .await
        .unwrap();
    let verdict = verify(store.db()).await.unwrap();
    assert_eq!(faults(&verdict), [(5, Fault::Removed)], "{verdict:?}");
}

backend_tests!(
    pruning_keeps_a_verifiable_chain,
    an_edited_entry_is_found,
    a_rehashed_edit_is_found,
    a_removed_entry_is_found,
    reordered_entries_are_found,
    concurrent_appends_make_one_chain,
);
