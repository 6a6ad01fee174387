//! `rewards operator`: operator accounts, and `rewards audit-log`: the trail of their changes.

use serde_json::json;
use store::audit::chain::verify;
use store::audit::log::{AuditFilter, list};
use store::{NewOperator, Operator, Page, Store};

use super::emit;
use crate::cli::{AuditLogCommand, AuditLogFilter, OperatorCommand};

fn operator_line(o: &Operator) -> String {
    let state = if o.disabled_at.is_some() {
        "disabled"
    } else {
        "enabled"
    };
    let orgs = if o.orgs.is_empty() {
        String::new()
    } else {
        format!("  orgs {}", o.orgs.join(","))
    };
    format!("{}  {}  {}  {state}{orgs}", o.id, o.email, o.role.as_str())
}

/// An operator with the one-time password made for it, shown this once.
fn with_password(json: bool, operator: &Operator, password: &store::Password) {
    let mut value = serde_json::to_value(operator).unwrap_or_default();
    value["password"] = password.reveal().into();
    emit(json, value, || {
        format!(
            "{}\none-time password: {}\n\
             It is shown only now and must be changed at the first sign-in.",
            operator_line(operator),
            password.reveal()
        )
    });
}

/// The organisations `references` name (ids, or names no other organisation has), as ids.
async fn org_ids(store: &Store, references: &[String]) -> anyhow::Result<Vec<String>> {
    let mut ids = Vec::with_capacity(references.len());
    for org in references {
        ids.push(store.tenancy().find_org(org).await?.id);
    }
    Ok(ids)
}

pub async fn run(store: &Store, command: OperatorCommand, json: bool) -> anyhow::Result<()> {
    let operators = store.operators();
    match command {
        OperatorCommand::Add {
            email,
            role,
            orgs,
            allow_from,
        } => {
            let new = NewOperator {
                email,
                role,
                orgs: org_ids(store, &orgs).await?,
                allowed_addresses: allow_from,
            };
            let (operator, password) = operators.add(new).await?;
            with_password(json, &operator, &password);
        }
        OperatorCommand::List => {
            let all = operators.list().await?;
            emit(json, serde_json::to_value(&all)?, || {
                all.iter().map(operator_line).collect::<Vec<_>>().join("\n")
            });
        }
        OperatorCommand::Disable { operator } => {
            let operator = operators.disable(&operator).await?;
            emit(json, serde_json::to_value(&operator)?, || {
                format!("disabled {}", operator.email)
            });
        }
        OperatorCommand::Enable { operator } => {
            let operator = operators.enable(&operator).await?;
            emit(json, serde_json::to_value(&operator)?, || {
                format!("enabled {}", operator.email)
            });
        }
        OperatorCommand::Remove { operator } => {
            let operator = operators.remove(&operator).await?;
            emit(json, serde_json::to_value(&operator)?, || {
                format!("removed {}", operator.email)
            });
        }
        OperatorCommand::ResetPassword { operator } => {
            let (operator, password) = operators.reset_password(&operator).await?;
            with_password(json, &operator, &password);
        }
        OperatorCommand::Reset2fa { operator } => {
            let operator = operators.reset_totp(&operator).await?;
            emit(json, serde_json::to_value(&operator)?, || {
                format!("two-factor sign-in is off for {}", operator.email)
            });
        }
        OperatorCommand::SetRole {
            operator,
            role,
            orgs,
        } => {
            let orgs = org_ids(store, &orgs).await?;
            let operator = operators.set_role(&operator, role, orgs).await?;
            emit(json, serde_json::to_value(&operator)?, || {
                operator_line(&operator)
            });
        }
        OperatorCommand::Require2fa { required } => {
            operators.require_two_factor(required).await?;
            emit(json, json!({"requireTwoFactor": required}), || {
                format!("two-factor sign-in required of every operator: {required}")
            });
        }
    }
    Ok(())
}

fn filter(given: AuditLogFilter) -> AuditFilter {
    AuditFilter {
        actor: given.actor,
        org_id: given.org,
        operation: given.operation,
        since: given.since,
        until: given.until,
    }
}

pub async fn audit_log(store: &Store, command: AuditLogCommand, json: bool) -> anyhow::Result<()> {
    match command {
        AuditLogCommand::List {
            filter: given,
            limit,
            page,
        } => {
            let page = list(store.db(), &filter(given), Page { page, limit }).await?;
            let value = json!({
                "data": page.items,
                "total": page.total,
                "currentPage": page.page.page,
                "pageSize": page.page.limit,
                "totalPages": page.total_pages(),
            });
            emit(json, value, || {
                page.items
                    .iter()
                    .map(|e| {
                        format!(
                            "{:>6}  {}  {} {}  {}  {}{}",
                            e.seq,
                            e.at.format("%Y-%m-%dT%H:%M:%SZ"),
                            e.actor_kind,
                            e.actor_name,
                            e.operation,
                            e.outcome,
                            e.target
                                .as_ref()
                                .map(|t| format!("  target {t}"))
                                .unwrap_or_default()
                        )
                    })
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        AuditLogCommand::Export {
            filter: given,
            file,
        } => {
            let format = exports::format_of(&file).unwrap_or(store::ExportFormat::Csv);
            let written = exports::audit_log::export(store, &filter(given), &file, format)
                .await
                .map_err(anyhow::Error::msg)?;
            emit(json, json!({"file": file, "entries": written}), || {
                format!("{written} entries written to {}", file.display())
            });
        }
        AuditLogCommand::Prune { older_than_days } => {
            let before = store.now() - chrono::Duration::days(i64::from(older_than_days));
            let removed =
                store::audit::chain::prune(store.db(), &super::local::actor(), before).await?;
            emit(json, json!({"removed": removed, "before": before}), || {
                format!("{removed} entries dated before {before} removed")
            });
        }
        AuditLogCommand::Verify => {
            let verdict = verify(store.db()).await?;
            emit(json, serde_json::to_value(&verdict)?, || {
                let mut lines = vec![format!(
                    "{} entries, {} to {}; head {}",
                    verdict.entries, verdict.first_seq, verdict.last_seq, verdict.head_hash
                )];
                if verdict.intact() {
                    lines.push("the chain is whole".into());
                }
                lines.extend(
                    verdict
                        .problems
                        .iter()
                        .map(|p| format!("{}  {}", p.fault.as_str(), p.message)),
                );
                lines.join("\n")
            });
            if !verdict.intact() {
                anyhow::bail!(
                    "the audit trail was tampered with: {} problem(s)",
                    verdict.problems.len()
                );
            }
        }
    }
    Ok(())
}
