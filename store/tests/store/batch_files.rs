//! SFTP users and batch records on both backends: logins by password and by key, a key bound to
//! one user, disabled users, duplicate file contents, and claims that never hand one batch to two
//! nodes.

use store::{
    BatchState, NewBatch, NewSftpKey, NewSftpUser, OrgScope, Page, Store, StoreError, backend_tests,
};

fn key(n: u8) -> NewSftpKey {
    NewSftpKey {
        fingerprint: format!("SHA256:key{n}"),
        public_key: format!("ssh-ed25519 AAAAkey{n}"),
    }
}

async fn org(store: &Store, name: &str) -> OrgScope {
    store.tenancy().create_org(name).await.unwrap().scope()
}

async fn passwords_log_in_only_the_right_enabled_user(store: Store) {
    let acme = org(&store, "Acme").await;
    let user = NewSftpUser {
        username: "acme-upload".into(),
        password: Some("correct horse battery".into()),
        key: None,
    };
    let created = store.tenancy().create_sftp_user(&acme, user).await.unwrap();
    assert!(created.has_password && created.keys.is_empty());

    let login = store
        .tenancy()
        .sftp_login_password("acme-upload", "correct horse battery")
        .await
        .unwrap()
        .expect("the right password logs in");
    assert_eq!(
        (login.org_id.as_str(), login.username.as_str()),
        (acme.id(), "acme-upload")
    );
    for (name, password) in [
        ("acme-upload", "wrong horse battery"),
        ("nobody", "correct horse battery"),
    ] {
        assert_eq!(
            store
                .tenancy()
                .sftp_login_password(name, password)
                .await
                .unwrap(),
            None
        );
    }

    store
        .tenancy()
        .disable_sftp_user(&acme, "acme-upload")
        .await
        .unwrap();
    assert_eq!(
        store
            .tenancy()
            .sftp_login_password("acme-upload", "correct horse battery")
            .await
            .unwrap(),
        None,
        "a disabled user cannot log in"
    );
}

async fn a_key_logs_in_as_its_one_user(store: Store) {
    let acme = org(&store, "Acme").await;
    let other = org(&store, "Other").await;
    let alice = NewSftpUser {
        username: "alice".into(),
        key: Some(key(1)),
        ..Default::default()
    };
    store
        .tenancy()
        .create_sftp_user(&acme, alice)
        .await
        .unwrap();
    let bob = NewSftpUser {
        username: "bob".into(),
        key: Some(key(2)),
        ..Default::default()
    };
    store.tenancy().create_sftp_user(&other, bob).await.unwrap();

    let taken = store.tenancy().add_sftp_key(&other, "bob", key(1)).await;
    assert!(
        matches!(taken, Err(StoreError::Conflict { field: "publicKey" })),
        "{taken:?}"
    );
    assert_eq!(
        store
            .tenancy()
            .sftp_login_key("bob", "SHA256:key1")
            .await
            .unwrap(),
        None
    );
    let login = store
        .tenancy()
        .sftp_login_key("alice", "SHA256:key1")
        .await
        .unwrap()
        .unwrap();
    assert_eq!(login.org(), acme);
    // A user with keys only has no password to guess.
    assert_eq!(
        store
            .tenancy()
            .sftp_login_password("alice", "")
            .await
            .unwrap(),
        None
    );

    store
        .tenancy()
        .remove_sftp_user(&acme, "alice")
        .await
        .unwrap();
    assert_eq!(
        store
            .tenancy()
            .sftp_login_key("alice", "SHA256:key1")
            .await
            .unwrap(),
        None
    );
    // Its key is free again.
    store
        .tenancy()
        .add_sftp_key(&other, "bob", key(1))
        .await
        .unwrap();
    let bob = store.tenancy().get_sftp_user(&other, "bob").await.unwrap();
    assert_eq!(bob.keys.len(), 2);
}

async fn bad_users_are_refused_naming_the_field(store: Store) {
    let acme = org(&store, "Acme").await;
    let cases = [
        ("Upper", Some("long enough password"), "username"),
        ("../etc", Some("long enough password"), "username"),
        ("short-pass", Some("too short"), "password"),
        ("no-credentials", None, "password"),
    ];
    for (username, password, field) in cases {
        let user = NewSftpUser {
            username: username.into(),
            password: password.map(String::from),
            key: None,
        };
        match store.tenancy().create_sftp_user(&acme, user).await {
            Err(StoreError::Invalid { field: got, .. }) => assert_eq!(got, field, "{username}"),
            other => panic!("{username}: {other:?}"),
        }
    }
    let user = || NewSftpUser {
        username: "twice".into(),
        password: Some("long enough password".into()),
        key: None,
    };
    store
        .tenancy()
        .create_sftp_user(&acme, user())
        .await
        .unwrap();
    let again = store.tenancy().create_sftp_user(&acme, user()).await;
    assert!(
        matches!(again, Err(StoreError::Conflict { field: "username" })),
        "{again:?}"
    );
}

fn batch(id: &str, sha256: &str) -> NewBatch {
    NewBatch {
        id: id.into(),
        file_name: format!("{id}.csv"),
        size: 10,
        sha256: sha256.into(),
        source: "sftp".into(),
        username: Some("acme-upload".into()),
    }
}

async fn the_same_content_twice_is_a_duplicate(store: Store) {
    let acme = org(&store, "Acme").await;
    let other = org(&store, "Other").await;
    let first = store
        .batches()
        .record_batch(&acme, batch("b1", "aaa"))
        .await
        .unwrap();
    assert_eq!(first.state, BatchState::Received);
    let again = store
        .batches()
        .record_batch(&acme, batch("b2", "aaa"))
        .await
        .unwrap();
    assert_eq!(again.state, BatchState::Duplicate);
    assert_eq!(again.duplicate_of.as_deref(), Some("b1"));
    let elsewhere = store
        .batches()
        .record_batch(&other, batch("b3", "aaa"))
        .await
        .unwrap();
    assert_eq!(
        elsewhere.state,
        BatchState::Received,
        "organisations are apart"
    );

    let listed = store
        .batches()
        .list_batches(&acme, Page { page: 1, limit: 10 })
        .await
        .unwrap();
    assert_eq!(listed.total, 2);
    assert_eq!(listed.items[0].id, "b2", "newest first");
    assert!(matches!(
        store.batches().get_batch(&other, "b1").await,
        Err(StoreError::NotFound { .. })
    ));

    // A duplicate is an event of its own, carrying the batch it repeats; a waiting batch is
    // found by its file's name until it ends.
    while store.events().dispatch_events(500).await.unwrap().full {}
    let duplicates = store::EventFilter {
        types: vec![store::EventType::BatchDuplicate],
        ..Default::default()
    };
    let page = Page { page: 1, limit: 10 };
    let events = store
        .events()
        .feed(&acme, None, &duplicates, page)
        .await
        .unwrap();
    assert_eq!(events.items.len(), 1);
    match &store::EventData::of(&events.items[0].data).unwrap() {
        store::EventData::Batch(b) => assert_eq!(
            (b.id.as_str(), b.duplicate_of.as_deref()),
            ("b2", Some("b1"))
        ),
        other => panic!("{other:?}"),
    }
    let waiting = store
        .batches()
        .waiting_batch_named(&acme, &first.file_name)
        .await;
    assert_eq!(waiting.unwrap().map(|b| b.id), Some("b1".to_string()));
    let claimed = store.batches().claim_batches(10, Some("b1")).await.unwrap();
    assert_eq!(claimed.len(), 1);
    let finish = store::BatchFinish {
        state: BatchState::Completed,
        rows: 0,
        loaded: 0,
        rejected: 0,
        summary: serde_json::json!({}),
        error: None,
    };
    store.batches().finish_batch("b1", finish).await.unwrap();
    let ended = store
        .batches()
        .waiting_batch_named(&acme, &first.file_name)
        .await;
    assert_eq!(ended.unwrap(), None, "an ended batch is not waiting");
}

/// A ban is kept until its end, listed, and lifted by hand; one that ended is not in force.
async fn sftp_bans_last_until_their_end_or_are_lifted(store: Store) {
    let hour = chrono::Duration::hours(1);
    let now = chrono::Utc::now();
    store
        .tenancy()
        .ban_sftp_address("10.0.0.1", 5, now + hour)
        .await
        .unwrap();
    store
        .tenancy()
        .ban_sftp_address("10.0.0.2", 5, now - hour)
        .await
        .unwrap();
    let ban = store.tenancy().sftp_ban("10.0.0.1").await.unwrap().unwrap();
    assert_eq!(ban.failures, 5);
    assert_eq!(
        store.tenancy().sftp_ban("10.0.0.2").await.unwrap(),
        None,
        "it ended"
    );
    let listed: Vec<String> = store
        .tenancy()
        .sftp_bans()
        .await
        .unwrap()
        .into_iter()
        .map(|b| b.address)
        .collect();
    assert_eq!(listed, ["10.0.0.1"]);
    assert!(
        !store
            .tenancy()
            .unban_sftp_address("10.0.0.2")
            .await
            .unwrap()
    );
    assert!(
        store
            .tenancy()
            .unban_sftp_address("10.0.0.1")
            .await
            .unwrap()
    );
    assert_eq!(store.tenancy().sftp_ban("10.0.0.1").await.unwrap(), None);
    // Banned again, the newer ban replaces the older.
    store
        .tenancy()
        .ban_sftp_address("10.0.0.1", 7, now + hour)
        .await
        .unwrap();
    assert_eq!(
        store
            .tenancy()
            .sftp_ban("10.0.0.1")
            .await
            .unwrap()
            .unwrap()
            .failures,
        7
    );
}

async fn claims_never_hand_a_batch_to_two_nodes(store: Store) {
    let acme = org(&store, "Acme").await;
    for i in 0..30 {
        let id = format!("b{i:02}");
        store
            .batches()
            .record_batch(&acme, batch(&id, &id))
            .await
            .unwrap();
    }
    let mut claims = Vec::new();
    for _ in 0..6 {
        let store = store.clone();
        claims.push(tokio::spawn(async move {
            store.batches().claim_batches(4, None).await
        }));
    }
    let mut seen = Vec::new();
    for claim in claims {
        for batch in claim.await.unwrap().unwrap() {
            assert_eq!(batch.state, BatchState::Processing);
            seen.push(batch.id);
        }
    }
    let claimed = seen.len();
    seen.sort();
    seen.dedup();
    assert_eq!((claimed, seen.len()), (24, 24), "each batch once");
    assert_eq!(
        store
            .batches()
            .claim_batches(100, None)
            .await
            .unwrap()
            .len(),
        6,
        "the rest"
    );
    // A live claim is kept (and renewed); released, as at an embedded node's start, it is
    // taken again.
    store.batches().renew_batch("b00").await.unwrap();
    assert!(
        store
            .batches()
            .claim_batches(100, None)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.batches().release_batch_claims().await.unwrap(), 30);
    let one = store
        .batches()
        .claim_batches(100, Some("b07"))
        .await
        .unwrap();
    assert_eq!(
        one.iter().map(|b| b.id.as_str()).collect::<Vec<_>>(),
        ["b07"]
    );
    assert!(
        store
            .batches()
            .claim_batches(100, Some("b07"))
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(
        store
            .batches()
            .claim_batches(100, None)
            .await
            .unwrap()
            .len(),
        29
    );
}

async fn mappings_are_kept_per_pattern(store: Store) {
    let acme = org(&store, "Acme").await;
    let every = serde_json::json!({"columns": {"id": "Ticket"}});
    let sales = serde_json::json!({"pattern": "sales_*.csv", "delimiter": ";"});
    store
        .batches()
        .set_mapping(&acme, "*", &every)
        .await
        .unwrap();
    store
        .batches()
        .set_mapping(&acme, "sales_*.csv", &sales)
        .await
        .unwrap();
    let replaced = serde_json::json!({"columns": {"id": "Receipt"}});
    store
        .batches()
        .set_mapping(&acme, "*", &replaced)
        .await
        .unwrap();
    let kept = store.batches().mappings(&acme).await.unwrap();
    let kept: Vec<(&str, &serde_json::Value)> = kept
        .iter()
        .map(|m| (m.pattern.as_str(), &m.document))
        .collect();
    assert_eq!(kept, [("*", &replaced), ("sales_*.csv", &sales)]);
    let other = org(&store, "Other").await;
    assert!(
        store.batches().mappings(&other).await.unwrap().is_empty(),
        "per organisation"
    );
    store.batches().remove_mapping(&acme, "*").await.unwrap();
    assert_eq!(store.batches().mappings(&acme).await.unwrap().len(), 1);
    assert!(matches!(
        store.batches().remove_mapping(&acme, "*").await,
        Err(StoreError::NotFound { .. })
    ));
    // Mappings belong to an organisation the store knows: its scope comes from a lookup.
    assert!(matches!(
        store.tenancy().get_org("no-such-org").await,
        Err(StoreError::NotFound { .. })
    ));
}

backend_tests!(
    passwords_log_in_only_the_right_enabled_user,
    a_key_logs_in_as_its_one_user,
    bad_users_are_refused_naming_the_field,
    the_same_content_twice_is_a_duplicate,
    claims_never_hand_a_batch_to_two_nodes,
    mappings_are_kept_per_pattern,
    sftp_bans_last_until_their_end_or_are_lifted,
);
