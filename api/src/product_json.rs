//! The cache of products' rendered JSON that the state holds, one per campaign for the index it
//! last searched; how a product is rendered into it, and answers put together from it, are the
//! catalogue's (`catalogue/rendered.rs`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use store::CatalogueIndex;

/// Each campaign's rendered products, for the index it last searched. Cheap to clone: clones
/// share the cache.
#[derive(Clone, Default)]
pub struct RenderedProducts {
    campaigns: Arc<Mutex<HashMap<String, Arc<Rendered>>>>,
}

impl RenderedProducts {
    /// The rendered products of `index` (the campaign's current one) in `currency`.
    pub fn of(
        &self,
        campaign_id: &str,
        index: &Arc<CatalogueIndex>,
        currency: &str,
    ) -> Arc<Rendered> {
        let mut campaigns = self
            .campaigns
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(rendered) = campaigns.get(campaign_id)
            && rendered.is_for(index, currency)
        {
            return rendered.clone();
        }
        // A new catalogue version: the last one's renderings go with it.
        let rendered = Arc::new(Rendered {
            index: Arc::downgrade(index),
            currency: currency.to_string(),
            products: (0..index.len()).map(|_| OnceLock::new()).collect(),
        });
        campaigns.insert(campaign_id.to_string(), rendered.clone());
        rendered
    }
}

/// One index's products as JSON, each rendered the first time an answer shows it.
pub struct Rendered {
    /// Kept weak, so that the index is not held beyond its own life; while held, its address
    /// cannot be taken by another index.
    pub(crate) index: Weak<CatalogueIndex>,
    pub(crate) currency: String,
    pub(crate) products: Vec<OnceLock<Pieces>>,
}

/// A product's JSON in pieces, so that a geofenced search can order its branches and add
/// distances.
pub(crate) struct Pieces {
    /// The object up to its branches: `{"id":…,"branches":[`.
    pub(crate) head: Box<str>,
    /// Each branch's object without its closing brace (a distance may follow).
    pub(crate) branches: Vec<Box<str>>,
}

impl Rendered {
    pub(crate) fn is_for(&self, index: &Arc<CatalogueIndex>, currency: &str) -> bool {
        std::ptr::eq(self.index.as_ptr(), Arc::as_ptr(index)) && self.currency == currency
    }
}
