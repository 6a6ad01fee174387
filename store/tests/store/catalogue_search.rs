//! Searching an imported catalogue on both backends: every filter alone and combined, geofence
//! edges, each precedence comparison, cost bounds, sorting both ways, relevance, vectors, and a
//! second node catching up with an import.

use serde_json::json;
use store::{
    Campaign, Catalogue, Catalogues, Comparison, ImportOptions, Near, Page, ProductQuery, Sort,
    SortField, Store, Tokens, backend_tests,
};

async fn imported(store: &Store) -> Campaign {
    let campaign = store::testing::campaign_fixture(store).await;
    let branch = |id: &str, lat: f64, lon: f64| json!({"id": id, "name": id, "address": {"latitude": lat, "longitude": lon}});
    let doc = json!({
        "categories": [{"id": "food", "name": "Food & Drink"}, {"id": "trips", "name": "Trips"},
                       {"id": "wellness", "name": "Wellness"}],
        "tags": [{"id": "veg", "name": "Vegetarian"}, {"id": "family", "name": "Family"}],
        "tiers": [{"id": "gold", "name": "Gold", "precedence": 1, "threshold": 1000},
                  {"id": "silver", "name": "Silver", "precedence": 2, "threshold": 100}],
        "products": [
            {"id": "dinner", "name": "Dinner for two", "category": "food", "tags": ["veg"],
             "bookInAdvance": true, "description": "Three courses by the harbour",
             "branches": [branch("cape-town", -33.9249, 18.4241)],
             "variants": [{"id": "dinner-std", "name": "Standard", "price": 2500},
                          {"id": "dinner-chef", "name": "Chef", "price": 6000, "tier": "gold"}]},
            {"id": "picnic", "name": "Family picnic basket", "category": "food", "tags": ["family"],
             "branches": [branch("stellenbosch", -33.9346, 18.8602)],
             "variants": [{"id": "picnic-1", "name": "Basket", "price": 800, "tier": "silver"}]},
            {"id": "balloon", "name": "Balloon flight", "category": "trips",
             "branches": [branch("johannesburg", -26.2041, 28.0473)],
             "variants": [{"id": "balloon-1", "name": "Sunrise", "price": 12000, "available": false}]},
            {"id": "massage", "name": "Spa massages", "category": "wellness",
             "variants": [{"id": "massage-1", "name": "Hour", "price": 1500, "stock": 0}]},
            {"id": "fiji", "name": "Island hopping", "category": "trips",
             "branches": [branch("taveuni", -17.0, -179.9)],
             "variants": [{"id": "fiji-1", "name": "Day", "price": 3000}]}
        ]
    });
    store
        .catalogue()
        .import_catalogue(
            &campaign,
            &Catalogue::from_value(&doc).unwrap(),
            ImportOptions::default(),
        )
        .await
        .unwrap();
    campaign
}

async fn ids(catalogues: &Catalogues, campaign: &Campaign, query: ProductQuery) -> Vec<String> {
    let index = catalogues.get(campaign).await.unwrap();
    let page = Page {
        page: 1,
        limit: 100,
    };
    let found = index.search(&query, page);
    assert_eq!(found.total as usize, found.items.len());
    found.items.iter().map(|f| f.product.id.clone()).collect()
}

async fn every_filter_alone(store: Store) {
    let c = imported(&store).await;
    let book = Catalogues::new(store.catalogue().clone());
    let q = ProductQuery::default;
    assert_eq!(
        ids(&book, &c, q()).await,
        ["balloon", "dinner", "picnic", "fiji", "massage"],
        "by name without a search or geofence"
    );
    let by = |f: fn(&mut ProductQuery)| {
        let mut query = q();
        f(&mut query);
        query
    };
    assert_eq!(
        ids(&book, &c, by(|q| q.category_id = Some("food".into()))).await,
        ["dinner", "picnic"]
    );
    assert_eq!(
        ids(&book, &c, by(|q| q.category = Some("food & DRINK".into()))).await,
        ["dinner", "picnic"]
    );
    assert_eq!(
        ids(&book, &c, by(|q| q.booking_required = Some(true))).await,
        ["dinner"]
    );
    assert_eq!(
        ids(&book, &c, by(|q| q.is_available = Some(false))).await,
        ["balloon", "massage"]
    );
    assert_eq!(
        ids(&book, &c, by(|q| q.tier_id = Some("gold".into()))).await,
        ["dinner"],
        "the document's id for the tier, which it keeps as its handle"
    );
    assert_eq!(
        ids(&book, &c, by(|q| q.tier_id = Some("Gold".into()))).await,
        Vec::<String>::new(),
        "a tier's name is not its id"
    );
    let gold = store
        .programme()
        .list_tiers(&c)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "Gold")
        .unwrap();
    assert_eq!(gold.handle.as_deref(), Some("gold"));
    let mut query = q();
    query.tier_id = Some(gold.id);
    assert_eq!(ids(&book, &c, query).await, ["dinner"], "the service's id");
    for (op, expected) in [
        (Comparison::Gt, vec!["picnic"]),
        (Comparison::Gte, vec!["dinner", "picnic"]),
        (Comparison::Lt, vec![]),
        (Comparison::Lte, vec!["dinner"]),
        (Comparison::Eq, vec!["dinner"]),
    ] {
        let mut query = q();
        query.tier_precedence = Some((op, 1));
        assert_eq!(ids(&book, &c, query).await, expected, "{op:?} 1");
    }
    let mut query = q();
    query.tier_precedence = Some((Comparison::Lt, 2));
    assert_eq!(ids(&book, &c, query).await, ["dinner"]);
    let mut query = q();
    query.min_cost = Some(Tokens::whole(2000));
    query.max_cost = Some(Tokens::whole(3000));
    assert_eq!(
        ids(&book, &c, query).await,
        ["dinner", "fiji"],
        "bounds are inclusive"
    );
}

async fn geofences_measure_to_the_nearest_branch(store: Store) {
    let c = imported(&store).await;
    let book = Catalogues::new(store.catalogue().clone());
    let near = |latitude, longitude, radius_km| ProductQuery {
        near: Some(Near {
            latitude,
            longitude,
            radius_km,
        }),
        ..Default::default()
    };
    // Cape Town's centre: the dinner is there, the picnic 40 km away.
    assert_eq!(
        ids(&book, &c, near(-33.9249, 18.4241, 10.0)).await,
        ["dinner"]
    );
    assert_eq!(
        ids(&book, &c, near(-33.9249, 18.4241, 50.0)).await,
        ["dinner", "picnic"],
        "nearest first"
    );
    // The picnic's branch is 40.4 km from the dinner's: just inside, just outside.
    let index = book.get(&c).await.unwrap();
    let found = index.search(&near(-33.9249, 18.4241, 50.0), Page::default());
    let distance = found.items[1].distance_km.unwrap();
    assert!((distance - 40.4).abs() < 0.5, "{distance}");
    assert_eq!(
        ids(&book, &c, near(-33.9249, 18.4241, distance + 0.01))
            .await
            .len(),
        2
    );
    assert_eq!(
        ids(&book, &c, near(-33.9249, 18.4241, distance - 0.01))
            .await
            .len(),
        1
    );
    // Across the antimeridian: 179.95 E to 179.9 W is 15.9 km at 17 S.
    assert_eq!(ids(&book, &c, near(-17.0, 179.95, 16.5)).await, ["fiji"]);
    assert!(ids(&book, &c, near(-17.0, 179.95, 15.5)).await.is_empty());
}

async fn sorting_goes_both_ways(store: Store) {
    let c = imported(&store).await;
    let book = Catalogues::new(store.catalogue().clone());
    let sorted = |field, descending| ProductQuery {
        sort: Some(Sort { field, descending }),
        ..Default::default()
    };
    assert_eq!(
        ids(&book, &c, sorted(SortField::Price, false)).await,
        ["picnic", "massage", "dinner", "fiji", "balloon"],
        "by the lowest variant price"
    );
    assert_eq!(
        ids(&book, &c, sorted(SortField::Price, true)).await,
        ["balloon", "fiji", "dinner", "massage", "picnic"]
    );
    assert_eq!(
        ids(&book, &c, sorted(SortField::Name, true)).await,
        ["massage", "fiji", "picnic", "dinner", "balloon"]
    );
    assert_eq!(
        ids(&book, &c, sorted(SortField::Category, false)).await,
        ["dinner", "picnic", "balloon", "fiji", "massage"],
        "then by name within a category"
    );
}

async fn relevance_typos_plurals_and_prefixes(store: Store) {
    let c = imported(&store).await;
    let book = Catalogues::new(store.catalogue().clone());
    let search = |text: &str| ProductQuery {
        search: Some(text.into()),
        ..Default::default()
    };
    assert_eq!(ids(&book, &c, search("dinner harbour")).await[0], "dinner");
    assert_eq!(
        ids(&book, &c, search("dinenr")).await,
        ["dinner"],
        "a swap is one typo"
    );
    assert_eq!(
        ids(&book, &c, search("massage")).await,
        ["massage"],
        "plural matches singular"
    );
    assert_eq!(
        ids(&book, &c, search("ballo")).await,
        ["balloon"],
        "the last word as a prefix"
    );
    // A tag and a category name are searched too.
    assert_eq!(ids(&book, &c, search("vegetarian")).await, ["dinner"]);
    assert_eq!(ids(&book, &c, search("trips")).await.len(), 2);
    // Combined: text, category, tier, geofence and a sort.
    let combined = ProductQuery {
        search: Some("family basket".into()),
        category_id: Some("food".into()),
        tier_precedence: Some((Comparison::Gte, 2)),
        near: Some(Near {
            latitude: -33.93,
            longitude: 18.86,
            radius_km: 10.0,
        }),
        sort: Some(Sort {
            field: SortField::Price,
            descending: false,
        }),
        ..Default::default()
    };
    assert_eq!(ids(&book, &c, combined).await, ["picnic"]);
}

async fn nearest_products_leave_out_themselves_and_the_unavailable(store: Store) {
    let c = imported(&store).await;
    let book = Catalogues::new(store.catalogue().clone());
    let index = book.get(&c).await.unwrap();
    assert!(index.computes_vectors());
    let vector = index.vector_of("picnic").unwrap();
    let near = index.nearest(&vector, 10, Some("picnic")).unwrap();
    let found: Vec<&str> = near.iter().map(|(p, _)| p.id.as_str()).collect();
    assert!(
        !found.contains(&"picnic") && !found.contains(&"balloon") && !found.contains(&"massage"),
        "{found:?}"
    );
    assert_eq!(found.len(), 2);
    assert!(near.windows(2).all(|w| w[0].1 <= w[1].1), "nearest first");
    let text = index.embed_text("dinner for two").unwrap();
    assert_eq!(index.nearest(&text, 1, None).unwrap()[0].0.id, "dinner");
    assert!(
        index.nearest(&[1.0, 2.0], 1, None).is_err(),
        "wrong dimension"
    );
}

async fn another_node_catches_up_with_an_import(store: Store) {
    let c = imported(&store).await;
    let here = Catalogues::new(store.catalogue().clone());
    let there = Catalogues::new(store.catalogue().clone());
    assert_eq!(there.get(&c).await.unwrap().len(), 5);
    let doc = json!({"products": [{"id": "kayak", "name": "Kayak tour",
        "variants": [{"id": "kayak-1", "name": "Morning", "price": 700}]}]});
    store
        .catalogue()
        .import_catalogue(
            &c,
            &Catalogue::from_value(&doc).unwrap(),
            ImportOptions::default(),
        )
        .await
        .unwrap();
    here.forget(&c.id);
    assert_eq!(
        here.get(&c).await.unwrap().len(),
        6,
        "at once where it was imported"
    );
    store.clock().advance(chrono::Duration::seconds(1));
    assert_eq!(
        there.get(&c).await.unwrap().len(),
        6,
        "a second later elsewhere"
    );
}

/// Found by schemathesis: an embedding of tiny numbers once passed the import but had no length
/// in f32, and the index built without vectors while recommendations still read them.
async fn tiny_embeddings_keep_their_direction(store: Store) {
    let c = store::testing::campaign_fixture(&store).await;
    let doc = json!({"products": [
        {"id": "a", "name": "A", "embedding": [1e-30, 0.0]},
        {"id": "b", "name": "B", "embedding": [0.0, 1.0]},
        {"id": "c", "name": "C", "embedding": [1.0, 1e-30]}
    ]});
    let doc = Catalogue::from_value(&doc).unwrap();
    store
        .catalogue()
        .import_catalogue(&c, &doc, ImportOptions::default())
        .await
        .unwrap();
    let book = Catalogues::new(store.catalogue().clone());
    let index = book.get(&c).await.unwrap();
    let vector = index.vector_of("a").unwrap();
    assert_eq!(vector, [1.0, 0.0]);
    // No variants: nothing is available, so nothing is recommended; the lookup still works.
    assert!(index.nearest(&vector, 2, Some("a")).unwrap().is_empty());
}

/// A geofence over a generated catalogue (products with several branches, thousands inside)
/// answers as a scan of every product would: the same total, and each page the same products
/// in the same order, nearest first (then by name) or in the order asked for, with a filter.
async fn geofenced_pages_are_what_a_whole_scan_gives(store: Store) {
    let campaign = store::testing::campaign_fixture(&store).await;
    let catalogue = generators::catalogue::catalogue(3_000, 5);
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    let index = Catalogues::new(store.catalogue().clone())
        .get(&campaign)
        .await
        .unwrap();
    let everything = Page {
        page: 1,
        limit: 10_000,
    };
    // Each product's rank by name and by price, as the index orders them.
    let rank = |sort: Option<Sort>| -> std::collections::HashMap<String, usize> {
        let query = ProductQuery {
            sort,
            ..Default::default()
        };
        let all = index.search(&query, everything);
        assert_eq!(all.items.len(), 3_000);
        all.items
            .iter()
            .enumerate()
            .map(|(n, f)| (f.product.id.clone(), n))
            .collect()
    };
    let by_name = rank(None);
    let by_price = Sort {
        field: SortField::Price,
        descending: true,
    };
    let price_rank = rank(Some(by_price));
    for (latitude, longitude, radius_km) in [
        (-33.9249, 18.4241, 20.0),
        (-33.95, 18.5, 5.0),
        (-26.2041, 28.0473, 35.0),
        (0.0, 0.0, 100.0),
    ] {
        for (category, sort) in [
            (None, None),
            (Some("experiences"), None),
            (None, Some(by_price)),
        ] {
            let mut inside: Vec<(f64, &str)> = catalogue
                .products
                .iter()
                .filter(|p| category.is_none_or(|c| p.category.as_deref() == Some(c)))
                .filter_map(|p| {
                    let nearest = p
                        .branches
                        .iter()
                        .filter_map(|b| b.address.as_ref())
                        .filter_map(|a| Some((a.latitude?, a.longitude?)))
                        .map(|(lat, lon)| search::geo::distance_km(latitude, longitude, lat, lon))
                        .min_by(f64::total_cmp)?;
                    (nearest <= radius_km).then_some((nearest, p.id.as_str()))
                })
                .collect();
            match sort {
                None => {
                    inside
                        .sort_by(|a, b| a.0.total_cmp(&b.0).then(by_name[a.1].cmp(&by_name[b.1])));
                }
                Some(_) => inside.sort_by_key(|(_, id)| price_rank[*id]),
            }
            let query = ProductQuery {
                near: Some(Near {
                    latitude,
                    longitude,
                    radius_km,
                }),
                category_id: category.map(str::to_string),
                sort,
                ..Default::default()
            };
            for (page, limit) in [(1, 10), (3, 7), (1, 100), (40, 100), (2, 0)] {
                let found = index.search(&query, Page { page, limit });
                let at = |what: &str| {
                    format!(
                        "{what} at ({latitude}, {longitude}) {radius_km} km, {category:?}, {sort:?}, page {page} of {limit}"
                    )
                };
                assert_eq!(found.total as usize, inside.len(), "{}", at("total"));
                let expected: Vec<&str> = inside
                    .iter()
                    .skip((page as usize - 1) * limit as usize)
                    .take(limit as usize)
                    .map(|(_, id)| *id)
                    .collect();
                let got: Vec<&str> = found.items.iter().map(|f| f.product.id.as_str()).collect();
                assert_eq!(got, expected, "{}", at("page"));
            }
        }
    }
}

backend_tests!(
    geofenced_pages_are_what_a_whole_scan_gives,
    tiny_embeddings_keep_their_direction,
    every_filter_alone,
    geofences_measure_to_the_nearest_branch,
    sorting_goes_both_ways,
    relevance_typos_plurals_and_prefixes,
    nearest_products_leave_out_themselves_and_the_unavailable,
    another_node_catches_up_with_an_import,
);
