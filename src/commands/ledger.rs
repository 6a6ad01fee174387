//! Operator commands of the ledger: campaign policies and overview, tiers, expiry, the audit.

use anyhow::{Context as _, bail};
use rules::Decimal;
use serde_json::json;
use store::{Campaign, Expiry, ExpiryFrom, NewTier, Policy, Store, StoreError, Tokens};

use super::emit;
use crate::cli::{PolicyArgs, TierCommand};

fn tokens(flag: &str, text: &str) -> anyhow::Result<Tokens> {
    let value: Decimal = text
        .trim()
        .parse()
        .with_context(|| format!("{flag} `{text}` is not a number"))?;
    Tokens::from_decimal(value).map_err(|e| anyhow::anyhow!("{flag}: {e}"))
}

/// The transfer policy in words: `transfers: allow (at most 500 a day; earnings move)`.
fn transfers_text(policy: &Policy) -> String {
    let mut terms = Vec::new();
    if let Some(cap) = policy.transfer_daily_cap {
        terms.push(format!("at most {cap} a day"));
    }
    if policy.transfers_move_earned {
        terms.push("earnings move".to_string());
    }
    match terms.is_empty() {
        true => format!("transfers: {}", policy.transfers.as_str()),
        false => format!(
            "transfers: {} ({})",
            policy.transfers.as_str(),
            terms.join("; ")
        ),
    }
}

/// The expiry in words: `days:365 (announced 30 days before)`.
fn expiry_text(policy: &Policy) -> String {
    match (policy.expiry, policy.expiry_notice_days) {
        (Expiry::Never, _) => policy.expiry.to_string(),
        (expiry, 0) => format!("{expiry} (not announced)"),
        (expiry, days) => format!("{expiry} (announced {days} days before)"),
    }
}

/// The pending policy in words: `pending: 30 days (counts toward tiers; expiry from vesting)`.
fn pending_text(policy: &Policy) -> String {
    if policy.pending_days == 0 {
        return "pending: none".into();
    }
    let tiers = match policy.pending_counts_tier {
        true => "counts toward tiers",
        false => "counts toward tiers once vested",
    };
    let from = match policy.expiry_from {
        ExpiryFrom::Earn => "expiry from the earn",
        ExpiryFrom::Vest => "expiry from vesting",
    };
    format!("pending: {} days ({tiers}; {from})", policy.pending_days)
}

/// How far back earns may be dated: `earns dated back 365 days at most`.
fn age_text(policy: &Policy) -> String {
    match policy.earn_max_age_days {
        Some(days) => format!("earns dated back {days} days at most"),
        None => "earns dated back to 1970".into(),
    }
}

/// The store names a policy's fields as the admin API's body does (`pendingDays`); here they
/// are the flags that set them (`--pending-days`).
fn as_flag(err: StoreError) -> anyhow::Error {
    match err {
        StoreError::Invalid { field, message } => {
            let flag: String = field
                .chars()
                .flat_map(|c| match c.is_ascii_uppercase() {
                    true => vec!['-', c.to_ascii_lowercase()],
                    false => vec![c],
                })
                .collect();
            anyhow::anyhow!("--{flag}: {message}")
        }
        other => other.into(),
    }
}

fn policy_json(policy: &Policy) -> serde_json::Value {
    json!({
        "minBalance": policy.min_balance,
        "expiry": policy.expiry.to_string(),
        "shortfall": policy.shortfall.as_str(),
        "transfers": policy.transfers.as_str(),
        "transferDailyCap": policy.transfer_daily_cap,
        "transfersMoveEarned": policy.transfers_move_earned,
        "pendingDays": policy.pending_days,
        "pendingCountsTier": policy.pending_counts_tier,
        "expiryFrom": policy.expiry_from.as_str(),
        "expiryNoticeDays": policy.expiry_notice_days,
        "earnMaxAgeDays": policy.earn_max_age_days,
    })
}

pub async fn policy(store: &Store, args: PolicyArgs, json: bool) -> anyhow::Result<()> {
    let campaign = store.tenancy().find_campaign(&args.campaign, None).await?;
    let mut policy = store.programme().policy(&campaign).await?;
    if let Some(min) = &args.min_balance {
        policy.min_balance = tokens("--min-balance", min)?;
    }
    if let Some(expiry) = &args.expiry {
        policy.expiry = expiry
            .parse::<Expiry>()
            .map_err(|e| anyhow::anyhow!("--expiry {e}"))?;
    }
    if let Some(days) = args.expiry_days {
        if days == 0 {
            bail!("--expiry-days must be at least 1");
        }
        policy.expiry = Expiry::Days(days);
    }
    if let Some(shortfall) = &args.shortfall {
        policy.shortfall = shortfall
            .parse()
            .map_err(|e| anyhow::anyhow!("--shortfall {e}"))?;
    }
    if let Some(transfers) = &args.transfers {
        policy.transfers = transfers
            .parse()
            .map_err(|e| anyhow::anyhow!("--transfers {e}"))?;
    }
    if let Some(cap) = &args.transfer_daily_cap {
        policy.transfer_daily_cap = match cap.trim() {
            "none" => None,
            cap => Some(tokens("--transfer-daily-cap", cap)?),
        };
    }
    if let Some(moves) = args.transfers_move_earned {
        policy.transfers_move_earned = moves;
    }
    if let Some(days) = args.pending_days {
        policy.pending_days = days;
    }
    if let Some(counts) = args.pending_counts_tier {
        policy.pending_counts_tier = counts;
    }
    if let Some(from) = &args.expiry_from {
        policy.expiry_from = from
            .parse()
            .map_err(|e| anyhow::anyhow!("--expiry-from {e}"))?;
    }
    if let Some(days) = args.expiry_notice_days {
        policy.expiry_notice_days = days;
    }
    if let Some(days) = &args.earn_max_age_days {
        policy.earn_max_age_days = match days.trim() {
            "none" => None,
            days => Some(days.parse().map_err(|_| {
                anyhow::anyhow!(
                    "--earn-max-age-days takes a number of days or `none`, not {days:?}"
                )
            })?),
        };
    }
    let policy = store
        .programme()
        .set_policy(&campaign, policy)
        .await
        .map_err(as_flag)?;
    emit(json, policy_json(&policy), || {
        format!(
            "minimum balance {}, tokens expire: {}, reversal shortfall: {}, {}, {}, {}",
            policy.min_balance,
            expiry_text(&policy),
            policy.shortfall,
            transfers_text(&policy),
            pending_text(&policy),
            age_text(&policy)
        )
    });
    Ok(())
}

pub async fn show(store: &Store, campaign: &str, json: bool) -> anyhow::Result<()> {
    let found = store.tenancy().find_campaign(campaign, None).await?;
    let policy = store.programme().policy(&found).await?;
    let version = store.programme().active_rule_set_version(&found).await?;
    let tiers = store.programme().list_tiers(&found).await?;
    let Campaign {
        id,
        org_id,
        name,
        currency,
        logo,
        favicon,
        created_at,
        ..
    } = found;
    let value = json!({
        "id": id, "org": org_id, "name": name, "currency": currency, "logo": logo, "favicon": favicon,
        "createdAt": created_at, "policy": policy_json(&policy), "rulesVersion": version,
        "tiers": tiers.iter().map(|t| json!({"id": t.id, "name": t.name, "precedence": t.precedence, "threshold": t.threshold})).collect::<Vec<_>>(),
    });
    emit(json, value, || {
        let rules = version.map_or("default (one token per unit of amount)".to_string(), |v| {
            format!("version {v}")
        });
        let mut text = format!(
            "campaign {id} ({name}) of organisation {org_id}\ncurrency:        {currency}\nminimum balance: {}\nexpiry:          {}\nshortfall:       {}\n{}\n{}\n{}\nrules:           {rules}",
            policy.min_balance,
            policy.expiry,
            policy.shortfall,
            transfers_text(&policy),
            pending_text(&policy),
            age_text(&policy)
        );
        for t in &tiers {
            text.push_str(&format!(
                "\ntier:            {} (precedence {}, from {} earned)",
                t.name, t.precedence, t.threshold
            ));
        }
        text
    });
    Ok(())
}

pub async fn tier(store: &Store, command: TierCommand, json: bool) -> anyhow::Result<()> {
    match command {
        TierCommand::Add {
            campaign,
            name,
            precedence,
            threshold,
            benefits,
            image_url,
        } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let new = NewTier {
                name,
                precedence,
                threshold: tokens("--threshold", &threshold)?,
                benefits,
                image_url,
            };
            let tier = store.programme().create_tier(&campaign, new).await?;
            emit(json, json!({"id": tier.id, "name": tier.name}), || {
                tier.id.clone()
            });
        }
        TierCommand::List { campaign } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let tiers = store.programme().list_tiers(&campaign).await?;
            let value = tiers
                .iter()
                .map(|t| json!({"id": t.id, "name": t.name, "precedence": t.precedence, "threshold": t.threshold, "benefits": t.benefits, "imageUrl": t.image_url}))
                .collect();
            emit(json, value, || {
                tiers
                    .iter()
                    .map(|t| {
                        format!(
                            "{}  {:<12} precedence {:>3}  from {}",
                            t.id, t.name, t.precedence, t.threshold
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        TierCommand::Remove { campaign, tier } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            store.programme().remove_tier(&campaign, &tier).await?;
            emit(json, json!({"removed": tier}), || {
                format!("removed tier {tier}")
            });
        }
    }
    Ok(())
}

pub async fn expire(store: &Store, json: bool) -> anyhow::Result<()> {
    let written = store.ledger().expire(store.now()).await?;
    emit(json, json!({"expired": written}), || {
        format!("{written} lot(s) expired")
    });
    Ok(())
}

/// Prints each discrepancy; an error (exit status 1) when there is any.
pub async fn audit(store: &Store, json: bool) -> anyhow::Result<()> {
    let found = store.ledger().audit().await?;
    let value = found
        .iter()
        .map(|d| json!({"walletId": d.wallet_id, "transactionId": d.transaction_id, "check": d.check, "recorded": d.recorded, "computed": d.computed}))
        .collect();
    emit(json, value, || {
        if found.is_empty() {
            return "every wallet agrees with its transactions and lots".to_string();
        }
        found
            .iter()
            .map(|d| match d.check {
                "wallet" => format!(
                    "wallet {}: does not exist, but transactions naming it add up to {}",
                    d.wallet_id, d.computed
                ),
                "lot" => format!(
                    "wallet {}: the lot of earn {} holds {} but its history leaves {}",
                    d.wallet_id,
                    d.transaction_id.as_deref().unwrap_or_default(),
                    d.recorded,
                    d.computed
                ),
                "reversed" => format!(
                    "wallet {}: transaction {} is corrected by {} but holds {}",
                    d.wallet_id,
                    d.transaction_id.as_deref().unwrap_or_default(),
                    d.recorded,
                    d.computed
                ),
                check => format!(
                    "wallet {}: {check} is {} but adds up to {}",
                    d.wallet_id, d.recorded, d.computed
                ),
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    if !found.is_empty() {
        bail!("{} discrepancy(ies) found", found.len());
    }
    Ok(())
}
