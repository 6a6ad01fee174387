//! The leaderboard on both backends: ranking by lifetime earnings, ties, paging, a member's
//! neighbourhood, who is left out, when snapshots are due, and one build for several nodes.

use std::time::Duration;

use chrono::Utc;
use store::Spend;
use store::testing::TestStore;
use store::{
    Campaign, EarnInput, MemberPatch, MemberStatus, NewBurn, NewMember, NewWallet, Page, RuleBook,
    Snapshot, Store, Tokens, backend_tests,
};

const FIVE_MINUTES: Duration = Duration::from_secs(300);

/// Member `external_id` (first name `first`, last name `last`) with a wallet `w-<external_id>`.
async fn member(store: &Store, c: &Campaign, external_id: &str, first: &str, last: &str) -> String {
    let new = NewMember {
        first_name: first.into(),
        last_name: (!last.is_empty()).then(|| last.into()),
        idp: "reference".into(),
        user_id: format!("u-{external_id}"),
        external_id: external_id.into(),
        ..Default::default()
    };
    let id = store
        .members()
        .create_member(&c.org(), new)
        .await
        .unwrap()
        .id;
    wallet(store, c, external_id, &format!("w-{external_id}")).await;
    id
}

async fn wallet(store: &Store, c: &Campaign, owner: &str, reference: &str) {
    let new = NewWallet {
        owner: Some(owner.into()),
        external_id: Some(reference.into()),
        name: None,
    };
    store.ledger().create_wallet(c, new).await.unwrap();
}

/// Earns `amount` into wallet `reference` and credits it before returning.
async fn earn(store: &Store, c: &Campaign, reference: &str, amount: &str) {
    let input = EarnInput {
        activity: None,
        earn_id: store::new_id(),
        wallet: reference.into(),
        amount: amount.into(),
        date: Utc::now(),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().submit_earn(c, input).await.unwrap();
    let book = RuleBook::new(store.programme().clone());
    while store.ledger().process_earns(&book, 50).await.unwrap() > 0 {}
}

async fn build(store: &Store, c: &Campaign) -> Snapshot {
    let built = store
        .community()
        .refresh_leaderboard(c, FIVE_MINUTES)
        .await
        .unwrap();
    assert!(built.is_some(), "a first build is due at once");
    store
        .community()
        .leaderboard_snapshot(c)
        .await
        .unwrap()
        .unwrap()
}

/// Makes every campaign's next build due now, as if its interval had passed.
async fn make_due(store: &Store) {
    store
        .execute_raw("UPDATE leaderboards SET due_at = '2000-01-01T00:00:00+00:00'")
        .await
        .unwrap();
}

/// Each page's (display name, points) in rank order.
async fn board(store: &Store, c: &Campaign, snapshot: &Snapshot) -> Vec<(String, Tokens)> {
    let page = Page {
        page: 1,
        limit: 100,
    };
    let paged = store
        .community()
        .leaderboard_page(&c.org(), snapshot, page)
        .await
        .unwrap();
    paged
        .items
        .iter()
        .enumerate()
        .map(|(i, s)| {
            assert_eq!(s.rank, i as u64 + 1);
            (s.display_name.clone().unwrap_or_default(), s.points)
        })
        .collect()
}

async fn members_rank_by_lifetime_earnings_and_ties_go_to_who_got_there_first(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    member(&store, &c, "ada", "Ada", "Lovelace").await;
    member(&store, &c, "alan", "Alan", "turing").await;
    member(&store, &c, "grace", "Grace", "Hopper").await;
    let edsger = member(&store, &c, "edsger", "Edsger", "").await;
    member(&store, &c, "idle", "Idle", "Member").await;
    // Grace reaches 50 first, Alan later: the tie goes to Grace.
    earn(&store, &c, "w-grace", "50").await;
    earn(&store, &c, "w-alan", "20").await;
    earn(&store, &c, "w-alan", "30").await;
    // Ada's two wallets add up; spending does not drop her.
    wallet(&store, &c, "ada", "w-ada-2").await;
    earn(&store, &c, "w-ada", "40").await;
    earn(&store, &c, "w-ada-2", "25").await;
    let burn = NewBurn {
        spend: Spend {
            wallet: "w-ada".into(),
            external_id: "b-1".into(),
            amount: Tokens::whole(40),
            description: "Reward".into(),
            comment: None,
            meta: None,
        },
        date: None,
    };
    store.ledger().burn(&c, burn).await.unwrap();
    earn(&store, &c, "w-edsger", "1").await;

    let snapshot = build(&store, &c).await;
    assert_eq!(snapshot.generation, 1);
    assert_eq!(
        snapshot.entries, 4,
        "a member who earned nothing is not ranked"
    );
    let tokens = |t: &str| Tokens::from_text(t).unwrap();
    assert_eq!(
        board(&store, &c, &snapshot).await,
        vec![
            ("Ada L.".to_string(), tokens("65")),
            ("Grace H.".to_string(), tokens("50")),
            ("Alan T.".to_string(), tokens("50")),
            ("Edsger".to_string(), tokens("1")),
        ]
    );

    // Pages are ranges of ranks; the last one is short, past it empty.
    let page = |page, limit| Page { page, limit };
    let second = store
        .community()
        .leaderboard_page(&c.org(), &snapshot, page(2, 3))
        .await
        .unwrap();
    assert_eq!(second.total, 4);
    assert_eq!(second.total_pages(), 2);
    assert_eq!(second.items.len(), 1);
    assert_eq!(second.items[0].member_id, edsger);
    assert_eq!(second.items[0].rank, 4);
    let beyond = store
        .community()
        .leaderboard_page(&c.org(), &snapshot, page(3, 3))
        .await
        .unwrap();
    assert!(beyond.items.is_empty());
    let count_only = store
        .community()
        .leaderboard_page(&c.org(), &snapshot, page(1, 0))
        .await
        .unwrap();
    assert_eq!((count_only.total, count_only.items.len()), (4, 0));
}

async fn a_member_finds_their_rank_and_neighbours(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    let mut ids = Vec::new();
    for (i, name) in ["a", "b", "c", "d", "e"].iter().enumerate() {
        ids.push(member(&store, &c, name, &name.to_uppercase(), "").await);
        earn(
            &store,
            &c,
            &format!("w-{name}"),
            &format!("{}", 100 - i * 10),
        )
        .await;
    }
    let loner = member(&store, &c, "z", "Z", "").await;
    let snapshot = build(&store, &c).await;

    let around = store
        .community()
        .leaderboard_neighbourhood(&c.org(), &snapshot, &ids[2], 1)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(around.standing.rank, 3);
    assert_eq!(around.standing.points, Tokens::whole(80));
    let ranks = |entries: &[store::Standing]| entries.iter().map(|e| e.rank).collect::<Vec<_>>();
    assert_eq!(ranks(&around.above), vec![2]);
    assert_eq!(ranks(&around.below), vec![4]);

    let top = store
        .community()
        .leaderboard_neighbourhood(&c.org(), &snapshot, &ids[0], 2)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(top.standing.rank, 1);
    assert!(top.above.is_empty());
    assert_eq!(ranks(&top.below), vec![2, 3]);
    let bottom = store
        .community()
        .leaderboard_neighbourhood(&c.org(), &snapshot, &ids[4], 3)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(ranks(&bottom.above), vec![2, 3, 4]);
    assert!(bottom.below.is_empty());

    let unranked = store
        .community()
        .leaderboard_neighbourhood(&c.org(), &snapshot, &loner, 1)
        .await
        .unwrap();
    assert!(
        unranked.is_none(),
        "a member who earned nothing has no place"
    );
}

async fn deleted_and_inactive_members_are_left_out(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    let gone = member(&store, &c, "gone", "Gone", "Away").await;
    let resting = member(&store, &c, "resting", "Resting", "Member").await;
    let ada = member(&store, &c, "ada", "Ada", "Lovelace").await;
    for reference in ["w-gone", "w-resting", "w-ada"] {
        earn(&store, &c, reference, "10").await;
    }
    let before = build(&store, &c).await;
    assert_eq!(before.entries, 3);

    // Deleted after the snapshot: the name goes at once, the place at the next build.
    store
        .members()
        .delete_member(&c.org(), &gone)
        .await
        .unwrap();
    let shown = store
        .community()
        .leaderboard_neighbourhood(&c.org(), &before, &gone, 0)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(shown.standing.display_name, None);
    let patch = MemberPatch {
        status: Some(MemberStatus::Inactive),
        ..Default::default()
    };
    store
        .members()
        .update_member(&c.org(), &resting, patch)
        .await
        .unwrap();

    let due = store
        .community()
        .refresh_leaderboard(&c, Duration::ZERO)
        .await
        .unwrap();
    assert!(due.is_none(), "the next build waits for its interval");
    make_due(&store).await;
    let rebuilt = store
        .community()
        .refresh_leaderboard(&c, FIVE_MINUTES)
        .await
        .unwrap()
        .expect("due again");
    assert_eq!((rebuilt.generation, rebuilt.entries), (2, 1));
    let after = store
        .community()
        .leaderboard_snapshot(&c)
        .await
        .unwrap()
        .unwrap();
    let page = store
        .community()
        .leaderboard_page(&c.org(), &after, Page::default())
        .await
        .unwrap();
    let ids: Vec<&str> = page.items.iter().map(|s| s.member_id.as_str()).collect();
    assert_eq!(ids, vec![ada.as_str()]);
}

async fn snapshots_follow_the_ledger_and_keep_one_generation_back(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    assert_eq!(
        store.community().leaderboard_snapshot(&c).await.unwrap(),
        None
    );
    let due = store.community().due_leaderboards().await.unwrap();
    assert_eq!(due, vec![c.clone()], "a new campaign is due");
    // An empty campaign still gets a snapshot: an empty board is an answer.
    let empty = build(&store, &c).await;
    assert_eq!(empty.entries, 0);
    assert!(empty.due_at > empty.built_at);
    assert!(
        store
            .community()
            .due_leaderboards()
            .await
            .unwrap()
            .is_empty()
    );

    member(&store, &c, "ada", "Ada", "").await;
    earn(&store, &c, "w-ada", "10").await;
    make_due(&store).await;
    for generation in 2..=4 {
        // An interval of zero: each build is due as soon as the one before is published.
        let built = store
            .community()
            .refresh_leaderboard(&c, Duration::ZERO)
            .await
            .unwrap();
        assert_eq!(built.expect("due").generation, generation);
        earn(&store, &c, "w-ada", "10").await;
    }
    let snapshot = store
        .community()
        .leaderboard_snapshot(&c)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snapshot.generation, 4);
    let top = board(&store, &c, &snapshot).await;
    assert_eq!(top, vec![("Ada".to_string(), Tokens::whole(30))]);
    for table in ["leaderboard_entries", "leaderboard_members"] {
        let kept = store
            .stored_bytes(&format!(
                "SELECT DISTINCT CAST(generation AS TEXT) FROM {table}"
            ))
            .await;
        assert_eq!(
            kept.len(),
            2,
            "{table}: the published generation and the one before"
        );
    }
}

async fn a_build_that_died_is_cleared_by_the_next(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    member(&store, &c, "ada", "Ada", "").await;
    member(&store, &c, "alan", "Alan", "").await;
    earn(&store, &c, "w-ada", "10").await;
    earn(&store, &c, "w-alan", "5").await;
    // What a node that died while writing generation 1 left behind, its claim run out.
    store
        .execute_raw(&format!(
            "INSERT INTO leaderboards (campaign_id, generation, entries, due_at, claimed_until) \
             VALUES ('{0}', 0, 0, '2000-01-01T00:00:00+00:00', '2000-01-01T00:10:00+00:00'); \
             INSERT INTO leaderboard_entries (campaign_id, generation, rank, member_id, points) \
             VALUES ('{0}', 1, 1, 'someone', 1), ('{0}', 1, 7, 'someone-else', 1); \
             INSERT INTO leaderboard_members (campaign_id, generation, member_id, rank) \
             VALUES ('{0}', 1, 'someone', 1), ('{0}', 3, 'from-a-later-claim', 1)",
            c.id
        ))
        .await
        .unwrap();
    let snapshot = build(&store, &c).await;
    assert_eq!(snapshot.generation, 1);
    assert_eq!(
        board(&store, &c, &snapshot).await,
        vec![
            ("Ada".to_string(), Tokens::whole(10)),
            ("Alan".to_string(), Tokens::whole(5))
        ]
    );
    for table in ["leaderboard_entries", "leaderboard_members"] {
        let rows = store
            .stored_bytes(&format!("SELECT member_id FROM {table}"))
            .await;
        assert_eq!(rows.len(), 2, "{table}");
    }
}

backend_tests!(
    members_rank_by_lifetime_earnings_and_ties_go_to_who_got_there_first,
    a_member_finds_their_rank_and_neighbours,
    deleted_and_inactive_members_are_left_out,
    snapshots_follow_the_ledger_and_keep_one_generation_back,
    a_build_that_died_is_cleared_by_the_next,
);

/// Two nodes on one database asking at once: one builds, the other passes.
async fn two_nodes_build_one_snapshot(db: TestStore) {
    let (first, second) = (db.store.clone(), db.another_node().await);
    let c = store::testing::campaign_fixture(&first).await;
    member(&first, &c, "ada", "Ada", "").await;
    earn(&first, &c, "w-ada", "10").await;
    for round in 0..5 {
        if round > 0 {
            make_due(&first).await;
        }
        let (a, b) = tokio::join!(
            first.community().refresh_leaderboard(&c, FIVE_MINUTES),
            second.community().refresh_leaderboard(&c, FIVE_MINUTES),
        );
        let built = [a.unwrap(), b.unwrap()];
        assert_eq!(
            built.iter().flatten().count(),
            1,
            "round {round}: {built:?}"
        );
    }
    let snapshot = second
        .community()
        .leaderboard_snapshot(&c)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(snapshot.generation, 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sqlite_nodes_build_one_snapshot() {
    two_nodes_build_one_snapshot(TestStore::sqlite().await).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn two_postgres_nodes_build_one_snapshot() {
    two_nodes_build_one_snapshot(TestStore::postgres().await).await;
}
