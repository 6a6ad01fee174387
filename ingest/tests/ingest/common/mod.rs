//! Shared by the pipeline tests: an organisation with two wallets, a file received as a claimed
//! batch, balances and reports.
#![allow(dead_code)]

use std::path::Path;

use store::{
    Campaign, EarnInput, NewCampaign, NewMember, NewWallet, OrgScope, RuleBook, Store, Tokens,
};

pub async fn wallets(store: &Store) -> (OrgScope, Campaign) {
    let org = store.tenancy().create_org("Acme").await.unwrap().scope();
    let campaign = NewCampaign {
        name: "Main".into(),
        currency: "PTS".into(),
        ..Default::default()
    };
    let campaign = store
        .tenancy()
        .create_campaign(&org, campaign)
        .await
        .unwrap();
    for i in 1..=2 {
        let member = NewMember {
            first_name: "Ada".into(),
            idp: "reference".into(),
            user_id: format!("u-{i}"),
            external_id: format!("card-{i}"),
            ..Default::default()
        };
        store.members().create_member(&org, member).await.unwrap();
        let wallet = NewWallet {
            owner: Some(format!("card-{i}")),
            external_id: Some(format!("w-{i}")),
            name: None,
        };
        store
            .ledger()
            .create_wallet(&campaign, wallet)
            .await
            .unwrap();
    }
    (org, campaign)
}

pub async fn receive(
    store: &Store,
    data: &Path,
    org: &OrgScope,
    name: &str,
    content: &str,
) -> store::Batch {
    receive_bytes(store, data, org, name, content.as_bytes()).await
}

pub async fn balance(store: &Store, campaign: &Campaign, wallet: &str) -> Tokens {
    store
        .ledger()
        .get_wallet(campaign, wallet)
        .await
        .unwrap()
        .balance
}

/// Receives `content` (bytes) as a file named `name` and claims its batch.
pub async fn receive_bytes(
    store: &Store,
    data: &Path,
    org: &OrgScope,
    name: &str,
    content: &[u8],
) -> store::Batch {
    let file = data.join(format!("upload-{name}"));
    std::fs::write(&file, content).unwrap();
    ingest::intake::receive(store, data, org, &file, name, "sftp", Some("alice"))
        .await
        .unwrap();
    store
        .batches()
        .claim_batches(1, None)
        .await
        .unwrap()
        .remove(0)
}

/// `batch` as its next claim returns it after an interrupted attempt (a process stopped).
pub fn retried(batch: &store::Batch) -> store::Batch {
    let mut retried = batch.clone();
    retried.attempts += 1;
    retried
}

/// The organisation's report `name` (in `reports/`), parsed as JSON.
pub fn result(data: &Path, org: &OrgScope, name: &str) -> serde_json::Value {
    let path = data.join("sftp").join(org.id()).join("reports").join(name);
    serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap()
}

/// The (row, code) pairs of a rejected-rows report.
pub fn rejected_codes(data: &Path, org: &OrgScope, name: &str) -> Vec<(u64, String)> {
    let path = data.join("sftp").join(org.id()).join("reports").join(name);
    let mut reader = csv::ReaderBuilder::new()
        .flexible(true)
        .from_path(path)
        .unwrap();
    reader
        .records()
        .map(|r| {
            let r = r.unwrap();
            (r[0].parse().unwrap(), r[1].to_string())
        })
        .collect()
}

/// Earns `amount` on `wallet` through the API's path (submitted, then processed by a worker).
pub async fn earn_by_api(store: &Store, campaign: &Campaign, id: &str, wallet: &str, amount: &str) {
    let earn = EarnInput {
        activity: None,
        earn_id: id.into(),
        wallet: wallet.into(),
        amount: amount.into(),
        date: chrono::Utc::now(),
        description: None,
        comment: None,
        meta: None,
    };
    store.ledger().submit_earn(campaign, earn).await.unwrap();
    let book = RuleBook::new(store.programme().clone());
    while store.ledger().process_earns(&book, 10).await.unwrap() > 0 {}
}

/// A dry run of `content` as the file `name` (under `dir`'s organisation `org`) read with
/// `mapping`: what the pipeline says it would do; nothing is written to the ledger.
pub async fn dry_run(
    store: &Store,
    dir: &Path,
    org: &OrgScope,
    name: &str,
    content: &str,
    mapping: &ingest::batch::mapping::Mapping,
) -> ingest::batch::pipeline::Outcome {
    let file = dir.join(name);
    std::fs::write(&file, content).unwrap();
    let tree = ingest::folders::Tree::open(dir, org.id()).unwrap();
    let reports = tree.file(ingest::folders::Folder::Reports, "");
    let book = RuleBook::new(store.programme().clone());
    let job = ingest::batch::pipeline::Job {
        store,
        book: &book,
        org,
        batch_id: None,
        file_name: name,
        path: &file,
        mapping,
        reports: &reports,
        progress: &|_| {},
        resumed: false,
    };
    ingest::batch::pipeline::run_file(&job).await.unwrap()
}
