//! `rewards rules`: set, list, show and test rule sets.

use std::path::Path;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};
use serde_json::{Map, Value, json};
use store::{RulesInput, Store, Tokens};

use super::emit;
use crate::cli::RulesCommand;

pub async fn run(store: &Store, command: RulesCommand, json: bool) -> anyhow::Result<()> {
    match command {
        RulesCommand::Test { file, rows } => test(&file, &rows, json),
        RulesCommand::Set { campaign, file } => {
            let source = read(&file)?;
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let version = match store.programme().set_rule_set(&campaign, &source).await {
                Err(store::StoreError::InvalidRules(errors)) => {
                    return Err(invalid(&file, &errors));
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
        RulesCommand::Backtest {
            campaign,
            file,
            from,
            to,
        } => backtest(store, &campaign, &file, &from, &to, json).await,
        RulesCommand::List { campaign } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let versions = store.programme().rule_set_versions(&campaign).await?;
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
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let shown = store.programme().rule_set(&campaign, version).await?;
            let compiled =
                RuleSet::parse(&shown.source).context("a stored rule set no longer compiles")?;
            let rules: Vec<_> = compiled
                .rules()
                .map(|r| json!({"id": r.id, "priority": r.priority, "effect": r.effect.as_str(), "stop": r.stop, "pendingDays": r.pending_days, "description": r.description}))
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

/// A day (its first or last instant, UTC) or an RFC 3339 moment.
fn moment(flag: &str, text: &str, end_of_day: bool) -> anyhow::Result<DateTime<Utc>> {
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    let day = chrono::NaiveDate::parse_from_str(text, "%Y-%m-%d")
        .with_context(|| format!("{flag} `{text}` is neither YYYY-MM-DD nor RFC 3339"))?;
    let time = if end_of_day {
        day.and_hms_micro_opt(23, 59, 59, 999_999)
    } else {
        day.and_hms_opt(0, 0, 0)
    };
    Ok(time.expect("a valid time of day").and_utc())
}

fn compile(file: &Path) -> anyhow::Result<RuleSet> {
    RuleSet::parse(&read(file)?).map_err(|errors| invalid(file, &errors))
}

/// Every error of a rule-set file, one a line.
fn invalid(file: &Path, errors: &rules::CompileErrors) -> anyhow::Error {
    anyhow::anyhow!(
        "{} has {} error(s):\n{errors}",
        file.display(),
        errors.0.len()
    )
}

/// Tokens per rule id under the current rules (from the stored traces) and the candidate.
#[derive(Default)]
struct RuleTotals {
    current: Decimal,
    candidate: Decimal,
    fired: u64,
}

async fn backtest(
    store: &Store,
    campaign: &str,
    file: &Path,
    from: &str,
    to: &str,
    json: bool,
) -> anyhow::Result<()> {
    let rules = compile(file)?;
    let campaign = store.tenancy().find_campaign(campaign, None).await?;
    let (from, to) = (moment("--from", from, false)?, moment("--to", to, true)?);
    let mut per_rule: std::collections::BTreeMap<String, RuleTotals> = Default::default();
    let mut wallets: std::collections::HashMap<String, (Decimal, Decimal)> = Default::default();
    let (mut current, mut candidate, mut count, mut unreadable) =
        (Decimal::ZERO, Decimal::ZERO, 0u64, 0u64);
    let mut steps = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = store
            .ledger()
            .earns_between(&campaign, from, to, after.as_deref(), 5_000)
            .await?;
        let Some(last) = page.last() else { break };
        after = Some(last.transaction_id.clone());
        for earn in &page {
            let Ok((row, ctx)) = earn.rules_input().parts() else {
                unreadable += 1;
                continue;
            };
            let tokens = rules.evaluate_into(&row, &ctx, &mut steps);
            for step in &steps {
                match *step {
                    rules::Step::Fired { rule, contribution } => {
                        let totals = per_rule.entry(rules.rule_id(rule).to_string()).or_default();
                        totals.candidate += contribution;
                        totals.fired += 1;
                    }
                    rules::Step::Rounded { contribution } => {
                        per_rule.entry("~".into()).or_default().candidate += contribution;
                    }
                    rules::Step::Skipped { .. } => {}
                }
            }
            for (rule, contribution) in RuleSet::contributions(earn.trace.as_deref().unwrap_or(""))
            {
                per_rule.entry(rule).or_default().current += contribution;
            }
            let was = earn.tokens.to_decimal();
            let entry = wallets.entry(earn.wallet_id.clone()).or_default();
            entry.0 += was;
            entry.1 += tokens;
            current += was;
            candidate += tokens;
            count += 1;
        }
    }
    let mut movers: Vec<_> = wallets.into_iter().filter(|(_, (a, b))| a != b).collect();
    movers.sort_by(|a, b| {
        (b.1.1 - b.1.0)
            .abs()
            .cmp(&(a.1.1 - a.1.0).abs())
            .then(a.0.cmp(&b.0))
    });
    movers.truncate(10);
    let value = json!({
        "transactions": count,
        "unreadable": unreadable,
        "currentTokens": current.normalize().to_string(),
        "candidateTokens": candidate.normalize().to_string(),
        "difference": (candidate - current).normalize().to_string(),
        "perRule": per_rule.iter().map(|(id, t)| json!({"rule": id, "current": t.current.normalize().to_string(), "candidate": t.candidate.normalize().to_string(), "fired": t.fired})).collect::<Vec<_>>(),
        "topWallets": movers.iter().map(|(w, (a, b))| json!({"walletId": w, "current": a.normalize().to_string(), "candidate": b.normalize().to_string()})).collect::<Vec<_>>(),
    });
    emit(json, value, || {
        let signed = |d: Decimal| {
            if d.is_sign_negative() {
                d.normalize().to_string()
            } else {
                format!("+{}", d.normalize())
            }
        };
        let mut out = format!(
            "{count} earn transaction(s) from {} to {} re-evaluated; nothing was changed\n\
             tokens now: {}   under {}: {}   difference: {}",
            from.to_rfc3339(),
            to.to_rfc3339(),
            current.normalize(),
            file.display(),
            candidate.normalize(),
            signed(candidate - current)
        );
        if unreadable > 0 {
            out.push_str(&format!(
                "\n{unreadable} transaction(s) without a readable amount were left out"
            ));
        }
        out.push_str(&format!(
            "\n\n{:<24} {:>14} {:>14} {:>8}",
            "rule (~ is rounding)", "now", "candidate", "fired"
        ));
        for (id, t) in &per_rule {
            out.push_str(&format!(
                "\n{id:<24} {:>14} {:>14} {:>8}",
                signed(t.current),
                signed(t.candidate),
                t.fired
            ));
        }
        if !movers.is_empty() {
            out.push_str(&format!(
                "\n\n{:<38} {:>12} {:>12} {:>12}",
                "wallets changed most", "now", "candidate", "difference"
            ));
            for (wallet, (a, b)) in &movers {
                out.push_str(&format!(
                    "\n{wallet:<38} {:>12} {:>12} {:>12}",
                    a.normalize(),
                    b.normalize(),
                    signed(*b - *a)
                ));
            }
        }
        out
    });
    Ok(())
}

fn read(file: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))
}

/// One sample row, owned, before it is lent to the engine as a `RulesInput`.
struct Sample {
    id: String,
    amount: String,
    date: DateTime<Utc>,
    currency: String,
    description: String,
    meta: Value,
    tier: Option<String>,
    balance: Tokens,
    status: String,
}

impl Sample {
    fn rules_input(&self) -> RulesInput<'_> {
        RulesInput {
            earn_id: &self.id,
            amount: &self.amount,
            date: self.date,
            currency: &self.currency,
            description: Some(&self.description),
            meta: Some(&self.meta),
            wallet_tier: self.tier.as_deref(),
            wallet_balance: self.balance,
            member_status: &self.status,
        }
    }
}

/// Evaluates `file`'s rule set on each row of `rows` and prints tokens and trace.
pub fn test(file: &Path, rows: &Path, json: bool) -> anyhow::Result<()> {
    let rules = compile(file)?;
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
        let parts = sample
            .as_ref()
            .map_err(|e| anyhow::anyhow!("{e:#}"))
            .and_then(|s| {
                let parts = s.rules_input().parts().map_err(anyhow::Error::msg)?;
                Ok((s, parts))
            });
        let (sample, (row, ctx)) = match parts {
            Ok(parts) => parts,
            Err(err) => {
                bad += 1;
                results.push(json!({"line": line, "error": format!("{err:#}")}));
                if !json {
                    outln!("line {line}: {err:#}");
                }
                continue;
            }
        };
        let outcome = rules.evaluate(&row, &ctx);
        let trace = rules.explain(&outcome.steps);
        if !json {
            outln!(
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
        outln!("{:#}", Value::Array(results));
    }
    if bad > 0 {
        bail!("{bad} row(s) could not be read");
    }
    Ok(())
}

fn sample(headers: &csv::StringRecord, record: &csv::StringRecord) -> anyhow::Result<Sample> {
    let mut s = Sample {
        id: String::new(),
        amount: String::new(),
        date: Utc::now(),
        currency: String::new(),
        description: String::new(),
        meta: Value::Object(Map::new()),
        tier: None,
        balance: Tokens::ZERO,
        status: "active".into(),
    };
    let mut seen_amount = false;
    let mut seen_date = false;
    for (name, value) in headers.iter().zip(record.iter()) {
        let value = value.trim();
        match name.trim() {
            "id" => s.id = value.to_string(),
            "amount" => {
                s.amount = value.to_string();
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
                s.balance = Tokens::from_text(value)
                    .map_err(|why| anyhow::anyhow!("wallet.balance: {why}"))?;
            }
            "member.status" if !value.is_empty() => s.status = value.to_string(),
            key => {
                if let Some(path) = key.strip_prefix("meta.")
                    && !value.is_empty()
                    && let Value::Object(meta) = &mut s.meta
                {
                    let path: Vec<&str> = path.split('.').collect();
                    store::meta::insert(meta, &path, store::meta::cell_value(value));
                }
            }
        }
    }
    if !seen_amount || !seen_date {
        bail!("the rows need `amount` and `date` columns");
    }
    Ok(s)
}
