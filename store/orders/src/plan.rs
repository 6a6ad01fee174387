//! What an order comes to, from the catalogue rows its transaction read: each line's variant,
//! price and total, the product summary it keeps, the stock it takes, its inline booking, or
//! every problem with the lines. No I/O: both backends read the rows their own way and share
//! this.

use sqlx::types::Json;

use super::booking::{self, NewBooking};
use super::{NewLine, ProductSummary};
use crate::{FieldProblem, StoreError, Tokens, Weekdays};

row_struct! {
    /// A product as an order line needs it.
    pub(crate) struct ProductRow {
        id: String,
        name: String,
        description: Option<String>,
        primary_image: Option<String>,
        book_in_advance: bool,
        weekdays: Json<Weekdays>,
    }
}

pub(crate) const PRODUCT: &str = "SELECT id, name, description, primary_image, book_in_advance, \
     weekdays FROM products WHERE campaign_id = $1 AND id = $2";

row_struct! {
    /// A variant as an order line needs it, with the threshold of the tier it requires.
    pub(crate) struct VariantRow {
        id: String,
        product_id: String,
        name: String,
        description: Option<String>,
        offer_details: Option<String>,
        terms_and_conditions: Option<String>,
        price: i64,
        available: bool,
        stock: Option<i64>,
        tier_name: Option<String>,
        tier_threshold: Option<i64>,
    }
}

macro_rules! variant_select {
    ($where:literal) => {
        concat!(
            "SELECT v.id, v.product_id, v.name, v.description, v.offer_details, \
             v.terms_and_conditions, v.price, v.available, v.stock, t.name, t.threshold \
             FROM variants v LEFT JOIN tiers t ON t.id = v.tier_id WHERE v.campaign_id = $1 AND ",
            $where,
            " ORDER BY v.position"
        )
    };
}

/// The variant a line names.
pub(crate) const VARIANT: &str = variant_select!("v.id = $2");
/// Every variant of a product: a line that names none takes the product's only one.
pub(crate) const VARIANTS_OF: &str = variant_select!("v.product_id = $2");
/// The ids of a product's branches.
pub(crate) const BRANCHES: &str =
    "SELECT id FROM branches WHERE campaign_id = $1 AND product_id = $2 ORDER BY position";
/// Whether the owner holds a wallet in the campaign (the paying one, when `$4` names it) that
/// has earned the tier's threshold: what a variant that requires a tier asks of a member.
pub(crate) const TIER_REACHED: &str = "SELECT id FROM wallets WHERE campaign_id = $1 \
     AND owner_id = $2 AND earned >= $3 AND ($4 IS NULL OR id = $4) LIMIT 1";

/// What the transaction read for one line.
#[derive(Default)]
pub(crate) struct LineSource {
    pub product: Option<ProductRow>,
    /// The named variant (none or one), or every variant of the product when none was named.
    pub variants: Vec<VariantRow>,
    /// The product's branches, read when the line books inline.
    pub branches: Vec<String>,
    /// The owner reaches the tier the variant requires (true when it requires none).
    pub tier_reached: bool,
}

impl LineSource {
    /// The variant the line will take, when there is exactly one candidate.
    pub(crate) fn variant(&self) -> Option<&VariantRow> {
        match self.variants.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }
}

pub(crate) struct PlannedLine {
    pub id: String,
    pub product_id: String,
    pub variant_id: String,
    pub quantity: u32,
    pub cost: Tokens,
    pub total: Tokens,
    pub requires_booking: bool,
    pub product: ProductSummary,
    /// The inline booking, checked, and the branch it is at.
    pub booking: Option<(NewBooking, Option<String>)>,
}

pub(crate) struct Plan {
    pub lines: Vec<PlannedLine>,
    pub total: Tokens,
    /// Units to take from variants with limited stock, by variant id (the order in which rows
    /// are locked, the same in every transaction), with the first line that takes each.
    pub takes: Vec<(String, i64, usize)>,
}

/// The line's JSON path, for problems.
pub(crate) fn at(i: usize, field: &str) -> String {
    format!("lines[{i}].{field}")
}

/// The order's lines as `sources` show the catalogue; `random_cost` prices a random order's
/// line. Every problem with the lines at once (`Rejected`), else a refusal (tier, stock).
pub(crate) fn plan(
    lines: &[NewLine],
    sources: Vec<LineSource>,
    random_cost: Option<Tokens>,
    now: chrono::DateTime<chrono::Utc>,
) -> Result<Plan, StoreError> {
    let mut problems = Vec::new();
    let mut planned = Vec::new();
    for (i, (line, source)) in lines.iter().zip(&sources).enumerate() {
        let Some(product) = &source.product else {
            problems.push(FieldProblem::new(
                at(i, "productId"),
                format!(
                    "no product `{}` in the campaign's catalogue",
                    line.product_id
                ),
            ));
            continue;
        };
        let variant = match (&line.variant_id, source.variant()) {
            (Some(id), None) => Err(format!("no variant `{id}` in the campaign's catalogue")),
            (Some(_), Some(v)) if v.product_id != product.id => Err(format!(
                "`{}` is a variant of product `{}`, not of `{}`",
                v.id, v.product_id, product.id
            )),
            (None, None) => Err(format!(
                "is required: product `{}` has {} variants",
                product.id,
                source.variants.len()
            )),
            (_, Some(v)) if !v.available => Err(format!("`{}` is not available", v.id)),
            (_, Some(v)) => Ok(v),
        };
        let variant = match variant {
            Ok(v) => v,
            Err(message) => {
                problems.push(FieldProblem::new(at(i, "variantId"), message));
                continue;
            }
        };
        let booking = match &line.booking {
            None => None,
            Some(_) if !product.book_in_advance => {
                problems.push(FieldProblem::new(
                    at(i, "booking"),
                    format!("product `{}` is not booked in advance", product.id),
                ));
                None
            }
            Some(booking) => {
                let path = format!("lines[{i}].booking");
                let rules = booking::Rules {
                    weekdays: product.weekdays.0,
                    branches: &source.branches,
                };
                rules
                    .check(&path, booking, now, &mut problems)
                    .map(|branch| (booking.clone(), branch))
            }
        };
        let cost = random_cost.unwrap_or(Tokens::from_micros(variant.price));
        let total = cost
            .micros()
            .checked_mul(i64::from(line.quantity))
            .map(Tokens::from_micros)
            .filter(|total| *total <= Tokens::MAX);
        let Some(total) = total else {
            problems.push(FieldProblem::new(
                at(i, "quantity"),
                "the line's total is more tokens than an order can hold",
            ));
            continue;
        };
        planned.push(PlannedLine {
            id: crate::new_id(),
            product_id: product.id.clone(),
            variant_id: variant.id.clone(),
            quantity: line.quantity,
            cost,
            total,
            requires_booking: product.book_in_advance,
            product: ProductSummary {
                name: product.name.clone(),
                variant: variant.name.clone(),
                description: product.description.clone(),
                primary_image: product.primary_image.clone(),
                variant_description: variant.description.clone(),
                offer_details: variant.offer_details.clone(),
                terms_and_conditions: variant.terms_and_conditions.clone(),
            },
            booking,
        });
    }
    if !problems.is_empty() {
        return Err(StoreError::Rejected(problems));
    }
    let mut total = Tokens::ZERO;
    for line in &planned {
        let sum = total
            .checked_add(line.total)
            .filter(|sum| *sum <= Tokens::MAX);
        total = sum.ok_or_else(|| {
            StoreError::Rejected(vec![FieldProblem::new(
                "lines",
                "the order's total is more tokens than an order can hold",
            )])
        })?;
    }
    for (i, source) in sources.iter().enumerate() {
        if !source.tier_reached {
            let variant = source.variant().expect("planned lines have their variant");
            return Err(StoreError::refused(
                "tier_required",
                Some(at(i, "variantId")),
                format!(
                    "`{}` requires the tier {}: the owner holds no wallet in the campaign that reached it",
                    variant.id,
                    variant.tier_name.as_deref().unwrap_or_default()
                ),
            ));
        }
    }
    let mut takes: Vec<(String, i64, usize)> = Vec::new();
    for (i, (line, source)) in planned.iter().zip(&sources).enumerate() {
        if source.variant().is_some_and(|v| v.stock.is_some()) {
            match takes.iter_mut().find(|(id, ..)| *id == line.variant_id) {
                Some((_, units, _)) => *units += i64::from(line.quantity),
                None => takes.push((line.variant_id.clone(), i64::from(line.quantity), i)),
            }
        }
    }
    takes.sort();
    for (id, units, i) in &takes {
        let left = sources[*i].variant().and_then(|v| v.stock).unwrap_or(0);
        if left < *units {
            return Err(out_of_stock(*i, id, left));
        }
    }
    Ok(Plan {
        lines: planned,
        total,
        takes,
    })
}

/// The refusal of a line whose variant has fewer than the units asked for.
pub(crate) fn out_of_stock(line: usize, variant_id: &str, left: i64) -> StoreError {
    let message = match left {
        0 => format!("`{variant_id}` is sold out"),
        left => format!("`{variant_id}` has {left} units left"),
    };
    StoreError::refused("out_of_stock", Some(at(line, "variantId")), message)
}
