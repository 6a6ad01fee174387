//! Applying an import document: whole or not at all, in one transaction. Records are upserted by
//! the client's ids, so importing the same file twice changes nothing; a product in the file is
//! replaced whole (its tags, branches and variants become the file's). With `replace`, what the
//! file no longer holds is removed. Tiers are matched by id, else by name, updated or created,
//! and never removed here (wallets hold them).

use std::collections::{HashMap, HashSet};

use chrono::{DateTime, Utc};
use serde::Serialize;

use super::document::Catalogue;
use crate::FieldProblem;
use crate::backend::{Steps, Tx};
use crate::common::ids::new_id;
use crate::{Campaign, CatalogueStore, StoreError};
use programme::tiers::RETIER;

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

/// The catalogue, imported: a document applied to a campaign in one transaction.
impl CatalogueStore {
    /// Checks `catalogue` against what the campaign holds and applies it in one transaction
    /// (none of it when anything is wrong: `InvalidCatalogue` lists every problem).
    #[tracing::instrument(skip_all)]
    pub async fn import_catalogue(
        &self,
        campaign: &Campaign,
        catalogue: &Catalogue,
        options: ImportOptions,
    ) -> Result<ImportReport, StoreError> {
        let import = Importing {
            campaign: campaign.clone(),
            catalogue: catalogue.clone(),
            options,
            at: self.now(),
        };
        if options.dry_run {
            let mut report = self.try_out(import).await?;
            report.version -= 1;
            Ok(report)
        } else {
            self.write(import).await
        }
    }
}

/// A document read and imported, its problems named in one report.
impl CatalogueStore {
    /// Reads the document in `text` and imports it as `import_catalogue` does. A document that
    /// does not read clean is refused naming every problem at once: what the reading found,
    /// and the references of what did read that are unknown to the document and the campaign
    /// (found by a dry run of it; a reference at a place the reading faulted is not named
    /// twice).
    #[tracing::instrument(skip_all)]
    pub async fn import_document(
        &self,
        campaign: &Campaign,
        text: &[u8],
        options: ImportOptions,
    ) -> Result<ImportReport, StoreError> {
        let (catalogue, mut problems) = Catalogue::read(text);
        let Some(catalogue) = catalogue else {
            return Err(StoreError::InvalidCatalogue(problems));
        };
        if problems.is_empty() {
            return self.import_catalogue(campaign, &catalogue, options).await;
        }
        let dry_run = ImportOptions {
            dry_run: true,
            ..options
        };
        if let Err(StoreError::InvalidCatalogue(references)) =
            self.import_catalogue(campaign, &catalogue, dry_run).await
        {
            let faulted = |path: &str| {
                problems
                    .iter()
                    .any(|p| within(path, &p.path) || within(&p.path, path))
            };
            let new: Vec<FieldProblem> = references
                .into_iter()
                .filter(|r| !faulted(&r.path))
                .collect();
            problems.extend(new);
        }
        Err(StoreError::InvalidCatalogue(problems))
    }
}

/// Whether the place `path` is the place `outer` or inside it (`products[1].category` is inside
/// `products[1]`; `products[10]` is not).
fn within(path: &str, outer: &str) -> bool {
    path.strip_prefix(outer)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

/// An import, applied in one transaction.
struct Importing {
    campaign: Campaign,
    catalogue: Catalogue,
    options: ImportOptions,
    /// When it is applied, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Importing {
    type Output = ImportReport;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<ImportReport, StoreError> {
        let Importing {
            campaign,
            catalogue,
            options,
            at,
        } = self;
        let c = campaign.id.as_str();
        // First, so that imports of one campaign queue here (the row is locked until commit).
        let (version,): (i64,) = tx
            .row(
                "INSERT INTO catalogue_versions (campaign_id, version, updated_at) \
                 VALUES ($1, 1, $2) ON CONFLICT (campaign_id) DO UPDATE \
                 SET version = catalogue_versions.version + 1, updated_at = excluded.updated_at \
                 RETURNING version",
                params![c, at],
            )
            .await?
            .unwrap_or((1,));

        let mut stored = Stored::default();
        let ids = |rows: Vec<(String,)>| rows.into_iter().map(|(id,)| id);
        let campaign_only = params![c];
        stored.categories = ids(tx
            .rows(
                "SELECT id FROM categories WHERE campaign_id = $1",
                campaign_only,
            )
            .await?)
        .collect();
        stored.tags = ids(tx
            .rows("SELECT id FROM tags WHERE campaign_id = $1", campaign_only)
            .await?)
        .collect();
        stored.products = ids(tx
            .rows(
                "SELECT id FROM products WHERE campaign_id = $1",
                campaign_only,
            )
            .await?)
        .collect();
        let variants: Vec<(String, String)> = tx
            .rows(
                "SELECT id, product_id FROM variants WHERE campaign_id = $1",
                campaign_only,
            )
            .await?;
        stored.variants = variants.into_iter().collect();
        stored.tiers = tx
            .rows(
                "SELECT id, name, handle FROM tiers WHERE campaign_id = $1",
                campaign_only,
            )
            .await?;
        let mut plan = plan(&catalogue, &stored, options)?;

        // The document's id becomes the tier's handle unless it is the service's own id.
        const NEW_TIER: &str = "INSERT INTO tiers (id, org_id, campaign_id, name, precedence, \
             threshold, benefits, image_url, handle, created_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)";
        const UPDATE_TIER: &str = "UPDATE tiers SET name = $4, precedence = $5, threshold = $6, \
             benefits = $7, image_url = $8, handle = COALESCE($9, handle) \
             WHERE id = $1 AND org_id = $2 AND campaign_id = $3";
        for (tier, (id, new)) in catalogue.tiers.iter().zip(&plan.tiers) {
            let handle = tier.id.as_ref().filter(|doc_id| *doc_id != id);
            let (benefits, threshold) = (serde_json::json!(tier.benefits), tier.threshold.micros());
            let args = params![
                id,
                campaign.org_id,
                c,
                tier.name,
                tier.precedence,
                threshold,
                benefits,
                tier.image_url,
                handle,
                at
            ];
            let written = if *new {
                tx.execute(NEW_TIER, args).await
            } else {
                tx.execute(UPDATE_TIER, &args[..9]).await
            };
            written.map_err(|e| crate::error::conflict_on(e, &[("name", "tiers")]))?;
        }

        // Each record's place in its list, bound by reference (the longest list decides).
        let longest = catalogue
            .products
            .iter()
            .flat_map(|p| [p.tags.len(), p.branches.len(), p.variants.len()])
            .chain([
                catalogue.products.len(),
                catalogue.categories.len(),
                catalogue.tags.len(),
            ])
            .max()
            .unwrap_or(0);
        let positions: Vec<i64> = (0..longest as i64).collect();
        for (table, named) in [
            (
                "categories",
                catalogue
                    .categories
                    .iter()
                    .map(|x| (&x.id, &x.name))
                    .collect::<Vec<_>>(),
            ),
            (
                "tags",
                catalogue.tags.iter().map(|x| (&x.id, &x.name)).collect(),
            ),
        ] {
            let mut values = Vec::with_capacity(named.len() * 4);
            for ((id, name), position) in named.iter().zip(&positions) {
                values.extend(params![c, *id, *name, *position]);
            }
            let head = format!("INSERT INTO {table} (campaign_id, id, name, position)");
            let tail = "ON CONFLICT (campaign_id, id) DO UPDATE SET name = excluded.name, \
                 position = excluded.position";
            tx.insert_rows(&head, tail, 4, &values).await?;
        }

        const PRODUCTS: &str = "INSERT INTO products (campaign_id, id, name, short_description, \
             description, book_in_advance, category_id, primary_image, secondary_images, website, \
             weekdays, weight, embedding, position, created_at, updated_at)";
        const PRODUCTS_CONFLICT: &str = "ON CONFLICT (campaign_id, id) DO UPDATE SET \
             name = excluded.name, short_description = excluded.short_description, \
             description = excluded.description, book_in_advance = excluded.book_in_advance, \
             category_id = excluded.category_id, primary_image = excluded.primary_image, \
             secondary_images = excluded.secondary_images, website = excluded.website, \
             weekdays = excluded.weekdays, weight = excluded.weight, \
             embedding = excluded.embedding, position = excluded.position, \
             updated_at = excluded.updated_at";
        tx.execute_each(
            "DELETE FROM products WHERE campaign_id = $1 AND id {key}",
            campaign_only,
            &plan.removed_products,
        )
        .await?;
        let product_json: Vec<(serde_json::Value, serde_json::Value, Option<Vec<u8>>)> = catalogue
            .products
            .iter()
            .map(|p| {
                (
                    serde_json::json!(p.secondary_images),
                    serde_json::json!(p.weekdays),
                    p.embedding.as_deref().map(embedding_bytes),
                )
            })
            .collect();
        let mut values = Vec::with_capacity(catalogue.products.len() * 16);
        for ((p, (images, weekdays, embedding)), position) in
            catalogue.products.iter().zip(&product_json).zip(&positions)
        {
            values.extend(params![
                c,
                p.id,
                p.name,
                p.short_description,
                p.description,
                p.book_in_advance,
                p.category,
                p.primary_image,
                *images,
                p.website,
                *weekdays,
                p.weight,
                *embedding,
                *position,
                at,
                at
            ]);
        }
        tx.insert_rows(PRODUCTS, PRODUCTS_CONFLICT, 16, &values)
            .await?;
        let product_ids: Vec<&str> = catalogue.products.iter().map(|p| p.id.as_str()).collect();
        for delete in [
            "DELETE FROM product_tags WHERE campaign_id = $1 AND product_id {key}",
            "DELETE FROM branches WHERE campaign_id = $1 AND product_id {key}",
        ] {
            tx.execute_each(delete, campaign_only, &product_ids).await?;
        }

        let mut values = Vec::new();
        for p in &catalogue.products {
            for (tag, position) in p.tags.iter().zip(&positions) {
                values.extend(params![c, p.id, *tag, *position]);
            }
        }
        tx.insert_rows(
            "INSERT INTO product_tags (campaign_id, product_id, tag_id, position)",
            "",
            4,
            &values,
        )
        .await?;

        let branch_json: Vec<Vec<(Option<serde_json::Value>, Option<serde_json::Value>)>> =
            catalogue
                .products
                .iter()
                .map(|p| {
                    p.branches
                        .iter()
                        .map(|b| {
                            (
                                b.address.as_ref().map(|a| serde_json::json!(a)),
                                b.contact_details.as_ref().map(|d| serde_json::json!(d)),
                            )
                        })
                        .collect()
                })
                .collect();
        let mut values = Vec::new();
        for (p, json) in catalogue.products.iter().zip(&branch_json) {
            for ((b, (address, contact)), position) in p.branches.iter().zip(json).zip(&positions) {
                values.extend(params![
                    c, p.id, b.id, b.name, *address, *contact, *position
                ]);
            }
        }
        tx.insert_rows(
            "INSERT INTO branches (campaign_id, product_id, id, name, address, contact_details, \
             position)",
            "",
            7,
            &values,
        )
        .await?;

        tx.execute_each(
            "DELETE FROM variants WHERE campaign_id = $1 AND id {key}",
            campaign_only,
            &plan.removed_variants,
        )
        .await?;
        const VARIANTS: &str = "INSERT INTO variants (campaign_id, id, product_id, name, category, \
             description, offer_details, terms_and_conditions, price, tier_id, available, stock, \
             position)";
        const VARIANTS_CONFLICT: &str = "ON CONFLICT (campaign_id, id) DO UPDATE SET \
             product_id = excluded.product_id, name = excluded.name, \
             category = excluded.category, description = excluded.description, \
             offer_details = excluded.offer_details, \
             terms_and_conditions = excluded.terms_and_conditions, price = excluded.price, \
             tier_id = excluded.tier_id, available = excluded.available, stock = excluded.stock, \
             position = excluded.position";
        let prices: Vec<Vec<i64>> = catalogue
            .products
            .iter()
            .map(|p| p.variants.iter().map(|v| v.price.micros()).collect())
            .collect();
        let mut values = Vec::new();
        for ((p, tiers), prices) in catalogue
            .products
            .iter()
            .zip(&plan.variant_tiers)
            .zip(&prices)
        {
            for (((v, tier), price), position) in
                p.variants.iter().zip(tiers).zip(prices).zip(&positions)
            {
                values.extend(params![
                    c,
                    v.id,
                    p.id,
                    v.name,
                    v.category,
                    v.description,
                    v.offer_details,
                    v.terms_and_conditions,
                    *price,
                    *tier,
                    v.available,
                    v.stock,
                    *position
                ]);
            }
        }
        tx.insert_rows(VARIANTS, VARIANTS_CONFLICT, 13, &values)
            .await?;
        tx.execute_each(
            "DELETE FROM categories WHERE campaign_id = $1 AND id {key}",
            campaign_only,
            &plan.removed_categories,
        )
        .await?;
        tx.execute_each(
            "DELETE FROM tags WHERE campaign_id = $1 AND id {key}",
            campaign_only,
            &plan.removed_tags,
        )
        .await?;
        if !catalogue.tiers.is_empty() {
            tx.execute(RETIER, params![c, at]).await?;
        }
        plan.report.version = version;
        Ok(plan.report)
    }
}
