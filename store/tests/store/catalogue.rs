//! The catalogue import on both backends: applied whole or not at all, idempotent, `replace`,
//! references checked against what the campaign holds, tiers matched, exported back as imported.

use serde_json::{Value, json};
use store::{
    Campaign, Catalogue, ImportOptions, NewTier, Page, Store, StoreError, Tokens, backend_tests,
};

async fn campaign(store: &Store) -> Campaign {
    store::testing::campaign_fixture(store).await
}

fn document() -> Value {
    json!({
        "categories": [{"id": "food", "name": "Food & drink"}, {"id": "trips", "name": "Trips"}],
        "tags": [{"id": "veg", "name": "Vegetarian"}, {"id": "family", "name": "Family"}],
        "tiers": [{"id": "gold", "name": "Gold", "precedence": 1, "threshold": 1000,
                   "benefits": ["Lounge"]}],
        "products": [
            {"id": "dinner", "name": "Dinner for two", "category": "food", "tags": ["veg", "family"],
             "bookInAdvance": true, "weekdays": {"fri": true, "sat": true},
             "branches": [{"id": "cpt", "name": "Cape Town",
                 "address": {"city": "Cape Town", "latitude": -33.92, "longitude": 18.42},
                 "contactDetails": {"contactName": "Thandi", "phoneNumber": "+27 21 555 0100"}}],
             "variants": [
                 {"id": "dinner-std", "name": "Standard", "price": 2500},
                 {"id": "dinner-gold", "name": "Chef's table", "price": 7999.5, "tier": "gold",
                  "stock": 4}
             ]},
            {"id": "balloon", "name": "Balloon flight", "category": "trips",
             "variants": [{"id": "balloon-1", "name": "Sunrise", "price": 12000, "available": false}]}
        ]
    })
}

fn read(doc: &Value) -> Catalogue {
    Catalogue::from_value(doc).expect("a valid document")
}

async fn an_import_is_read_back_whole_and_exported_as_imported(store: Store) {
    let c = campaign(&store).await;
    let report = store
        .catalogue()
        .import_catalogue(&c, &read(&document()), ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(report.products.created, 2);
    assert_eq!(report.variants.created, 3);
    assert_eq!(report.tiers.created, 1);
    assert_eq!(report.version, 1);
    assert_eq!(store.catalogue().catalogue_version(&c).await.unwrap(), 1);

    let products = store.catalogue().catalogue_products(&c).await.unwrap();
    assert_eq!(products.len(), 2);
    let dinner = &products[0];
    assert_eq!(dinner.category.as_ref().unwrap().name, "Food & drink");
    let tags: Vec<&str> = dinner.tags.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(tags, ["Vegetarian", "Family"], "in the document's order");
    assert!(dinner.book_in_advance);
    assert!(dinner.weekdays.fri && dinner.weekdays.sat && !dinner.weekdays.mon);
    assert_eq!(
        dinner.branches[0].address.as_ref().unwrap().latitude,
        Some(-33.92)
    );
    let gold = dinner.variants[1]
        .tier
        .as_ref()
        .expect("the variant requires a tier");
    assert_eq!(gold.name, "Gold");
    assert_eq!(gold.threshold, Tokens::whole(1000));
    assert_eq!(dinner.variants[1].price.to_string(), "7999.5");
    assert_eq!(dinner.variants[1].stock, Some(4));
    assert!(dinner.is_available());
    assert!(
        !products[1].is_available(),
        "its only variant is unavailable"
    );

    let tiers = store.programme().list_tiers(&c).await.unwrap();
    assert_eq!(tiers.len(), 1, "the document's tier became the campaign's");

    // The export imports back to the same catalogue.
    let exported = store.catalogue().export_catalogue(&c).await.unwrap();
    let again = store
        .catalogue()
        .import_catalogue(&c, &exported, ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(again.tiers.updated, 1, "matched by the exported id");
    assert_eq!(again.products.created, 0);
    assert_eq!(
        store.catalogue().catalogue_products(&c).await.unwrap(),
        products
    );
}

async fn importing_twice_changes_nothing_and_replace_removes_the_rest(store: Store) {
    let c = campaign(&store).await;
    let doc = read(&document());
    store
        .catalogue()
        .import_catalogue(&c, &doc, ImportOptions::default())
        .await
        .unwrap();
    let before = store.catalogue().catalogue_products(&c).await.unwrap();
    let second = store
        .catalogue()
        .import_catalogue(&c, &doc, ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(second.products.created, 0);
    assert_eq!(second.products.updated, 2);
    assert_eq!(second.tiers.created, 0, "the tier is matched, not doubled");
    assert_eq!(
        store.catalogue().catalogue_products(&c).await.unwrap(),
        before
    );
    assert_eq!(store.programme().list_tiers(&c).await.unwrap().len(), 1);

    // Without `replace`, a smaller file leaves the rest alone.
    let mut smaller = document();
    smaller["products"].as_array_mut().unwrap().remove(1);
    smaller["categories"].as_array_mut().unwrap().remove(1);
    // The dinner keeps one variant: the other goes, as the product is replaced whole.
    smaller["products"][0]["variants"]
        .as_array_mut()
        .unwrap()
        .remove(1);
    let kept = store
        .catalogue()
        .import_catalogue(&c, &read(&smaller), ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(kept.products.removed, 0);
    assert_eq!(kept.variants.removed, 1);
    let products = store.catalogue().catalogue_products(&c).await.unwrap();
    assert_eq!(products.len(), 2);
    assert_eq!(products[0].variants.len(), 1);

    let replaced = store
        .catalogue()
        .import_catalogue(
            &c,
            &read(&smaller),
            ImportOptions {
                replace: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(replaced.products.removed, 1);
    assert_eq!(replaced.categories.removed, 1);
    assert_eq!(
        replaced.variants.removed, 1,
        "the balloon's variant went with it"
    );
    let products = store.catalogue().catalogue_products(&c).await.unwrap();
    assert_eq!(products.len(), 1);
    let categories = store
        .catalogue()
        .categories(&c, None, Page::default())
        .await
        .unwrap();
    assert_eq!(categories.total, 1);
}

async fn a_dry_run_counts_and_writes_nothing(store: Store) {
    let c = campaign(&store).await;
    let report = store
        .catalogue()
        .import_catalogue(
            &c,
            &read(&document()),
            ImportOptions {
                dry_run: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert!(report.dry_run);
    assert_eq!(report.products.created, 2);
    assert_eq!(report.version, 0);
    assert!(
        store
            .catalogue()
            .catalogue_products(&c)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(store.programme().list_tiers(&c).await.unwrap().is_empty());
    assert_eq!(store.catalogue().catalogue_version(&c).await.unwrap(), 0);
}

async fn unknown_references_are_listed_and_nothing_is_written(store: Store) {
    let c = campaign(&store).await;
    let mut doc = document();
    doc["products"][0]["category"] = json!("drinks");
    doc["products"][0]["tags"] = json!(["veg", "spicy"]);
    doc["products"][1]["variants"][0]["tier"] = json!("platinum");
    let Err(StoreError::InvalidCatalogue(problems)) = store
        .catalogue()
        .import_catalogue(&c, &read(&doc), ImportOptions::default())
        .await
    else {
        panic!("the import must fail");
    };
    let found: Vec<String> = problems.iter().map(ToString::to_string).collect();
    assert_eq!(
        found,
        [
            "products[0].category: unknown category `drinks`",
            "products[0].tags[1]: unknown tag `spicy`",
            "products[1].variants[0].tier: unknown tier `platinum`: neither an id nor a name of the campaign's tiers or the document's",
        ]
    );
    assert!(
        store
            .catalogue()
            .catalogue_products(&c)
            .await
            .unwrap()
            .is_empty()
    );
    assert!(
        store.programme().list_tiers(&c).await.unwrap().is_empty(),
        "the tier was not kept"
    );
}

async fn a_document_names_its_reading_and_reference_problems_at_once(store: Store) {
    let c = campaign(&store).await;
    let mut doc = document();
    doc["products"][0]["variants"][0]["price"] = json!("cheap");
    doc["products"][1]["category"] = json!("drinks");
    let text = serde_json::to_vec(&doc).unwrap();
    let Err(StoreError::InvalidCatalogue(problems)) = store
        .catalogue()
        .import_document(&c, &text, ImportOptions::default())
        .await
    else {
        panic!("the import must fail");
    };
    let paths: Vec<&str> = problems.iter().map(|p| p.path.as_str()).collect();
    assert_eq!(
        paths,
        ["products[0].variants[0].price", "products[1].category"],
        "{problems:?}"
    );
    assert!(
        store
            .catalogue()
            .catalogue_products(&c)
            .await
            .unwrap()
            .is_empty()
    );
    assert_eq!(store.catalogue().catalogue_version(&c).await.unwrap(), 0);
    // A clean document goes in as `import_catalogue` takes it.
    let text = serde_json::to_vec(&document()).unwrap();
    let report = store
        .catalogue()
        .import_document(&c, &text, ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(report.version, 1);
}

async fn references_reach_what_the_campaign_already_holds(store: Store) {
    let c = campaign(&store).await;
    store
        .programme()
        .create_tier(
            &c,
            NewTier {
                name: "Silver".into(),
                precedence: 2,
                threshold: Tokens::whole(100),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    store
        .catalogue()
        .import_catalogue(&c, &read(&document()), ImportOptions::default())
        .await
        .unwrap();
    // A later file names a stored category and a stored tier (by name) without listing them.
    let later = json!({"products": [{"id": "spa", "name": "Spa day", "category": "trips",
        "variants": [{"id": "spa-1", "name": "Half day", "price": 900, "tier": "Silver"}]}]});
    store
        .catalogue()
        .import_catalogue(&c, &read(&later), ImportOptions::default())
        .await
        .unwrap();
    let spa = store
        .catalogue()
        .catalogue_products(&c)
        .await
        .unwrap()
        .into_iter()
        .find(|p| p.id == "spa")
        .unwrap();
    assert_eq!(spa.variants[0].tier.as_ref().unwrap().name, "Silver");
    // With `replace`, only the file counts: the stored category is about to go.
    let replaced = store
        .catalogue()
        .import_catalogue(
            &c,
            &read(&later),
            ImportOptions {
                replace: true,
                ..Default::default()
            },
        )
        .await;
    assert!(
        matches!(&replaced, Err(StoreError::InvalidCatalogue(p)) if p[0].path == "products[0].category"),
        "{replaced:?}"
    );
}

async fn a_tier_that_variants_require_cannot_be_removed(store: Store) {
    let c = campaign(&store).await;
    store
        .catalogue()
        .import_catalogue(&c, &read(&document()), ImportOptions::default())
        .await
        .unwrap();
    let refused = store.programme().remove_tier(&c, "Gold").await;
    assert!(
        matches!(&refused, Err(StoreError::Invalid { field: "tier", .. })),
        "{refused:?}"
    );
}

async fn catalogues_are_kept_per_campaign(store: Store) {
    let a = campaign(&store).await;
    let b = campaign(&store).await;
    store
        .catalogue()
        .import_catalogue(&a, &read(&document()), ImportOptions::default())
        .await
        .unwrap();
    // The same client ids in another campaign are other records.
    let mut other = document();
    other["products"][0]["name"] = json!("Lunch");
    store
        .catalogue()
        .import_catalogue(&b, &read(&other), ImportOptions::default())
        .await
        .unwrap();
    assert_eq!(
        store.catalogue().catalogue_products(&a).await.unwrap()[0].name,
        "Dinner for two"
    );
    assert_eq!(
        store.catalogue().catalogue_products(&b).await.unwrap()[0].name,
        "Lunch"
    );
    let tags = store
        .catalogue()
        .tags(&b, Some("veg"), Page::default())
        .await
        .unwrap();
    assert_eq!(tags.total, 1);
    assert_eq!(tags.items[0].name, "Vegetarian");
}

backend_tests!(
    an_import_is_read_back_whole_and_exported_as_imported,
    importing_twice_changes_nothing_and_replace_removes_the_rest,
    a_dry_run_counts_and_writes_nothing,
    unknown_references_are_listed_and_nothing_is_written,
    a_document_names_its_reading_and_reference_problems_at_once,
    references_reach_what_the_campaign_already_holds,
    a_tier_that_variants_require_cannot_be_removed,
    catalogues_are_kept_per_campaign,
);
