//! Products' JSON, rendered once per catalogue version: an answer listing products is put
//! together from each product's rendered pieces (as search engines answer with a document's
//! stored source) instead of each product being copied into a view and serialized again on
//! every request. The pieces are `ProductView`'s own serialization, so the two cannot differ.

use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use store::{CatalogueIndex, Paged, Product};

use super::views::{BranchView, ProductView};
use crate::http::paging::PagedList;
use crate::product_json::{Pieces, Rendered};

impl Pieces {
    fn of(product: &Product, currency: &str) -> Pieces {
        // Without branches and distance the view ends `"branches":[]}`.
        let head = json(&ProductView::new(product, currency, &[], None));
        let branches = product
            .branches
            .iter()
            .map(|b| {
                let branch = json(&BranchView::new(b, None));
                branch[..branch.len() - "}".len()].into()
            })
            .collect();
        Pieces {
            head: head[..head.len() - "]}".len()].into(),
            branches,
        }
    }
}

fn json(view: &impl serde::Serialize) -> String {
    serde_json::to_string(view).expect("a view serializes")
}

impl Rendered {
    /// Writes `product` as `ProductView::new(product, currency, branches, distance)` would be
    /// serialized.
    pub fn write(
        &self,
        out: &mut Vec<u8>,
        index: &CatalogueIndex,
        product: &Product,
        branches: &[(usize, Option<f64>)],
        distance: Option<f64>,
    ) {
        let Some(slot) = index
            .position(&product.id)
            .and_then(|i| self.products.get(i))
        else {
            // Not of this index: rendered on its own.
            let view = ProductView::new(product, &self.currency, branches, distance);
            serde_json::to_writer(out, &view).expect("a product view serializes");
            return;
        };
        let pieces = slot.get_or_init(|| Pieces::of(product, &self.currency));
        out.extend_from_slice(pieces.head.as_bytes());
        for (n, (b, away)) in branches.iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            out.extend_from_slice(pieces.branches[*b].as_bytes());
            write_distance(out, *away);
            out.push(b'}');
        }
        out.push(b']');
        write_distance(out, distance);
        out.push(b'}');
    }

    /// Writes `product` as `ProductView::plain` would be serialized.
    pub fn write_plain(
        &self,
        out: &mut Vec<u8>,
        index: &CatalogueIndex,
        product: &Product,
        distance: Option<f64>,
    ) {
        let branches: Vec<(usize, Option<f64>)> =
            (0..product.branches.len()).map(|b| (b, None)).collect();
        self.write(out, index, product, &branches, distance);
    }

    /// A page of products as a `PagedList<ProductView>`, each written by `write`.
    pub fn page<T>(
        &self,
        paged: Paged<T>,
        mut write: impl FnMut(&Self, &mut Vec<u8>, T),
    ) -> RenderedJson {
        RenderedJson(PagedList::rendered(paged, |out, item| {
            write(self, out, item);
        }))
    }

    /// Products as a JSON array of `ProductView`s, each written by `write`.
    pub fn list<T>(
        &self,
        items: impl IntoIterator<Item = T>,
        mut write: impl FnMut(&Self, &mut Vec<u8>, T),
    ) -> RenderedJson {
        let mut out = Vec::with_capacity(16 * 1024);
        out.push(b'[');
        for (n, item) in items.into_iter().enumerate() {
            if n > 0 {
                out.push(b',');
            }
            write(self, &mut out, item);
        }
        out.push(b']');
        RenderedJson(out)
    }
}

/// `,"distance":…` when there is one, as the views' `skip_serializing_if` leaves it out.
fn write_distance(out: &mut Vec<u8>, distance: Option<f64>) {
    if let Some(distance) = distance {
        out.extend_from_slice(br#","distance":"#);
        serde_json::to_writer(out, &distance).expect("a number serializes");
    }
}

/// A JSON answer already rendered.
pub struct RenderedJson(Vec<u8>);

impl IntoResponse for RenderedJson {
    fn into_response(self) -> Response {
        ([(CONTENT_TYPE, "application/json")], self.0).into_response()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use store::{
        Address, Branch, Category, ContactDetails, Page, Tag, Tier, Tokens, Variant, Weekdays,
    };

    use super::*;
    use crate::product_json::RenderedProducts;

    type Branches = Vec<(usize, Option<f64>)>;

    fn branch(id: &str, at: Option<(f64, f64)>) -> Branch {
        Branch {
            id: id.into(),
            name: format!("Branch \"{id}\"\n"),
            address: at.map(|(lat, lon)| Address {
                address_line1: Some("1 Long Street".into()),
                city: Some("Cape Town".into()),
                latitude: Some(lat),
                longitude: Some(lon),
                ..Default::default()
            }),
            contact_details: Some(ContactDetails {
                contact_name: None,
                email: Some("hi@example.com".into()),
                phone_number: None,
            }),
        }
    }

    fn product(id: &str, branches: Vec<Branch>) -> Product {
        Product {
            id: id.into(),
            name: format!("Spa day ☀ {id}"),
            short_description: Some("Relax".into()),
            description: None,
            book_in_advance: true,
            tags: vec![Tag {
                id: "t".into(),
                name: "Wellness".into(),
            }],
            category: Some(Category {
                id: "c".into(),
                name: "Spa".into(),
            }),
            primary_image: None,
            secondary_images: vec!["https://cdn.example.com/2.jpg".into()],
            website: None,
            weekdays: Weekdays {
                mon: false,
                ..Weekdays::default()
            },
            weight: 1.0,
            embedding: None,
            branches,
            variants: vec![Variant {
                id: format!("{id}-v"),
                name: "For two".into(),
                category: None,
                description: Some("Two people".into()),
                offer_details: None,
                terms_and_conditions: None,
                price: Tokens::whole(1_250),
                tier: Some(Tier {
                    id: "gold-id".into(),
                    name: "Gold".into(),
                    precedence: 2,
                    threshold: Tokens::whole(1_000),
                    benefits: vec!["Lounge".into()],
                    image_url: None,
                    handle: Some("gold".into()),
                }),
                available: true,
                stock: Some(0),
            }],
        }
    }

    fn index() -> Arc<CatalogueIndex> {
        let products = vec![
            product(
                "two-branches",
                vec![branch("a", Some((-33.9, 18.4))), branch("b", None)],
            ),
            product("no-branches", Vec::new()),
        ];
        Arc::new(CatalogueIndex::build(1, products))
    }

    #[test]
    fn pieces_put_together_are_the_views_own_serialization() {
        let index = index();
        let rendered = RenderedProducts::default().of("c", &index, "ZAR");
        for id in ["two-branches", "no-branches"] {
            let product = index.product(id).unwrap();
            // Branch orders (with distances) and the product's distance.
            let orders: Vec<(Branches, Option<f64>)> = match id {
                "two-branches" => vec![
                    (vec![(0, None), (1, None)], None),
                    (vec![(1, Some(0.25)), (0, Some(12.5))], Some(0.25)),
                    (vec![(1, None)], Some(1e-7)),
                ],
                _ => vec![(Vec::new(), None), (Vec::new(), Some(0.5))],
            };
            // Twice: rendered the first time, from the cache the second.
            for _ in 0..2 {
                for (branches, distance) in &orders {
                    let mut out = Vec::new();
                    rendered.write(&mut out, &index, product, branches, *distance);
                    let expected = ProductView::new(product, "ZAR", branches, *distance);
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        serde_json::to_string(&expected).unwrap()
                    );
                }
            }
            let mut out = Vec::new();
            rendered.write_plain(&mut out, &index, product, Some(0.125));
            let expected = ProductView::plain(product, "ZAR", Some(0.125));
            assert_eq!(out, serde_json::to_vec(&expected).unwrap());
        }
    }

    #[test]
    fn a_page_is_the_paged_lists_own_serialization() {
        let index = index();
        let rendered = RenderedProducts::default().of("c", &index, "ZAR");
        for (page, limit) in [(1, 10), (1, 1), (2, 1), (5, 10), (1, 0)] {
            let page = Page { page, limit };
            let found = index.search(&store::ProductQuery::default(), page);
            let expected = PagedList::from_page(index.search(&Default::default(), page), |f| {
                ProductView::new(f.product, "ZAR", &f.branches, f.distance_km)
            });
            let RenderedJson(out) = rendered.page(found, |r, out, f| {
                r.write(out, &index, f.product, &f.branches, f.distance_km);
            });
            assert_eq!(out, serde_json::to_vec(&expected).unwrap(), "{page:?}");
        }
        let RenderedJson(out) = rendered.list(Vec::<&Product>::new(), |_, _, _| {});
        assert_eq!(out, b"[]");
    }

    #[test]
    fn a_new_index_or_currency_renders_afresh() {
        let products = RenderedProducts::default();
        let (first, second) = (index(), index());
        let rendered = products.of("c", &first, "ZAR");
        assert!(Arc::ptr_eq(&rendered, &products.of("c", &first, "ZAR")));
        assert!(!Arc::ptr_eq(&rendered, &products.of("c", &second, "ZAR")));
        let in_euros = products.of("c", &second, "EUR");
        let mut out = Vec::new();
        let product = second.product("no-branches").unwrap();
        in_euros.write_plain(&mut out, &second, product, None);
        assert!(
            String::from_utf8(out)
                .unwrap()
                .contains(r#""currency":"EUR""#)
        );
    }
}
