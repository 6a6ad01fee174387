//! Activities in batch files: a row with an `activity` is what its wallet's owner did, recorded
//! and awarded under the rules with `on = "activity"` as the API does (the row's id its
//! external id, its meta the attributes); a bad type, an unknown wallet, a repeat and another
//! activity under a used id are refused with their reasons; a dry run records nothing. On both
//! backends.

use crate::common::{balance, dry_run, receive, rejected_codes, result, wallets};
use ingest::batch::mapping::Mapping;
use serde_json::json;
use store::{ActivitySource, BatchState, Campaign, Page, RuleBook, Store, Tokens, backend_tests};

/// A token a unit of a purchase; five for opening the app, once a day per member; twenty for a
/// survey.
const RULES: &str = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
     [[rule]]\nid = 'app'\npriority = 2\non = 'activity'\n\
     when = \"activity.type == 'app.opened'\"\naward = 5\n\
     limits = [{ scope = 'member', period = 'day', times = 1 }]\n\
     [[rule]]\nid = 'survey'\npriority = 3\non = 'activity'\n\
     when = \"activity.type == 'survey.completed'\"\naward = 20\n";

/// An earn, three activities (the second opening of the day earns nothing), then an unknown
/// wallet, a type that is not one, one the platform keeps, and a repeated id.
const MIXED: &str = "id,walletId,amount,date,activity,meta.device
e-1,w-1,10,2026-11-20T10:00:00Z,,
a-1,w-1,,2026-11-20T08:00:00Z,app.opened,ios
a-2,w-1,,2026-11-20T09:00:00Z,app.opened,ios
a-3,w-2,,2026-11-20T09:00:00Z,survey.completed,
a-4,w-9,,2026-11-20T09:00:00Z,app.opened,
a-5,w-1,,2026-11-20T09:00:00Z,App Opened,
a-6,w-1,,2026-11-20T09:00:00Z,member.signed_up,
a-1,w-1,,2026-11-20T08:00:00Z,app.opened,ios
";

async fn process(store: &Store, data: &std::path::Path, batch: &store::Batch) -> BatchState {
    let book = RuleBook::new(store.programme().clone());
    ingest::batch::pipeline::process(store, &book, data, batch, &|_| {})
        .await
        .unwrap()
        .state
}

async fn activate(store: &Store, campaign: &Campaign) {
    store
        .programme()
        .set_rule_set(campaign, RULES)
        .await
        .unwrap();
}

/// The activities of `card` in the campaign that files recorded.
async fn activities_of(store: &Store, campaign: &Campaign, card: &str) -> Vec<store::Activity> {
    let member = store
        .members()
        .member_id_of(&campaign.org_id, card)
        .await
        .unwrap()
        .unwrap();
    let page = Page {
        page: 1,
        limit: 100,
    };
    store
        .ledger()
        .list_activities(campaign, &member, None, page)
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|a| a.source == ActivitySource::File)
        .collect()
}

/// The (row, code) pairs of a rejected-rows report, by row (a file of a campaign with limits
/// is taken in date order).
fn by_row(mut codes: Vec<(u64, String)>) -> Vec<(u64, String)> {
    codes.sort();
    codes
}

async fn activity_rows_are_recorded_and_awarded_with_their_reasons(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    activate(&store, &campaign).await;
    let batch = receive(&store, dir.path(), &org, "mixed.csv", MIXED).await;
    assert_eq!(
        process(&store, dir.path(), &batch).await,
        BatchState::Completed
    );
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(15));
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(20));
    let summary = result(dir.path(), &org, "mixed.csv.result.json");
    assert_eq!(
        (
            &summary["loaded"],
            &summary["activities"],
            &summary["tokens"]
        ),
        (&json!(4), &json!(3), &json!(35))
    );
    assert_eq!(
        by_row(rejected_codes(dir.path(), &org, "mixed.csv.rejected.csv")),
        [
            (6, "unknown_wallet".to_string()),
            (7, "bad_activity_type".to_string()),
            (8, "bad_activity_type".to_string()),
            (9, "duplicate_in_file".to_string()),
        ]
    );
    let ada = activities_of(&store, &campaign, "card-1").await;
    assert_eq!(ada.len(), 2);
    assert!(
        ada.iter()
            .all(|a| a.batch_id.as_deref() == Some(batch.id.as_str()))
    );
    let first = ada.iter().find(|a| a.external_id == "a-1").unwrap();
    assert_eq!(first.attributes, Some(json!({"device": "ios"})));
    assert_eq!(first.awards[0].tokens, Tokens::whole(5));

    // Again in another file: the same activity is a duplicate, another under its id refused.
    let again = "id,walletId,date,activity\n\
         a-3,w-2,2026-11-20T09:00:00Z,survey.completed\n\
         a-1,w-1,2026-11-20T08:00:00Z,app.opened\n";
    let batch = receive(&store, dir.path(), &org, "again.csv", again).await;
    process(&store, dir.path(), &batch).await;
    assert_eq!(
        by_row(rejected_codes(dir.path(), &org, "again.csv.rejected.csv")),
        [
            (2, "duplicate_transaction".to_string()),
            (3, "already_exists".to_string()),
        ]
    );
    assert_eq!(balance(&store, &campaign, "w-2").await, Tokens::whole(20));
    assert!(store.ledger().audit().await.unwrap().is_empty());
}

/// A mapping names the activity's column (a file of activities needs no amount); a dry run
/// checks the rows and records nothing.
async fn a_mapping_maps_activities_and_a_dry_run_records_nothing(store: Store) {
    let dir = tempfile::tempdir().unwrap();
    let (org, campaign) = wallets(&store).await;
    activate(&store, &campaign).await;
    let document = json!({
        "pattern": "app_*.csv",
        "columns": {
            "id": "Event",
            "walletId": "Card",
            "date": "When",
            "activity": "What",
        },
    });
    let mapping = Mapping::parse(&document).unwrap();
    let content = "Event,Card,When,What\nx-1,w-1,2026-11-20T08:00:00Z,survey.completed\n\
                   x-2,w-9,2026-11-20T08:00:00Z,survey.completed\n";
    let outcome = dry_run(&store, dir.path(), &org, "app_1.csv", content, &mapping).await;
    assert_eq!((outcome.rows, outcome.loaded, outcome.rejected), (2, 1, 1));
    assert!(activities_of(&store, &campaign, "card-1").await.is_empty());
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::ZERO);

    store
        .batches()
        .set_mapping(&org, &mapping.pattern, &document)
        .await
        .unwrap();
    let batch = receive(&store, dir.path(), &org, "app_1.csv", content).await;
    process(&store, dir.path(), &batch).await;
    assert_eq!(balance(&store, &campaign, "w-1").await, Tokens::whole(20));
    assert_eq!(
        rejected_codes(dir.path(), &org, "app_1.csv.rejected.csv"),
        [(3, "unknown_wallet".to_string())]
    );
}

backend_tests!(
    activity_rows_are_recorded_and_awarded_with_their_reasons,
    a_mapping_maps_activities_and_a_dry_run_records_nothing,
);
