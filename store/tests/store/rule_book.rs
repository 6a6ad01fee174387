//! The rule book on both backends: how long a compiled rule set is trusted.

use std::sync::Arc;
use std::time::Duration;

use store::{Campaign, RuleBook, Store, backend_tests};

/// Gives the campaign its first rule-set version: one rule awarding the amount.
async fn set_base_rule(store: &Store, campaign: &Campaign) {
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n";
    store
        .programme()
        .set_rule_set(campaign, rules)
        .await
        .unwrap();
}

/// Within its window a book keeps the set it compiled against a change another process made
/// (the new version's row written here past this process's programme); past it, the next look
/// finds it. A change this process makes itself is seen at once, however patient the book.
async fn a_cached_set_is_trusted_for_its_window(store: Store) {
    let campaign = store::testing::campaign_fixture(&store).await;
    let (org, id) = (campaign.org_id.as_str(), campaign.id.as_str());
    let patient = RuleBook::fresh_for(store.programme().clone(), Duration::from_secs(3600));
    let eager = RuleBook::fresh_for(store.programme().clone(), Duration::ZERO);
    assert_eq!(patient.active(org, id).await.unwrap().0, None);
    assert_eq!(eager.active(org, id).await.unwrap().0, None);
    const ELSEWHERE: &str = "INSERT INTO rule_sets (id, org_id, campaign_id, version, source, \
         created_at) VALUES ($1, $2, $3, 1, $4, $5)";
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n";
    let now = chrono::Utc::now();
    let args = seam::params!["rs-elsewhere", org, id, rules, now];
    store.programme().execute(ELSEWHERE, args).await.unwrap();
    assert_eq!(patient.active(org, id).await.unwrap().0, None, "cached");
    assert_eq!(eager.active(org, id).await.unwrap().0, Some(1));
    set_base_rule(&store, &campaign).await;
    assert_eq!(
        patient.active(org, id).await.unwrap().0,
        Some(2),
        "this process's own"
    );
}

/// Every book of a store reads one cache: the set one compiled is the one another is handed,
/// and the same as the version a correction rounds by (the API's, the batch pipeline's and
/// corrections' books compile a version once per process).
async fn books_share_one_compiled_set(store: Store) {
    let campaign = store::testing::campaign_fixture(&store).await;
    let (org, id) = (campaign.org_id.as_str(), campaign.id.as_str());
    set_base_rule(&store, &campaign).await;
    let api = RuleBook::new(store.programme().clone());
    let pipeline = RuleBook::fresh_for(store.programme().clone(), Duration::ZERO);
    let (version, first) = api.active(org, id).await.unwrap();
    let (_, second) = pipeline.active(org, id).await.unwrap();
    assert_eq!(version, Some(1));
    assert!(Arc::ptr_eq(&first, &second), "compiled once");
    let by_version = api.version(org, id, Some(1)).await.unwrap();
    assert!(Arc::ptr_eq(&first, &by_version));
}

backend_tests!(
    a_cached_set_is_trusted_for_its_window,
    books_share_one_compiled_set
);
