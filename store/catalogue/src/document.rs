//! The catalogue import document (see `templates/catalogue.md` and its JSON Schema): read from
//! JSON with every problem reported at once, each with its JSON path
//! (`products[12].variants[0].price: must be more than 0`), and written back by the export.

use std::collections::HashSet;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::{FieldProblem, Problems, Tokens};

use crate::limits::{self, MAX_ID, Refused};

/// Ids (texts of at most `MAX_ID` characters) name things in paths and filters: no control
/// character (NUL, line break, tab...) in them.
/// Longest name, free text and address accepted in a catalogue.
pub const MAX_NAME: usize = 200;
pub const MAX_TEXT: usize = 10_000;
pub use seam::limits::MAX_URL;
/// Largest embedding accepted.
pub const MAX_DIMENSIONS: usize = 4_096;
/// Highest price, in tokens.
const MAX_PRICE: i64 = 1_000_000_000_000;

/// A whole catalogue, as imported and exported.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Catalogue {
    pub categories: Vec<Category>,
    pub tags: Vec<Tag>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub tiers: Vec<TierEntry>,
    pub products: Vec<ProductEntry>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Category {
    pub id: String,
    pub name: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Tag {
    pub id: String,
    pub name: String,
}

/// A tier as the document holds it: matched to the campaign's tiers by `id`, else by `name`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TierEntry {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    pub name: String,
    pub precedence: i64,
    pub threshold: Tokens,
    pub benefits: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image_url: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProductEntry {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub short_description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub book_in_advance: bool,
    /// Tag ids.
    pub tags: Vec<String>,
    /// A category id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub primary_image: Option<String>,
    pub secondary_images: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub website: Option<String>,
    pub weekdays: Weekdays,
    pub weight: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
    pub branches: Vec<Branch>,
    pub variants: Vec<VariantEntry>,
}

/// The days of the week a product can be booked or redeemed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct Weekdays {
    pub mon: bool,
    pub tue: bool,
    pub wed: bool,
    pub thu: bool,
    pub fri: bool,
    pub sat: bool,
    pub sun: bool,
}

impl Default for Weekdays {
    /// Every day.
    fn default() -> Self {
        Weekdays {
            mon: true,
            tue: true,
            wed: true,
            thu: true,
            fri: true,
            sat: true,
            sun: true,
        }
    }
}

impl Weekdays {
    /// Whether the product can be booked on `day`.
    pub fn allows(&self, day: chrono::Weekday) -> bool {
        use chrono::Weekday::*;
        match day {
            Mon => self.mon,
            Tue => self.tue,
            Wed => self.wed,
            Thu => self.thu,
            Fri => self.fri,
            Sat => self.sat,
            Sun => self.sun,
        }
    }
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

// The fields each part of the document may hold (`catalogue.schema.json` lists the same).
const DOCUMENT_FIELDS: [&str; 5] = ["$schema", "categories", "tags", "tiers", "products"];
const TIER_FIELDS: [&str; 6] = [
    "id",
    "name",
    "precedence",
    "threshold",
    "benefits",
    "imageUrl",
];
const PRODUCT_FIELDS: [&str; 15] = [
    "id",
    "name",
    "shortDescription",
    "description",
    "bookInAdvance",
    "tags",
    "category",
    "primaryImage",
    "secondaryImages",
    "website",
    "weekdays",
    "weight",
    "embedding",
    "branches",
    "variants",
];
const VARIANT_FIELDS: [&str; 10] = [
    "id",
    "name",
    "category",
    "description",
    "offerDetails",
    "termsAndConditions",
    "price",
    "tier",
    "available",
    "stock",
];
const BRANCH_FIELDS: [&str; 4] = ["id", "name", "address", "contactDetails"];
const CONTACT_FIELDS: [&str; 3] = ["contactName", "email", "phoneNumber"];

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Branch {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<Address>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_details: Option<ContactDetails>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Address {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_line1: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_line2: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address_line3: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suburb: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub city: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub province: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub postal_code: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub latitude: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub longitude: Option<f64>,
}

const ADDRESS_LINES: [&str; 8] = [
    "addressLine1",
    "addressLine2",
    "addressLine3",
    "suburb",
    "city",
    "province",
    "country",
    "postalCode",
];

#[derive(Debug, Clone, Default, PartialEq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContactDetails {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub contact_name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub email: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phone_number: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VariantEntry {
    pub id: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub category: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub offer_details: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub terms_and_conditions: Option<String>,
    pub price: Tokens,
    /// A tier id or name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier: Option<String>,
    pub available: bool,
    /// Units left; `None` when not limited.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stock: Option<i64>,
}

impl Catalogue {
    /// Reads a document from JSON text; every problem it has, when it has any.
    pub fn from_json(text: &[u8]) -> Result<Catalogue, Vec<FieldProblem>> {
        match Catalogue::read(text) {
            (Some(catalogue), problems) if problems.is_empty() => Ok(catalogue),
            (_, problems) => Err(problems),
        }
    }

    /// Reads a document from JSON text as far as it reads: what it holds (its faulty values
    /// left at their defaults; none when the text is not JSON) and every problem found.
    pub fn read(text: &[u8]) -> (Option<Catalogue>, Vec<FieldProblem>) {
        let value: Value = match serde_json::from_slice(text) {
            Ok(value) => value,
            Err(e) => {
                let not_json = FieldProblem {
                    path: "$".into(),
                    message: format!("not JSON: {e}"),
                };
                return (None, vec![not_json]);
            }
        };
        let mut r = Reader(Problems::new("field"));
        let catalogue = r.catalogue(&value);
        (Some(catalogue), r.0.into_found())
    }

    /// Reads a document; every problem it has, when it has any. References between its parts
    /// are checked too, except those the store resolves (tiers, and categories and tags kept
    /// from an earlier import).
    pub fn from_value(value: &Value) -> Result<Catalogue, Vec<FieldProblem>> {
        let mut r = Reader(Problems::new("field"));
        let catalogue = r.catalogue(value);
        r.0.finish(catalogue)
    }

    /// The embedding dimension its products share, if they carry embeddings.
    pub fn dimensions(&self) -> Option<usize> {
        self.products
            .iter()
            .find_map(|p| p.embedding.as_ref().map(Vec::len))
    }
}

/// `limits`' check of a text (`trimmed` of `raw`): an id (`max` of `MAX_ID`) is checked as given,
/// so a tab or line break around it is refused rather than trimmed away.
fn checked(raw: &str, trimmed: &str, max: usize) -> Result<(), Refused> {
    if max == MAX_ID && raw.chars().any(char::is_control) {
        return Err(Refused::ControlCharacter);
    }
    limits::text(trimmed, max)
}

/// Walks a document with `Problems`: the catalogue's own parts (texts, numbers, tokens, ids
/// that must be unique) on top of the shared reading of objects and lists.
struct Reader(Problems);

impl std::ops::Deref for Reader {
    type Target = Problems;
    fn deref(&self) -> &Problems {
        &self.0
    }
}

impl std::ops::DerefMut for Reader {
    fn deref_mut(&mut self) -> &mut Problems {
        &mut self.0
    }
}

impl Reader {
    fn text(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        path: &str,
        max: usize,
        required: bool,
    ) -> Option<String> {
        let at = || format!("{path}.{key}");
        match object.get(key) {
            None | Some(Value::Null) => {
                if required {
                    self.fail(at(), "is required");
                }
                None
            }
            Some(Value::String(raw)) => {
                let s = raw.trim();
                let control_in_id = max == MAX_ID && raw.chars().any(char::is_control);
                if s.is_empty() && !control_in_id {
                    if required {
                        self.fail(at(), Refused::Blank.message());
                    }
                    return None;
                }
                match checked(raw, s, max) {
                    Ok(()) => Some(s.to_string()),
                    Err(refused) => {
                        self.fail(at(), refused.message());
                        None
                    }
                }
            }
            Some(_) => {
                self.fail(at(), "must be a string");
                None
            }
        }
    }

    fn id(&mut self, object: &Map<String, Value>, key: &str, path: &str) -> String {
        self.text(object, key, path, MAX_ID, true)
            .unwrap_or_default()
    }

    fn name(&mut self, object: &Map<String, Value>, key: &str, path: &str) -> String {
        self.text(object, key, path, MAX_NAME, true)
            .unwrap_or_default()
    }

    fn texts(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        path: &str,
        max: usize,
    ) -> Vec<String> {
        let items = self.list(object, key, path);
        let mut out = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let at = || format!("{path}.{key}[{i}]");
            match item.as_str() {
                Some(raw) if !raw.trim().is_empty() => match checked(raw, raw.trim(), max) {
                    Ok(()) => out.push(raw.trim().to_string()),
                    Err(refused) => self.fail(at(), refused.message()),
                },
                _ => self.fail(at(), "must be a non-blank string"),
            }
        }
        out
    }

    fn flag(&mut self, object: &Map<String, Value>, key: &str, path: &str, default: bool) -> bool {
        match object.get(key) {
            None | Some(Value::Null) => default,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                self.fail(format!("{path}.{key}"), "must be true or false");
                default
            }
        }
    }

    /// A finite number within `range`.
    fn number(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        path: &str,
        range: std::ops::RangeInclusive<f64>,
    ) -> Option<f64> {
        let value = object.get(key).filter(|v| !v.is_null())?;
        match value.as_f64() {
            Some(n) if n.is_finite() && range.contains(&n) => Some(n),
            Some(_) => {
                self.fail(
                    format!("{path}.{key}"),
                    format!("must be from {} to {}", range.start(), range.end()),
                );
                None
            }
            None => {
                self.fail(format!("{path}.{key}"), "must be a number");
                None
            }
        }
    }

    /// A whole number within `range`.
    fn whole(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        path: &str,
        range: std::ops::RangeInclusive<i64>,
    ) -> Option<i64> {
        let value = object.get(key).filter(|v| !v.is_null())?;
        match value.as_i64() {
            Some(n) if range.contains(&n) => Some(n),
            _ => {
                self.fail(
                    format!("{path}.{key}"),
                    format!(
                        "must be a whole number from {} to {}",
                        range.start(),
                        range.end()
                    ),
                );
                None
            }
        }
    }

    /// An exact token amount from a JSON number; `positive` refuses zero.
    fn tokens(
        &mut self,
        object: &Map<String, Value>,
        key: &str,
        path: &str,
        positive: bool,
    ) -> Option<Tokens> {
        let at = format!("{path}.{key}");
        let value = object.get(key).filter(|v| !v.is_null())?;
        let Value::Number(n) = value else {
            self.fail(at, "must be a number");
            return None;
        };
        match Tokens::from_text(&n.to_string()) {
            Ok(t) if positive && !t.is_positive() => self.fail(at, "must be more than 0"),
            Ok(t) if t < Tokens::ZERO => self.fail(at, "must not be negative"),
            Ok(t) if t > Tokens::whole(MAX_PRICE) => {
                self.fail(at, format!("must be at most {MAX_PRICE}"));
            }
            Ok(t) => return Some(t),
            Err(e) => self.fail(
                at,
                format!("must be an amount of tokens with at most 6 decimals ({e})"),
            ),
        }
        None
    }

    /// Notes `id` as seen at `path`; a repeat is a problem.
    fn unique(&mut self, seen: &mut HashSet<String>, id: &str, path: String, what: &str) {
        if !id.is_empty() && !seen.insert(id.to_string()) {
            self.fail(path, format!("{what} `{id}` appears more than once"));
        }
    }

    fn catalogue(&mut self, value: &Value) -> Catalogue {
        let Some(doc) = self.object(value, "$", &DOCUMENT_FIELDS) else {
            return Catalogue::default();
        };
        // Where editors find the JSON Schema; not read otherwise.
        if doc.get("$schema").is_some_and(|s| !s.is_string()) {
            self.fail(
                "$schema",
                "must be a string (the address of the JSON Schema)",
            );
        }
        let mut catalogue = Catalogue::default();
        let (mut ids, mut names) = (HashSet::new(), HashSet::new());
        for (i, item) in self.list(doc, "categories", "$").iter().enumerate() {
            let path = format!("categories[{i}]");
            if let Some(o) = self.object(item, &path, &["id", "name"]) {
                let (id, name) = (self.id(o, "id", &path), self.name(o, "name", &path));
                self.unique(&mut ids, &id, format!("{path}.id"), "category");
                self.unique(
                    &mut names,
                    &name.to_lowercase(),
                    format!("{path}.name"),
                    "category name",
                );
                catalogue.categories.push(Category { id, name });
            }
        }
        let mut tag_ids = HashSet::new();
        for (i, item) in self.list(doc, "tags", "$").iter().enumerate() {
            let path = format!("tags[{i}]");
            if let Some(o) = self.object(item, &path, &["id", "name"]) {
                let (id, name) = (self.id(o, "id", &path), self.name(o, "name", &path));
                self.unique(&mut tag_ids, &id, format!("{path}.id"), "tag");
                catalogue.tags.push(Tag { id, name });
            }
        }
        let (mut tier_ids, mut tier_names) = (HashSet::new(), HashSet::new());
        for (i, item) in self.list(doc, "tiers", "$").iter().enumerate() {
            let path = format!("tiers[{i}]");
            if let Some(tier) = self.tier(item, &path) {
                if let Some(id) = &tier.id {
                    self.unique(&mut tier_ids, id, format!("{path}.id"), "tier");
                }
                self.unique(
                    &mut tier_names,
                    &tier.name,
                    format!("{path}.name"),
                    "tier name",
                );
                catalogue.tiers.push(tier);
            }
        }
        let (mut product_ids, mut variant_ids) = (HashSet::new(), HashSet::new());
        for (i, item) in self.list(doc, "products", "$").iter().enumerate() {
            let path = format!("products[{i}]");
            if let Some(product) = self.product(item, &path, &mut variant_ids) {
                self.unique(
                    &mut product_ids,
                    &product.id,
                    format!("{path}.id"),
                    "product",
                );
                catalogue.products.push(product);
            }
        }
        self.embeddings(&catalogue);
        catalogue
    }

    fn tier(&mut self, item: &Value, path: &str) -> Option<TierEntry> {
        let o = self.object(item, path, &TIER_FIELDS)?;
        let id = self.text(o, "id", path, MAX_ID, false);
        let name = self.name(o, "name", path);
        let precedence = self.whole(o, "precedence", path, 0..=1_000_000);
        if precedence.is_none() && o.get("precedence").is_none_or(Value::is_null) {
            self.fail(format!("{path}.precedence"), "is required");
        }
        Some(TierEntry {
            id,
            name,
            precedence: precedence.unwrap_or_default(),
            threshold: self.tokens(o, "threshold", path, false).unwrap_or_default(),
            benefits: self.texts(o, "benefits", path, MAX_NAME),
            image_url: self.text(o, "imageUrl", path, MAX_URL, false),
        })
    }

    fn product(
        &mut self,
        item: &Value,
        path: &str,
        variant_ids: &mut HashSet<String>,
    ) -> Option<ProductEntry> {
        let o = self.object(item, path, &PRODUCT_FIELDS)?;
        let mut product = ProductEntry {
            id: self.id(o, "id", path),
            name: self.name(o, "name", path),
            short_description: self.text(o, "shortDescription", path, MAX_TEXT, false),
            description: self.text(o, "description", path, MAX_TEXT, false),
            book_in_advance: self.flag(o, "bookInAdvance", path, false),
            tags: self.texts(o, "tags", path, MAX_ID),
            category: self.text(o, "category", path, MAX_ID, false),
            primary_image: self.text(o, "primaryImage", path, MAX_URL, false),
            secondary_images: self.texts(o, "secondaryImages", path, MAX_URL),
            website: self.text(o, "website", path, MAX_URL, false),
            weekdays: self.weekdays(o, path),
            weight: self.number(o, "weight", path, 0.0..=1e9).unwrap_or(1.0),
            embedding: self.embedding(o, path),
            branches: Vec::new(),
            variants: Vec::new(),
        };
        let mut seen = HashSet::new();
        for (j, tag) in product.tags.iter().enumerate() {
            self.unique(&mut seen, tag, format!("{path}.tags[{j}]"), "tag");
        }
        let mut branch_ids = HashSet::new();
        for (j, item) in self.list(o, "branches", path).iter().enumerate() {
            let at = format!("{path}.branches[{j}]");
            if let Some(branch) = self.branch(item, &at) {
                self.unique(&mut branch_ids, &branch.id, format!("{at}.id"), "branch");
                product.branches.push(branch);
            }
        }
        for (j, item) in self.list(o, "variants", path).iter().enumerate() {
            let at = format!("{path}.variants[{j}]");
            if let Some(variant) = self.variant(item, &at) {
                self.unique(variant_ids, &variant.id, format!("{at}.id"), "variant");
                product.variants.push(variant);
            }
        }
        Some(product)
    }

    fn weekdays(&mut self, o: &Map<String, Value>, path: &str) -> Weekdays {
        let Some(value) = o.get("weekdays").filter(|v| !v.is_null()) else {
            return Weekdays::default();
        };
        let path = format!("{path}.weekdays");
        let Some(days) = self.object(value, &path, &DAYS) else {
            return Weekdays::default();
        };
        // A day left out is a day the product is not offered.
        let mut flags = DAYS.map(|day| self.flag(days, day, &path, false));
        if !days.is_empty() && flags.iter().all(|f| !f) {
            self.fail(path, "must allow at least one day");
            flags = [true; 7];
        }
        let [mon, tue, wed, thu, fri, sat, sun] = flags;
        Weekdays {
            mon,
            tue,
            wed,
            thu,
            fri,
            sat,
            sun,
        }
    }

    fn embedding(&mut self, o: &Map<String, Value>, path: &str) -> Option<Vec<f32>> {
        let value = o.get("embedding").filter(|v| !v.is_null())?;
        let at = format!("{path}.embedding");
        let Some(items) = value.as_array() else {
            self.fail(at, "must be an array of numbers");
            return None;
        };
        if items.is_empty() || items.len() > MAX_DIMENSIONS {
            self.fail(at, format!("must hold 1 to {MAX_DIMENSIONS} numbers"));
            return None;
        }
        let vector: Option<Vec<f32>> = items
            .iter()
            .map(|n| n.as_f64().map(|n| n as f32).filter(|n| n.is_finite()))
            .collect();
        match vector {
            // Judged as the index will: a vector too small to have a length has no direction.
            Some(v) if search::vectors::normalised(&v).is_none() => {
                self.fail(at, "must not be all zeros (it has no direction)");
                None
            }
            Some(v) => Some(v),
            None => {
                self.fail(at, "must hold only finite numbers");
                None
            }
        }
    }

    /// A campaign's products share one embedding space: all carry an embedding of one
    /// dimension, or none does (the service then computes its own).
    fn embeddings(&mut self, catalogue: &Catalogue) {
        let Some(dimensions) = catalogue.dimensions() else {
            return;
        };
        for (i, product) in catalogue.products.iter().enumerate() {
            match &product.embedding {
                Some(e) if e.len() != dimensions => self.fail(
                    format!("products[{i}].embedding"),
                    format!(
                        "has {} numbers where the first product with an embedding has {dimensions}",
                        e.len()
                    ),
                ),
                // Unless it was there and refused.
                None if self.has(&format!("products[{i}].embedding")) => {}
                None => self.fail(
                    format!("products[{i}].embedding"),
                    "is required: other products carry embeddings, and a campaign's products \
                     share one embedding space",
                ),
                _ => {}
            }
        }
    }

    fn branch(&mut self, item: &Value, path: &str) -> Option<Branch> {
        let o = self.object(item, path, &BRANCH_FIELDS)?;
        let address = o.get("address").filter(|v| !v.is_null()).and_then(|a| {
            let at = format!("{path}.address");
            let mut known = ADDRESS_LINES.to_vec();
            known.extend(["latitude", "longitude"]);
            let a = self.object(a, &at, &known)?;
            let line = |r: &mut Reader, key| r.text(a, key, &at, MAX_NAME, false);
            let address = Address {
                address_line1: line(self, "addressLine1"),
                address_line2: line(self, "addressLine2"),
                address_line3: line(self, "addressLine3"),
                suburb: line(self, "suburb"),
                city: line(self, "city"),
                province: line(self, "province"),
                country: line(self, "country"),
                postal_code: line(self, "postalCode"),
                latitude: self.number(a, "latitude", &at, -90.0..=90.0),
                longitude: self.number(a, "longitude", &at, -180.0..=180.0),
            };
            if address.latitude.is_some() != address.longitude.is_some() {
                self.fail(at, "needs both latitude and longitude, or neither");
            }
            Some(address)
        });
        let contact_details = o
            .get("contactDetails")
            .filter(|v| !v.is_null())
            .and_then(|c| {
                let at = format!("{path}.contactDetails");
                let c = self.object(c, &at, &CONTACT_FIELDS)?;
                Some(ContactDetails {
                    contact_name: self.text(c, "contactName", &at, MAX_NAME, false),
                    email: self.text(c, "email", &at, 254, false),
                    phone_number: self.text(c, "phoneNumber", &at, 32, false),
                })
            });
        Some(Branch {
            id: self.id(o, "id", path),
            name: self.name(o, "name", path),
            address,
            contact_details,
        })
    }

    fn variant(&mut self, item: &Value, path: &str) -> Option<VariantEntry> {
        let o = self.object(item, path, &VARIANT_FIELDS)?;
        let price = self.tokens(o, "price", path, true);
        if price.is_none() && o.get("price").is_none_or(Value::is_null) {
            self.fail(format!("{path}.price"), "is required");
        }
        Some(VariantEntry {
            id: self.id(o, "id", path),
            name: self.name(o, "name", path),
            category: self.text(o, "category", path, MAX_NAME, false),
            description: self.text(o, "description", path, MAX_TEXT, false),
            offer_details: self.text(o, "offerDetails", path, MAX_TEXT, false),
            terms_and_conditions: self.text(o, "termsAndConditions", path, MAX_TEXT, false),
            price: price.unwrap_or_default(),
            tier: self.text(o, "tier", path, MAX_ID.max(MAX_NAME), false),
            available: self.flag(o, "available", path, true),
            stock: self.whole(o, "stock", path, 0..=1_000_000_000),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn problems(doc: Value) -> Vec<String> {
        Catalogue::from_value(&doc)
            .expect_err("the document has problems")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn a_full_document_reads_with_its_defaults() {
        let doc = json!({
            "categories": [{"id": "food", "name": "Food"}],
            "tags": [{"id": "veg", "name": "Vegetarian"}],
            "tiers": [{"name": "Gold", "precedence": 1, "threshold": 1000}],
            "products": [{
                "id": "p1", "name": "Dinner", "category": "food", "tags": ["veg"],
                "branches": [{"id": "b1", "name": "Centre",
                    "address": {"city": "Cape Town", "latitude": -33.9, "longitude": 18.4}}],
                "variants": [{"id": "v1", "name": "For two", "price": 12.5, "tier": "Gold",
                    "stock": 3}]
            }]
        });
        let catalogue = Catalogue::from_value(&doc).unwrap();
        let product = &catalogue.products[0];
        assert_eq!(product.weight, 1.0);
        assert_eq!(product.weekdays, Weekdays::default());
        assert!(!product.book_in_advance);
        let variant = &product.variants[0];
        assert_eq!(variant.price.to_string(), "12.5");
        assert!(variant.available);
        assert_eq!(variant.stock, Some(3));
        assert_eq!(catalogue.tiers[0].threshold, Tokens::whole(1000));
    }

    #[test]
    fn every_problem_is_reported_with_its_path() {
        let found = problems(json!({
            "categories": [{"id": "a", "name": "A"}, {"id": "a", "name": "B"}],
            "products": [
                {"id": "p1", "name": "", "variants": [{"id": "v1", "name": "V", "price": 0}]},
                {"id": "p1", "name": "P", "colour": "red",
                 "variants": [{"id": "v1", "name": "V", "price": 1.0000001}],
                 "branches": [{"id": "b", "name": "B", "address": {"latitude": 91}}]}
            ]
        }));
        assert_eq!(
            found,
            [
                "categories[1].id: category `a` appears more than once",
                "products[0].name: must not be blank",
                "products[0].variants[0].price: must be more than 0",
                "products[1].colour: unknown field; expected one of id, name, shortDescription, description, bookInAdvance, tags, category, primaryImage, secondaryImages, website, weekdays, weight, embedding, branches, variants",
                "products[1].branches[0].address.latitude: must be from -90 to 90",
                "products[1].variants[0].price: must be an amount of tokens with at most 6 decimals (1.0000001 has more than 6 decimals)",
                "products[1].variants[0].id: variant `v1` appears more than once",
                "products[1].id: product `p1` appears more than once",
            ]
        );
    }

    #[test]
    fn embeddings_share_one_dimension_or_are_all_absent() {
        let found = problems(json!({"products": [
            {"id": "a", "name": "A", "embedding": [1, 0]},
            {"id": "b", "name": "B", "embedding": [1, 0, 0]},
            {"id": "c", "name": "C"},
            {"id": "d", "name": "D", "embedding": [0, 0]},
        ]}));
        assert_eq!(
            found,
            [
                "products[3].embedding: must not be all zeros (it has no direction)",
                "products[1].embedding: has 3 numbers where the first product with an embedding has 2",
                "products[2].embedding: is required: other products carry embeddings, and a campaign's products share one embedding space",
            ]
        );
    }

    /// The JSON Schema beside the format's description allows exactly the fields read here.
    #[test]
    fn the_json_schema_names_the_fields_the_reader_knows() {
        let schema: Value =
            serde_json::from_str(include_str!("../../../templates/catalogue.schema.json")).unwrap();
        let fields = |at: &Value| -> Vec<String> {
            // A part with a rule across its fields is `allOf` [its fields, the rule].
            let at = if at["allOf"].is_array() {
                &at["allOf"][0]
            } else {
                at
            };
            let mut names: Vec<String> = at["properties"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect();
            names.sort();
            names
        };
        let sorted = |known: &[&str]| -> Vec<String> {
            let mut names: Vec<String> = known.iter().map(ToString::to_string).collect();
            names.sort();
            names
        };
        let defs = &schema["$defs"];
        let mut address = ADDRESS_LINES.to_vec();
        address.extend(["latitude", "longitude"]);
        for (part, known) in [
            (&schema, &DOCUMENT_FIELDS[..]),
            (&defs["tier"], &TIER_FIELDS[..]),
            (&defs["product"], &PRODUCT_FIELDS[..]),
            (&defs["variant"], &VARIANT_FIELDS[..]),
            (&defs["branch"], &BRANCH_FIELDS[..]),
            (
                &defs["branch"]["properties"]["contactDetails"],
                &CONTACT_FIELDS[..],
            ),
            (&defs["branch"]["properties"]["address"], &address[..]),
            (&defs["product"]["properties"]["weekdays"], &DAYS[..]),
        ] {
            assert_eq!(fields(part), sorted(known));
        }
    }

    #[test]
    fn the_example_document_reads() {
        let text = include_bytes!("../../../templates/catalogue.json");
        let catalogue = Catalogue::from_json(text).unwrap();
        assert_eq!(catalogue.products.len(), 2);
    }

    #[test]
    fn the_schema_address_is_text_or_absent() {
        assert_eq!(
            problems(json!({"$schema": {}, "products": []})),
            ["$schema: must be a string (the address of the JSON Schema)"]
        );
        assert!(Catalogue::from_value(&json!({"$schema": "./catalogue.schema.json"})).is_ok());
    }

    #[test]
    fn text_that_is_not_json_is_one_problem() {
        let found = Catalogue::from_json(b"{\"products\": [").unwrap_err();
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].path, "$");
        assert!(found[0].message.starts_with("not JSON"), "{}", found[0]);
    }
}
