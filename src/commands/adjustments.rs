//! `rewards adjustment`: manual credits and debits with a reason, their approval, bulk files and
//! the limits. The command line acts as an owner (`local`, the OS user), through the same
//! store operations and checks as the admin API.

use anyhow::Context as _;
use serde_json::json;
use store::{
    Adjustment, AdjustmentFilter, AdjustmentLimits, AdjustmentReason, AdjustmentStatus, BulkReport,
    NewAdjustment, Page, Requester, Role, Store, Tokens,
};

use super::emit;
use super::local::os_user;
use crate::cli::AdjustmentCommand;

fn line(a: &Adjustment) -> String {
    let decided = match (&a.decided_by, a.status) {
        (Some(by), AdjustmentStatus::Applied) => format!("  approved by {by}"),
        (Some(by), AdjustmentStatus::Rejected) => format!("  rejected by {by}"),
        _ => String::new(),
    };
    format!(
        "{}  {}  {:>12}  {}  {}  by {}{decided}  \"{}\"",
        a.id, a.wallet_id, a.amount, a.reason, a.status, a.requested_by, a.comment
    )
}

fn show(json: bool, a: &Adjustment) {
    emit(json, serde_json::to_value(a).unwrap_or_default(), || {
        line(a)
    });
}

/// `none`, or tokens.
fn limit(flag: &str, text: &str) -> anyhow::Result<Option<Tokens>> {
    match text.trim() {
        "none" => Ok(None),
        text => Ok(Some(
            Tokens::from_text(text).map_err(|e| anyhow::anyhow!("{flag}: {e}"))?,
        )),
    }
}

fn report_text(report: &BulkReport) -> String {
    let mut out = Vec::new();
    for row in &report.rows {
        let why = match (&row.field, &row.message) {
            (Some(field), Some(message)) => format!("  {field}: {message}"),
            (None, Some(message)) => format!("  {message}"),
            _ => String::new(),
        };
        let id = row.adjustment_id.as_deref().unwrap_or("");
        out.push(format!("line {}: {} {id}{why}", row.line, row.outcome));
    }
    let (applied, pending) = if report.dry_run {
        ("would apply", "would wait")
    } else {
        ("applied", "pending")
    };
    out.push(format!(
        "{} {applied}, {} {pending}, {} replayed, {} refused{}",
        report.applied,
        report.pending,
        report.replayed,
        report.refused,
        match (&report.batch_id, report.dry_run) {
            (_, true) => " (dry run: nothing written; --apply to make them)".to_owned(),
            (Some(batch), false) => format!(" (batch {batch})"),
            (None, false) => String::new(),
        }
    ));
    out.join("\n")
}

pub async fn run(store: &Store, command: AdjustmentCommand, json: bool) -> anyhow::Result<()> {
    let me = Requester::local(&os_user());
    let ledger = store.ledger();
    let campaign_named =
        |name: String| async move { store.tenancy().find_campaign(&name, None).await };
    match command {
        AdjustmentCommand::Add {
            campaign,
            wallet,
            amount,
            reason,
            comment,
            external_id,
        } => {
            let campaign = campaign_named(campaign).await?;
            let amount =
                Tokens::from_text(&amount).map_err(|e| anyhow::anyhow!("--amount: {e}"))?;
            let reason: AdjustmentReason = reason
                .parse()
                .map_err(|e| anyhow::anyhow!("--reason: {e}"))?;
            let new = NewAdjustment {
                wallet,
                amount,
                reason,
                comment,
                external_id,
            };
            let rules = store.adjustment_rules(Role::Owner).await?;
            let made = ledger.adjust(&campaign, new, &me, &rules).await?;
            show(json, &made.adjustment);
        }
        AdjustmentCommand::List {
            campaign,
            status,
            batch,
            limit,
        } => {
            let campaign = campaign_named(campaign).await?;
            let status = status
                .map(|s| s.parse::<AdjustmentStatus>())
                .transpose()
                .map_err(|e| anyhow::anyhow!("--status: {e}"))?;
            let filter = AdjustmentFilter {
                status,
                wallet_id: None,
                batch_id: batch,
            };
            let page = Page {
                page: 1,
                limit: limit.clamp(1, Page::MAX_LIMIT),
            };
            let listed = ledger.list_adjustments(&campaign, &filter, page).await?;
            emit(json, json!(listed.items), || {
                listed.items.iter().map(line).collect::<Vec<_>>().join("\n")
            });
        }
        AdjustmentCommand::Approve { campaign, id } => {
            let campaign = campaign_named(campaign).await?;
            let rules = store.adjustment_rules(Role::Owner).await?;
            let approved = ledger
                .approve_adjustment(&campaign, &id, &me, &rules)
                .await?;
            show(json, &approved);
        }
        AdjustmentCommand::Reject { campaign, id, note } => {
            let campaign = campaign_named(campaign).await?;
            let rejected = ledger.reject_adjustment(&campaign, &id, &me, note).await?;
            show(json, &rejected);
        }
        AdjustmentCommand::Bulk {
            campaign,
            apply,
            file,
        } => {
            let campaign = campaign_named(campaign).await?;
            let csv =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let rules = store.adjustment_rules(Role::Owner).await?;
            let report = ledger
                .adjust_bulk(&campaign, &csv, &me, &rules, !apply)
                .await?;
            emit(json, serde_json::to_value(&report)?, || {
                report_text(&report)
            });
        }
        AdjustmentCommand::Limits {
            owner,
            support,
            approval_over,
        } => {
            let operators = store.operators();
            let mut limits: AdjustmentLimits = operators.adjustment_limits().await?;
            let given = [
                ("--owner", owner, &mut limits.owner),
                ("--support", support, &mut limits.support),
                ("--approval-over", approval_over, &mut limits.approval_over),
            ];
            let mut changed = false;
            for (flag, text, slot) in given {
                if let Some(text) = text {
                    *slot = limit(flag, &text)?;
                    changed = true;
                }
            }
            if changed {
                operators.set_adjustment_limits(limits).await?;
            }
            let text = |t: Option<Tokens>| t.map_or_else(|| "none".to_owned(), |t| t.to_string());
            emit(
                json,
                json!({
                    "owner": limits.owner,
                    "support": limits.support,
                    "approvalOver": limits.approval_over,
                }),
                || {
                    format!(
                        "owner: {} a time\nsupport: {} a time\napproval over: {}",
                        text(limits.owner),
                        text(limits.support),
                        text(limits.approval_over)
                    )
                },
            );
        }
    }
    Ok(())
}
