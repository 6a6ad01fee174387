//! Applying an import document: whole or not at all, in one transaction. Records are upserted by
//! the client's ids, so importing the same file twice changes nothing; a product in the file is
//! replaced whole (its tags, branches and variants become the file's). With `replace`, what the
//! file no longer holds is removed. Tiers are matched by id, else by name, updated or created,
//! and never removed here (wallets hold them).

use std::collections::{HashMap, HashSet};

use serde::Serialize;
use sqlx::types::Json;

use super::document::Catalogue;
use crate::FieldProblem;
use crate::backend::WritePool;
use crate::common::ids::{new_id, now};
use crate::programme::tiers::RETIER;
use crate::{Campaign, Store, StoreError};

/// Rows a multi-row statement writes at most (within both backends' parameter limits).
const CHUNK: usize = 500;

#[derive(Debug, Clone, Copy, Default)]
pub struct ImportOptions {
    /// Check and count only; nothing is written.
    pub dry_run: bool,
    /// Also remove the products, categories and tags the document does not hold.
    pub replace: bool,
}

/// What an import did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ImportReport {
    pub dry_run: bool,
    pub categories: Counts,
    pub tags: Counts,
    pub tiers: Counts,
    pub products: Counts,
    pub variants: Counts,
    /// The catalogue's version after the import (unchanged by a dry run).
    pub version: i64,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    pub created: u64,
    pub updated: u64,
    pub removed: u64,
}

impl Counts {
    /// Counts for writing `incoming` over `stored` (removing the rest when `replace`).
    fn of<'a>(
        incoming: impl Iterator<Item = &'a str>,
        stored: &HashSet<String>,
        replace: bool,
    ) -> Counts {
        let mut counts = Counts::default();
        let mut seen = HashSet::new();
        for id in incoming {
            seen.insert(id);
            if stored.contains(id) {
                counts.updated += 1;
            } else {
                counts.created += 1;
            }
        }
        if replace {
            counts.removed = stored
                .iter()
                .filter(|id| !seen.contains(id.as_str()))
                .count() as u64;
        }
        counts
    }
}

/// The keys the campaign's catalogue holds before the import.
#[derive(Default)]
struct Stored {
    categories: HashSet<String>,
    tags: HashSet<String>,
    products: HashSet<String>,
    /// Variant id to its product id.
    variants: HashMap<String, String>,
    /// (id, name, handle) of the campaign's tiers.
    tiers: Vec<(String, String, Option<String>)>,
}

/// The document with its references resolved: what to write and what to remove.
struct Plan {
    /// Store id for each document tier, and whether it is new.
    tiers: Vec<(String, bool)>,
    /// Store tier id for each variant, by product and variant position.
    variant_tiers: Vec<Vec<Option<String>>>,
    removed_products: Vec<String>,
    removed_variants: Vec<String>,
    removed_categories: Vec<String>,
    removed_tags: Vec<String>,
    report: ImportReport,
}

fn plan(
    catalogue: &Catalogue,
    stored: &Stored,
    options: ImportOptions,
) -> Result<Plan, StoreError> {
    let mut errors = Vec::new();
    let mut fail = |path: String, message: String| errors.push(FieldProblem { path, message });

    // Tiers: the document's, matched to stored ones by id (the service's, or the document id
    // a stored tier keeps as its handle), else by name.
    let mut tiers = Vec::new();
    let mut tier_by_ref: HashMap<&str, String> = HashMap::new();
    for (i, tier) in catalogue.tiers.iter().enumerate() {
        let matched = tier
            .id
            .as_deref()
            .and_then(|id| {
                stored
                    .tiers
                    .iter()
                    .find(|(sid, _, handle)| sid == id || handle.as_deref() == Some(id))
            })
            .or_else(|| stored.tiers.iter().find(|(_, name, _)| *name == tier.name));
        let (id, new) = match matched {
            Some((id, _, _)) => (id.clone(), false),
            None if tier.id.is_some()
                && stored
                    .tiers
                    .iter()
                    .any(|(_, n, _)| Some(n) == tier.id.as_ref()) =>
            {
                fail(
                    format!("tiers[{i}].id"),
                    "names another tier of the campaign".into(),
                );
                (String::new(), false)
            }
            None => (new_id(), true),
        };
        if let Some(doc_id) = &tier.id {
            tier_by_ref.insert(doc_id, id.clone());
        }
        tier_by_ref.insert(&tier.name, id.clone());
        tiers.push((id, new));
    }
    for (id, name, handle) in &stored.tiers {
        tier_by_ref.entry(id).or_insert_with(|| id.clone());
        tier_by_ref.entry(name).or_insert_with(|| id.clone());
        if let Some(handle) = handle {
            tier_by_ref.entry(handle).or_insert_with(|| id.clone());
        }
    }

    // Without `replace`, what earlier imports left stays, and may be referred to.
    let known = |id: &str, listed: &HashSet<&str>, stored: &HashSet<String>| {
        listed.contains(id) || (!options.replace && stored.contains(id))
    };
    let doc_categories: HashSet<&str> =
        catalogue.categories.iter().map(|c| c.id.as_str()).collect();
    let doc_tags: HashSet<&str> = catalogue.tags.iter().map(|t| t.id.as_str()).collect();
    let mut variant_tiers = Vec::with_capacity(catalogue.products.len());
    for (i, product) in catalogue.products.iter().enumerate() {
        if let Some(category) = &product.category
            && !known(category, &doc_categories, &stored.categories)
        {
            fail(
                format!("products[{i}].category"),
                format!("unknown category `{category}`"),
            );
        }
        for (j, tag) in product.tags.iter().enumerate() {
            if !known(tag, &doc_tags, &stored.tags) {
                fail(
                    format!("products[{i}].tags[{j}]"),
                    format!("unknown tag `{tag}`"),
                );
            }
        }
        let mut resolved = Vec::with_capacity(product.variants.len());
        for (j, variant) in product.variants.iter().enumerate() {
            let tier = variant.tier.as_deref().and_then(|reference| {
                let found = tier_by_ref.get(reference).cloned();
                if found.is_none() {
                    fail(
                        format!("products[{i}].variants[{j}].tier"),
                        format!("unknown tier `{reference}`: neither an id nor a name of the campaign's tiers or the document's"),
                    );
                }
                found
            });
            resolved.push(tier);
        }
        variant_tiers.push(resolved);
    }
    if !errors.is_empty() {
        return Err(StoreError::InvalidCatalogue(errors));
    }

    let replace = options.replace;
    let product_ids: HashSet<&str> = catalogue.products.iter().map(|p| p.id.as_str()).collect();
    let variant_ids: HashSet<&str> = catalogue
        .products
        .iter()
        .flat_map(|p| p.variants.iter().map(|v| v.id.as_str()))
        .collect();
    let removed_products: Vec<String> = if replace {
        stored
            .products
            .iter()
            .filter(|id| !product_ids.contains(id.as_str()))
            .cloned()
            .collect()
    } else {
        Vec::new()
    };
    // A product in the document keeps only its listed variants; a removed product's go with it.
    let removed_variants: Vec<String> = stored
        .variants
        .iter()
        .filter(|(id, product)| {
            !variant_ids.contains(id.as_str())
                && (product_ids.contains(product.as_str()) || removed_products.contains(product))
        })
        .map(|(id, _)| id.clone())
        .collect();
    let unlisted = |stored: &HashSet<String>, listed: &HashSet<&str>| -> Vec<String> {
        if replace {
            stored
                .iter()
                .filter(|id| !listed.contains(id.as_str()))
                .cloned()
                .collect()
        } else {
            Vec::new()
        }
    };
    let stored_variant_ids: HashSet<String> = stored.variants.keys().cloned().collect();
    let mut variants = Counts::of(variant_ids.iter().copied(), &stored_variant_ids, false);
    variants.removed = removed_variants.len() as u64;
    let report = ImportReport {
        dry_run: options.dry_run,
        categories: Counts::of(doc_categories.iter().copied(), &stored.categories, replace),
        tags: Counts::of(doc_tags.iter().copied(), &stored.tags, replace),
        tiers: Counts {
            created: tiers.iter().filter(|(_, new)| *new).count() as u64,
            updated: tiers.iter().filter(|(_, new)| !*new).count() as u64,
            removed: 0,
        },
        products: Counts::of(product_ids.iter().copied(), &stored.products, replace),
        variants,
        version: 0,
    };
    Ok(Plan {
        tiers,
        variant_tiers,
        removed_products,
        removed_variants,
        removed_categories: unlisted(&stored.categories, &doc_categories),
        removed_tags: unlisted(&stored.tags, &doc_tags),
        report,
    })
}

/// Little-endian f32s, as the `embedding` column holds them.
pub(crate) fn embedding_bytes(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Runs `DELETE FROM $table WHERE campaign_id = $1 AND $column IN (...)` for `ids`, in chunks.
macro_rules! delete_in {
    ($tx:expr, $table:literal, $column:literal, $campaign:expr, $ids:expr) => {
        for chunk in $ids.chunks(CHUNK) {
            let mut delete =
                sqlx::QueryBuilder::new(concat!("DELETE FROM ", $table, " WHERE campaign_id = "));
            delete.push_bind($campaign);
            delete.push(concat!(" AND ", $column, " IN ("));
            let mut list = delete.separated(", ");
            for id in chunk {
                list.push_bind(id);
            }
            delete.push(")");
            delete.build().execute(&mut *$tx).await?;
        }
    };
}

impl Store {
    /// Checks `catalogue` against what the campaign holds and applies it in one transaction
    /// (none of it when anything is wrong: `InvalidCatalogue` lists every problem).
    pub async fn import_catalogue(
        &self,
        campaign: &Campaign,
        catalogue: &Catalogue,
        options: ImportOptions,
    ) -> Result<ImportReport, StoreError> {
        let at = now();
        let c = campaign.id.as_str();
        with_writer!(self, |pool| {
            async {
            let mut tx = pool.begin_write().await?;
            // First, so that imports of one campaign queue here (the row is locked until commit).
            let (version,): (i64,) = sqlx::query_as(
                "INSERT INTO catalogue_versions (campaign_id, version, updated_at) VALUES ($1, 1, $2) \
                 ON CONFLICT (campaign_id) DO UPDATE SET version = catalogue_versions.version + 1, \
                 updated_at = excluded.updated_at RETURNING version",
            )
            .bind(c)
            .bind(at)
            .fetch_one(&mut *tx)
            .await?;

            let mut stored = Stored::default();
            for (table, into) in [("categories", &mut stored.categories), ("tags", &mut stored.tags), ("products", &mut stored.products)] {
                let rows: Vec<(String,)> = sqlx::query_as(sqlx::AssertSqlSafe(format!(
                    "SELECT id FROM {table} WHERE campaign_id = $1"
                )))
                .bind(c)
                .fetch_all(&mut *tx)
                .await?;
                into.extend(rows.into_iter().map(|(id,)| id));
            }
            stored.variants = sqlx::query_as("SELECT id, product_id FROM variants WHERE campaign_id = $1")
                .bind(c)
                .fetch_all(&mut *tx)
                .await?
                .into_iter()
                .collect();
            stored.tiers = sqlx::query_as("SELECT id, name, handle FROM tiers WHERE campaign_id = $1")
                .bind(c)
                .fetch_all(&mut *tx)
                .await?;
            let mut plan = plan(catalogue, &stored, options)?;

            // The document's id becomes the tier's handle unless it is the service's own id.
            const NEW_TIER: &str = "INSERT INTO tiers (id, org_id, campaign_id, name, precedence, \
                 threshold, benefits, image_url, handle, created_at) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
            const UPDATE_TIER: &str = "UPDATE tiers SET name = $4, precedence = $5, threshold = $6, \
                 benefits = $7, image_url = $8, handle = COALESCE($9, handle) \
                 WHERE id = $1 AND org_id = $2 AND campaign_id = $3";
            for (tier, (id, new)) in catalogue.tiers.iter().zip(&plan.tiers) {
                let handle = tier.id.as_ref().filter(|doc_id| *doc_id != id);
                let query = sqlx::query(if *new { NEW_TIER } else { UPDATE_TIER })
                    .bind(id)
                    .bind(&campaign.org_id)
                    .bind(c)
                    .bind(&tier.name)
                    .bind(tier.precedence)
                    .bind(tier.threshold.micros())
                    .bind(Json(&tier.benefits))
                    .bind(&tier.image_url)
                    .bind(handle);
                let query = if *new { query.bind(at) } else { query };
                query
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| crate::error::conflict_on(e, &[("name", "tiers")]))?;
            }

            for (table, rows) in [
                ("categories", catalogue.categories.iter().map(|x| (&x.id, &x.name)).collect::<Vec<_>>()),
                ("tags", catalogue.tags.iter().map(|x| (&x.id, &x.name)).collect()),
            ] {
                for (n, chunk) in rows.chunks(CHUNK).enumerate() {
                    let mut upsert = sqlx::QueryBuilder::new(format!(
                        "INSERT INTO {table} (campaign_id, id, name, position) "
                    ));
                    upsert.push_values(chunk.iter().enumerate(), |mut row, (i, (id, name))| {
                        row.push_bind(c)
                            .push_bind(*id)
                            .push_bind(*name)
                            .push_bind((n * CHUNK + i) as i64);
                    });
                    upsert.push(
                        " ON CONFLICT (campaign_id, id) DO UPDATE SET name = excluded.name, \
                         position = excluded.position",
                    );
                    upsert.build().execute(&mut *tx).await?;
                }
            }

            delete_in!(tx, "products", "id", c, plan.removed_products);
            for (n, chunk) in catalogue.products.chunks(CHUNK).enumerate() {
                let mut upsert = sqlx::QueryBuilder::new(
                    "INSERT INTO products (campaign_id, id, name, short_description, description, \
                     book_in_advance, category_id, primary_image, secondary_images, website, weekdays, \
                     weight, embedding, position, created_at, updated_at) ",
                );
                upsert.push_values(chunk.iter().enumerate(), |mut row, (i, p)| {
                    row.push_bind(c)
                        .push_bind(&p.id)
                        .push_bind(&p.name)
                        .push_bind(&p.short_description)
                        .push_bind(&p.description)
                        .push_bind(p.book_in_advance)
                        .push_bind(&p.category)
                        .push_bind(&p.primary_image)
                        .push_bind(Json(&p.secondary_images))
                        .push_bind(&p.website)
                        .push_bind(Json(p.weekdays))
                        .push_bind(p.weight)
                        .push_bind(p.embedding.as_deref().map(embedding_bytes))
                        .push_bind((n * CHUNK + i) as i64)
                        .push_bind(at)
                        .push_bind(at);
                });
                upsert.push(
                    " ON CONFLICT (campaign_id, id) DO UPDATE SET name = excluded.name, \
                     short_description = excluded.short_description, description = excluded.description, \
                     book_in_advance = excluded.book_in_advance, category_id = excluded.category_id, \
                     primary_image = excluded.primary_image, secondary_images = excluded.secondary_images, \
                     website = excluded.website, weekdays = excluded.weekdays, weight = excluded.weight, \
                     embedding = excluded.embedding, position = excluded.position, \
                     updated_at = excluded.updated_at",
                );
                upsert.build().execute(&mut *tx).await?;
                let ids: Vec<&str> = chunk.iter().map(|p| p.id.as_str()).collect();
                delete_in!(tx, "product_tags", "product_id", c, ids);
                delete_in!(tx, "branches", "product_id", c, ids);
            }
            let tags: Vec<(&str, &str, usize)> = catalogue
                .products
                .iter()
                .flat_map(|p| p.tags.iter().enumerate().map(|(i, t)| (p.id.as_str(), t.as_str(), i)))
                .collect();
            for chunk in tags.chunks(CHUNK) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO product_tags (campaign_id, product_id, tag_id, position) ",
                );
                insert.push_values(chunk, |mut row, (product, tag, i)| {
                    row.push_bind(c).push_bind(*product).push_bind(*tag).push_bind(*i as i64);
                });
                insert.build().execute(&mut *tx).await?;
            }
            let branches: Vec<(&str, &super::Branch, usize)> = catalogue
                .products
                .iter()
                .flat_map(|p| p.branches.iter().enumerate().map(|(i, b)| (p.id.as_str(), b, i)))
                .collect();
            for chunk in branches.chunks(CHUNK) {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO branches (campaign_id, product_id, id, name, address, contact_details, \
                     position) ",
                );
                insert.push_values(chunk, |mut row, (product, b, i)| {
                    row.push_bind(c)
                        .push_bind(*product)
                        .push_bind(&b.id)
                        .push_bind(&b.name)
                        .push_bind(b.address.as_ref().map(Json))
                        .push_bind(b.contact_details.as_ref().map(Json))
                        .push_bind(*i as i64);
                });
                insert.build().execute(&mut *tx).await?;
            }

            delete_in!(tx, "variants", "id", c, plan.removed_variants);
            let variants: Vec<(&str, &super::document::VariantEntry, &Option<String>, usize)> = catalogue
                .products
                .iter()
                .zip(&plan.variant_tiers)
                .flat_map(|(p, tiers)| {
                    p.variants.iter().zip(tiers).enumerate().map(|(i, (v, t))| (p.id.as_str(), v, t, i))
                })
                .collect();
            for chunk in variants.chunks(CHUNK) {
                let mut upsert = sqlx::QueryBuilder::new(
                    "INSERT INTO variants (campaign_id, id, product_id, name, category, description, \
                     offer_details, terms_and_conditions, price, tier_id, available, stock, position) ",
                );
                upsert.push_values(chunk, |mut row, (product, v, tier, i)| {
                    row.push_bind(c)
                        .push_bind(&v.id)
                        .push_bind(*product)
                        .push_bind(&v.name)
                        .push_bind(&v.category)
                        .push_bind(&v.description)
                        .push_bind(&v.offer_details)
                        .push_bind(&v.terms_and_conditions)
                        .push_bind(v.price.micros())
                        .push_bind(*tier)
                        .push_bind(v.available)
                        .push_bind(v.stock)
                        .push_bind(*i as i64);
                });
                upsert.push(
                    " ON CONFLICT (campaign_id, id) DO UPDATE SET product_id = excluded.product_id, \
                     name = excluded.name, category = excluded.category, description = excluded.description, \
                     offer_details = excluded.offer_details, \
                     terms_and_conditions = excluded.terms_and_conditions, price = excluded.price, \
                     tier_id = excluded.tier_id, available = excluded.available, stock = excluded.stock, \
                     position = excluded.position",
                );
                upsert.build().execute(&mut *tx).await?;
            }
            delete_in!(tx, "categories", "id", c, plan.removed_categories);
            delete_in!(tx, "tags", "id", c, plan.removed_tags);
            if !catalogue.tiers.is_empty() {
                sqlx::query(RETIER).bind(c).execute(&mut *tx).await?;
            }

            if options.dry_run {
                tx.rollback().await?;
                plan.report.version = version - 1;
            } else {
                tx.commit().await?;
                plan.report.version = version;
            }
            Ok::<_, StoreError>(plan.report)
        }
        .await
        })
    }
}
