//! `rewards rules`: set, list, show and test rule sets, and see what their limits used.

use std::path::Path;

use anyhow::{Context as _, bail};
use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};
use serde_json::{Value, json};
use store::Store;

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
        RulesCommand::Limits {
            campaign,
            scope,
            day,
        } => limits(store, &campaign, scope.as_deref(), day.as_deref(), json).await,
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

/// `rules limits`: each limit's use in the period holding `day`.
async fn limits(
    store: &Store,
    campaign: &str,
    scope: Option<&str>,
    day: Option<&str>,
    json: bool,
) -> anyhow::Result<()> {
    let campaign = store.tenancy().find_campaign(campaign, None).await?;
    let book = store::RuleBook::new(store.programme().clone());
    let (_, rules) = book.active(&campaign.org_id, &campaign.id).await?;
    let day = match day {
        Some(day) => chrono::NaiveDate::parse_from_str(day, "%Y-%m-%d")
            .with_context(|| format!("--day `{day}` is not YYYY-MM-DD"))?,
        None => store.now().with_timezone(&rules.time_zone()).date_naive(),
    };
    let uses = store
        .ledger()
        .limit_uses(&campaign.id, &rules.limits(), day, scope)
        .await?;
    let value: Vec<Value> = uses.iter().map(limit_json).collect();
    emit(json, Value::Array(value), || {
        if uses.is_empty() {
            return "the campaign's active rule set has no limits and no budget".to_string();
        }
        uses.iter().map(limit_line).collect::<Vec<_>>().join("\n")
    });
    Ok(())
}

/// A limit's use as JSON.
fn limit_json(u: &store::LimitUse) -> Value {
    let l = &u.limit;
    json!({
        "rule": l.rule,
        "scope": l.scope,
        "period": l.period.name(),
        "times": l.times,
        "tokens": l.tokens.map(|t| t.normalize().to_string()),
        "from": u.from,
        "to": u.to,
        "used": {"times": u.used.times, "tokens": u.used.tokens},
        "scopes": u.scopes,
        "reached": u.reached,
        "left": u.left.map(|left| json!({"times": left.times, "tokens": left.tokens})),
    })
}

/// A limit's use as a line: `visit-bonus member/month (3 times) 2026-12-01..2026-12-31: 41
/// times, 0 tokens by 17 members; 9 reached`.
fn limit_line(u: &store::LimitUse) -> String {
    let l = &u.limit;
    let who = l.rule.as_deref().unwrap_or("budget");
    let mut ceiling = Vec::new();
    if let Some(times) = l.times {
        ceiling.push(format!("{times} times"));
    }
    if let Some(tokens) = l.tokens {
        ceiling.push(format!("{} tokens", tokens.normalize()));
    }
    let mut line = format!(
        "{who} {}/{} ({}) {}..{}: {} times, {} tokens",
        l.scope,
        l.period.name(),
        ceiling.join(", "),
        u.from,
        u.to.map_or(String::new(), |to| to.to_string()),
        u.used.times,
        u.used.tokens
    );
    match u.left {
        Some(left) => {
            let mut parts = Vec::new();
            if let Some(times) = left.times {
                parts.push(format!("{times} times"));
            }
            if let Some(tokens) = left.tokens {
                parts.push(format!("{tokens} tokens"));
            }
            line.push_str(&format!("; left {}", parts.join(", ")));
        }
        None => line.push_str(&format!(
            " by {} ({} reached a ceiling)",
            u.scopes, u.reached
        )),
    }
    line
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
    let test = store.ledger().backtest(&campaign, &rules, from, to).await?;
    let text = |d: Decimal| d.normalize().to_string();
    let value = json!({
        "transactions": test.transactions,
        "unreadable": test.unreadable,
        "currentTokens": text(test.current),
        "candidateTokens": text(test.candidate),
        "difference": text(test.candidate - test.current),
        "perRule": test.per_rule.iter().map(|t| json!({"rule": t.rule, "current": text(t.current), "candidate": text(t.candidate), "fired": t.fired})).collect::<Vec<_>>(),
        "topWallets": test.top_wallets.iter().map(|w| json!({"walletId": w.wallet_id, "current": text(w.current), "candidate": text(w.candidate)})).collect::<Vec<_>>(),
        "limits": test.limits.iter().map(|c| json!({"rule": c.rule, "limit": c.limit, "cuts": c.cuts})).collect::<Vec<_>>(),
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
            "{} earn transaction(s) from {} to {} re-evaluated; nothing was changed\n\
             tokens now: {}   under {}: {}   difference: {}",
            test.transactions,
            from.to_rfc3339(),
            to.to_rfc3339(),
            test.current.normalize(),
            file.display(),
            test.candidate.normalize(),
            signed(test.candidate - test.current)
        );
        if test.unreadable > 0 {
            out.push_str(&format!(
                "\n{} transaction(s) without a readable amount were left out",
                test.unreadable
            ));
        }
        out.push_str(&format!(
            "\n\n{:<24} {:>14} {:>14} {:>8}",
            "rule (~ is rounding)", "now", "candidate", "fired"
        ));
        for t in &test.per_rule {
            out.push_str(&format!(
                "\n{:<24} {:>14} {:>14} {:>8}",
                t.rule,
                signed(t.current),
                signed(t.candidate),
                t.fired
            ));
        }
        if !test.limits.is_empty() {
            out.push_str(&format!(
                "\n\n{:<24} {:<24} {:>8}",
                "limits that cut", "limit", "earns"
            ));
            for c in &test.limits {
                let rule = c.rule.as_deref().unwrap_or("(the budget)");
                out.push_str(&format!("\n{rule:<24} {:<24} {:>8}", c.limit, c.cuts));
            }
        }
        if !test.top_wallets.is_empty() {
            out.push_str(&format!(
                "\n\n{:<38} {:>12} {:>12} {:>12}",
                "wallets changed most", "now", "candidate", "difference"
            ));
            for w in &test.top_wallets {
                out.push_str(&format!(
                    "\n{:<38} {:>12} {:>12} {:>12}",
                    w.wallet_id,
                    w.current.normalize(),
                    w.candidate.normalize(),
                    signed(w.candidate - w.current)
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

/// Evaluates `file`'s rule set on each row of `rows` and prints tokens and trace.
pub fn test(file: &Path, rows: &Path, json: bool) -> anyhow::Result<()> {
    let rules = compile(file)?;
    let csv = std::fs::read(rows).with_context(|| format!("reading {}", rows.display()))?;
    let trials =
        store::try_rows(&rules, &csv).map_err(|e| anyhow::anyhow!("{}: {e}", rows.display()))?;
    let mut results = Vec::new();
    let mut bad = 0;
    for trial in &trials {
        let line = trial.line;
        match &trial.outcome {
            Err(err) => {
                bad += 1;
                results.push(json!({"line": line, "error": err}));
                if !json {
                    outln!("line {line}: {err}");
                }
            }
            Ok(tried) => {
                if !json {
                    outln!(
                        "{:<12} amount {:>10}  tokens {:>8}  {}",
                        tried.id,
                        tried.amount,
                        tried.tokens,
                        tried.trace.join("; ")
                    );
                }
                results.push(json!({"line": line, "id": tried.id, "tokens": tried.tokens.to_string(), "trace": tried.trace}));
            }
        }
    }
    if json {
        outln!("{:#}", Value::Array(results));
    }
    if bad > 0 {
        bail!("{bad} row(s) could not be read");
    }
    Ok(())
}
