//! Rows per second per core for the 8-rule set in `samples/rules/retail.toml`, beside a
//! hand-written Rust function that computes the same rules from the same inputs (JSON meta,
//! UTC dates converted to the programme's zone), in the same run on one thread.
//!
//! `cargo bench --bench rules`. Goal: >= 2,000,000 rows/s per core and within 10x of the
//! hand-written function.

use std::hint::black_box;
use std::time::{Duration, Instant};

use chrono::{DateTime, Datelike, TimeZone, Timelike, Utc, Weekday};
use chrono_tz::Tz;
use rules::{Context, Decimal, Row, RuleSet, Step};
use serde_json::{Value, json};

const ROWS: usize = 10_000;

struct Input {
    id: String,
    amount: Decimal,
    date: DateTime<Utc>,
    meta: Value,
    tier: Option<&'static str>,
}

/// Deterministic, varied rows: amounts, dates across two weeks, tiers, partner stores, fuel.
fn inputs() -> Vec<Input> {
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let start = Utc.with_ymd_and_hms(2026, 11, 16, 0, 0, 0).unwrap();
    (0..ROWS)
        .map(|i| {
            let r = next();
            let regions = ["north", "east", "south", "west"];
            let categories = ["food", "fuel", "books", "electronics"];
            Input {
                id: format!("t-{i}"),
                amount: Decimal::new((r % 300_000) as i64, 2),
                date: start + Duration::from_secs(r % (14 * 86_400)),
                meta: json!({
                    "store": {"partner": r % 3 == 0, "region": regions[(r >> 8) as usize % 4]},
                    "category": categories[(r >> 16) as usize % 4],
                }),
                tier: [None, Some("gold"), Some("silver")][(r >> 24) as usize % 3],
            }
        })
        .collect()
}

/// The retail rules written by hand, from the same inputs the engine gets.
fn handwritten(row: &Row, ctx: &Context, zone: Tz) -> Decimal {
    if row.amount < Decimal::ONE {
        return Decimal::ZERO;
    }
    let local = row.date.with_timezone(&zone);
    let mut total = row.amount;
    if ctx.wallet_tier == Some("gold") {
        total *= Decimal::new(15, 1);
    }
    if matches!(local.weekday(), Weekday::Sat | Weekday::Sun) {
        total *= Decimal::TWO;
    }
    let meta = row.meta.unwrap_or(&Value::Null);
    let store = &meta["store"];
    if store["partner"] == Value::Bool(true)
        && matches!(store["region"].as_str(), Some("north" | "east"))
    {
        total += Decimal::from(25);
    }
    if meta["category"].as_str() == Some("fuel") {
        total += row.amount * Decimal::new(5, 2);
    }
    if (17..19).contains(&local.hour()) {
        total += Decimal::TEN;
    }
    total.min(Decimal::from(1000)).max(Decimal::ZERO).floor()
}

/// Best rows/s of several timed passes over all rows, each pass at least 200 ms.
fn measure(mut pass: impl FnMut() -> Decimal) -> f64 {
    let mut best = 0f64;
    for _ in 0..7 {
        let started = Instant::now();
        let mut rows = 0usize;
        while started.elapsed() < Duration::from_millis(200) {
            black_box(pass());
            rows += ROWS;
        }
        best = best.max(rows as f64 / started.elapsed().as_secs_f64());
    }
    best
}

fn main() {
    let rules =
        RuleSet::parse(include_str!("../samples/rules/retail.toml")).expect("sample compiles");
    let zone = rules.time_zone();
    let inputs = inputs();
    let rows: Vec<Row> = inputs
        .iter()
        .map(|i| Row {
            id: &i.id,
            amount: i.amount,
            date: i.date,
            currency: "EUR",
            description: "",
            meta: Some(&i.meta),
            activity: None,
        })
        .collect();
    let contexts: Vec<Context> = inputs
        .iter()
        .map(|i| Context {
            wallet_tier: i.tier,
            wallet_balance: Decimal::ZERO,
            member_status: "active",
            ..Context::default()
        })
        .collect();

    let mut steps: Vec<Step> = Vec::new();
    for (row, ctx) in rows.iter().zip(&contexts) {
        let engine = rules.evaluate_into(row, ctx, &mut steps);
        assert_eq!(
            engine,
            handwritten(row, ctx, zone),
            "the two must agree on {}",
            row.id
        );
    }

    let hand = measure(|| {
        rows.iter()
            .zip(&contexts)
            .map(|(r, c)| handwritten(r, c, zone))
            .sum()
    });
    let engine = measure(|| {
        rows.iter()
            .zip(&contexts)
            .map(|(r, c)| rules.evaluate_into(r, c, &mut steps))
            .sum()
    });
    println!(
        "rule set: samples/rules/retail.toml ({} rules), {ROWS} rows, one thread",
        rules.rules().count()
    );
    println!("{:<22} {:>14}", "evaluator", "rows/s");
    println!("{:<22} {:>14.0}", "hand-written Rust", hand);
    println!("{:<22} {:>14.0}", "compiled rule set", engine);
    println!(
        "compiled is {:.1}x slower than hand-written (goal <= 10x, >= 2,000,000 rows/s)",
        hand / engine
    );
}
