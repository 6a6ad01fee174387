//! The reward catalogue of a campaign: categories, tags, products with their branches and
//! variants, and the campaign's tiers that variants require. Loaded whole from an import
//! document (`document`), applied in one transaction (`import`), read back whole (`read`) for
//! the export and for the search index each node keeps in memory (`index`), built from
//! `facts.rs` (what filters read per variant) and `draw.rs` (weighted draws); reached through
//! the `CatalogueStore` handle. It sits on the seam, tenancy (a `Campaign` is its scope), the
//! programme (the tiers a document sets and variants require) and the `search` crate.

pub mod document;
mod draw;
mod facts;
pub mod import;
pub mod index;
pub mod read;

#[macro_use]
extern crate seam;

pub use document::{Address, Branch, Category, ContactDetails, Tag, Weekdays};
use programme::Tier;
use seam::common::problems::Problems;
use seam::{Db, FieldProblem, Page, Paged, StoreError, Tokens, backend, common, error, limits};
use tenancy::Campaign;

/// A product as members see it.
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub id: String,
    pub name: String,
    pub short_description: Option<String>,
    pub description: Option<String>,
    /// Its order lines need a booking.
    pub book_in_advance: bool,
    pub tags: Vec<Tag>,
    pub category: Option<Category>,
    pub primary_image: Option<String>,
    pub secondary_images: Vec<String>,
    pub website: Option<String>,
    pub weekdays: Weekdays,
    /// How likely a random order picks it, relative to the campaign's other products.
    pub weight: f64,
    /// As imported; `None` when the service computes one from the text.
    pub embedding: Option<Vec<f32>>,
    pub branches: Vec<Branch>,
    pub variants: Vec<Variant>,
}

impl Product {
    /// One of its variants can be ordered: available, and in stock where stock is limited.
    pub fn is_available(&self) -> bool {
        self.variants.iter().any(Variant::can_be_ordered)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Variant {
    pub id: String,
    pub name: String,
    pub category: Option<String>,
    pub description: Option<String>,
    pub offer_details: Option<String>,
    pub terms_and_conditions: Option<String>,
    pub price: Tokens,
    /// The tier a member's wallet needs for it.
    pub tier: Option<Tier>,
    pub available: bool,
    /// Units left; `None` when not limited.
    pub stock: Option<i64>,
}

impl Variant {
    pub fn can_be_ordered(&self) -> bool {
        self.available && self.stock.is_none_or(|units| units > 0)
    }
}

/// The campaign's catalogue as stored: imports and reading it back. Cheap to clone.
#[derive(Clone, Debug)]
pub struct CatalogueStore {
    db: Db,
    /// The tiers a document sets and its variants require.
    programme: programme::Programme,
}

impl CatalogueStore {
    /// The catalogues in `programme`'s database.
    pub fn on(programme: programme::Programme) -> CatalogueStore {
        CatalogueStore {
            db: Db::clone(&programme),
            programme,
        }
    }

    fn programme(&self) -> &programme::Programme {
        &self.programme
    }
}

db_handle!(CatalogueStore);
