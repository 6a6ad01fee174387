//! The draw of a random order (`POST /v1/orders/random`): a product chosen with a probability
//! proportional to its `weight`, among those a random order can give (a weight above 0, and a
//! variant that can be ordered and requires no tier), then one of those variants, evenly.

use super::{Product, Variant};

/// The products a draw can give, with the running total of their weights.
#[derive(Debug, Default)]
pub(crate) struct Draws {
    /// (running total of weights up to and including this product, its index).
    running: Vec<(f64, usize)>,
}

/// The variants of `p` a random order can give.
fn drawable(p: &Product) -> impl Iterator<Item = &Variant> {
    p.variants
        .iter()
        .filter(|v| v.can_be_ordered() && v.tier.is_none())
}

impl Draws {
    pub(crate) fn build(products: &[Product]) -> Draws {
        let mut total = 0.0;
        let mut running = Vec::new();
        for (i, p) in products.iter().enumerate() {
            if p.weight > 0.0 && p.weight.is_finite() && drawable(p).next().is_some() {
                total += p.weight;
                running.push((total, i));
            }
        }
        Draws { running }
    }

    /// The product and variant that `roll` (uniform in [0, 1)) draws from `products` (those
    /// the draws were built from), or `None` when nothing can be drawn.
    pub(crate) fn draw<'p>(
        &self,
        products: &'p [Product],
        roll: f64,
    ) -> Option<(&'p Product, &'p Variant)> {
        let total = self.running.last()?.0;
        let target = roll.clamp(0.0, 1.0) * total;
        let at = self
            .running
            .partition_point(|(running, _)| *running <= target)
            .min(self.running.len() - 1);
        let (end, i) = self.running[at];
        let product = &products[i];
        // Where the roll fell within the product's share picks its variant.
        let within = ((target - (end - product.weight)) / product.weight).clamp(0.0, 1.0);
        let variants: Vec<&Variant> = drawable(product).collect();
        let pick = ((within * variants.len() as f64) as usize).min(variants.len() - 1);
        Some((product, variants[pick]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Tier, Tokens, Weekdays};

    fn product(id: &str, weight: f64, variants: Vec<Variant>) -> Product {
        Product {
            id: id.into(),
            name: id.into(),
            short_description: None,
            description: None,
            book_in_advance: false,
            tags: Vec::new(),
            category: None,
            primary_image: None,
            secondary_images: Vec::new(),
            website: None,
            weekdays: Weekdays::default(),
            weight,
            embedding: None,
            branches: Vec::new(),
            variants,
        }
    }

    fn variant(id: &str) -> Variant {
        Variant {
            id: id.into(),
            name: id.into(),
            category: None,
            description: None,
            offer_details: None,
            terms_and_conditions: None,
            price: Tokens::whole(1),
            tier: None,
            available: true,
            stock: None,
        }
    }

    /// A fixed sequence of rolls in [0, 1) (xorshift), so the test gives the same answer each
    /// run.
    fn rolls(n: usize) -> impl Iterator<Item = f64> {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        (0..n).map(move |_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 53) as f64
        })
    }

    #[test]
    fn draws_follow_the_weights() {
        let gold = Tier {
            id: "gold".into(),
            name: "Gold".into(),
            precedence: 1,
            threshold: Tokens::whole(100),
            benefits: Vec::new(),
            image_url: None,
            handle: None,
        };
        let sold_out = Variant {
            stock: Some(0),
            ..variant("gone")
        };
        let for_gold = Variant {
            tier: Some(gold),
            ..variant("gold")
        };
        let products = vec![
            product("a", 1.0, vec![variant("a1")]),
            product("never", 0.0, vec![variant("n1")]),
            product("b", 2.0, vec![variant("b1"), variant("b2")]),
            product("sold-out", 5.0, vec![sold_out]),
            product("c", 3.0, vec![variant("c1"), for_gold.clone()]),
            product("gold-only", 5.0, vec![for_gold]),
            product("d", 4.0, vec![variant("d1")]),
        ];
        let draws = Draws::build(&products);
        let n = 100_000;
        let mut counts = std::collections::HashMap::<&str, usize>::new();
        for roll in rolls(n) {
            let (p, v) = draws.draw(&products, roll).expect("something to draw");
            assert!(v.tier.is_none() && v.can_be_ordered(), "{}", v.id);
            *counts.entry(v.id.as_str()).or_default() += 1;
            *counts.entry(p.id.as_str()).or_default() += 1;
        }
        for never in ["never", "sold-out", "gold-only", "gone", "gold"] {
            assert!(!counts.contains_key(never), "{never} was drawn");
        }
        // Pearson's chi-square against weights 1:2:3:4 (3 degrees of freedom): above 16.27
        // happens by chance once in a thousand runs; the rolls are fixed, so never here.
        let expected = [("a", 0.1), ("b", 0.2), ("c", 0.3), ("d", 0.4)];
        let chi2: f64 = expected
            .iter()
            .map(|(id, share)| {
                let e = share * n as f64;
                (counts[id] as f64 - e).powi(2) / e
            })
            .sum();
        assert!(chi2 < 16.27, "chi-square {chi2}: {counts:?}");
        // B's two variants share its draws evenly.
        let (b1, b2) = (counts["b1"] as f64, counts["b2"] as f64);
        assert!((b1 / (b1 + b2) - 0.5).abs() < 0.02, "{b1} vs {b2}");
        assert!(
            Draws::build(&products[1..2])
                .draw(&products[1..2], 0.5)
                .is_none()
        );
    }
}
