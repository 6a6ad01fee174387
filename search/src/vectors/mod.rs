//! Nearest vectors by cosine distance, and vectors computed from text.
//!
//! Vectors are kept normalised three ways: as f32, as 8-bit integers, and as their signs (one
//! bit a dimension). The exact scan (`scan`) narrows in three passes: the signs of every vector
//! (Hamming distance, a few instructions a vector), the 8-bit copies of the best few thousand,
//! then the f32 vectors of the best few dozen, which give the answer's order and exact
//! distances. A vector is missed only if both rough passes misplace it beyond their margins.
//!
//! From `GRAPH_FROM` vectors on, a scan of them all costs more than a search's budget, so an
//! index that large also links its 8-bit copies into a graph (`graph`, HNSW) on a thread of its
//! own, off the request path; `nearest` walks the graph once it is there (a few thousand
//! vectors measured instead of all of them) and ranks what it finds with the f32 vectors.

use std::sync::{Arc, OnceLock, Weak};

use crate::text;

mod graph;

use graph::{Dot, Graph, Points, Visited};

/// Dimensions of `embed`'s vectors.
pub const EMBED_DIMENSIONS: usize = 256;

/// From how many vectors an index builds a graph: below it, the exact scan answers within a
/// search's budget (a tenth of a millisecond on one core for 256 dimensions).
pub const GRAPH_FROM: usize = 10_000;

/// How many of the graph's nearest (by the 8-bit copies) the f32 vectors rank, at least.
const EF_SEARCH: usize = 64;

pub struct VectorIndex {
    dimensions: usize,
    exact: Vec<f32>,
    /// Shared with the thread that builds the graph.
    coarse: Arc<[i8]>,
    /// Each vector's signs, 64 to a word: the first, cheapest pass compares these.
    signs: Vec<u64>,
    /// Per vector: what one step of its 8-bit copy is worth.
    scales: Arc<[f32]>,
    /// Filled when the graph is built; the thread building it stops once the index is gone.
    graph: Arc<OnceLock<Graph>>,
    dot: Dot,
}

/// `v` scaled to length 1; `None` for a zero (or non-finite) vector, which has no direction.
pub fn normalised(v: &[f32]) -> Option<Vec<f32>> {
    // In f64: the squares of tiny f32 components would vanish (and of huge ones overflow).
    let length = v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    (length.is_finite() && length > 0.0)
        .then(|| v.iter().map(|x| (f64::from(*x) / length) as f32).collect())
}

/// The signs of `v`, a bit a dimension (set when positive), 64 to a word.
fn signs(v: &[f32]) -> Vec<u64> {
    v.chunks(64)
        .map(|chunk| {
            chunk
                .iter()
                .enumerate()
                .fold(0u64, |bits, (j, x)| bits | (u64::from(*x > 0.0) << j))
        })
        .collect()
}

/// How many candidates ahead the 8-bit pass asks for a vector's memory.
const PREFETCH_AHEAD: usize = 16;

/// Candidates the sign pass keeps at least.
const SIGN_MARGIN: usize = 2_000;

fn quantise(v: &[f32]) -> (Vec<i8>, f32) {
    let largest = v.iter().fold(0.0f32, |m, x| m.max(x.abs()));
    let scale = if largest > 0.0 { largest / 127.0 } else { 1.0 };
    (v.iter().map(|x| (x / scale).round() as i8).collect(), scale)
}

impl VectorIndex {
    /// Indexes `vectors` (all of `dimensions`); a vector's number is its position. `Err` names
    /// the first that has the wrong dimension or no direction. From `GRAPH_FROM` vectors on, the
    /// graph is built on a thread of its own (see `graph_ready`).
    pub fn build(dimensions: usize, vectors: &[Vec<f32>]) -> Result<VectorIndex, usize> {
        let index = VectorIndex::unlinked(dimensions, vectors)?;
        if index.len() >= GRAPH_FROM {
            index.link_in_background();
        }
        Ok(index)
    }

    /// The index without a graph: `nearest` scans.
    fn unlinked(dimensions: usize, vectors: &[Vec<f32>]) -> Result<VectorIndex, usize> {
        let mut exact = Vec::with_capacity(vectors.len() * dimensions);
        let mut coarse = Vec::with_capacity(vectors.len() * dimensions);
        let mut signs_of = Vec::with_capacity(vectors.len() * dimensions.div_ceil(64));
        let mut scales = Vec::with_capacity(vectors.len());
        for (i, v) in vectors.iter().enumerate() {
            let unit = normalised(v).filter(|u| u.len() == dimensions).ok_or(i)?;
            let (quantised, scale) = quantise(&unit);
            signs_of.extend(signs(&unit));
            exact.extend_from_slice(&unit);
            coarse.extend_from_slice(&quantised);
            scales.push(scale);
        }
        Ok(VectorIndex {
            dimensions,
            exact,
            coarse: coarse.into(),
            signs: signs_of,
            scales: scales.into(),
            graph: Arc::default(),
            dot: fastest_dot(),
        })
    }

    fn points(&self) -> Points<'_> {
        Points {
            vectors: &self.coarse,
            scales: &self.scales,
            dimensions: self.dimensions,
            dot: self.dot,
        }
    }

    /// Builds the graph on a thread of its own and puts it in place when done, unless the
    /// index is dropped first (the thread then stops). Until then, and if no thread can be
    /// started, `nearest` scans.
    fn link_in_background(&self) {
        let (coarse, scales) = (self.coarse.clone(), self.scales.clone());
        let (dimensions, dot) = (self.dimensions, self.dot);
        let slot: Weak<OnceLock<Graph>> = Arc::downgrade(&self.graph);
        let _ = std::thread::Builder::new()
            .name("vector-graph".into())
            .spawn(move || {
                let points = Points {
                    vectors: &coarse,
                    scales: &scales,
                    dimensions,
                    dot,
                };
                let graph = Graph::build(&points, || slot.strong_count() == 0);
                if let (Some(graph), Some(slot)) = (graph, slot.upgrade()) {
                    let _ = slot.set(graph);
                }
            });
    }

    /// Whether `nearest` walks a graph (built in the background from `GRAPH_FROM` vectors on)
    /// rather than scanning every vector.
    pub fn graph_ready(&self) -> bool {
        self.graph.get().is_some()
    }

    pub fn dimensions(&self) -> usize {
        self.dimensions
    }

    pub fn len(&self) -> usize {
        self.scales.len()
    }

    pub fn is_empty(&self) -> bool {
        self.scales.is_empty()
    }

    pub fn memory(&self) -> usize {
        self.exact.capacity() * 4
            + self.coarse.len()
            + self.signs.capacity() * 8
            + self.scales.len() * 4
            + self.graph.get().map_or(0, Graph::memory)
    }

    /// The vector numbered `i`, normalised.
    pub fn vector(&self, i: usize) -> Option<&[f32]> {
        self.exact
            .get(i * self.dimensions..(i + 1) * self.dimensions)
    }

    /// Cosine distance (0 same direction, 2 opposite) from the vector numbered `i` to `query`
    /// (normalised).
    #[inline(always)]
    fn exact_distance(&self, i: usize, query: &[f32]) -> f32 {
        let v = &self.exact[i * self.dimensions..(i + 1) * self.dimensions];
        1.0 - v.iter().zip(query).map(|(a, b)| a * b).sum::<f32>()
    }

    /// The `k` vectors nearest to `query` that `keep` accepts, nearest first, with their cosine
    /// distances: from the graph when there is one (approximate: most of the true nearest), by
    /// `scan` otherwise, or when fewer than `k` of what the graph finds are kept. `None` when
    /// `query` has the wrong dimension or no direction. A filter that keeps few vectors is
    /// better served by `scan` itself.
    pub fn nearest(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Option<Vec<(usize, f32)>> {
        let Some(graph) = self.graph.get() else {
            return self.scan(query, k, keep);
        };
        let query = self.unit(query)?;
        let (coarse_query, scale) = quantise(&query);
        let ef = EF_SEARCH.max(4 * k);
        let found = VISITED.with_borrow_mut(|visited| {
            graph.search(&self.points(), &coarse_query, scale, ef, visited)
        });
        let mut ranked: Vec<(usize, f32)> = found
            .into_iter()
            .map(|i| i as usize)
            .filter(|&i| keep(i))
            .map(|i| (i, self.exact_distance(i, &query)))
            .collect();
        if ranked.len() < k {
            return Some(self.scan_unit(&query, k, keep));
        }
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        Some(ranked)
    }

    /// The `k` vectors nearest to `query` that `keep` accepts, nearest first, with their cosine
    /// distances, from every vector (see the module). `None` when `query` has the wrong
    /// dimension or no direction.
    pub fn scan(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Option<Vec<(usize, f32)>> {
        Some(self.scan_unit(&self.unit(query)?, k, keep))
    }

    /// `query` normalised, when it has this index's dimension and a direction.
    fn unit(&self, query: &[f32]) -> Option<Vec<f32>> {
        normalised(query).filter(|q| q.len() == self.dimensions)
    }

    /// `scan` of a query already normalised.
    fn scan_unit(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        if k == 0 {
            return Vec::new();
        }
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: this processor has the features the twin is compiled for.
            #[allow(unsafe_code)]
            return unsafe { self.nearest_avx2(query, k, keep) };
        }
        self.nearest_normalised(query, k, keep)
    }

    /// `nearest_normalised` compiled for AVX2 and POPCNT (the build targets the baseline
    /// x86-64, where a popcount is a dozen instructions and a dot product 16 bytes at a time).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,popcnt")]
    fn nearest_avx2(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        self.nearest_normalised(query, k, keep)
    }

    #[inline(always)]
    fn nearest_normalised(
        &self,
        query: &[f32],
        k: usize,
        keep: impl Fn(usize) -> bool,
    ) -> Vec<(usize, f32)> {
        let (coarse_query, query_scale) = quantise(query);
        let query_signs = signs(query);
        let words = query_signs.len();
        // First pass: the Hamming distance of every kept vector's signs, counted by distance;
        // the nearest `keep_signs` go on (ties by number).
        let keep_signs = (k * 64).max(SIGN_MARGIN);
        // Taken out of its thread-local slot (and put back) rather than borrowed in a closure,
        // so that the loop is compiled here, with the twin's features.
        let mut apart = APART.take();
        apart.clear();
        let mut counts = vec![0usize; words * 64 + 2];
        for i in 0..self.len() {
            let d = if keep(i) {
                let bits = &self.signs[i * words..(i + 1) * words];
                let mut d = 0;
                for w in 0..words {
                    d += (bits[w] ^ query_signs[w]).count_ones();
                }
                d
            } else {
                REFUSED
            };
            counts[(d as usize).min(words * 64 + 1)] += 1;
            apart.push(d);
        }
        let (mut within, mut threshold) = (0, 0);
        while threshold <= words * 64 && within + counts[threshold] < keep_signs {
            within += counts[threshold];
            threshold += 1;
        }
        let threshold = threshold.min(words * 64) as u32;
        let mut at_threshold = keep_signs - within.min(keep_signs);
        let mut rough = Vec::with_capacity(keep_signs);
        for (i, d) in apart.iter().enumerate() {
            if *d < threshold || (*d == threshold && at_threshold > 0) {
                at_threshold -= usize::from(*d == threshold);
                rough.push(i);
            }
        }
        APART.set(apart);
        // Second pass: the 8-bit vectors of those; the best `margin` go on.
        let margin = (k * 8).max(64);
        // Loops rather than iterator adapters: the adapters' own functions would be compiled
        // without the AVX2 twin's features.
        let mut candidates: Vec<(f32, usize)> = Vec::with_capacity(rough.len());
        for (n, &i) in rough.iter().enumerate() {
            // The candidates lie anywhere in the 8-bit copies: ask for the lines of one a few
            // places ahead while this one is measured.
            #[cfg(target_arch = "x86_64")]
            if let Some(&ahead) = rough.get(n + PREFETCH_AHEAD) {
                let start = ahead * self.dimensions;
                for line in (start..start + self.dimensions).step_by(64) {
                    use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
                    let address = self.coarse[line..].as_ptr().cast();
                    // SAFETY: a prefetch is a hint that never faults, and SSE is part of every
                    // x86-64 processor; the address is inside the vectors anyway.
                    #[allow(unsafe_code)]
                    unsafe {
                        _mm_prefetch::<_MM_HINT_T0>(address);
                    };
                }
            }
            let v = &self.coarse[i * self.dimensions..(i + 1) * self.dimensions];
            let similarity = dot_i8(v, &coarse_query) as f32 * self.scales[i] * query_scale;
            candidates.push((similarity, i));
        }
        if candidates.len() > margin {
            candidates.select_nth_unstable_by(margin - 1, |a, b| b.0.total_cmp(&a.0));
            candidates.truncate(margin);
        }
        let mut ranked: Vec<(usize, f32)> = Vec::with_capacity(candidates.len());
        for &(_, i) in &candidates {
            ranked.push((i, self.exact_distance(i, query)));
        }
        ranked.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        ranked.truncate(k);
        ranked
    }
}

/// The sign pass's distance for a vector `keep` refuses: beyond any real one.
const REFUSED: u32 = u32::MAX;

thread_local! {
    /// The sign pass's distances, one per vector, for one search at a time on this thread.
    static APART: std::cell::RefCell<Vec<u32>> = std::cell::RefCell::default();
    /// The nodes a graph search on this thread has seen.
    static VISITED: std::cell::RefCell<Visited> = std::cell::RefCell::new(Visited::new());
}

/// `dot_i8` compiled for AVX2 where the processor has it (the build targets the baseline
/// x86-64, where it runs 16 bytes at a time).
fn fastest_dot() -> Dot {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        return dot_i8_avx2;
    }
    dot_i8
}

/// Only ever chosen by `fastest_dot`, on a processor with AVX2.
#[cfg(target_arch = "x86_64")]
fn dot_i8_avx2(a: &[i8], b: &[i8]) -> i32 {
    // SAFETY: `fastest_dot` hands this out only where AVX2 is detected.
    #[allow(unsafe_code)]
    unsafe {
        dot_i8_madd(a, b)
    }
}

/// `dot_i8` 16 bytes at a time: widened to 16 bits, multiplied and added in pairs (`vpmaddwd`),
/// which the compiler does not find on its own (it widens to 32 bits and multiplies those).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn dot_i8_madd(a: &[i8], b: &[i8]) -> i32 {
    use std::arch::x86_64::{
        _mm_add_epi32, _mm_cvtsi128_si32, _mm_loadu_si128, _mm_shuffle_epi32, _mm256_add_epi32,
        _mm256_castsi256_si128, _mm256_cvtepi8_epi16, _mm256_extracti128_si256, _mm256_madd_epi16,
        _mm256_setzero_si256,
    };
    let n = a.len().min(b.len());
    let mut sum = _mm256_setzero_si256();
    for start in (0..n - n % 16).step_by(16) {
        // SAFETY: both reads are of 16 bytes from `start`, which is at most `n - 16`.
        #[allow(unsafe_code)]
        let (x, y) = unsafe {
            (
                _mm_loadu_si128(a.as_ptr().add(start).cast()),
                _mm_loadu_si128(b.as_ptr().add(start).cast()),
            )
        };
        let products = _mm256_madd_epi16(_mm256_cvtepi8_epi16(x), _mm256_cvtepi8_epi16(y));
        sum = _mm256_add_epi32(sum, products);
    }
    let halves = _mm_add_epi32(
        _mm256_castsi256_si128(sum),
        _mm256_extracti128_si256::<1>(sum),
    );
    let pairs = _mm_add_epi32(halves, _mm_shuffle_epi32::<0b01_00_11_10>(halves));
    let total = _mm_add_epi32(pairs, _mm_shuffle_epi32::<0b10_11_00_01>(pairs));
    let rest: i32 = a[n - n % 16..n]
        .iter()
        .zip(&b[n - n % 16..n])
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    _mm_cvtsi128_si32(total) + rest
}

/// The dot product of two 8-bit vectors, in 16 independent lanes so that the compiler turns
/// it into vector instructions.
#[inline(always)]
fn dot_i8(a: &[i8], b: &[i8]) -> i32 {
    const LANES: usize = 16;
    let mut lanes = [0i32; LANES];
    let (a_chunks, b_chunks) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    let rest: i32 = a_chunks
        .remainder()
        .iter()
        .zip(b_chunks.remainder())
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for j in 0..LANES {
            lanes[j] += i32::from(x[j]) * i32::from(y[j]);
        }
    }
    lanes.iter().sum::<i32>() + rest
}

/// FNV-1a: a small, stable hash (the same vector for the same text in every build).
fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// A vector for `text` with no model: its word stems and their letter trigrams, each hashed to
/// one of `EMBED_DIMENSIONS` with a sign (feature hashing), normalised. Texts that share words
/// (or parts of words) point the same way. `None` for text without words.
pub fn embed(text: &str) -> Option<Vec<f32>> {
    let mut v = vec![0.0f32; EMBED_DIMENSIONS];
    let mut add = |feature: &[u8], weight: f32| {
        let h = hash(feature);
        let slot = (h % EMBED_DIMENSIONS as u64) as usize;
        v[slot] += if h >> 63 == 0 { weight } else { -weight };
    };
    for word in text::words(text) {
        let stem = text::stem(&word);
        add(stem.as_bytes(), 1.0);
        let padded: Vec<char> = format!("^{stem}$").chars().collect();
        for gram in padded.windows(3) {
            let gram: String = gram.iter().collect();
            add(gram.as_bytes(), 0.35);
        }
    }
    normalised(&v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nearest_come_first_with_exact_distances() {
        let vectors = vec![
            vec![1.0, 0.0],
            vec![0.0, 1.0],
            vec![1.0, 1.0],
            vec![-1.0, 0.0],
        ];
        let index = VectorIndex::build(2, &vectors).unwrap();
        let found = index.nearest(&[2.0, 0.1], 3, |_| true).unwrap();
        let order: Vec<usize> = found.iter().map(|(i, _)| *i).collect();
        assert_eq!(order, [0, 2, 1]);
        assert!(found[0].1 < 0.002, "{}", found[0].1);
        assert!(
            (found[1].1 - (1.0 - (2.0f32 + 0.1) / (2.0f32.sqrt() * 4.01f32.sqrt()))).abs() < 1e-5
        );
        let opposite = index.nearest(&[1.0, 0.0], 4, |_| true).unwrap();
        assert_eq!(opposite[3], (3, 2.0));
    }

    #[test]
    fn tiny_and_huge_components_keep_their_direction() {
        assert_eq!(normalised(&[1e-30, 0.0]), Some(vec![1.0, 0.0]));
        let huge = normalised(&[3e30, 4e30]).unwrap();
        assert!(
            (huge[0] - 0.6).abs() < 1e-6 && (huge[1] - 0.8).abs() < 1e-6,
            "{huge:?}"
        );
        assert_eq!(normalised(&[0.0, -0.0]), None);
        let index = VectorIndex::build(2, &[vec![1e-38, 1e-38]]).unwrap();
        assert_eq!(index.nearest(&[1.0, 1.0], 1, |_| true).unwrap()[0].0, 0);
    }

    #[test]
    fn filtered_vectors_are_passed_over() {
        let vectors = vec![vec![1.0, 0.0], vec![0.9, 0.1], vec![0.0, 1.0]];
        let index = VectorIndex::build(2, &vectors).unwrap();
        let found = index.nearest(&[1.0, 0.0], 2, |i| i != 0).unwrap();
        assert_eq!(found.iter().map(|(i, _)| *i).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn wrong_dimensions_and_zero_vectors_are_refused() {
        assert_eq!(
            VectorIndex::build(2, &[vec![1.0, 0.0], vec![0.0, 0.0]]).err(),
            Some(1)
        );
        assert_eq!(VectorIndex::build(2, &[vec![1.0, 0.0, 0.0]]).err(), Some(0));
        let index = VectorIndex::build(2, &[vec![1.0, 0.0]]).unwrap();
        assert!(index.nearest(&[0.0, 0.0], 1, |_| true).is_none());
        assert!(index.nearest(&[1.0], 1, |_| true).is_none());
    }

    #[test]
    fn many_vectors_rank_as_an_exact_scan_would() {
        // A deterministic cloud, larger than the sign pass keeps, so all three passes narrow.
        let mut state = 7u64;
        let mut next = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        };
        let count = 3 * SIGN_MARGIN;
        let vectors: Vec<Vec<f32>> = (0..count)
            .map(|_| (0..64).map(|_| next()).collect())
            .collect();
        let index = VectorIndex::build(64, &vectors).unwrap();
        for _ in 0..20 {
            let query: Vec<f32> = (0..64).map(|_| next()).collect();
            let found = index.nearest(&query, 10, |_| true).unwrap();
            let q = normalised(&query).unwrap();
            let mut exact: Vec<(usize, f32)> = (0..count)
                .map(|i| (i, index.exact_distance(i, &q)))
                .collect();
            exact.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
            assert_eq!(found, exact[..10].to_vec());
            // Filtered: only the even numbers, fewer than the sign pass keeps among them.
            let even = index.nearest(&query, 10, |i| i % 2 == 0).unwrap();
            let exact_even: Vec<(usize, f32)> = exact
                .iter()
                .filter(|(i, _)| i % 2 == 0)
                .take(10)
                .copied()
                .collect();
            assert_eq!(even, exact_even);
        }
    }

    /// A seeded generator of numbers in [-0.5, 0.5).
    fn uniform(seed: u64) -> impl FnMut() -> f32 {
        let mut state = seed;
        move || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((state >> 33) as f32 / (1u64 << 31) as f32) - 0.5
        }
    }

    /// `count` vectors of `dimensions` around `clusters` centres (each a little off its
    /// centre), as embeddings of a catalogue's kinds of product lie, and a generator of more.
    fn clustered(
        count: usize,
        dimensions: usize,
        clusters: usize,
    ) -> (Vec<Vec<f32>>, impl FnMut() -> Vec<f32>) {
        let mut next = uniform(11);
        let centres: Vec<Vec<f32>> = (0..clusters)
            .map(|_| (0..dimensions).map(|_| next()).collect())
            .collect();
        let mut which = 0;
        let mut more = move || {
            which = (which * 7 + 3) % clusters;
            centres[which].iter().map(|c| c + 0.35 * next()).collect()
        };
        let vectors = (0..count).map(|_| more()).collect();
        (vectors, more)
    }

    /// The distance to every vector, nearest first: the exact answer.
    fn every_distance(index: &VectorIndex, query: &[f32]) -> Vec<(usize, f32)> {
        let q = normalised(query).unwrap();
        let mut all: Vec<(usize, f32)> = (0..index.len())
            .map(|i| (i, index.exact_distance(i, &q)))
            .collect();
        all.sort_by(|a, b| a.1.total_cmp(&b.1).then(a.0.cmp(&b.0)));
        all
    }

    #[test]
    fn the_graph_finds_nearly_all_of_the_true_ten_nearest_in_clustered_data() {
        let (vectors, mut queries) = clustered(12_000, 32, 60);
        let index = VectorIndex::unlinked(32, &vectors).unwrap();
        let graph = Graph::build(&index.points(), || false).unwrap();
        index.graph.set(graph).ok().unwrap();
        let (mut found, mut asked) = (0, 0);
        for _ in 0..200 {
            let query = queries();
            let near = index.nearest(&query, 10, |_| true).unwrap();
            let exact = every_distance(&index, &query)[..10].to_vec();
            asked += exact.len();
            found += near.iter().filter(|n| exact.contains(n)).count();
            // Ranked by the exact vectors: what is found comes with its exact distance.
            assert!(near.windows(2).all(|w| w[0].1 <= w[1].1));
        }
        let recall = found as f64 / asked as f64;
        assert!(recall >= 0.95, "recall@10 {recall}");
        // A filter that keeps too few of what the graph finds is answered by the scan.
        let query = queries();
        let rare = |i: usize| i.is_multiple_of(500);
        assert_eq!(
            index.nearest(&query, 10, rare),
            index.scan(&query, 10, rare)
        );
    }

    #[test]
    fn a_large_index_links_its_graph_off_the_caller_and_then_walks_it() {
        let (vectors, mut queries) = clustered(GRAPH_FROM, 8, 20);
        let index = VectorIndex::build(8, &vectors).unwrap();
        let started = std::time::Instant::now();
        while !index.graph_ready() {
            assert!(started.elapsed().as_secs() < 120, "the graph never came");
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let query = queries();
        let near = index.nearest(&query, 5, |_| true).unwrap();
        assert_eq!(near.len(), 5);
        assert_eq!(near[0], index.scan(&query, 1, |_| true).unwrap()[0]);
        let unlinked = VectorIndex::unlinked(8, &vectors).unwrap();
        assert!(index.memory() > unlinked.memory(), "the graph is counted");
    }

    #[test]
    fn every_dot_product_agrees_with_the_plain_one() {
        let a: Vec<i8> = (0..67).map(|i| (i * 37 % 256) as u8 as i8).collect();
        let b: Vec<i8> = (0..67).map(|i| (i * 91 % 256) as u8 as i8).collect();
        let extremes = ([-128i8; 64], [-128i8; 64]);
        for (x, y) in [
            (&a[..], &b[..]),
            (&a[..16], &b[..16]),
            (&extremes.0, &extremes.1),
        ] {
            assert_eq!(fastest_dot()(x, y), dot_i8(x, y));
        }
        assert_eq!(dot_i8(&extremes.0, &extremes.1), 64 * 128 * 128);
    }

    #[test]
    fn texts_that_share_words_embed_close() {
        let pizza = embed("Pizza night for two").unwrap();
        let pizzas = embed("Two pizzas and a movie").unwrap();
        let spa = embed("Spa treatment and massage").unwrap();
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        assert!(cos(&pizza, &pizzas) > cos(&pizza, &spa) + 0.2);
        assert!(embed(" - ").is_none());
        assert_eq!(
            embed("Pizza night"),
            embed("pizza  NIGHT"),
            "stable and folded"
        );
    }
}
