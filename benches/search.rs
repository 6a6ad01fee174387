//! Product search latency over a generated catalogue, beside SQLite FTS5 answering the same text
//! queries over the same products in the same run (the embedded full-text search a user would
//! reach for).
//!
//! `cargo bench --bench search` (`BENCH_PRODUCTS`, default 50,000; `BENCH_SECONDS` per HTTP
//! scenario, default 60; PostgreSQL when `REWARDS_TEST_POSTGRES_URL` is set): imports the
//! catalogue, builds the index, then times each query kind in-process (one query at a time) and
//! over HTTP (8 connections from `wrk` when it is installed, else from clients in this process),
//! beside `GET /v1/api-key` (a key check and a small JSON answer: the service's floor over HTTP)
//! in the same run, then a bare axum server sending each shape's answer bytes (the HTTP stack's
//! floor for answers that size). The server serves the index the bench built; the generated
//! catalogue and FTS5's copy are dropped first, and the process's resident memory is printed
//! after each phase (a million products take about 17 GB).
//! Goals: p99 <= 2 ms in-process for every query kind; over HTTP, p99 <= 5 ms and at least a
//! quarter of `GET /v1/api-key`'s requests per second for every search shape.

mod common;

use std::time::{Duration, Instant};

use store::{Catalogues, Comparison, ImportOptions, Near, Page, ProductQuery, Sort, SortField};

const ROUNDS: usize = 2_000;

/// The request path of a scenario's n-th request.
type PathFor = Box<dyn Fn(usize) -> String + Send + Sync>;
const CLIENTS: usize = 8;

/// Text queries as members type them: whole words, several words, plurals.
const TEXTS: [&str; 8] = [
    "balloon flight",
    "sunset dinner",
    "spa massages",
    "family zoo",
    "wine tour",
    "golf",
    "concert tickets",
    "beach cottage weekend",
];
/// The same words with a typo each (FTS5 finds none of them).
const TYPOS: [&str; 8] = [
    "baloon flight",
    "sunset dinnr",
    "spa masage",
    "famly zoo",
    "wine tuor",
    "glof",
    "concert tickts",
    "beach cotage weekend",
];

/// This process's resident memory now, in MiB.
fn resident() -> f64 {
    common::status_kib("VmRSS") as f64 / 1024.0
}

fn timed(mut run: impl FnMut(usize)) -> (f64, f64) {
    let mut durations = Vec::with_capacity(ROUNDS);
    for i in 0..ROUNDS {
        let started = Instant::now();
        run(i);
        durations.push(started.elapsed());
    }
    common::percentiles(durations)
}

/// A geofence around the city centre, 20 km: most of the city's products (thousands), of which
/// a page shows 10.
fn around_cape_town(i: usize) -> Near {
    Near {
        radius_km: 20.0,
        ..near_cape_town(i)
    }
}

fn near_cape_town(i: usize) -> Near {
    Near {
        latitude: -33.9249 + (i % 7) as f64 * 0.01,
        longitude: 18.4241,
        radius_km: 10.0,
    }
}

#[tokio::main]
async fn main() {
    let products: usize = common::number("BENCH_PRODUCTS", 50_000);
    let common::Seed {
        _db,
        store,
        campaign,
        key,
    } = common::seed(0, false).await;
    let catalogue = generators::catalogue::catalogue(products, 1);

    let started = Instant::now();
    store
        .catalogue()
        .import_catalogue(&campaign, &catalogue, ImportOptions::default())
        .await
        .unwrap();
    let import = started.elapsed();
    let imported = resident();
    let catalogues = Catalogues::new(store.catalogue().clone());
    let started = Instant::now();
    let index = catalogues.get(&campaign).await.unwrap();
    let build = started.elapsed();
    // From `search::vectors::GRAPH_FROM` products on, nearest products come from a graph
    // linked in the background: the queries below are timed once it is there.
    let started = Instant::now();
    while products >= search::vectors::GRAPH_FROM && !index.vectors_graphed() {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let linked = started.elapsed();
    let indexed = resident();
    let page = Page::default();

    println!(
        "{products} products on {:?}: import {:.1} s, index built from the database in {:.2} s, \
         vector graph linked {:.1} s later, index memory {:.1} MiB (beside the products \
         themselves); this process resident: {imported:.0} MiB after the import (the generated \
         catalogue), {indexed:.0} MiB with the index and its graph",
        store.backend(),
        import.as_secs_f64(),
        build.as_secs_f64(),
        linked.as_secs_f64(),
        index.memory() as f64 / (1 << 20) as f64
    );
    println!(
        "{:<44} {:>9} {:>9}",
        "in-process, one query at a time", "p50 ms", "p99 ms"
    );
    let row = |name: &str, (p50, p99): (f64, f64)| println!("{name:<44} {p50:>9.3} {p99:>9.3}");
    let search = |text: &str| ProductQuery {
        search: Some(text.into()),
        ..Default::default()
    };
    row(
        "text (two words)",
        timed(|i| {
            index.search(&search(TEXTS[i % TEXTS.len()]), page);
        }),
    );
    row(
        "typo",
        timed(|i| {
            index.search(&search(TYPOS[i % TYPOS.len()]), page);
        }),
    );
    row(
        "search as you type (a prefix)",
        timed(|i| {
            let text = TEXTS[i % TEXTS.len()];
            index.search(&search(&text[..text.len().min(4)]), page);
        }),
    );
    row(
        "geofence (10 km, nearest first)",
        timed(|i| {
            let query = ProductQuery {
                near: Some(near_cape_town(i)),
                ..Default::default()
            };
            index.search(&query, page);
        }),
    );
    let gold = store
        .programme()
        .list_tiers(&campaign)
        .await
        .unwrap()
        .into_iter()
        .find(|t| t.name == "Gold")
        .unwrap();
    row(
        "geofence (20 km, thousands inside)",
        timed(|i| {
            let query = ProductQuery {
                near: Some(around_cape_town(i)),
                ..Default::default()
            };
            index.search(&query, page);
        }),
    );
    row(
        "combined (text, category, tier, geofence, sort)",
        timed(|i| {
            let query = ProductQuery {
                search: Some(TEXTS[i % TEXTS.len()].into()),
                category_id: Some("experiences".into()),
                tier_precedence: Some((Comparison::Gte, gold.precedence)),
                near: Some(Near {
                    radius_km: 30.0,
                    ..near_cape_town(i)
                }),
                sort: Some(Sort {
                    field: SortField::Price,
                    descending: false,
                }),
                ..Default::default()
            };
            index.search(&query, page);
        }),
    );
    row(
        "no filter, by name (page 50)",
        timed(|_| {
            index.search(
                &ProductQuery::default(),
                Page {
                    page: 50,
                    limit: 10,
                },
            );
        }),
    );
    row(
        "recommendations (10 nearest)",
        timed(|i| {
            let id = format!("p-{:06}", (i * 7919) % products);
            let vector = index.vector_of(&id).unwrap();
            index.nearest(&vector, 10, Some(&id)).unwrap();
        }),
    );

    // The embedded alternative: SQLite FTS5 over the same fields, ranked by bm25.
    let fts = rusqlite::Connection::open_in_memory().unwrap();
    fts.execute_batch(
        "CREATE VIRTUAL TABLE products USING fts5(name, tags, category, short, description, \
         tokenize = 'porter unicode61')",
    )
    .unwrap();
    let started = Instant::now();
    {
        let tx = fts.unchecked_transaction().unwrap();
        let mut insert = tx
            .prepare("INSERT INTO products VALUES (?1, ?2, ?3, ?4, ?5)")
            .unwrap();
        for p in &catalogue.products {
            insert
                .execute((
                    &p.name,
                    p.tags.join(" "),
                    p.category.clone().unwrap_or_default(),
                    p.short_description.clone().unwrap_or_default(),
                    p.description.clone().unwrap_or_default(),
                ))
                .unwrap();
        }
        drop(insert);
        tx.commit().unwrap();
    }
    let fts_build = started.elapsed();
    let mut statement = fts
        .prepare(
            "SELECT rowid FROM products WHERE products MATCH ?1 \
             ORDER BY bm25(products, 3.0, 2.0, 2.0, 1.5, 1.0) LIMIT 10",
        )
        .unwrap();
    let mut matched = [0usize; 2];
    let mut fts_query = |text: &str, slot: usize| {
        let rows: Vec<i64> = statement
            .query_map([text], |r| r.get(0))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        matched[slot] += usize::from(!rows.is_empty());
    };
    println!(
        "SQLite FTS5, the same products (built in {:.2} s):",
        fts_build.as_secs_f64()
    );
    row(
        "text (two words)",
        timed(|i| fts_query(TEXTS[i % TEXTS.len()], 0)),
    );
    row("typo", timed(|i| fts_query(TYPOS[i % TYPOS.len()], 1)));
    println!(
        "queries with results: FTS5 text {}/{ROUNDS}, typo {}/{ROUNDS}; ours typo {}/{}",
        matched[0],
        matched[1],
        TYPOS
            .iter()
            .filter(|t| index.search(&search(t), page).total > 0)
            .count(),
        TYPOS.len()
    );
    // The generated catalogue and FTS5's copy are not wanted any more: a million products' worth
    // of each would crowd out the served index.
    drop(statement);
    drop(fts);
    drop(catalogue);

    // Over HTTP: the real server, auth and JSON included, serving the index built above.
    let mut state = api::AppState::new(store.clone(), store::CodeKey::random());
    state.catalogues = catalogues.clone();
    let base = common::serve_state(state).await;

    let client = reqwest::Client::new();
    let (api_key, secret) = (key.key.api_key.clone(), key.secret.clone());
    // The server renders its products' JSON on its first search; the scenarios time it warm.
    let warm = client
        .get(format!("{base}/v1/products"))
        .header("x-api-key", &api_key)
        .header("x-api-secret", &secret)
        .send()
        .await
        .unwrap();
    assert!(warm.status().is_success());
    let seconds = common::seconds();
    // wrk, a separate process, when installed (as the goal was set with it); else clients in
    // this process, which take their share of the two cores from the server.
    let with_wrk = std::process::Command::new("wrk")
        .arg("--version")
        .output()
        .is_ok();
    let driver = if with_wrk {
        "wrk"
    } else {
        "in-process clients"
    };
    println!(
        "over HTTP, {CLIENTS} concurrent connections ({driver}), {seconds} s each \
         (this process resident: {:.0} MiB):",
        resident()
    );
    println!("{}  share of baseline", common::HEADER);
    let gold_precedence = gold.precedence;
    let paths: [(&str, PathFor); 8] = [
        (
            "GET /v1/api-key (baseline)",
            Box::new(|_| "/v1/api-key".to_string()),
        ),
        (
            "GET /v1/products?search=",
            Box::new(|i| format!("/v1/products?search={}", TEXTS[i % TEXTS.len()])),
        ),
        (
            "  with a typo",
            Box::new(|i| format!("/v1/products?search={}", TYPOS[i % TYPOS.len()])),
        ),
        (
            "  geofence",
            Box::new(|i| {
                let n = near_cape_town(i);
                format!(
                    "/v1/products?latitude={}&longitude={}&radius=10",
                    n.latitude, n.longitude
                )
            }),
        ),
        (
            "  geofence 20 km",
            Box::new(|i| {
                let n = around_cape_town(i);
                format!(
                    "/v1/products?latitude={}&longitude={}&radius=20",
                    n.latitude, n.longitude
                )
            }),
        ),
        (
            "  no filter, page 50",
            Box::new(|_| "/v1/products?page=50".to_string()),
        ),
        (
            "  combined",
            Box::new(move |i| {
                let n = near_cape_town(i);
                format!(
                    "/v1/products?search={}&categoryId=experiences&tierPrecedence={gold_precedence}\
                     &tierPrecedenceOp=gte&latitude={}&longitude={}&radius=30&sort=price:asc",
                    TEXTS[i % TEXTS.len()],
                    n.latitude,
                    n.longitude
                )
            }),
        ),
        (
            "recommendations",
            Box::new(move |i| {
                format!(
                    "/v1/products/p-{:06}/recommendations?limit=10",
                    (i * 7919) % products
                )
            }),
        ),
    ];
    let headers = [
        ("x-api-key", api_key.clone()),
        ("x-api-secret", secret.clone()),
    ];
    // One scenario's load on the server at `base`, from wrk or from clients in this process.
    let run = |base: String, path: std::sync::Arc<PathFor>| {
        let (client, headers) = (client.clone(), headers.clone());
        async move {
            if with_wrk {
                let paths: Vec<String> = (0..64).map(&*path).collect();
                // Off the runtime's workers, which serve the requests.
                tokio::task::spawn_blocking(move || {
                    let headers = headers.each_ref().map(|(n, v)| (*n, v.as_str()));
                    common::wrk(&base, &paths, &headers, CLIENTS, seconds)
                })
                .await
                .unwrap()
                .expect("wrk runs")
            } else {
                common::drive(CLIENTS, seconds, move |c, s| {
                    let url = format!("{base}{}", path(c * 1000 + s));
                    let request = headers
                        .iter()
                        .fold(client.get(url), |r, (n, v)| r.header(*n, v));
                    async move {
                        let response = request.send().await.unwrap();
                        assert!(response.status().is_success(), "{}", response.status());
                        response.bytes().await.unwrap();
                    }
                })
                .await
            }
        }
    };
    let mut baseline = None;
    let mut floors = Vec::new();
    for (n, (name, path)) in paths.into_iter().enumerate() {
        let path = std::sync::Arc::new(path);
        let load = run(base.clone(), path.clone()).await;
        let share = load.rate / *baseline.get_or_insert(load.rate);
        let goal = if load.p99_ms <= 5.0 && share >= 0.25 {
            "met"
        } else {
            "NOT MET"
        };
        println!("{}  {share:>5.2} {goal}", load.row(name));
        if n > 0 {
            let answer = headers
                .iter()
                .fold(client.get(format!("{base}{}", path(0))), |r, (n, v)| {
                    r.header(*n, v)
                })
                .send()
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            floors.push((name, answer, load.rate));
        }
    }
    // The floor under each shape: a bare axum server sending the same answer's bytes.
    println!(
        "the same answers' bytes from a bare axum server (no key check, no search), {seconds} s each:"
    );
    println!("{}  shape's share of it", common::HEADER);
    for (name, answer, rate) in floors {
        let size = answer.len();
        let bare = common::serve_bytes(answer).await;
        let load = run(bare, std::sync::Arc::new(Box::new(|_| "/".to_string()))).await;
        let label = format!("{} ({:.1} KB)", name.trim_start(), size as f64 / 1024.0);
        println!("{}  {:>5.2}", load.row(&label), rate / load.rate);
    }
    tokio::time::sleep(Duration::from_millis(10)).await;
}
