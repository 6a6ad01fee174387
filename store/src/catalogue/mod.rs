//! The reward catalogue of a campaign: categories, tags, products with their branches and
//! variants, and the campaign's tiers that variants require. Loaded whole from an import
//! document (`document`), applied in one transaction (`import`), read back whole (`read`) for
//! the export and for the search index each node keeps in memory (`index`).

pub(crate) mod document;
mod draw;
mod facts;
pub(crate) mod import;
pub(crate) mod index;
pub(crate) mod read;

use crate::{Tier, Tokens};
pub use document::{Address, Branch, Category, ContactDetails, Tag, Weekdays};

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
