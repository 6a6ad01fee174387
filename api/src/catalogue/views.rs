//! The catalogue's records as the API shows them.

use serde::{Deserialize, Serialize};
use store::{Category, Tag, Tier};
use utoipa::ToSchema;

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierView {
    pub id: String,
    pub name: String,
    /// Lower numbers mean higher priority.
    pub precedence: i64,
    pub benefits: Vec<String>,
    pub image_url: Option<String>,
}

impl From<Tier> for TierView {
    fn from(t: Tier) -> Self {
        TierView {
            id: t.id,
            name: t.name,
            precedence: t.precedence,
            benefits: t.benefits,
            image_url: t.image_url,
        }
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CategoryView {
    pub id: String,
    pub name: String,
}

impl From<Category> for CategoryView {
    fn from(c: Category) -> Self {
        CategoryView {
            id: c.id,
            name: c.name,
        }
    }
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct TagView {
    pub id: String,
    pub name: String,
}

impl From<Tag> for TagView {
    fn from(t: Tag) -> Self {
        TagView {
            id: t.id,
            name: t.name,
        }
    }
}

/// What an import did (or, in a dry run, would do), by kind of record.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReportView {
    pub dry_run: bool,
    pub categories: CountsView,
    pub tags: CountsView,
    /// Tiers are never removed by an import (wallets hold them).
    pub tiers: CountsView,
    pub products: CountsView,
    pub variants: CountsView,
    /// The catalogue's version after the import (unchanged by a dry run).
    pub version: i64,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct CountsView {
    pub created: u64,
    pub updated: u64,
    pub removed: u64,
}

impl From<store::Counts> for CountsView {
    fn from(c: store::Counts) -> Self {
        CountsView {
            created: c.created,
            updated: c.updated,
            removed: c.removed,
        }
    }
}

impl From<store::ImportReport> for ImportReportView {
    fn from(r: store::ImportReport) -> Self {
        ImportReportView {
            dry_run: r.dry_run,
            categories: r.categories.into(),
            tags: r.tags.into(),
            tiers: r.tiers.into(),
            products: r.products.into(),
            variants: r.variants.into(),
            version: r.version,
        }
    }
}

/// A product as members see it.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ProductView {
    pub id: String,
    pub name: String,
    pub short_description: Option<String>,
    pub description: Option<String>,
    /// Its order lines need a booking.
    pub book_in_advance: bool,
    /// Tag names.
    pub tags: Vec<String>,
    /// The category's name.
    pub category: Option<String>,
    pub primary_image: Option<String>,
    pub secondary_images: Vec<String>,
    pub variants: Vec<VariantView>,
    /// The campaign's currency.
    pub currency: String,
    pub website: Option<String>,
    pub weekdays: WeekdaysView,
    pub branches: Vec<BranchView>,
    /// In a geofenced search: kilometres to its nearest branch. In a vector search and in
    /// recommendations: the cosine distance (0 to 2) from the vector. Otherwise absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<f64>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WeekdaysView {
    pub mon: bool,
    pub tue: bool,
    pub wed: bool,
    pub thu: bool,
    pub fri: bool,
    pub sat: bool,
    pub sun: bool,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct VariantView {
    pub id: String,
    pub name: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub offer_details: Option<String>,
    pub terms_and_conditions: Option<String>,
    /// It can be ordered: available, and in stock where stock is limited.
    pub available: bool,
    /// Tokens.
    #[schema(value_type = f64)]
    pub price: store::Tokens,
    /// The tier a member's wallet needs for it.
    pub tier: Option<TierView>,
}

#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct BranchView {
    pub id: String,
    pub name: String,
    #[schema(value_type = Option<Object>)]
    pub address: Option<store::Address>,
    #[schema(value_type = Option<Object>)]
    pub contact_details: Option<store::ContactDetails>,
    /// In a geofenced search: kilometres from the point.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub distance: Option<f64>,
}

impl BranchView {
    pub fn new(branch: &store::Branch, distance: Option<f64>) -> Self {
        BranchView {
            id: branch.id.clone(),
            name: branch.name.clone(),
            address: branch.address.clone(),
            contact_details: branch.contact_details.clone(),
            distance,
        }
    }
}

impl ProductView {
    /// `product` in `currency`, its branches in `branches` order with their distances.
    pub fn new(
        product: &store::Product,
        currency: &str,
        branches: &[(usize, Option<f64>)],
        distance: Option<f64>,
    ) -> Self {
        let w = product.weekdays;
        ProductView {
            id: product.id.clone(),
            name: product.name.clone(),
            short_description: product.short_description.clone(),
            description: product.description.clone(),
            book_in_advance: product.book_in_advance,
            tags: product.tags.iter().map(|t| t.name.clone()).collect(),
            category: product.category.as_ref().map(|c| c.name.clone()),
            primary_image: product.primary_image.clone(),
            secondary_images: product.secondary_images.clone(),
            variants: product
                .variants
                .iter()
                .map(|v| VariantView {
                    id: v.id.clone(),
                    name: v.name.clone(),
                    category: v.category.clone(),
                    description: v.description.clone(),
                    offer_details: v.offer_details.clone(),
                    terms_and_conditions: v.terms_and_conditions.clone(),
                    available: v.can_be_ordered(),
                    price: v.price,
                    tier: v.tier.clone().map(TierView::from),
                })
                .collect(),
            currency: currency.to_string(),
            website: product.website.clone(),
            weekdays: WeekdaysView {
                mon: w.mon,
                tue: w.tue,
                wed: w.wed,
                thu: w.thu,
                fri: w.fri,
                sat: w.sat,
                sun: w.sun,
            },
            branches: branches
                .iter()
                .map(|(i, distance)| BranchView::new(&product.branches[*i], *distance))
                .collect(),
            distance,
        }
    }

    /// `product` as listed anywhere but a geofenced search.
    pub fn plain(product: &store::Product, currency: &str, distance: Option<f64>) -> Self {
        let branches: Vec<(usize, Option<f64>)> =
            (0..product.branches.len()).map(|i| (i, None)).collect();
        ProductView::new(product, currency, &branches, distance)
    }
}
