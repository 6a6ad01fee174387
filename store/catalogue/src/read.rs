//! Reading a campaign's catalogue back: whole (for the search index and the export, in a few
//! queries whatever its size), and its categories and tags as paged lists.

use crate::Campaign;
use std::collections::HashMap;

use sqlx::types::Json;

use super::document::{
    Address, Branch, Catalogue, Category, ContactDetails, Tag, TierEntry, Weekdays,
};
use super::document::{ProductEntry, VariantEntry};
use super::{Product, Variant};
use crate::backend::{Steps, Tx};
use crate::{CatalogueStore, Page, Paged, StoreError, Tokens};
use programme::tiers::joined_tier;

row_struct! {
    struct ProductRow {
        id: String,
        name: String,
        short_description: Option<String>,
        description: Option<String>,
        book_in_advance: bool,
        category_id: Option<String>,
        category_name: Option<String>,
        primary_image: Option<String>,
        secondary_images: Json<Vec<String>>,
        website: Option<String>,
        weekdays: Json<Weekdays>,
        weight: f64,
        embedding: Option<Vec<u8>>,
    }
}

row_struct! {
    struct VariantRow {
        product_id: String,
        id: String,
        name: String,
        category: Option<String>,
        description: Option<String>,
        offer_details: Option<String>,
        terms_and_conditions: Option<String>,
        price: i64,
        available: bool,
        stock: Option<i64>,
        tier_id: Option<String>,
        tier_name: Option<String>,
        tier_precedence: Option<i64>,
        tier_threshold: Option<i64>,
        tier_benefits: Option<Json<Vec<String>>>,
        tier_image_url: Option<String>,
        tier_handle: Option<String>,
    }
}

type TagRow = (String, String, String);
type Rows = (
    Vec<ProductRow>,
    Vec<TagRow>,
    Vec<BranchRow>,
    Vec<VariantRow>,
);
type BranchRow = (
    String,
    String,
    String,
    Option<Json<Address>>,
    Option<Json<ContactDetails>>,
);

/// `rows` as records grouped by product id, in the rows' order within each product.
fn grouped<R, T>(rows: Vec<R>, split: impl Fn(R) -> (String, T)) -> HashMap<String, Vec<T>> {
    let mut groups: HashMap<String, Vec<T>> = HashMap::new();
    for row in rows {
        let (product, record) = split(row);
        groups.entry(product).or_default().push(record);
    }
    groups
}

/// `bytes` (little-endian f32s) as a vector.
fn embedding(bytes: &[u8]) -> Vec<f32> {
    bytes
        .chunks_exact(4)
        .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .collect()
}

/// The catalogue, read: a campaign's products, categories and tags, and the document that gives
/// them back (scope: `&Campaign`).
impl CatalogueStore {
    /// The campaign's catalogue version: 0 before its first import, then one more per import
    /// and per variant an order sells out (both counts only grow, so their sum changes
    /// whenever either does).
    #[tracing::instrument(skip_all)]
    pub async fn catalogue_version(&self, campaign: &Campaign) -> Result<i64, StoreError> {
        let campaign_id = campaign.id.as_str();
        const SQL: &str = "SELECT CAST(COALESCE((SELECT version FROM catalogue_versions \
             WHERE campaign_id = $1), 0) + COALESCE((SELECT sellouts FROM catalogue_sellouts \
             WHERE campaign_id = $1), 0) AS BIGINT)";
        let row: Option<(i64,)> = self.read_row(SQL, params![campaign_id]).await?;
        Ok(row.map_or(0, |(v,)| v))
    }

    /// Every product of the campaign, whole, in the import's order.
    #[tracing::instrument(skip_all)]
    pub async fn catalogue_products(
        &self,
        campaign: &Campaign,
    ) -> Result<Vec<Product>, StoreError> {
        let campaign_id = campaign.id.as_str();
        // In one snapshot: an import committed meanwhile shows whole or not at all.
        let (products, tags, branches, variants): Rows =
            self.read(Reading(campaign_id.to_string())).await?;
        let mut tags_of = grouped(tags, |(product, id, name)| (product, Tag { id, name }));
        let mut branches_of = grouped(branches, |(product, id, name, address, contact)| {
            let branch = Branch {
                id,
                name,
                address: address.map(|a| a.0),
                contact_details: contact.map(|c| c.0),
            };
            (product, branch)
        });
        let mut variants_of = grouped(variants, |v| {
            let tier = joined_tier(
                v.tier_id,
                v.tier_name,
                v.tier_precedence,
                v.tier_threshold,
                v.tier_benefits,
                v.tier_image_url,
                v.tier_handle,
            );
            let variant = Variant {
                id: v.id,
                name: v.name,
                category: v.category,
                description: v.description,
                offer_details: v.offer_details,
                terms_and_conditions: v.terms_and_conditions,
                price: Tokens::from_micros(v.price),
                tier,
                available: v.available,
                stock: v.stock,
            };
            (v.product_id, variant)
        });
        Ok(products
            .into_iter()
            .map(|p| Product {
                tags: tags_of.remove(&p.id).unwrap_or_default(),
                branches: branches_of.remove(&p.id).unwrap_or_default(),
                variants: variants_of.remove(&p.id).unwrap_or_default(),
                category: p
                    .category_id
                    .zip(p.category_name)
                    .map(|(id, name)| Category { id, name }),
                id: p.id,
                name: p.name,
                short_description: p.short_description,
                description: p.description,
                book_in_advance: p.book_in_advance,
                primary_image: p.primary_image,
                secondary_images: p.secondary_images.0,
                website: p.website,
                weekdays: p.weekdays.0,
                weight: p.weight,
                embedding: p.embedding.as_deref().map(embedding),
            })
            .collect())
    }

    /// The campaign's catalogue as an import document that gives it back.
    #[tracing::instrument(skip_all)]
    pub async fn export_catalogue(&self, campaign: &Campaign) -> Result<Catalogue, StoreError> {
        let products = self.catalogue_products(campaign).await?;
        let all = Page {
            page: 1,
            limit: u32::MAX,
        };
        let categories = self.categories(campaign, None, all).await?.items;
        let tags = self.tags(campaign, None, all).await?.items;
        let tiers = self.programme().list_tiers(campaign).await?;
        Ok(Catalogue {
            categories,
            tags,
            tiers: tiers
                .into_iter()
                .map(|t| TierEntry {
                    id: Some(t.handle.unwrap_or(t.id)),
                    name: t.name,
                    precedence: t.precedence,
                    threshold: t.threshold,
                    benefits: t.benefits,
                    image_url: t.image_url,
                })
                .collect(),
            products: products
                .into_iter()
                .map(|p| ProductEntry {
                    id: p.id,
                    name: p.name,
                    short_description: p.short_description,
                    description: p.description,
                    book_in_advance: p.book_in_advance,
                    tags: p.tags.into_iter().map(|t| t.id).collect(),
                    category: p.category.map(|c| c.id),
                    primary_image: p.primary_image,
                    secondary_images: p.secondary_images,
                    website: p.website,
                    weekdays: p.weekdays,
                    weight: p.weight,
                    embedding: p.embedding,
                    branches: p.branches,
                    variants: p
                        .variants
                        .into_iter()
                        .map(|v| VariantEntry {
                            id: v.id,
                            name: v.name,
                            category: v.category,
                            description: v.description,
                            offer_details: v.offer_details,
                            terms_and_conditions: v.terms_and_conditions,
                            price: v.price,
                            tier: v.tier.map(|t| t.handle.unwrap_or(t.id)),
                            available: v.available,
                            stock: v.stock,
                        })
                        .collect(),
                })
                .collect(),
        })
    }

    /// The campaign's categories in the import's order, or only the one with id `only`.
    #[tracing::instrument(skip_all)]
    pub async fn categories(
        &self,
        campaign: &Campaign,
        only: Option<&str>,
        page: Page,
    ) -> Result<Paged<Category>, StoreError> {
        let campaign_id = campaign.id.as_str();
        self.named("categories", campaign_id, only, page, |id, name| Category {
            id,
            name,
        })
        .await
    }

    /// The campaign's tags in the import's order, or only the one with id `only`.
    #[tracing::instrument(skip_all)]
    pub async fn tags(
        &self,
        campaign: &Campaign,
        only: Option<&str>,
        page: Page,
    ) -> Result<Paged<Tag>, StoreError> {
        let campaign_id = campaign.id.as_str();
        self.named("tags", campaign_id, only, page, |id, name| Tag { id, name })
            .await
    }

    /// A page of a campaign's (id, name) records from `table`, each made by `record`.
    async fn named<T>(
        &self,
        table: &'static str,
        campaign_id: &str,
        only: Option<&str>,
        page: Page,
        record: impl Fn(String, String) -> T,
    ) -> Result<Paged<T>, StoreError> {
        let rows = self
            .read_page(
                page,
                "id, name",
                &format!("FROM {table} WHERE campaign_id = $1 AND id = COALESCE($2, id)"),
                "position, id",
                params![campaign_id, only],
            )
            .await?;
        Paged::of(rows, page, |(id, name)| Ok(record(id, name)))
    }
}

/// A campaign's whole catalogue, read in one snapshot.
struct Reading(String);

impl Steps for Reading {
    type Output = Rows;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Rows, StoreError> {
        let campaign = params![self.0];
        Ok((
            tx.rows(PRODUCTS, campaign).await?,
            tx.rows(TAGS, campaign).await?,
            tx.rows(BRANCHES, campaign).await?,
            tx.rows(VARIANTS, campaign).await?,
        ))
    }
}

const PRODUCTS: &str = "SELECT p.id, p.name, p.short_description, p.description, \
     p.book_in_advance, p.category_id, c.name, p.primary_image, p.secondary_images, \
     p.website, p.weekdays, p.weight, p.embedding FROM products p \
     LEFT JOIN categories c ON c.campaign_id = p.campaign_id AND c.id = p.category_id \
     WHERE p.campaign_id = $1 ORDER BY p.position, p.id";
const TAGS: &str = "SELECT pt.product_id, t.id, t.name FROM product_tags pt \
     JOIN tags t ON t.campaign_id = pt.campaign_id AND t.id = pt.tag_id \
     WHERE pt.campaign_id = $1 ORDER BY pt.product_id, pt.position";
const BRANCHES: &str = "SELECT product_id, id, name, address, contact_details FROM branches \
     WHERE campaign_id = $1 ORDER BY product_id, position";
const VARIANTS: &str = "SELECT v.product_id, v.id, v.name, v.category, v.description, \
     v.offer_details, v.terms_and_conditions, v.price, v.available, v.stock, t.id, t.name, \
     t.precedence, t.threshold, t.benefits, t.image_url, t.handle FROM variants v \
     LEFT JOIN tiers t ON t.id = v.tier_id WHERE v.campaign_id = $1 \
     ORDER BY v.product_id, v.position";
