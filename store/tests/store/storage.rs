//! The storage story, run against SQLite and PostgreSQL alike (`backend_tests!`).

use serde_json::json;
use store::{
    ApiVersion, ChannelsPatch, MemberPatch, MemberStatus, NewCampaign, NewKey, NewMember,
    NewWallet, OrgScope, Page, Permission, PreferencesPatch, Store, StoreError, Tokens,
    WalletFilter, backend_tests,
};

async fn org_with_campaign(store: &Store, name: &str) -> (OrgScope, String) {
    let org = store.tenancy().create_org(name).await.unwrap();
    let campaign = store
        .tenancy()
        .create_campaign(
            &org.scope(),
            NewCampaign {
                name: "Main".into(),
                currency: "pts".into(),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    (org.scope(), campaign.id)
}

fn new_member(external_id: &str, user_id: &str) -> NewMember {
    NewMember {
        first_name: "Ada".into(),
        idp: "reference".into(),
        user_id: user_id.into(),
        external_id: external_id.into(),
        ..Default::default()
    }
}

async fn campaigns_belong_to_their_organisation(store: Store) {
    let (org, campaign) = org_with_campaign(&store, "Acme").await;
    let found = store.tenancy().get_campaign(&org, &campaign).await.unwrap();
    assert_eq!(
        found.currency, "PTS",
        "currency codes are kept in upper case"
    );
    let (other, _) = org_with_campaign(&store, "Other").await;
    assert!(matches!(
        store.tenancy().get_campaign(&other, &campaign).await,
        Err(StoreError::NotFound { .. })
    ));
    let bad = NewCampaign {
        name: "X".into(),
        currency: "€".into(),
        ..Default::default()
    };
    assert!(matches!(
        store.tenancy().create_campaign(&org, bad).await,
        Err(StoreError::Invalid {
            field: "currency",
            ..
        })
    ));
    // A campaign is made for an organisation the store knows: its scope comes from a lookup.
    assert!(matches!(
        store.tenancy().get_org("no-such-org").await,
        Err(StoreError::NotFound { .. })
    ));
}

async fn keys_authenticate_until_revoked(store: Store) {
    let (org, campaign) = org_with_campaign(&store, "Acme").await;
    let issued = store
        .tenancy()
        .issue_key(
            &org,
            NewKey {
                campaign_id: campaign.clone(),
                permissions: vec![Permission::VectorSearch],
                version: Some(ApiVersion::V1_6_2),
                read_only: true,
            },
        )
        .await
        .unwrap();
    let key = &issued.key.api_key;
    let caller = store
        .tenancy()
        .authenticate(key, &issued.secret)
        .await
        .unwrap()
        .expect("valid key");
    assert_eq!(caller.key.org_id, org.id());
    assert_eq!(caller.org, org);
    assert_eq!(caller.campaign.id, campaign);
    assert_eq!(caller.campaign.currency, "PTS");
    assert!(caller.key.allows(Permission::VectorSearch));
    assert_eq!(caller.key.version, Some(ApiVersion::V1_6_2));
    assert!(caller.key.read_only);
    assert!(!caller.key.obfuscated().contains(&key[7..key.len() - 4]));

    assert!(
        store
            .tenancy()
            .authenticate(key, "rs_wrong")
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        store
            .tenancy()
            .authenticate("rk_unknown", &issued.secret)
            .await
            .unwrap()
            .is_none()
    );

    let listed = store.tenancy().list_keys(&org).await.unwrap();
    assert_eq!(listed.len(), 1);
    let revoked = store.tenancy().revoke_key(&issued.key.id).await.unwrap();
    assert!(revoked.revoked_at.is_some());
    assert!(
        store
            .tenancy()
            .authenticate(key, &issued.secret)
            .await
            .unwrap()
            .is_none()
    );
    let again = store.tenancy().revoke_key(&issued.key.id).await.unwrap();
    assert_eq!(
        again.revoked_at, revoked.revoked_at,
        "revoking twice keeps the first time"
    );

    let (other, _) = org_with_campaign(&store, "Other").await;
    let foreign = store
        .tenancy()
        .issue_key(
            &other,
            NewKey {
                campaign_id: campaign,
                ..Default::default()
            },
        )
        .await;
    assert!(matches!(foreign, Err(StoreError::NotFound { .. })));
}

async fn members_round_trip(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let mut new = new_member("card-1", "u-1");
    new.meta = Some(json!({"tier": {"name": "gold"}, "vip": true}));
    new.communication_preferences.marketing.email = true;
    let created = store.members().create_member(&org, new).await.unwrap();

    let found = store.members().get_member(&org, &created.id).await.unwrap();
    assert_eq!(found, created);
    assert_eq!(
        found.meta,
        Some(json!({"tier": {"name": "gold"}, "vip": true}))
    );
    assert!(found.communication_preferences.marketing.email);
    assert!(!found.communication_preferences.marketing.sms);
    let by_idp = store
        .members()
        .find_member_by_idp(&org, "reference", "u-1")
        .await
        .unwrap();
    assert_eq!(by_idp.id, created.id);
    assert!(matches!(
        store
            .members()
            .find_member_by_idp(&org, "google", "u-1")
            .await,
        Err(StoreError::NotFound { .. })
    ));
}

async fn members_page_in_creation_order(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let mut ids = Vec::new();
    for i in 0..25 {
        let m = store
            .members()
            .create_member(&org, new_member(&format!("c{i}"), &format!("u{i}")))
            .await;
        ids.push(m.unwrap().id);
    }
    let second = store
        .members()
        .list_members(&org, Page { page: 2, limit: 10 })
        .await
        .unwrap();
    assert_eq!(second.total, 25);
    assert_eq!(second.total_pages(), 3);
    let got: Vec<_> = second.items.iter().map(|m| m.id.clone()).collect();
    assert_eq!(got, ids[10..20]);
    let count_only = store
        .members()
        .list_members(&org, Page { page: 1, limit: 0 })
        .await
        .unwrap();
    assert!(count_only.items.is_empty());
    assert_eq!(count_only.total, 25);
    let beyond = store
        .members()
        .list_members(&org, Page { page: 9, limit: 10 })
        .await
        .unwrap();
    assert!(beyond.items.is_empty());
}

async fn member_identifiers_are_unique_per_organisation(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let (other, _) = org_with_campaign(&store, "Other").await;
    store
        .members()
        .create_member(&org, new_member("card-1", "u-1"))
        .await
        .unwrap();
    let same_external = store
        .members()
        .create_member(&org, new_member("card-1", "u-2"))
        .await;
    assert!(matches!(
        same_external,
        Err(StoreError::Conflict {
            field: "externalId"
        })
    ));
    let same_user = store
        .members()
        .create_member(&org, new_member("card-2", "u-1"))
        .await;
    assert!(matches!(
        same_user,
        Err(StoreError::Conflict { field: "userId" })
    ));
    // The same identifiers in another organisation are someone else entirely.
    store
        .members()
        .create_member(&other, new_member("card-1", "u-1"))
        .await
        .unwrap();
}

async fn member_updates_merge_and_check_uniqueness(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let mut new = new_member("card-1", "u-1");
    new.last_name = Some("Lovelace".into());
    new.communication_preferences.general.sms = true;
    let member = store.members().create_member(&org, new).await.unwrap();
    store
        .members()
        .create_member(&org, new_member("card-2", "u-2"))
        .await
        .unwrap();

    let patch = MemberPatch {
        email: Some(Some("ada@example.com".into())),
        last_name: Some(None),
        status: Some(MemberStatus::Inactive),
        communication_preferences: Some(PreferencesPatch(vec![(
            "general",
            ChannelsPatch {
                email: Some(true),
                sms: None,
            },
        )])),
        ..Default::default()
    };
    let updated = store
        .members()
        .update_member(&org, &member.id, patch)
        .await
        .unwrap();
    assert_eq!(updated.email.as_deref(), Some("ada@example.com"));
    assert_eq!(updated.last_name, None, "Some(None) clears a field");
    assert_eq!(updated.first_name, "Ada", "fields not in the patch stay");
    assert_eq!(updated.status, MemberStatus::Inactive);
    assert!(updated.communication_preferences.general.email);
    assert!(
        updated.communication_preferences.general.sms,
        "channels not in the patch stay"
    );
    assert_eq!(
        store.members().get_member(&org, &member.id).await.unwrap(),
        updated
    );

    let clash = MemberPatch {
        external_id: Some("card-2".into()),
        ..Default::default()
    };
    let result = store.members().update_member(&org, &member.id, clash).await;
    assert!(matches!(
        result,
        Err(StoreError::Conflict {
            field: "externalId"
        })
    ));
    assert_eq!(
        store
            .members()
            .get_member(&org, &member.id)
            .await
            .unwrap()
            .external_id,
        "card-1"
    );
}

async fn concurrent_preference_updates_are_all_kept(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let member = store
        .members()
        .create_member(&org, new_member("card-1", "u-1"))
        .await
        .unwrap();
    let mut tasks = Vec::new();
    for category in store::CATEGORIES {
        for (email, sms) in [(Some(true), None), (None, Some(true))] {
            let (store, org, id) = (store.clone(), org.clone(), member.id.clone());
            tasks.push(tokio::spawn(async move {
                let patch = MemberPatch {
                    communication_preferences: Some(PreferencesPatch(vec![(
                        category,
                        ChannelsPatch { email, sms },
                    )])),
                    ..Default::default()
                };
                store
                    .members()
                    .update_member(&org, &id, patch)
                    .await
                    .unwrap();
            }));
        }
    }
    for task in tasks {
        task.await.unwrap();
    }
    let member = store.members().get_member(&org, &member.id).await.unwrap();
    for (category, channels) in member.communication_preferences.categories() {
        assert!(
            channels.email && channels.sms,
            "{category} lost an update: {channels:?}"
        );
    }
}

async fn deleted_members_are_erased_and_free_their_identifiers(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let mut new = new_member("card-1", "u-1");
    new.email = Some("ada@example.com".into());
    let member = store.members().create_member(&org, new).await.unwrap();
    let deleted = store
        .members()
        .delete_member(&org, &member.id)
        .await
        .unwrap();
    assert_eq!(
        deleted.email.as_deref(),
        Some("ada@example.com"),
        "returns the member as it was"
    );

    assert!(matches!(
        store.members().get_member(&org, &member.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.members().delete_member(&org, &member.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store
            .members()
            .update_member(&org, &member.id, MemberPatch::default())
            .await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store
            .members()
            .list_members(&org, Page::default())
            .await
            .unwrap()
            .total,
        0
    );
    // Its identifiers are erased, so a new member may take them.
    store
        .members()
        .create_member(&org, new_member("card-1", "u-1"))
        .await
        .unwrap();
}

async fn organisations_do_not_see_each_other(store: Store) {
    let (a, _) = org_with_campaign(&store, "A").await;
    let (b, _) = org_with_campaign(&store, "B").await;
    let member = store
        .members()
        .create_member(&a, new_member("card-1", "u-1"))
        .await
        .unwrap();
    assert!(matches!(
        store.members().get_member(&b, &member.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store
            .members()
            .update_member(&b, &member.id, MemberPatch::default())
            .await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.members().delete_member(&b, &member.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(
        store
            .members()
            .find_member_by_idp(&b, "reference", "u-1")
            .await
            .is_err()
    );
    assert_eq!(
        store
            .members()
            .list_members(&b, Page::default())
            .await
            .unwrap()
            .total,
        0
    );
    assert!(store.members().get_member(&a, &member.id).await.is_ok());
}

const RULES: &str = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n";

async fn rule_sets_are_versioned_and_the_newest_is_active(store: Store) {
    let (org, campaign) = org_with_campaign(&store, "Acme").await;
    let c = store.tenancy().get_campaign(&org, &campaign).await.unwrap();
    assert!(matches!(
        store.programme().rule_set(&c, None).await,
        Err(StoreError::NotFound { .. })
    ));
    let first = store.programme().set_rule_set(&c, RULES).await.unwrap();
    let doubled = RULES.replace("'amount'", "'amount * 2'");
    let second = store.programme().set_rule_set(&c, &doubled).await.unwrap();
    assert_eq!((first.version, second.version), (1, 2));
    assert_eq!(
        store.programme().rule_set(&c, None).await.unwrap().source,
        doubled
    );
    assert_eq!(
        store
            .programme()
            .rule_set(&c, Some(1))
            .await
            .unwrap()
            .source,
        RULES
    );
    let versions: Vec<_> = store
        .programme()
        .rule_set_versions(&c)
        .await
        .unwrap()
        .iter()
        .map(|v| v.version)
        .collect();
    assert_eq!(versions, [2, 1]);

    let broken = store
        .programme()
        .set_rule_set(&c, "[[rule]]\nid = 'x'\npriority = 1\naward = 'amount *'\n")
        .await;
    assert!(matches!(broken, Err(StoreError::InvalidRules(_))));
    assert_eq!(
        store.programme().rule_set(&c, None).await.unwrap().version,
        2,
        "nothing stored"
    );

    let (other, _) = org_with_campaign(&store, "Other").await;
    // Another organisation cannot reach the campaign, so neither its rule sets.
    assert!(matches!(
        store.tenancy().get_campaign(&other, &campaign).await,
        Err(StoreError::NotFound { .. })
    ));
    assert_eq!(
        store
            .tenancy()
            .campaign_by_id(&campaign)
            .await
            .unwrap()
            .org(),
        org
    );
}

async fn concurrent_rule_sets_get_distinct_versions(store: Store) {
    let (org, campaign) = org_with_campaign(&store, "Acme").await;
    let c = store.tenancy().get_campaign(&org, &campaign).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let (store, c) = (store.clone(), c.clone());
        tasks.push(tokio::spawn(async move {
            store
                .programme()
                .set_rule_set(&c, RULES)
                .await
                .unwrap()
                .version
        }));
    }
    let mut versions = Vec::new();
    for task in tasks {
        versions.push(task.await.unwrap());
    }
    versions.sort();
    assert_eq!(versions, (1..=10).collect::<Vec<_>>());
}

async fn wallets_belong_to_a_member_and_are_found_by_reference(store: Store) {
    let (org, campaign) = org_with_campaign(&store, "Acme").await;
    let campaign = store.tenancy().get_campaign(&org, &campaign).await.unwrap();
    let member = store
        .members()
        .create_member(&org, new_member("card-1", "u-1"))
        .await
        .unwrap();

    // The owner by member id, by member external id, or (absent) by the wallet's own reference.
    let by_id = store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: Some(member.id.clone()),
                external_id: Some("w-1".into()),
                name: None,
            },
        )
        .await
        .unwrap();
    let by_ref = store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: Some("card-1".into()),
                external_id: Some("w-2".into()),
                name: None,
            },
        )
        .await
        .unwrap();
    let implied = store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: None,
                external_id: Some("card-1".into()),
                name: Some("Main".into()),
            },
        )
        .await
        .unwrap();
    for wallet in [&by_id, &by_ref, &implied] {
        assert_eq!(wallet.owner_id, member.id);
        assert_eq!(wallet.currency, "PTS");
        assert_eq!(wallet.balance, Tokens::ZERO);
    }
    let nobody = store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: None,
                external_id: Some("card-9".into()),
                name: None,
            },
        )
        .await;
    assert!(matches!(
        nobody,
        Err(StoreError::Invalid {
            field: "externalId",
            ..
        })
    ));
    let taken = store
        .ledger()
        .create_wallet(
            &campaign,
            NewWallet {
                owner: Some("card-1".into()),
                external_id: Some("w-1".into()),
                name: None,
            },
        )
        .await;
    assert!(matches!(
        taken,
        Err(StoreError::Conflict {
            field: "externalId"
        })
    ));

    assert_eq!(
        store
            .ledger()
            .get_wallet(&campaign, &by_id.id)
            .await
            .unwrap(),
        by_id
    );
    assert_eq!(
        store
            .ledger()
            .get_wallet(&campaign, "w-2")
            .await
            .unwrap()
            .id,
        by_ref.id,
        "found by reference"
    );
    assert!(matches!(
        store.ledger().get_wallet(&campaign, "w-404").await,
        Err(StoreError::NotFound { .. })
    ));

    let all = store
        .ledger()
        .list_wallets(&campaign, &WalletFilter::default(), Page::default())
        .await
        .unwrap();
    assert_eq!(all.total, 3);
    let filtered = WalletFilter {
        external_id: Some("w-2".into()),
        owner: None,
    };
    assert_eq!(
        store
            .ledger()
            .list_wallets(&campaign, &filtered, Page::default())
            .await
            .unwrap()
            .items[0]
            .id,
        by_ref.id
    );
    let by_owner = WalletFilter {
        external_id: None,
        owner: Some("card-1".into()),
    };
    assert_eq!(
        store
            .ledger()
            .list_wallets(&campaign, &by_owner, Page::default())
            .await
            .unwrap()
            .total,
        3
    );

    let renamed = store
        .ledger()
        .rename_wallet(&campaign, &by_id.id, Some("Travel".into()))
        .await
        .unwrap();
    assert_eq!(renamed.name.as_deref(), Some("Travel"));

    let (other_org, other_campaign) = org_with_campaign(&store, "Other").await;
    let other = store
        .tenancy()
        .get_campaign(&other_org, &other_campaign)
        .await
        .unwrap();
    assert!(matches!(
        store.ledger().get_wallet(&other, &by_id.id).await,
        Err(StoreError::NotFound { .. })
    ));
    assert!(matches!(
        store.ledger().rename_wallet(&other, &by_id.id, None).await,
        Err(StoreError::NotFound { .. })
    ));
    let foreign_owner = store
        .ledger()
        .create_wallet(
            &other,
            NewWallet {
                owner: Some(member.id.clone()),
                external_id: None,
                name: None,
            },
        )
        .await;
    assert!(
        matches!(
            foreign_owner,
            Err(StoreError::Invalid { field: "owner", .. })
        ),
        "another organisation's member"
    );
}

/// A status, kind or state this version does not know is reported with its table, never read
/// as another value.
async fn unknown_stored_values_are_errors_that_name_them(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let member = store
        .members()
        .create_member(&org, new_member("card-1", "u-1"))
        .await
        .unwrap();
    store
        .execute_raw(&format!(
            "UPDATE members SET status = 'suspended' WHERE id = '{}'",
            member.id
        ))
        .await
        .unwrap();
    let err = store
        .members()
        .get_member(&org, &member.id)
        .await
        .unwrap_err();
    assert!(
        matches!(
            &err,
            StoreError::UnknownStored { table: "members", column: "status", value }
                if value == "suspended"
        ),
        "{err}"
    );
}

/// The two migration trees build the same tables, columns (by type class: SQLite keeps times
/// and JSON as text), nullability, keys, unique constraints and indexes.
#[tokio::test]
#[ignore = "needs PostgreSQL: set REWARDS_TEST_POSTGRES_URL and pass --ignored"]
async fn both_backends_build_the_same_schema() {
    use store::testing::{TestStore, schema::differences};
    let (lite, pg) = (TestStore::sqlite().await, TestStore::postgres().await);
    let (sqlite, postgres) = (
        lite.store.schema().await.unwrap(),
        pg.store.schema().await.unwrap(),
    );
    assert!(sqlite.len() > 10, "tables read back: {:?}", sqlite.keys());
    assert!(
        sqlite["members"].indexes.iter().any(|i| i.partial),
        "partial indexes are seen"
    );
    let found = differences(&sqlite, &postgres);
    assert!(
        found.is_empty(),
        "the schemas differ:\n{}",
        found.join("\n")
    );

    // A difference is found and named.
    lite.store
        .execute_raw("CREATE INDEX members_email ON members (org_id, email)")
        .await
        .unwrap();
    let found = differences(&lite.store.schema().await.unwrap(), &postgres);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("members_email"), "{found:?}");
}

async fn migrations_run_twice_without_harm(store: Store) {
    store.migrate().await.unwrap();
    store.ping().await.unwrap();
}

/// A bench settles the database before a timed step with a checkpoint, which SQLite refuses
/// inside a transaction: `execute_raw` runs it outside one, after the writes before it.
async fn a_checkpoint_runs_after_the_writes_before_it(store: Store) {
    let (org, _) = org_with_campaign(&store, "Acme").await;
    let checkpoint = match store.backend() {
        store::Backend::Sqlite => "PRAGMA wal_checkpoint(TRUNCATE)",
        store::Backend::Postgres => "CHECKPOINT",
    };
    store.execute_raw(checkpoint).await.unwrap();
    assert_eq!(
        store.tenancy().get_org(org.id()).await.unwrap().name,
        "Acme"
    );
}

backend_tests!(
    a_checkpoint_runs_after_the_writes_before_it,
    campaigns_belong_to_their_organisation,
    keys_authenticate_until_revoked,
    members_round_trip,
    members_page_in_creation_order,
    member_identifiers_are_unique_per_organisation,
    member_updates_merge_and_check_uniqueness,
    concurrent_preference_updates_are_all_kept,
    deleted_members_are_erased_and_free_their_identifiers,
    organisations_do_not_see_each_other,
    migrations_run_twice_without_harm,
    unknown_stored_values_are_errors_that_name_them,
    rule_sets_are_versioned_and_the_newest_is_active,
    concurrent_rule_sets_get_distinct_versions,
    wallets_belong_to_a_member_and_are_found_by_reference,
);
