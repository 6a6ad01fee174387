//! Every operation of both versions' documents, sent hostile values for each of its path and
//! query parameters and body fields (NUL and other control characters, huge and negative
//! numbers, far dates, long strings, wrong types, deep nesting), and sometimes plausible ones so
//! that the checks after the first are reached too. Whatever is sent, the answer is never a 5xx,
//! and every 4xx is a problem with a code.
//!
//! CI runs `FUZZ_CASES` requests per operation and version with a fixed seed. The long mode is
//! the same test with more cases and a seed of one's own:
//! `REWARDS_FUZZ_CASES=2000 REWARDS_FUZZ_SEED=$RANDOM cargo test --test api fuzz -- --include-ignored`
//! (the PostgreSQL run needs `REWARDS_TEST_POSTGRES_URL`).

use reqwest::Method;
use serde_json::{Map, Value, json};

use crate::app_tests;
use crate::helpers::TestApp;

/// Requests per operation and version in CI.
const FUZZ_CASES: u64 = 6;

/// A small, seeded random source (xorshift64*): the same seed sends the same requests.
struct Dice(u64);

impl Dice {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

fn hostile_text(dice: &mut Dice) -> String {
    let texts = [
        String::new(),
        "\u{0}".into(),
        "a\u{0}b".into(),
        "line\nbreak".into(),
        "\u{1b}[31m".into(),
        "\u{85}".into(),
        "x".repeat(100_000),
        "💥".repeat(300),
        "../../etc/passwd".into(),
        "%00".into(),
        "' OR 1=1 --".into(),
        "9999-12-31T23:59:59-23:59".into(),
        "0000-01-01T00:00:00Z".into(),
        "+10000-01-01T00:00:00Z".into(),
        "-1".into(),
        "1e309".into(),
        "NaN".into(),
        "w-1".into(),
        "card-1".into(),
        " ".into(),
        "\u{feff}".into(),
    ];
    dice.pick(&texts).clone()
}

fn hostile_value(dice: &mut Dice, depth: usize) -> Value {
    match dice.below(12) {
        0..=4 => Value::String(hostile_text(dice)),
        5 => json!(dice.pick(&[-1i64, 0, i64::MAX, i64::MIN])),
        6 => json!(dice.pick(&[1e308, -1e308, 1e-7, 0.123_456_7, 5e12])),
        7 => serde_json::from_str("18446744073709551616").unwrap(),
        8 => Value::Bool(dice.chance(50)),
        9 => Value::Null,
        10 if depth < 40 => json!([hostile_value(dice, depth + 1)]),
        _ if depth < 40 => json!({"k": hostile_value(dice, depth + 1)}),
        _ => Value::Null,
    }
}

/// A value a schema might accept, so that a request reaches the checks past the first.
fn plausible(schema: &Value, dice: &mut Dice) -> Value {
    let kind = match &schema["type"] {
        Value::String(kind) => kind.as_str(),
        Value::Array(kinds) => kinds.first().and_then(Value::as_str).unwrap_or("string"),
        _ => "string",
    };
    if let Some(values) = schema["enum"].as_array().filter(|v| !v.is_empty()) {
        return dice.pick(values).clone();
    }
    match kind {
        "integer" => json!(dice.pick(&[1, 2, 10])),
        "number" => json!(dice.pick(&[1.0, 12.5, 100.0])),
        "boolean" => Value::Bool(dice.chance(50)),
        "array" => json!([]),
        "object" => json!({}),
        _ if schema["format"] == "date-time" => json!("2026-11-18T10:15:00Z"),
        _ => json!(dice.pick(&["w-1", "card-1", "e-1", "x"])),
    }
}

/// `schema`, with a `$ref` into the document's components followed.
fn resolve<'a>(document: &'a Value, schema: &'a Value) -> &'a Value {
    match schema["$ref"].as_str() {
        Some(reference) => {
            let name = reference.rsplit('/').next().unwrap_or_default();
            &document["components"]["schemas"][name]
        }
        None => schema,
    }
}

fn body(document: &Value, schema: &Value, dice: &mut Dice) -> Value {
    let schema = resolve(document, schema);
    if dice.chance(10) {
        return hostile_value(dice, 0);
    }
    let mut fields = Map::new();
    if let Some(properties) = schema["properties"].as_object() {
        for (name, property) in properties {
            let property = resolve(document, property);
            let value = if dice.chance(50) {
                hostile_value(dice, 0)
            } else {
                plausible(property, dice)
            };
            if dice.chance(85) {
                fields.insert(name.clone(), value);
            }
        }
    }
    if dice.chance(10) {
        fields.insert(hostile_text(dice), hostile_value(dice, 0));
    }
    Value::Object(fields)
}

/// `text` percent-encoded for a path segment or a query value.
fn encoded(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// A request for `operation` at `template`: its path and query filled in, and a body if it
/// takes one.
fn request(
    document: &Value,
    template: &str,
    operation: &Value,
    dice: &mut Dice,
) -> (String, Option<Value>) {
    let mut path = template.to_string();
    let mut query = Vec::new();
    for parameter in operation["parameters"].as_array().into_iter().flatten() {
        let name = parameter["name"].as_str().unwrap_or_default();
        // (The client refuses a URL of hundreds of kilobytes; the server's own bound on one is
        // tried in `hostile`.)
        let value = if dice.chance(60) {
            hostile_text(dice).chars().take(4_000).collect()
        } else {
            match plausible(&parameter["schema"], dice) {
                Value::String(text) => text,
                other => other.to_string(),
            }
        };
        match parameter["in"].as_str() {
            Some("path") => path = path.replace(&format!("{{{name}}}"), &encoded(&value)),
            Some("query") if dice.chance(60) => {
                query.push(format!("{name}={}", encoded(&value)));
            }
            _ => {}
        }
    }
    if dice.chance(5) {
        let name: String = hostile_text(dice).chars().take(4_000).collect();
        query.push(format!("{}=1", encoded(&name)));
    }
    if !query.is_empty() {
        path = format!("{path}?{}", query.join("&"));
    }
    let schema = &operation["requestBody"]["content"]["application/json"]["schema"];
    let body = (!schema.is_null()).then(|| body(document, schema, dice));
    (path, body)
}

async fn hostile_values_never_answer_5xx(app: TestApp) {
    app.member_with_wallet().await;
    let cases: u64 = std::env::var("REWARDS_FUZZ_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(FUZZ_CASES);
    let seed: u64 = std::env::var("REWARDS_FUZZ_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0x5eed);
    let mut dice = Dice(seed | 1);
    let mut sent = 0;
    for version in ["1.9.5", "1.6.2"] {
        let document = app
            .get(&format!("/openapi.json?version={version}"))
            .await
            .body;
        let paths = document["paths"].as_object().unwrap().clone();
        for (template, item) in &paths {
            if !(template.starts_with("/v1") || template.starts_with("/api")) {
                continue;
            }
            for (method, operation) in item.as_object().unwrap() {
                let Ok(method) = method.to_uppercase().parse::<Method>() else {
                    continue;
                };
                for _ in 0..cases {
                    let (path, body) = request(&document, template, operation, &mut dice);
                    let reply = app
                        .send(
                            method.clone(),
                            &path,
                            Some(&app.key),
                            Some(version),
                            body.clone(),
                        )
                        .await;
                    sent += 1;
                    let what =
                        format!("{method} {path} (seed {seed}) {}", body.unwrap_or_default());
                    let what: String = what.chars().take(2_000).collect();
                    assert!(
                        reply.status.as_u16() < 500,
                        "{what}: {} {}",
                        reply.status,
                        reply.body
                    );
                    if reply.status.is_client_error() {
                        let kind = reply.headers[reqwest::header::CONTENT_TYPE]
                            .to_str()
                            .unwrap();
                        assert_eq!(kind, "application/problem+json", "{what}");
                        reply.problem();
                    }
                }
            }
        }
    }
    assert!(sent > 400, "every operation was tried: {sent} requests");
}

app_tests!(hostile_values_never_answer_5xx);
