//! The search index of a campaign's catalogue: every product in memory with its text, branch
//! and vector indexes, built from the database and swapped whole when the catalogue changes
//! (`Catalogues`). Ranking is the same on both backends because the database only stores.

use crate::Campaign;
use std::collections::HashMap;
use std::sync::Arc;

use rayon::prelude::*;
use seam::common::cache::{Cache, FRESH_FOR};
use search::geo::{Circle, GeoIndex, Nearness, Point};
use search::text::{Field, Hit, TextIndex};
use search::vectors::{VectorIndex, embed};

use super::draw::Draws;
use super::facts::VariantFacts;
use super::{Product, Variant};
use crate::{CatalogueStore, Page, Paged, StoreError, Tokens};

/// A product search's filters and order; every part optional.
#[derive(Debug, Clone, Default)]
pub struct ProductQuery {
    /// Words, ranked by relevance (see `search::text`).
    pub search: Option<String>,
    pub category_id: Option<String>,
    /// A category name, in any letter case.
    pub category: Option<String>,
    pub booking_required: Option<bool>,
    pub is_available: Option<bool>,
    pub near: Option<Near>,
    /// Products with a variant that requires this tier (its id or its handle).
    pub tier_id: Option<String>,
    /// Products with a variant whose tier's precedence compares so with the number.
    pub tier_precedence: Option<(Comparison, i64)>,
    /// Products with a variant priced within these bounds (inclusive).
    pub min_cost: Option<Tokens>,
    pub max_cost: Option<Tokens>,
    pub sort: Option<Sort>,
}

/// A geofence: products with a branch within `radius_km` of the point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Near {
    pub latitude: f64,
    pub longitude: f64,
    pub radius_km: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Gt,
    Lt,
    Gte,
    Lte,
    Eq,
}

impl Comparison {
    pub const ALL: [(&'static str, Comparison); 5] = [
        ("gt", Comparison::Gt),
        ("lt", Comparison::Lt),
        ("gte", Comparison::Gte),
        ("lte", Comparison::Lte),
        ("eq", Comparison::Eq),
    ];

    fn holds(self, value: i64, against: i64) -> bool {
        match self {
            Comparison::Gt => value > against,
            Comparison::Lt => value < against,
            Comparison::Gte => value >= against,
            Comparison::Lte => value <= against,
            Comparison::Eq => value == against,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SortField {
    Name,
    Category,
    /// A product's lowest variant price.
    Price,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sort {
    pub field: SortField,
    pub descending: bool,
}

/// Every order a search can ask for, each kept ready in the index.
const SORTS: [Sort; 6] = [
    Sort {
        field: SortField::Name,
        descending: false,
    },
    Sort {
        field: SortField::Name,
        descending: true,
    },
    Sort {
        field: SortField::Category,
        descending: false,
    },
    Sort {
        field: SortField::Category,
        descending: true,
    },
    Sort {
        field: SortField::Price,
        descending: false,
    },
    Sort {
        field: SortField::Price,
        descending: true,
    },
];

fn sort_slot(sort: Sort) -> usize {
    SORTS
        .iter()
        .position(|s| *s == sort)
        .expect("every sort is listed")
}

/// A product a search found, with its distances when the search had a geofence.
#[derive(Debug, Clone)]
pub struct Found<'a> {
    pub product: &'a Product,
    /// To its nearest branch, in km.
    pub distance_km: Option<f64>,
    /// Its branches' positions in `product.branches`, nearest first, with their distances
    /// (branches without coordinates last, without one).
    pub branches: Vec<(usize, Option<f64>)>,
}

/// Why a vector search cannot run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VectorProblem {
    /// The vector's length is not the campaign's dimension.
    Dimensions { expected: usize, given: usize },
    /// All zeros: no direction to compare.
    Zero,
}

pub struct CatalogueIndex {
    pub version: i64,
    products: Vec<Product>,
    by_id: HashMap<String, usize>,
    text: TextIndex,
    geo: GeoIndex,
    vectors: VectorIndex,
    /// The service computes the vectors (no product was imported with an embedding).
    computed_vectors: bool,
    /// Each product's category, as a number of `category_keys` (`u32::MAX` for none): a filter
    /// compares numbers, not texts.
    category_of: Vec<u32>,
    /// Each category's id and folded name, by number.
    category_keys: Vec<(String, String)>,
    /// Each product can be ordered now.
    available: Vec<bool>,
    /// How many can.
    orderable: usize,
    /// Each product's orders need a booking.
    book_in_advance: Vec<bool>,
    /// Its variants' prices and tiers, for the filters.
    variant_facts: VariantFacts,
    draws: Draws,
    /// For each of `SORTS`: the products in that order, and each product's place in it.
    orders: Vec<Vec<u32>>,
    places: Vec<Vec<u32>>,
}

fn folded(text: &str) -> String {
    search::text::words(text).collect::<Vec<_>>().join(" ")
}

impl CatalogueIndex {
    pub fn build(version: i64, products: Vec<Product>) -> CatalogueIndex {
        // The text index and the vectors are built side by side, each product's vector in
        // parallel: together they are most of a large catalogue's indexing time.
        let computed_vectors = products.iter().all(|p| p.embedding.is_none());
        let (text, vectors) = rayon::join(
            || {
                TextIndex::build(products.iter().map(|p| {
                    let mut fields = vec![Field {
                        text: &p.name,
                        rank: 0,
                        weight: 3.0,
                    }];
                    for tag in &p.tags {
                        fields.push(Field {
                            text: &tag.name,
                            rank: 1,
                            weight: 2.0,
                        });
                    }
                    if let Some(category) = &p.category {
                        fields.push(Field {
                            text: &category.name,
                            rank: 1,
                            weight: 2.0,
                        });
                    }
                    if let Some(short) = &p.short_description {
                        fields.push(Field {
                            text: short,
                            rank: 2,
                            weight: 1.5,
                        });
                    }
                    if let Some(description) = &p.description {
                        fields.push(Field {
                            text: description,
                            rank: 3,
                            weight: 1.0,
                        });
                    }
                    fields
                }))
            },
            || {
                let vectors: Vec<Vec<f32>> = products
                    .par_iter()
                    .map(|p| match (&p.embedding, computed_vectors) {
                        (Some(e), false) => e.clone(),
                        _ => embed(&product_text(p)).unwrap_or_else(|| placeholder(p)),
                    })
                    .collect();
                let dimensions = vectors
                    .first()
                    .map_or(search::vectors::EMBED_DIMENSIONS, Vec::len);
                // The import checks that embeddings share one dimension and have a direction.
                // A stored vector that breaks that (edited in the database) leaves the catalogue
                // without vector search rather than failing its text search too.
                VectorIndex::build(dimensions, &vectors).unwrap_or_else(|bad| {
                    tracing::warn!(version, product = %products[bad].id, "a stored embedding has no direction or the wrong dimension; vector search is off for this catalogue");
                    VectorIndex::build(dimensions, &[]).expect("an empty index")
                })
            },
        );
        let mut points = Vec::new();
        for (owner, p) in products.iter().enumerate() {
            for (index, branch) in p.branches.iter().enumerate() {
                if let Some(a) = &branch.address
                    && let (Some(latitude), Some(longitude)) = (a.latitude, a.longitude)
                {
                    points.push(Point {
                        latitude,
                        longitude,
                        owner: owner as u32,
                        index: index as u32,
                    });
                }
            }
        }
        let names: Vec<String> = products.iter().map(|p| folded(&p.name)).collect();
        let categories: Vec<String> = products
            .iter()
            .map(|p| {
                p.category
                    .as_ref()
                    .map(|c| folded(&c.name))
                    .unwrap_or_default()
            })
            .collect();
        let mut category_keys: Vec<(String, String)> = Vec::new();
        let mut numbers: HashMap<&str, u32> = HashMap::new();
        let category_of: Vec<u32> = products
            .iter()
            .zip(&categories)
            .map(|(p, name)| match &p.category {
                None => u32::MAX,
                Some(c) => *numbers.entry(&c.id).or_insert_with(|| {
                    category_keys.push((c.id.clone(), name.clone()));
                    category_keys.len() as u32 - 1
                }),
            })
            .collect();
        // A product's lowest variant price; products without variants sort last either way.
        let prices: Vec<Option<Tokens>> = products
            .iter()
            .map(|p| p.variants.iter().map(|v| v.price).min())
            .collect();
        let mut orders = Vec::with_capacity(SORTS.len());
        let mut places = Vec::with_capacity(SORTS.len());
        for sort in SORTS {
            let mut order: Vec<u32> = (0..products.len() as u32).collect();
            order.sort_by(|a, b| {
                let (a, b) = (*a as usize, *b as usize);
                let primary = match sort.field {
                    SortField::Name => names[a].cmp(&names[b]),
                    SortField::Category => categories[a].cmp(&categories[b]),
                    SortField::Price => match (prices[a], prices[b]) {
                        (Some(x), Some(y)) => x.cmp(&y),
                        (Some(_), None) => return std::cmp::Ordering::Less,
                        (None, Some(_)) => return std::cmp::Ordering::Greater,
                        (None, None) => std::cmp::Ordering::Equal,
                    },
                };
                let primary = if sort.descending {
                    primary.reverse()
                } else {
                    primary
                };
                primary
                    .then_with(|| names[a].cmp(&names[b]))
                    .then_with(|| products[a].id.cmp(&products[b].id))
            });
            let mut place = vec![0u32; order.len()];
            for (at, i) in order.iter().enumerate() {
                place[*i as usize] = at as u32;
            }
            orders.push(order);
            places.push(place);
        }
        let available: Vec<bool> = products.iter().map(Product::is_available).collect();
        let orderable = available.iter().filter(|a| **a).count();
        CatalogueIndex {
            version,
            by_id: products
                .iter()
                .enumerate()
                .map(|(i, p)| (p.id.clone(), i))
                .collect(),
            category_of,
            category_keys,
            available,
            orderable,
            book_in_advance: products.iter().map(|p| p.book_in_advance).collect(),
            variant_facts: VariantFacts::build(&products),
            draws: Draws::build(&products),
            orders,
            places,
            text,
            geo: GeoIndex::build(points),
            vectors,
            computed_vectors,
            products,
        }
    }

    pub fn len(&self) -> usize {
        self.products.len()
    }

    pub fn is_empty(&self) -> bool {
        self.products.is_empty()
    }

    /// Bytes the indexes hold beside the products themselves, roughly.
    pub fn memory(&self) -> usize {
        self.text.memory() + self.geo.memory() + self.vectors.memory() + self.variant_facts.memory()
    }

    pub fn product(&self, id: &str) -> Option<&Product> {
        self.by_id.get(id).map(|i| &self.products[*i])
    }

    /// The number of the product with id `id` (from 0 to `len() - 1`): what a cache of
    /// something per product is kept by.
    pub fn position(&self, id: &str) -> Option<usize> {
        self.by_id.get(id).copied()
    }

    /// What a random order with `roll` (uniform in [0, 1)) gets: a product drawn by weight
    /// among those with a variant that can be ordered and requires no tier, and one of those
    /// variants. `None` when no product can be drawn.
    pub fn draw(&self, roll: f64) -> Option<(&Product, &Variant)> {
        self.draws.draw(&self.products, roll)
    }

    /// One page of the products `query` finds, and how many it finds in all. Beyond counting
    /// the matches, the work follows the page asked for: a list in a kept order is read from
    /// that order (only the page when nothing filters it), and only the products up to the
    /// page's end are put in order.
    pub fn search(&self, query: &ProductQuery, page: Page) -> Paged<Found<'_>> {
        let searching = query
            .search
            .as_deref()
            .is_some_and(|s| !s.trim().is_empty());
        // The order asked for, or the default: relevance when searching, nearest first with a
        // geofence, else by name.
        let sort = query.sort;
        let filters = Filters::new(self, query);
        let end = usize::try_from(page.offset().saturating_add(page.limit())).unwrap_or(usize::MAX);
        match (searching, query.near) {
            (false, None) => {
                let order = &self.orders[sort_slot(sort.unwrap_or(SORTS[0]))];
                self.listed(order, &filters, page)
            }
            (false, Some(near)) => {
                let (front, total) = self.inside(near, &filters, sort, end);
                let mut paged = Paged::slice(front, page, |i| self.found(i, Some(near)));
                paged.total = total as u64;
                paged
            }
            (true, near) => {
                let mut hits = self.matching_text(query, near, &filters);
                match sort {
                    Some(sort) => {
                        let place = &self.places[sort_slot(sort)];
                        order_front(&mut hits, end, |a, b| {
                            place[a.doc as usize].cmp(&place[b.doc as usize])
                        });
                    }
                    // Relevance.
                    None => order_front(&mut hits, end, Hit::order),
                }
                Paged::slice(hits, page, |hit| self.found(hit.doc as usize, near))
            }
        }
    }

    /// The products with a branch inside `near` that `filters` keep: how many, and the first
    /// `end` of them in `sort`'s order, or else nearest first (then by name). Each product is
    /// looked at once, when its first branch inside is met; only the branches that may still
    /// make the front are kept, so the work follows the branches inside and the page, and its
    /// memory the page.
    fn inside(
        &self,
        near: Near,
        filters: &Filters,
        sort: Option<Sort>,
        end: usize,
    ) -> (Vec<usize>, usize) {
        let by_name = &self.places[sort_slot(SORTS[0])];
        let nearest_first = |a: &(Nearness, u32), b: &(Nearness, u32)| {
            a.0.total_cmp(&b.0)
                .then(by_name[a.1 as usize].cmp(&by_name[b.1 as usize]))
        };
        // The front so far, nearest first, one entry per product: its nearest branch.
        let compact = |front: &mut Vec<(Nearness, u32)>| {
            front.sort_unstable_by(|a, b| a.1.cmp(&b.1).then(a.0.total_cmp(&b.0)));
            front.dedup_by_key(|(_, owner)| *owner);
            order_front(front, end, nearest_first);
            front.truncate(end);
        };
        let room = end.saturating_mul(2).max(64);
        // A bit a product: those met, and those the filters keep.
        let words = self.products.len().div_ceil(64);
        let (mut met, mut kept) = (vec![0u64; words], vec![0u64; words]);
        let mut total = 0;
        let mut front: Vec<(Nearness, u32)> = Vec::new();
        // Beyond this, a branch cannot make the front (once the front is full).
        let mut farthest = Nearness::FARTHEST;
        let (latitude, longitude) = (near.latitude, near.longitude);
        self.geo
            .within(latitude, longitude, near.radius_km, |point, nearness| {
                let owner = point as usize;
                let (word, bit) = (owner / 64, 1u64 << (owner % 64));
                let first = met[word] & bit == 0;
                if first {
                    met[word] |= bit;
                    if filters.none() || filters.keep(owner) {
                        kept[word] |= bit;
                        total += 1;
                    }
                }
                if kept[word] & bit == 0 || end == 0 {
                    return;
                }
                match sort {
                    // Its place does not depend on the branch: once is enough.
                    Some(_) if first => front.push((nearness, point)),
                    Some(_) => {}
                    None if nearness.total_cmp(&farthest).is_le() => {
                        front.push((nearness, point));
                        if front.len() >= room {
                            compact(&mut front);
                            if front.len() == end {
                                farthest = front[end - 1].0;
                            }
                        }
                    }
                    None => {}
                }
            });
        let front = match sort {
            Some(sort) => {
                let place = &self.places[sort_slot(sort)];
                let mut owners: Vec<usize> = front.iter().map(|(_, o)| *o as usize).collect();
                order_front(&mut owners, end, |a, b| place[*a].cmp(&place[*b]));
                owners.truncate(end);
                owners
            }
            None => {
                compact(&mut front);
                front.into_iter().map(|(_, o)| o as usize).collect()
            }
        };
        (front, total)
    }

    /// The products matching the query's text that `filters` keep (and with a branch inside
    /// `near`, if given), in no order.
    fn matching_text(
        &self,
        query: &ProductQuery,
        near: Option<Near>,
        filters: &Filters,
    ) -> Vec<Hit> {
        let text = query.search.as_deref().unwrap_or_default();
        let mut hits = self.text.matches(text);
        if !filters.none() {
            hits.retain(|hit| filters.keep(hit.doc as usize));
        }
        if let Some(near) = near {
            // Only the text's matches are measured, each by its own branches.
            let circle = Circle::new(near.latitude, near.longitude, near.radius_km);
            hits.retain(|hit| self.geo.nearest_of(hit.doc, &circle).is_some());
        }
        hits
    }

    /// A page of the products in `order` that `filters` keep: without filters, read straight
    /// from the order; with them, counted in one pass that keeps only the page.
    fn listed(&self, order: &[u32], filters: &Filters, page: Page) -> Paged<Found<'_>> {
        let start = usize::try_from(page.offset()).unwrap_or(usize::MAX);
        let limit = page.limit as usize;
        if filters.none() {
            let items = order
                .iter()
                .skip(start)
                .take(limit)
                .map(|i| self.found(*i as usize, None))
                .collect();
            let total = order.len() as u64;
            return Paged { items, total, page };
        }
        let mut total = 0usize;
        let mut items = Vec::with_capacity(limit.min(order.len()));
        for &i in order {
            if filters.keep(i as usize) {
                if total >= start && items.len() < limit {
                    items.push(self.found(i as usize, None));
                }
                total += 1;
            }
        }
        Paged {
            items,
            total: total as u64,
            page,
        }
    }

    /// Product `i` as found, its branches by distance when there is a geofence.
    fn found(&self, i: usize, near: Option<Near>) -> Found<'_> {
        let product = &self.products[i];
        let Some(near) = near else {
            return Found {
                product,
                distance_km: None,
                branches: (0..product.branches.len()).map(|b| (b, None)).collect(),
            };
        };
        let mut branches: Vec<(usize, Option<f64>)> = product
            .branches
            .iter()
            .enumerate()
            .map(|(b, branch)| {
                let d = branch.address.as_ref().and_then(|a| {
                    let (lat, lon) = (a.latitude?, a.longitude?);
                    Some(search::geo::distance_km(
                        near.latitude,
                        near.longitude,
                        lat,
                        lon,
                    ))
                });
                (b, d)
            })
            .collect();
        branches.sort_by(|a, b| match (a.1, b.1) {
            (Some(x), Some(y)) => x.total_cmp(&y),
            (Some(_), None) => std::cmp::Ordering::Less,
            (None, Some(_)) => std::cmp::Ordering::Greater,
            (None, None) => a.0.cmp(&b.0),
        });
        Found {
            product,
            distance_km: branches.first().and_then(|b| b.1),
            branches,
        }
    }

    /// The embedding space's dimension.
    pub fn dimensions(&self) -> usize {
        self.vectors.dimensions()
    }

    /// Whether the service computes this catalogue's vectors (so `embed_text` can place text).
    pub fn computes_vectors(&self) -> bool {
        self.computed_vectors
    }

    /// `text` in this catalogue's embedding space, when the service computes it.
    pub fn embed_text(&self, text: &str) -> Option<Vec<f32>> {
        self.computed_vectors.then(|| embed(text)).flatten()
    }

    /// The `limit` available products nearest to `vector`, nearest first, with their cosine
    /// distances; `except` is left out.
    pub fn nearest(
        &self,
        vector: &[f32],
        limit: usize,
        except: Option<&str>,
    ) -> Result<Vec<(&Product, f32)>, VectorProblem> {
        if vector.len() != self.vectors.dimensions() {
            return Err(VectorProblem::Dimensions {
                expected: self.vectors.dimensions(),
                given: vector.len(),
            });
        }
        let except = except.and_then(|id| self.by_id.get(id).copied());
        let keep = |i: usize| Some(i) != except && self.available[i];
        // The graph leads to the nearest of all products; when most cannot be ordered, few of
        // those it finds would be kept, and the scan skips the rest cheaply.
        let nearest = if self.orderable * 4 < self.available.len() {
            self.vectors.scan(vector, limit, keep)
        } else {
            self.vectors.nearest(vector, limit, keep)
        };
        let nearest = nearest.ok_or(VectorProblem::Zero)?;
        Ok(nearest
            .into_iter()
            .map(|(i, d)| (&self.products[i], d))
            .collect())
    }

    /// Whether nearest products come from a graph (built off the request path for a large
    /// catalogue) rather than a scan of every vector.
    pub fn vectors_graphed(&self) -> bool {
        self.vectors.graph_ready()
    }

    /// The vector of the product with id `id` (normalised).
    pub fn vector_of(&self, id: &str) -> Option<Vec<f32>> {
        let i = *self.by_id.get(id)?;
        self.vectors.vector(i).map(<[f32]>::to_vec)
    }
}

/// A search's filters other than its text and geofence.
struct Filters<'a> {
    index: &'a CatalogueIndex,
    query: &'a ProductQuery,
    /// The categories a product must be in (by number), when the query names one by id or by
    /// name (in any letter case).
    categories: Option<Vec<u32>>,
    /// The tiers a variant must require (by number), when the query names one.
    tiers: Option<Vec<u32>>,
}

impl<'a> Filters<'a> {
    fn new(index: &'a CatalogueIndex, query: &'a ProductQuery) -> Filters<'a> {
        let name = query.category.as_deref().map(folded);
        let categories = (query.category_id.is_some() || name.is_some()).then(|| {
            let wanted = |(id, folded_name): &(String, String)| {
                query.category_id.as_deref().is_none_or(|asked| asked == id)
                    && name
                        .as_deref()
                        .is_none_or(|asked| !asked.is_empty() && asked == folded_name)
            };
            (0..index.category_keys.len() as u32)
                .filter(|n| wanted(&index.category_keys[*n as usize]))
                .collect()
        });
        let tiers = query
            .tier_id
            .as_deref()
            .map(|id| index.variant_facts.tiers_named(id));
        Filters {
            index,
            query,
            categories,
            tiers,
        }
    }

    /// Whether nothing is filtered.
    fn none(&self) -> bool {
        let q = self.query;
        self.categories.is_none()
            && q.booking_required.is_none()
            && q.is_available.is_none()
            && q.tier_id.is_none()
            && q.tier_precedence.is_none()
            && q.min_cost.is_none()
            && q.max_cost.is_none()
    }

    /// Whether product `i` passes every filter.
    fn keep(&self, i: usize) -> bool {
        let (index, query) = (self.index, self.query);
        let facts = &index.variant_facts;
        let tiered = self.tiers.is_some() || query.tier_precedence.is_some();
        let priced = query.min_cost.is_some() || query.max_cost.is_some();
        self.categories
            .as_ref()
            .is_none_or(|numbers| numbers.contains(&index.category_of[i]))
            && query
                .booking_required
                .is_none_or(|b| index.book_in_advance[i] == b)
            && query.is_available.is_none_or(|a| index.available[i] == a)
            && (!tiered
                || facts.tier_matches(i, self.tiers.as_deref(), |precedence| {
                    query
                        .tier_precedence
                        .is_none_or(|(op, value)| op.holds(precedence, value))
                }))
            && (!priced || facts.priced_within(i, query.min_cost, query.max_cost))
    }
}

/// Puts the first `k` of `items` by `order` (a total order) at the front, in that order; the
/// rest stay in any order. The work of putting a page in order follows the page, not all the
/// matches.
fn order_front<T>(items: &mut [T], k: usize, mut order: impl FnMut(&T, &T) -> std::cmp::Ordering) {
    use std::cmp::Ordering::Less;
    /// Up to this many, the front is kept in order as the items pass (most are compared once,
    /// with the front's last); beyond it, selected then sorted.
    const KEPT: usize = 64;
    let k = k.min(items.len());
    if k == 0 {
        return;
    }
    if k == items.len() || k > KEPT {
        if k < items.len() {
            items.select_nth_unstable_by(k - 1, &mut order);
        }
        items[..k].sort_unstable_by(order);
        return;
    }
    items[..k].sort_unstable_by(&mut order);
    for j in k..items.len() {
        if order(&items[j], &items[k - 1]) == Less {
            items.swap(j, k - 1);
            let at = items[..k - 1].partition_point(|x| order(x, &items[k - 1]) == Less);
            items[at..k].rotate_right(1);
        }
    }
}

/// What the service embeds for a product: its name, tags, category and descriptions.
fn product_text(p: &Product) -> String {
    let mut text = p.name.clone();
    for tag in &p.tags {
        text.push(' ');
        text.push_str(&tag.name);
    }
    for part in [
        p.category.as_ref().map(|c| c.name.as_str()),
        p.short_description.as_deref(),
        p.description.as_deref(),
    ]
    .into_iter()
    .flatten()
    {
        text.push(' ');
        text.push_str(part);
    }
    text
}

/// A vector for a product whose text has no words at all (a name of symbols): from its id, so
/// that it still has a direction of its own.
fn placeholder(p: &Product) -> Vec<f32> {
    embed(&format!("product {}", p.id)).expect("text with a word embeds")
}

/// Each campaign's catalogue index, cached. A cached index is trusted for a second, then the
/// catalogue's version is looked up again (one indexed query) and a new version is loaded and
/// indexed. So an import shows in searches at once on the node that made it (`forget`) and
/// within about a second on every other. Cheap to clone: clones share the cache.
#[derive(Clone)]
pub struct Catalogues {
    store: CatalogueStore,
    indexes: Arc<Cache<Arc<CatalogueIndex>>>,
    /// One build at a time: requests that find the index stale wait for it, not build it again.
    building: Arc<tokio::sync::Mutex<()>>,
}

impl Catalogues {
    pub fn new(store: CatalogueStore) -> Self {
        Catalogues {
            indexes: Arc::new(Cache::on(store.clock().clone())),
            store,
            building: Arc::default(),
        }
    }

    /// The campaign's current index.
    pub async fn get(&self, campaign: &Campaign) -> Result<Arc<CatalogueIndex>, StoreError> {
        let campaign_id = campaign.id.as_str();
        if let Some(index) = self.indexes.fresh(campaign_id, FRESH_FOR) {
            return Ok(index);
        }
        let version = self.store.catalogue_version(campaign).await?;
        let current = |index: &Arc<CatalogueIndex>| index.version == version;
        if let Some(index) = self.indexes.any(campaign_id).filter(current) {
            self.indexes.confirm(campaign_id);
            return Ok(index);
        }
        // While another request builds, an index this node already had keeps answering (a
        // large catalogue takes seconds to index); with none, wait for the build.
        let _building = match self.building.try_lock() {
            Ok(guard) => guard,
            Err(_) => {
                if let Some(index) = self.indexes.any(campaign_id) {
                    return Ok(index);
                }
                self.building.lock().await
            }
        };
        if let Some(index) = self.indexes.any(campaign_id).filter(current) {
            return Ok(index);
        }
        // Read the version before the products: a change in between shows as a new version
        // at the next look, never as an old version holding new products.
        let products = self.store.catalogue_products(campaign).await?;
        // Off the async workers: a large catalogue takes a moment to index.
        let built = tokio::task::spawn_blocking(move || CatalogueIndex::build(version, products));
        let index = match built.await {
            Ok(index) => Arc::new(index),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        self.indexes.put(campaign_id, index.clone());
        Ok(index)
    }

    /// Drops the cached index: the next `get` reads the catalogue again.
    pub fn forget(&self, campaign_id: &str) {
        self.indexes.remove(campaign_id);
    }
}

#[cfg(test)]
mod tests {
    use super::order_front;

    #[test]
    fn the_front_is_what_a_whole_sort_puts_there() {
        // A fixed scramble of 0..500 with repeats, so ties are broken by the order given.
        let items: Vec<(u32, u32)> = (0..500u32).map(|i| ((i * 7919) % 97, i)).collect();
        let by = |a: &(u32, u32), b: &(u32, u32)| a.0.cmp(&b.0).then(a.1.cmp(&b.1));
        let mut whole = items.clone();
        whole.sort_by(by);
        for k in [0, 1, 10, 99, 499, 500, 800] {
            let mut front = items.clone();
            order_front(&mut front, k, by);
            let k = k.min(items.len());
            assert_eq!(front[..k], whole[..k], "k = {k}");
            let mut rest = front.clone();
            rest.sort_by(by);
            assert_eq!(rest, whole, "nothing lost or doubled (k = {k})");
        }
    }
}
