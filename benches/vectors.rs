//! Nearest vectors through the graph (HNSW, built in the background from
//! `search::vectors::GRAPH_FROM` vectors on) beside the scan of every vector, over generated
//! embeddings in the same run: how long the graph takes to build, what a query costs each way,
//! and how many of the true ten nearest each finds (recall@10, against the exact distance to
//! every vector).
//!
//! The vectors have 256 dimensions (as `embed`'s) and lie in three levels of clusters, as a
//! catalogue's do (`generators::vectors`): topics, groups of five like products within a
//! topic, products within a group.
//!
//! `cargo bench --bench vectors` (`BENCH_VECTORS`, default 50,000; 1,000,000 takes about ten
//! minutes to link). Goal: a query at most a quarter of `GET /v1/api-key`'s cost over HTTP
//! (see the `search` bench for the service's figures), recall@10 at least 0.95.

use std::time::{Duration, Instant};

use search::vectors::VectorIndex;

const DIMENSIONS: usize = 256;

/// One way of answering: the ten nearest to a query, with their distances.
type Nearest<'a> = dyn Fn(&[f32]) -> Vec<(usize, f32)> + 'a;
const QUERIES: usize = 500;

fn percentiles(mut took: Vec<Duration>) -> (f64, f64) {
    took.sort();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize].as_secs_f64() * 1000.0;
    (at(0.5), at(0.99))
}

fn main() {
    let count: usize = std::env::var("BENCH_VECTORS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50_000);
    // Groups of five products, twenty groups a topic.
    let mut more = generators::vectors::catalogue_like(count / 5, DIMENSIONS, 11);
    let vectors: Vec<Vec<f32>> = (0..count).map(|_| more()).collect();
    let queries: Vec<Vec<f32>> = (0..QUERIES).map(|_| more()).collect();

    let started = Instant::now();
    let index = VectorIndex::build(DIMENSIONS, &vectors).unwrap();
    let scannable = started.elapsed();
    while !index.graph_ready() {
        std::thread::sleep(Duration::from_millis(50));
    }
    println!(
        "{count} vectors of {DIMENSIONS}: scannable in {:.2} s, graph linked in {:.1} s, \
         memory {:.1} MiB",
        scannable.as_secs_f64(),
        started.elapsed().as_secs_f64(),
        index.memory() as f64 / (1 << 20) as f64
    );

    // The true ten nearest: the exact distance to every vector.
    let truth: Vec<Vec<usize>> = queries
        .iter()
        .map(|q| {
            let q = search::vectors::normalised(q).unwrap();
            let mut all: Vec<(usize, f32)> = (0..count)
                .map(|i| {
                    let v = index.vector(i).unwrap();
                    (i, 1.0 - v.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>())
                })
                .collect();
            all.select_nth_unstable_by(9, |a, b| a.1.total_cmp(&b.1));
            all[..10].iter().map(|(i, _)| *i).collect()
        })
        .collect();
    println!(
        "{:<28} {:>9} {:>9} {:>10}",
        "10 nearest, one at a time", "p50 ms", "p99 ms", "recall@10"
    );
    let measure = |name: &str, nearest: &Nearest| {
        let (mut took, mut found) = (Vec::new(), 0);
        for (query, truth) in queries.iter().zip(&truth) {
            let started = Instant::now();
            let near = nearest(query);
            took.push(started.elapsed());
            found += near.iter().filter(|(i, _)| truth.contains(i)).count();
        }
        let (p50, p99) = percentiles(took);
        let recall = found as f64 / (10 * QUERIES) as f64;
        println!("{name:<28} {p50:>9.3} {p99:>9.3} {recall:>10.4}");
    };
    measure("baseline: scan", &|q| index.scan(q, 10, |_| true).unwrap());
    measure("graph", &|q| index.nearest(q, 10, |_| true).unwrap());
}
