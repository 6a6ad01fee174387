//! Realistic catalogues of any size, for demos, tests and benchmarks: the same seed gives the
//! same catalogue. Products are experiences, meals, stays and goods in several categories, with
//! one to three variants at several prices and tiers, some with limited stock, some bookable
//! with branches around Cape Town, Johannesburg and Durban.

use crate::random::Random;
use store::{
    Address, Branch, Catalogue, Category, ContactDetails, ProductEntry, Tag, TierEntry, Tokens,
    VariantEntry, Weekdays,
};

/// (category id, name, nouns, what the variants are)
const CATEGORIES: [(&str, &str, &[&str], &[&str]); 8] = [
    (
        "dining",
        "Dining",
        &[
            "dinner",
            "brunch",
            "tasting menu",
            "braai",
            "picnic",
            "high tea",
            "sushi platter",
            "wine pairing",
        ],
        &["for two", "for four", "family"],
    ),
    (
        "experiences",
        "Experiences",
        &[
            "balloon flight",
            "shark cage dive",
            "paragliding flight",
            "cooking class",
            "wine tour",
            "safari drive",
            "kayak tour",
            "helicopter flip",
        ],
        &["morning", "sunset", "private"],
    ),
    (
        "stays",
        "Stays",
        &[
            "lodge weekend",
            "beach cottage",
            "boutique hotel night",
            "glamping tent",
            "guesthouse stay",
            "game lodge",
        ],
        &["one night", "two nights", "week"],
    ),
    (
        "wellness",
        "Wellness",
        &[
            "spa day",
            "massage",
            "yoga retreat",
            "facial",
            "float session",
            "hot stone treatment",
        ],
        &["60 minutes", "90 minutes", "couples"],
    ),
    (
        "shopping",
        "Shopping",
        &[
            "gift card",
            "sneakers",
            "headphones",
            "coffee machine",
            "backpack",
            "sunglasses",
            "smart watch",
        ],
        &["standard", "deluxe", "limited edition"],
    ),
    (
        "entertainment",
        "Entertainment",
        &[
            "cinema tickets",
            "comedy show",
            "concert tickets",
            "escape room",
            "theatre evening",
            "bowling night",
        ],
        &["single", "pair", "group of six"],
    ),
    (
        "sport",
        "Sport",
        &[
            "golf round",
            "surf lesson",
            "climbing session",
            "tennis clinic",
            "cycling tour",
            "padel court",
        ],
        &["beginner", "improver", "pro"],
    ),
    (
        "family",
        "Family",
        &[
            "zoo visit",
            "aquarium pass",
            "trampoline park",
            "farm day",
            "science centre visit",
            "mini golf",
        ],
        &["child", "adult", "family pass"],
    ),
];

const ADJECTIVES: [&str; 16] = [
    "Classic", "Sunset", "Ultimate", "Hidden", "Coastal", "Mountain", "Vintage", "Urban", "Golden",
    "Wild", "Premium", "Cosy", "Grand", "Secret", "Harbour", "Garden",
];

const TAGS: [(&str, &str); 12] = [
    ("family", "Family friendly"),
    ("outdoor", "Outdoor"),
    ("romantic", "Romantic"),
    ("vegetarian", "Vegetarian"),
    ("adventure", "Adventure"),
    ("weekend", "Weekend"),
    ("kids", "Kids"),
    ("luxury", "Luxury"),
    ("budget", "Budget"),
    ("pet-friendly", "Pet friendly"),
    ("accessible", "Wheelchair accessible"),
    ("new", "New"),
];

/// (city, province, latitude, longitude, suburbs)
const CITIES: [(&str, &str, f64, f64, &[&str]); 3] = [
    (
        "Cape Town",
        "Western Cape",
        -33.9249,
        18.4241,
        &[
            "Gardens",
            "Sea Point",
            "Woodstock",
            "Constantia",
            "Camps Bay",
        ],
    ),
    (
        "Johannesburg",
        "Gauteng",
        -26.2041,
        28.0473,
        &["Rosebank", "Sandton", "Melville", "Parkhurst", "Maboneng"],
    ),
    (
        "Durban",
        "KwaZulu-Natal",
        -29.8587,
        31.0218,
        &["Umhlanga", "Morningside", "Berea", "Glenwood", "Musgrave"],
    ),
];

const TIERS: [(&str, &str, i64, i64); 4] = [
    ("bronze", "Bronze", 4, 0),
    ("silver", "Silver", 3, 1_000),
    ("gold", "Gold", 2, 5_000),
    ("platinum", "Platinum", 1, 20_000),
];

fn title(text: &str) -> String {
    let mut chars = text.chars();
    chars
        .next()
        .map(|c| c.to_uppercase().collect::<String>() + chars.as_str())
        .unwrap_or_default()
}

/// A catalogue of `products` products.
pub fn catalogue(products: usize, seed: u64) -> Catalogue {
    let mut r = Random(seed);
    let mut catalogue = Catalogue {
        categories: CATEGORIES
            .iter()
            .map(|(id, name, _, _)| Category {
                id: id.to_string(),
                name: name.to_string(),
            })
            .collect(),
        tags: TAGS
            .iter()
            .map(|(id, name)| Tag {
                id: id.to_string(),
                name: name.to_string(),
            })
            .collect(),
        tiers: TIERS
            .iter()
            .map(|(id, name, precedence, threshold)| TierEntry {
                id: Some(id.to_string()),
                name: name.to_string(),
                precedence: *precedence,
                threshold: Tokens::whole(*threshold),
                benefits: vec![format!("{name} members' rewards")],
                image_url: Some(format!("https://cdn.example.com/tiers/{id}.png")),
            })
            .collect(),
        products: Vec::with_capacity(products),
    };
    for n in 0..products {
        let (category, _, nouns, kinds) = *r.pick(&CATEGORIES);
        let noun = *r.pick(nouns);
        let adjective = *r.pick(&ADJECTIVES);
        let (city, province, lat, lon, suburbs) = *r.pick(&CITIES);
        let name = format!("{adjective} {noun}");
        let id = format!("p-{n:06}");
        let bookable = matches!(
            category,
            "dining" | "experiences" | "stays" | "wellness" | "sport"
        ) && r.chance(0.6);
        let branches = if matches!(category, "shopping") {
            Vec::new()
        } else {
            (0..1 + r.below(3))
                .map(|b| {
                    let suburb = *r.pick(suburbs);
                    Branch {
                        id: format!("{id}-b{b}"),
                        name: format!("{name}, {suburb}"),
                        address: Some(Address {
                            address_line1: Some(format!("{} {} Road", 1 + r.below(200), suburb)),
                            suburb: Some(suburb.to_string()),
                            city: Some(city.to_string()),
                            province: Some(province.to_string()),
                            country: Some("ZA".to_string()),
                            postal_code: Some(format!("{:04}", 1000 + r.below(8999))),
                            // Within about 25 km of the centre.
                            latitude: Some(lat + r.unit() * 0.22),
                            longitude: Some(lon + r.unit() * 0.25),
                            ..Default::default()
                        }),
                        contact_details: Some(ContactDetails {
                            contact_name: Some("Reservations".into()),
                            email: Some(format!("bookings+{n}@partner.example.com")),
                            phone_number: Some(format!("+27 21 555 {:04}", r.below(10_000))),
                        }),
                    }
                })
                .collect()
        };
        let base = [150, 300, 500, 800, 1_200, 2_000, 3_500, 6_000, 12_000][r.below(9)];
        let variants = (0..1 + r.below(3))
            .map(|v| {
                let kind = kinds[v % kinds.len()];
                let tier =
                    (v > 0 || r.chance(0.15)).then(|| TIERS[r.below(TIERS.len())].0.to_string());
                VariantEntry {
                    id: format!("{id}-v{v}"),
                    name: title(kind),
                    category: Some(title(noun)),
                    description: Some(format!("{name}: {kind}.")),
                    offer_details: Some(format!("Redeem within 6 months in {city}.")),
                    terms_and_conditions: Some(
                        "Subject to availability. Not exchangeable for cash.".into(),
                    ),
                    price: Tokens::whole(base * (1 + v as i64) + (r.below(20) as i64) * 10),
                    tier,
                    available: !r.chance(0.05),
                    stock: r.chance(0.1).then(|| r.below(50) as i64),
                }
            })
            .collect();
        let tags = {
            let mut tags: Vec<String> = Vec::new();
            for _ in 0..r.below(4) {
                let tag = r.pick(&TAGS).0.to_string();
                if !tags.contains(&tag) {
                    tags.push(tag);
                }
            }
            tags
        };
        let weekdays = if bookable && r.chance(0.5) {
            Weekdays {
                mon: false,
                tue: false,
                ..Weekdays::default()
            }
        } else {
            Weekdays::default()
        };
        catalogue.products.push(ProductEntry {
            short_description: Some(format!("{name} in {city}")),
            description: Some(format!(
                "Treat yourself to a {} {noun} in {city}. A favourite of our members, with \
                 friendly hosts and everything arranged for you.",
                adjective.to_lowercase()
            )),
            book_in_advance: bookable,
            tags,
            category: Some(category.to_string()),
            primary_image: Some(format!("https://cdn.example.com/products/{id}/main.jpg")),
            secondary_images: vec![format!("https://cdn.example.com/products/{id}/2.jpg")],
            website: Some(format!("https://partner.example.com/{id}")),
            weekdays,
            weight: [1.0, 1.0, 2.0, 0.5][r.below(4)],
            embedding: None,
            branches,
            variants,
            id,
            name,
        });
    }
    catalogue
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_catalogue_is_a_valid_document_and_repeats_by_seed() {
        let generated = catalogue(300, 7);
        let text = serde_json::to_vec(&generated).unwrap();
        let read = Catalogue::from_json(&text).expect("the generator writes valid documents");
        assert_eq!(read.products.len(), 300);
        assert_eq!(read, generated, "the document reads back as written");
        assert_eq!(catalogue(300, 7), generated);
        assert_ne!(catalogue(300, 8), generated);
        assert!(generated.products.iter().any(|p| p.book_in_advance));
        assert!(
            generated
                .products
                .iter()
                .any(|p| p.variants.iter().any(|v| v.stock.is_some()))
        );
    }
}
