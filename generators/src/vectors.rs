//! Embeddings as a catalogue's lie, for benchmarks of nearest-neighbour search: three levels of
//! clusters (topics; groups of like products within a topic; products within a group), so that
//! a product's nearest are its group's, then its topic's, as with a real model's vectors.

use crate::random::Random;

/// A generator of vectors of `dimensions` about `groups` groups of products in `groups / 20`
/// topics (at least one): each call a product of the next group, in a scattered order.
pub fn catalogue_like(groups: usize, dimensions: usize, seed: u64) -> impl FnMut() -> Vec<f32> {
    let mut r = Random(seed);
    let mut around = move |centre: &[f32], spread: f64| -> Vec<f32> {
        centre
            .iter()
            .map(|c| c + (spread * r.unit()) as f32)
            .collect()
    };
    let origin = vec![0.0; dimensions];
    let groups = groups.max(1);
    let topics: Vec<Vec<f32>> = (0..(groups / 20).max(1))
        .map(|_| around(&origin, 1.0))
        .collect();
    let centres: Vec<Vec<f32>> = (0..groups)
        .map(|g| around(&topics[g % topics.len()], 0.3))
        .collect();
    let mut which = 0;
    move || {
        which = (which * 7919 + 3) % centres.len();
        around(&centres[which], 0.1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_product_lies_nearer_its_group_than_another_topic() {
        let mut next = catalogue_like(40, 64, 7);
        let products: Vec<Vec<f32>> = (0..80).map(|_| next()).collect();
        let apart =
            |a: &[f32], b: &[f32]| -> f32 { a.iter().zip(b).map(|(x, y)| (x - y).powi(2)).sum() };
        // Calls visit the groups in a fixed order: the same group comes round every 40 calls.
        assert!(apart(&products[0], &products[40]) < apart(&products[0], &products[1]));
        assert_eq!(
            catalogue_like(40, 64, 7)(),
            products[0],
            "the same seed, the same vectors"
        );
    }
}
