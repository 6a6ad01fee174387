//! The catalogue's records as the API shows them.

use serde::Serialize;
use store::{Category, Tag, Tier};
use utoipa::ToSchema;

#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierView {
    id: String,
    name: String,
    /// Lower numbers mean higher priority.
    precedence: i64,
    benefits: Vec<String>,
    image_url: Option<String>,
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

#[derive(Debug, Serialize, ToSchema)]
pub struct CategoryView {
    id: String,
    name: String,
}

impl From<Category> for CategoryView {
    fn from(c: Category) -> Self {
        CategoryView {
            id: c.id,
            name: c.name,
        }
    }
}

#[derive(Debug, Serialize, ToSchema)]
pub struct TagView {
    id: String,
    name: String,
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
#[derive(Debug, Serialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ImportReportView {
    dry_run: bool,
    categories: CountsView,
    tags: CountsView,
    /// Tiers are never removed by an import (wallets hold them).
    tiers: CountsView,
    products: CountsView,
    variants: CountsView,
    /// The catalogue's version after the import (unchanged by a dry run).
    version: i64,
}

#[derive(Debug, Serialize, ToSchema)]
pub struct CountsView {
    created: u64,
    updated: u64,
    removed: u64,
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
