//! What a search's filters read of each product's variants (price, required tier and its
//! precedence), packed apart from the products' own records: filtering thousands of matches
//! then reads a few small arrays instead of every product's variants.

use std::collections::HashMap;

use super::Product;
use crate::Tokens;

pub(crate) struct VariantFacts {
    /// Product `i`'s variants are `variants[starts[i]..starts[i + 1]]`.
    starts: Vec<u32>,
    variants: Vec<Fact>,
    /// Each tier a variant requires, by number: its id and the id the client gave it.
    tiers: Vec<(String, Option<String>)>,
}

#[derive(Clone, Copy)]
struct Fact {
    price: Tokens,
    /// A number of `tiers`, or `NO_TIER`.
    tier: u32,
    /// The required tier's precedence (unused without a tier).
    precedence: i64,
}

const NO_TIER: u32 = u32::MAX;

impl VariantFacts {
    pub(crate) fn build(products: &[Product]) -> VariantFacts {
        let mut facts = VariantFacts {
            starts: Vec::with_capacity(products.len() + 1),
            variants: Vec::new(),
            tiers: Vec::new(),
        };
        let mut numbers: HashMap<&str, u32> = HashMap::new();
        facts.starts.push(0);
        for p in products {
            for v in &p.variants {
                let (tier, precedence) = match &v.tier {
                    None => (NO_TIER, 0),
                    Some(t) => {
                        let number = *numbers.entry(&t.id).or_insert_with(|| {
                            facts.tiers.push((t.id.clone(), t.handle.clone()));
                            facts.tiers.len() as u32 - 1
                        });
                        (number, t.precedence)
                    }
                };
                facts.variants.push(Fact {
                    price: v.price,
                    tier,
                    precedence,
                });
            }
            facts.starts.push(facts.variants.len() as u32);
        }
        facts
    }

    pub(crate) fn memory(&self) -> usize {
        self.starts.capacity() * 4 + self.variants.capacity() * std::mem::size_of::<Fact>()
    }

    /// The numbers of the tiers whose id, or the id the client gave it, is `id`.
    pub(crate) fn tiers_named(&self, id: &str) -> Vec<u32> {
        (0..self.tiers.len() as u32)
            .filter(|n| {
                let (tier_id, handle) = &self.tiers[*n as usize];
                tier_id == id || handle.as_deref() == Some(id)
            })
            .collect()
    }

    fn of(&self, i: usize) -> &[Fact] {
        &self.variants[self.starts[i] as usize..self.starts[i + 1] as usize]
    }

    /// Product `i` has a variant requiring a tier among `tiers` (any tier, when `None`) whose
    /// precedence `precedence` accepts.
    pub(crate) fn tier_matches(
        &self,
        i: usize,
        tiers: Option<&[u32]>,
        precedence: impl Fn(i64) -> bool,
    ) -> bool {
        self.of(i).iter().any(|v| {
            v.tier != NO_TIER
                && tiers.is_none_or(|wanted| wanted.contains(&v.tier))
                && precedence(v.precedence)
        })
    }

    /// Product `i` has a variant priced within the bounds (inclusive).
    pub(crate) fn priced_within(&self, i: usize, min: Option<Tokens>, max: Option<Tokens>) -> bool {
        self.of(i)
            .iter()
            .any(|v| min.is_none_or(|min| v.price >= min) && max.is_none_or(|max| v.price <= max))
    }
}
