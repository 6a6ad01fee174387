//! An approximate nearest-neighbour graph over a `VectorIndex`'s 8-bit vectors: HNSW (Malkov and
//! Yashunin, "Efficient and robust approximate nearest neighbor search using Hierarchical
//! Navigable Small World graphs"). Each vector is a node with a random level, fewer nodes the
//! higher; on each layer up to its level it links to up to `M` near nodes (`2 * M` on the bottom
//! layer), chosen to point different ways (the paper's heuristic), which keeps clusters joined
//! to each other. A search walks greedily down the sparse upper layers, then keeps the `ef`
//! nearest it finds on the bottom one; the caller ranks those with the exact vectors.
//!
//! The graph is built in one thread, in the vectors' order, from a fixed seed: the same vectors
//! always give the same graph.

use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

/// Links a node keeps on each upper layer; twice as many on the bottom layer.
const M: usize = 16;
/// Candidates kept while a new node's links are chosen.
const EF_BUILD: usize = 100;

/// The dot product of two 8-bit vectors (the fastest this processor has).
pub(super) type Dot = fn(&[i8], &[i8]) -> i32;

/// The vectors a graph links: 8-bit copies, each with what one of its steps is worth.
pub(super) struct Points<'a> {
    pub vectors: &'a [i8],
    pub scales: &'a [f32],
    pub dimensions: usize,
    pub dot: Dot,
}

impl Points<'_> {
    fn len(&self) -> usize {
        self.scales.len()
    }

    fn vector(&self, i: u32) -> &[i8] {
        let i = i as usize;
        &self.vectors[i * self.dimensions..(i + 1) * self.dimensions]
    }

    /// Asks for node `i`'s vector to be brought into the cache.
    fn prefetch(&self, i: u32) {
        #[cfg(target_arch = "x86_64")]
        for line in self.vector(i).chunks(64) {
            use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
            // SAFETY: a prefetch is a hint that never faults, and SSE is part of every x86-64
            // processor; the address is inside the vectors anyway.
            #[allow(unsafe_code)]
            unsafe {
                _mm_prefetch::<_MM_HINT_T0>(line.as_ptr());
            }
        }
    }

    /// The cosine distance from node `i` to `query` (an 8-bit vector whose step is worth
    /// `scale`), as near as the 8-bit copies tell.
    fn distance(&self, i: u32, query: &[i8], scale: f32) -> f32 {
        let steps = (self.dot)(self.vector(i), query) as f32;
        1.0 - steps * self.scales[i as usize] * scale
    }

    fn between(&self, i: u32, j: u32) -> f32 {
        self.distance(i, self.vector(j), self.scales[j as usize])
    }
}

/// A distance with a total order, for the heaps.
#[derive(Clone, Copy, PartialEq)]
struct Apart(f32);

impl Eq for Apart {}

impl PartialOrd for Apart {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Apart {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.total_cmp(&other.0)
    }
}

/// Which nodes one search has seen: a mark per node, the search's own number in it.
pub(super) struct Visited {
    marks: Vec<u32>,
    search: u32,
}

impl Visited {
    pub fn new() -> Visited {
        Visited {
            marks: Vec::new(),
            search: 0,
        }
    }

    /// Starts a search over `nodes` nodes, none seen yet.
    fn start(&mut self, nodes: usize) {
        if self.marks.len() < nodes {
            self.marks.resize(nodes, 0);
        }
        self.search = self.search.wrapping_add(1);
        if self.search == 0 {
            self.marks.fill(0);
            self.search = 1;
        }
    }

    /// Whether `i` is new to this search (and marks it seen).
    fn first(&mut self, i: u32) -> bool {
        let mark = &mut self.marks[i as usize];
        let new = *mark != self.search;
        *mark = self.search;
        new
    }
}

pub(super) struct Graph {
    /// Where every search starts: a node on the top layer.
    entry: u32,
    top: usize,
    /// The bottom layer: node `i`'s links are the first `counts[i]` of its `2 * M` slots.
    bottom: Vec<u32>,
    counts: Vec<u8>,
    /// Node `i`'s links on layers 1 up to its level (none for most nodes).
    upper: Vec<Vec<Vec<u32>>>,
}

/// How many links a node keeps on `layer`.
fn width(layer: usize) -> usize {
    if layer == 0 { 2 * M } else { M }
}

/// SplitMix64: the levels' random numbers, from a fixed seed.
struct Levels(u64);

impl Levels {
    /// A level: 0 for most nodes, each level up `M` times rarer.
    fn next(&mut self) -> usize {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^= z >> 31;
        // In (0, 1]: never the logarithm of zero.
        let unit = ((z >> 11) + 1) as f64 / (1u64 << 53) as f64;
        (-unit.ln() / (M as f64).ln()) as usize
    }
}

impl Graph {
    /// Links every point, in their order; `None` as soon as `abandoned` says the graph is no
    /// longer wanted (asked every thousand nodes or so).
    pub fn build(points: &Points, abandoned: impl Fn() -> bool) -> Option<Graph> {
        let n = points.len();
        let mut graph = Graph {
            entry: 0,
            top: 0,
            bottom: vec![0; n * width(0)],
            counts: vec![0; n],
            upper: vec![Vec::new(); n],
        };
        let mut levels = Levels(0x5eed);
        let mut visited = Visited::new();
        for i in 0..n as u32 {
            if i % 1024 == 0 && abandoned() {
                return None;
            }
            let level = levels.next();
            graph.upper[i as usize] = vec![Vec::new(); level];
            if i == 0 {
                graph.top = level;
                continue;
            }
            let (query, scale) = (points.vector(i), points.scales[i as usize]);
            let mut near = vec![(
                Apart(points.distance(graph.entry, query, scale)),
                graph.entry,
            )];
            for layer in (level + 1..=graph.top).rev() {
                near = graph.search_layer(points, query, scale, near, 1, layer, &mut visited);
            }
            for layer in (0..=level.min(graph.top)).rev() {
                near =
                    graph.search_layer(points, query, scale, near, EF_BUILD, layer, &mut visited);
                let chosen = choose(points, &near, width(layer));
                graph.set_links(layer, i, &chosen);
                for &neighbour in &chosen {
                    graph.link(points, layer, neighbour, i);
                }
            }
            if level > graph.top {
                (graph.top, graph.entry) = (level, i);
            }
        }
        Some(graph)
    }

    pub fn memory(&self) -> usize {
        let upper: usize = self
            .upper
            .iter()
            .map(|layers| {
                layers.capacity() * 24 + layers.iter().map(|l| l.capacity() * 4).sum::<usize>()
            })
            .sum();
        self.bottom.capacity() * 4 + self.counts.capacity() + self.upper.capacity() * 24 + upper
    }

    fn links(&self, layer: usize, i: u32) -> &[u32] {
        let i = i as usize;
        if layer == 0 {
            let start = i * width(0);
            &self.bottom[start..start + usize::from(self.counts[i])]
        } else {
            &self.upper[i][layer - 1]
        }
    }

    fn set_links(&mut self, layer: usize, i: u32, links: &[u32]) {
        let i = i as usize;
        if layer == 0 {
            let start = i * width(0);
            self.bottom[start..start + links.len()].copy_from_slice(links);
            self.counts[i] = links.len() as u8;
        } else {
            self.upper[i][layer - 1] = links.to_vec();
        }
    }

    /// Links `from` to `to` on `layer`; when `from` has all the links it may keep, it keeps
    /// the best of its links and `to` as a new node's are chosen.
    fn link(&mut self, points: &Points, layer: usize, from: u32, to: u32) {
        let links = self.links(layer, from);
        if links.len() < width(layer) {
            let (i, count) = (from as usize, links.len());
            if layer == 0 {
                self.bottom[i * width(0) + count] = to;
                self.counts[i] += 1;
            } else {
                self.upper[i][layer - 1].push(to);
            }
            return;
        }
        let mut candidates: Vec<(Apart, u32)> = links
            .iter()
            .chain([&to])
            .map(|&j| (Apart(points.between(j, from)), j))
            .collect();
        candidates.sort_unstable();
        let chosen = choose(points, &candidates, width(layer));
        self.set_links(layer, from, &chosen);
    }

    /// The `ef` nodes nearest to `query` that a walk of `layer` from `near` finds, nearest
    /// first.
    #[allow(clippy::too_many_arguments)]
    fn search_layer(
        &self,
        points: &Points,
        query: &[i8],
        scale: f32,
        near: Vec<(Apart, u32)>,
        ef: usize,
        layer: usize,
        visited: &mut Visited,
    ) -> Vec<(Apart, u32)> {
        visited.start(points.len());
        let mut to_visit: BinaryHeap<Reverse<(Apart, u32)>> = BinaryHeap::new();
        let mut best: BinaryHeap<(Apart, u32)> = BinaryHeap::new();
        for (d, i) in near {
            if visited.first(i) {
                to_visit.push(Reverse((d, i)));
                best.push((d, i));
            }
        }
        while best.len() > ef {
            best.pop();
        }
        while let Some(Reverse((d, i))) = to_visit.pop() {
            if best.len() >= ef && best.peek().is_some_and(|worst| d > worst.0) {
                break;
            }
            // The links' vectors lie anywhere in memory: ask for all of them before measuring
            // the first, so that their reads overlap.
            let mut fresh = [0u32; 2 * M];
            let mut count = 0;
            for &j in self.links(layer, i) {
                if visited.first(j) {
                    points.prefetch(j);
                    fresh[count] = j;
                    count += 1;
                }
            }
            for &j in &fresh[..count] {
                let dj = Apart(points.distance(j, query, scale));
                if best.len() < ef || best.peek().is_some_and(|worst| dj < worst.0) {
                    to_visit.push(Reverse((dj, j)));
                    best.push((dj, j));
                    if best.len() > ef {
                        best.pop();
                    }
                }
            }
        }
        best.into_sorted_vec()
    }

    /// The `ef` nodes nearest to `query` (an 8-bit vector whose step is worth `scale`) that the
    /// graph leads to, nearest first.
    pub fn search(
        &self,
        points: &Points,
        query: &[i8],
        scale: f32,
        ef: usize,
        visited: &mut Visited,
    ) -> Vec<u32> {
        if self.counts.is_empty() {
            return Vec::new();
        }
        let mut near = vec![(Apart(points.distance(self.entry, query, scale)), self.entry)];
        for layer in (1..=self.top).rev() {
            near = self.search_layer(points, query, scale, near, 1, layer, visited);
        }
        self.search_layer(points, query, scale, near, ef, 0, visited)
            .into_iter()
            .map(|(_, i)| i)
            .collect()
    }
}

/// Up to `width` of `candidates` (nearest first to the node being linked) to link to: a
/// candidate nearer to one already chosen than to the node is passed over (its direction is
/// covered), then the passed over fill what room is left.
fn choose(points: &Points, candidates: &[(Apart, u32)], width: usize) -> Vec<u32> {
    let mut chosen: Vec<u32> = Vec::with_capacity(width);
    let mut passed = Vec::new();
    for &(d, c) in candidates {
        if chosen.len() == width {
            break;
        }
        if chosen.iter().all(|&s| Apart(points.between(s, c)) > d) {
            chosen.push(c);
        } else {
            passed.push(c);
        }
    }
    let room = width - chosen.len();
    chosen.extend(passed.into_iter().take(room));
    chosen
}
