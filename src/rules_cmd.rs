//! `rewards rules`: set, list, show and test rule sets.

use std::path::Path;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use rules::{Context, Decimal, Row, RuleSet};
use serde_json::{Map, Value, json};
use store::Store;

use crate::cli::RulesCommand;
use crate::commands::emit;

pub async fn run(store: &Store, command: RulesCommand, json: bool) -> anyhow::Result<()> {
    match command {
        RulesCommand::Test { file, rows } => test(&file, &rows, json),
        RulesCommand::Set { campaign, file } => {
            let source = read(&file)?;
            let campaign = store.campaign_by_id(&campaign).await?;
            let version = match store
                .set_rule_set(&campaign.org_id, &campaign.id, &source)
                .await
            {
                Err(store::StoreError::InvalidRules(errors)) => {
                    bail!(
                        "{} has {} error(s):\n{errors}",
                        file.display(),
                        errors.0.len()
                    )
                }
                other => other?,
            };
            emit(
                json,
                json!({"campaignId": campaign.id, "version": version.version}),
                || {
                    format!(
                        "rule set version {} is now active for campaign {}",
                        version.version, campaign.id
                    )
                },
            );
            Ok(())
        }
        RulesCommand::List { campaign } => {
            let campaign = store.campaign_by_id(&campaign).await?;
            let versions = store
                .rule_set_versions(&campaign.org_id, &campaign.id)
                .await?;
            let value: Vec<_> = versions
                .iter()
                .enumerate()
                .map(|(i, v)| json!({"version": v.version, "createdAt": v.created_at, "active": i == 0}))
                .collect();
            emit(json, Value::Array(value), || {
                if versions.is_empty() {
                    return "no rule set: the campaign awards one token per unit of amount"
                        .to_string();
                }
                versions
                    .iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let active = if i == 0 { "  (active)" } else { "" };
                        format!("{:>4}  {}{active}", v.version, v.created_at.to_rfc3339())
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
            Ok(())
        }
        RulesCommand::Show { campaign, version } => {
            let campaign = store.campaign_by_id(&campaign).await?;
            let shown = store
                .rule_set(&campaign.org_id, &campaign.id, version)
                .await?;
            let compiled =
                RuleSet::parse(&shown.source).context("a stored rule set no longer compiles")?;
            let rules: Vec<_> = compiled
                .rules()
                .map(|r| json!({"id": r.id, "priority": r.priority, "effect": r.effect.as_str(), "stop": r.stop, "description": r.description}))
                .collect();
            let value = json!({"version": shown.version, "createdAt": shown.created_at, "rules": rules, "source": shown.source});
            emit(json, value, || {
                format!(
                    "# version {} of campaign {}\n{}",
                    shown.version, campaign.id, shown.source
                )
            });
            Ok(())
        }
    }
}

fn read(file: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

/// One sample row, owned, before it is lent to the engine as a `Row`.
struct Sample {
    id: String,
    amount: Decimal,
    date: DateTime<Utc>,
    currency: String,
    description: String,
    meta: Value,
    tier: Option<String>,
    balance: Decimal,
    status: String,
}

/// Evaluates `file`'s rule set on each row of `rows` and prints tokens and trace.
pub fn test(file: &Path, rows: &Path, json: bool) -> anyhow::Result<()> {
    let rules = RuleSet::parse(&read(file)?).map_err(|errors| {
        anyhow::anyhow!(
            "{} has {} error(s):\n{errors}",
            file.display(),
            errors.0.len()
        )
    })?;
    let mut reader =
        csv::Reader::from_path(rows).with_context(|| format!("reading {}", rows.display()))?;
    let headers = reader.headers()?.clone();
    let mut results = Vec::new();
    let mut bad = 0;
    for (i, record) in reader.records().enumerate() {
        let line = i + 2; // the header is line 1
        let sample = record
            .map_err(anyhow::Error::from)
            .and_then(|r| sample(&headers, &r));
        let sample = match sample {
            Ok(sample) => sample,
            Err(err) => {
                bad += 1;
                results.push(json!({"line": line, "error": format!("{err:#}")}));
                if !json {
                    println!("line {line}: {err:#}");
                }
                continue;
            }
        };
        let row = Row {
            id: &sample.id,
            amount: sample.amount,
            date: sample.date,
            currency: &sample.currency,
            description: &sample.description,
            meta: Some(&sample.meta),
        };
        let ctx = Context {
            wallet_tier: sample.tier.as_deref(),
            wallet_balance: sample.balance,
            member_status: &sample.status,
        };
        let outcome = rules.evaluate(&row, &ctx);
        let trace = rules.explain(&outcome.steps);
        if !json {
            println!(
                "{:<12} amount {:>10}  tokens {:>8}  {}",
                sample.id,
                sample.amount,
                outcome.tokens,
                trace.join("; ")
            );
        }
        results.push(json!({"line": line, "id": sample.id, "tokens": outcome.tokens.to_string(), "trace": trace}));
    }
    if json {
        println!("{:#}", Value::Array(results));
    }
    if bad > 0 {
        bail!("{bad} row(s) could not be read");
    }
    Ok(())
}

fn sample(headers: &csv::StringRecord, record: &csv::StringRecord) -> anyhow::Result<Sample> {
    let mut s = Sample {
        id: String::new(),
        amount: Decimal::ZERO,
        date: Utc::now(),
        currency: String::new(),
        description: String::new(),
        meta: Value::Object(Map::new()),
        tier: None,
        balance: Decimal::ZERO,
        status: "active".into(),
    };
    let mut seen_amount = false;
    let mut seen_date = false;
    for (name, value) in headers.iter().zip(record.iter()) {
        let value = value.trim();
        match name.trim() {
            "id" => s.id = value.to_string(),
            "amount" => {
                s.amount = value
                    .parse()
                    .with_context(|| format!("amount `{value}` is not a number"))?;
                seen_amount = true;
            }
            "date" => {
                s.date = DateTime::parse_from_rfc3339(value)
                    .with_context(|| {
                        format!("date `{value}` is not RFC 3339 (2026-11-18T10:15:00Z)")
                    })?
                    .with_timezone(&Utc);
                seen_date = true;
            }
            "currency" => s.currency = value.to_string(),
            "description" => s.description = value.to_string(),
            "wallet.tier" if !value.is_empty() => s.tier = Some(value.to_string()),
            "wallet.balance" if !value.is_empty() => {
                s.balance = value
                    .parse()
                    .with_context(|| format!("wallet.balance `{value}` is not a number"))?
            }
            "member.status" if !value.is_empty() => s.status = value.to_string(),
            key => {
                if let Some(path) = key.strip_prefix("meta.")
                    && !value.is_empty()
                {
                    insert(&mut s.meta, path, cell(value));
                }
            }
        }
    }
    if !seen_amount || !seen_date {
        bail!("the rows need `amount` and `date` columns");
    }
    Ok(s)
}

/// A CSV cell as a meta value: `true`/`false`, a number, or text.
fn cell(value: &str) -> Value {
    match value {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => value
            .parse::<serde_json::Number>()
            .map(Value::Number)
            .unwrap_or_else(|_| Value::String(value.to_string())),
    }
}

/// Sets `meta.a.b` (given as `a.b`) in `meta`, creating the objects on the way.
fn insert(meta: &mut Value, path: &str, value: Value) {
    let mut node = meta;
    let mut keys = path.split('.').peekable();
    while let Some(key) = keys.next() {
        let Value::Object(map) = node else { return };
        if keys.peek().is_none() {
            map.insert(key.to_string(), value);
            return;
        }
        node = map
            .entry(key.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}
