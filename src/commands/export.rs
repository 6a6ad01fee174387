//! `rewards export ...`: the ledger's transactions to a Parquet or CSV file now, and the daily
//! exports into organisations' SFTP trees.

use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use chrono::{NaiveDate, NaiveTime};
use ingest::batch::pipeline::Progress;
use serde_json::{Value, json};
use store::{ExportFilter, ExportSchedule, ExportTime, Store, TransactionKind};

use super::emit;
use exports::scheduled::clock;

use super::progress::Bar;
use crate::cli::ExportCommand;

pub async fn run(store: &Store, command: ExportCommand, json: bool) -> anyhow::Result<()> {
    match command {
        ExportCommand::Transactions {
            org,
            campaign,
            from,
            to,
            kinds,
            recorded,
            file,
        } => {
            let by = if recorded {
                ExportTime::Recorded
            } else {
                ExportTime::Date
            };
            transactions(store, &org, campaign, (from, to), kinds, by, &file, json).await
        }
        ExportCommand::Schedule { org, at, format } => {
            let today = store.now().date_naive();
            let scope = store.tenancy().find_org(&org).await?.scope();
            let schedule = store.set_export_schedule(&scope, at, format, today).await?;
            emit(json, schedule_json(&schedule), || {
                format!(
                    "{org}: every day at {} UTC, the previous day's transactions to \
                     exports/transactions-<day>.{}; next: {}",
                    clock(schedule.at_minute),
                    format.as_str(),
                    schedule.next_day
                )
            });
            Ok(())
        }
        ExportCommand::Unschedule { org } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            if !store.remove_export_schedule(&scope).await? {
                bail!("{org} has no daily export");
            }
            emit(json, json!({"org": org, "removed": true}), || {
                format!("{org}: daily export stopped")
            });
            Ok(())
        }
        ExportCommand::Schedules => {
            let schedules = store.export_schedules().await?;
            if json {
                let list: Vec<Value> = schedules.iter().map(schedule_json).collect();
                outln!("{:#}", Value::Array(list));
            } else if schedules.is_empty() {
                outln!("no daily exports");
            } else {
                for s in &schedules {
                    let last = s
                        .last
                        .as_ref()
                        .map_or("none yet".to_string(), |(file, rows, at)| {
                            format!("{file} ({rows} rows, {at})")
                        });
                    outln!(
                        "{}  {} UTC  {}  next day {}  last {last}",
                        s.org_id,
                        clock(s.at_minute),
                        s.format.as_str(),
                        s.next_day
                    );
                }
            }
            Ok(())
        }
    }
}

#[allow(clippy::too_many_arguments)]
async fn transactions(
    store: &Store,
    org: &str,
    campaign: Option<String>,
    (from, to): (Option<NaiveDate>, Option<NaiveDate>),
    kinds: Vec<TransactionKind>,
    by: ExportTime,
    file: &Path,
    json: bool,
) -> anyhow::Result<()> {
    let Some(format) = exports::format_of(file) else {
        bail!(
            "{}: the file's extension says the format, .parquet or .csv",
            file.display()
        );
    };
    let scope = store.tenancy().find_org(org).await?.scope();
    let campaign = match campaign {
        Some(campaign) => Some(
            store
                .tenancy()
                .find_campaign(&campaign, Some(&scope))
                .await
                .with_context(|| format!("campaign {campaign} of {org}"))?
                .id,
        ),
        None => None,
    };
    if let (Some(from), Some(to)) = (from, to)
        && to < from
    {
        bail!("--to {to} is before --from {from}");
    }
    let start = |day: NaiveDate| day.and_time(NaiveTime::MIN).and_utc();
    let filter = ExportFilter {
        campaign_id: campaign,
        from: from.map(start),
        until: to.and_then(|day| day.succ_opt()).map(start),
        kinds,
        by,
    };
    let total = store.count_export(&scope, &filter).await?;
    let bar = Arc::new(Bar::new());
    let shown = bar.clone();
    let progress = move |rows: u64| {
        shown.show(Progress {
            rows,
            done: rows,
            of: total,
            ..Progress::default()
        });
    };
    let rows = exports::export(store, &scope, &filter, file, format, progress)
        .await
        .map_err(anyhow::Error::msg)?;
    bar.done();
    emit(
        json,
        json!({"org": org, "file": file, "format": format.as_str(), "rows": rows}),
        || format!("{rows} transactions written to {}", file.display()),
    );
    Ok(())
}

fn schedule_json(s: &ExportSchedule) -> Value {
    json!({
        "org": s.org_id,
        "at": clock(s.at_minute),
        "format": s.format.as_str(),
        "nextDay": s.next_day,
        "dueAt": s.due_at(s.next_day),
        "last": s.last.as_ref().map(|(file, rows, at)| json!({"file": file, "rows": rows, "at": at})),
    })
}
