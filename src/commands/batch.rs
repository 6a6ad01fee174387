//! `rewards mapping ...` (an organisation's batch-file mappings), `rewards ingest` (a file
//! through the batch pipeline from the command line, with progress) and `rewards batch ...`
//! (the batches received).

use std::path::Path;

use anyhow::{Context, bail};
use api::views::BatchView;
use ingest::batch::mapping;
use ingest::batch::pipeline::{Job, Progress};
use ingest::folders::{Folder, Tree};
use serde_json::{Value, json};
use store::{BatchState, Page, RuleBook, Store, StoreError};

use super::emit;
use super::progress::Bar;
use crate::cli::{BatchCommand, MappingCommand};
use rewards::config::Config;

pub async fn mapping(store: &Store, command: MappingCommand, json: bool) -> anyhow::Result<()> {
    match command {
        MappingCommand::Set { org, file } => {
            let document = read_document(&file)?;
            let scope = store.tenancy().find_org(&org).await?.scope();
            let stored = match mapping::set_mapping(store, &scope, &document).await {
                Err(StoreError::Rejected(problems)) => bail!(
                    "{} is not a valid mapping ({} problems):\n  - {}",
                    file.display(),
                    problems.len(),
                    problems
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("\n  - ")
                ),
                other => other?,
            };
            emit(
                json,
                json!({"org": org, "pattern": stored.pattern, "mapping": stored.document}),
                || format!("mapping set for files matching `{}`", stored.pattern),
            );
        }
        MappingCommand::Show { org, pattern } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            let mappings: Vec<Value> = store
                .batches().mappings(&scope)
                .await?
                .into_iter()
                .filter(|m| pattern.as_deref().is_none_or(|p| p == m.pattern))
                .map(|m| json!({"pattern": m.pattern, "updatedAt": m.updated_at, "mapping": m.document}))
                .collect();
            if json {
                outln!("{:#}", Value::Array(mappings));
            } else if mappings.is_empty() {
                outln!(
                    "no mapping{}: files use the canonical layout (templates/earn.csv)",
                    pattern.map(|p| format!(" for `{p}`")).unwrap_or_default()
                );
            } else {
                for m in mappings {
                    outln!(
                        "# files matching `{}`",
                        m["pattern"].as_str().unwrap_or("*")
                    );
                    outln!("{:#}", m["mapping"]);
                }
            }
        }
        MappingCommand::Remove { org, pattern } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            store.batches().remove_mapping(&scope, &pattern).await?;
            emit(
                json,
                json!({"org": org, "pattern": pattern, "removed": true}),
                || format!("mapping for `{pattern}` removed"),
            );
        }
    }
    Ok(())
}

/// A mapping document: JSON by its extension, else TOML.
fn read_document(file: &Path) -> anyhow::Result<Value> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let json = file
        .extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("json"));
    mapping::read_document(&text, json).map_err(|why| anyhow::anyhow!("{}: {why}", file.display()))
}

/// Runs `file` through the pipeline for `org`: received as a batch (a file already sent is a
/// duplicate), processed here with progress on standard error; or, with `dry_run`, checked and
/// evaluated without touching the ledger, reported as `<file>.dry-run.*`.
pub async fn ingest(
    config: &Config,
    store: &Store,
    org: &str,
    file: &Path,
    dry_run: bool,
    json: bool,
) -> anyhow::Result<()> {
    let scope = store.tenancy().find_org(org).await?.scope();
    let name = file
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .context("the file has no name")?;
    let book = RuleBook::new(store.programme().clone());
    let tree = Tree::open(&config.data_dir, org).context("the organisation's folders")?;
    let reports = tree.file(Folder::Reports, "");
    let bar = Bar::new();
    let show = |p: Progress| bar.show(p);
    let outcome = if dry_run {
        let mapping = ingest::batch::pipeline::mapping_for(store, &scope, &name).await??;
        let job = Job {
            store,
            book: &book,
            org: &scope,
            batch_id: None,
            file_name: &name,
            path: file,
            mapping: &mapping,
            reports: &reports,
            progress: &show,
            resumed: false,
        };
        ingest::batch::pipeline::run_file(&job).await?
    } else {
        let batch =
            ingest::intake::receive_copy(store, &config.data_dir, &scope, file, &name, "cli")
                .await
                .map_err(anyhow::Error::msg)?;
        if batch.state == BatchState::Duplicate {
            bail!(
                "this content was sent before (batch {}): recorded as duplicate batch {}, nothing loaded",
                batch.duplicate_of.as_deref().unwrap_or("?"),
                batch.id
            );
        }
        let Some(claimed) = store
            .batches()
            .claim_batches(1, Some(&batch.id))
            .await?
            .pop()
        else {
            bail!(
                "batch {} was taken up by a running service; follow it with GET /v1/batches/{}",
                batch.id,
                batch.id
            );
        };
        ingest::batch::pipeline::process(store, &book, &config.data_dir, &claimed, &show).await?
    };
    bar.done();
    let prefix = if dry_run { ".dry-run" } else { "" };
    let report = reports.join(format!("{name}{prefix}.result.json"));
    let failed = outcome.state == BatchState::Failed;
    emit(json, outcome.summary.clone(), || {
        let mut text = format!(
            "{}{}: {} rows, {} loaded, {} rejected, {} tokens",
            if dry_run { "dry run, would be " } else { "" },
            outcome.state.as_str(),
            outcome.rows,
            outcome.loaded,
            outcome.rejected,
            outcome.summary["tokens"],
        );
        if let Some(error) = &outcome.error {
            text.push_str(&format!("\n{error}"));
        }
        text.push_str(&format!("\nreport: {}", report.display()));
        text
    });
    if failed && !dry_run {
        bail!("the file was not loaded");
    }
    Ok(())
}

/// `rewards batch list` and `rewards batch show`: the batches as the API shows them.
pub async fn batches(store: &Store, command: BatchCommand, json: bool) -> anyhow::Result<()> {
    match command {
        BatchCommand::List { org, limit, page } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            let listed = store
                .batches()
                .list_batches(&scope, Page { page, limit })
                .await?;
            let total = listed.total;
            let views: Vec<BatchView> = listed.items.into_iter().map(BatchView::from).collect();
            let value = json!({"total": total, "page": page, "batches": views});
            emit(json, value, || {
                if views.is_empty() {
                    return format!("no batch files (page {page}, {total} in all)");
                }
                let mut lines = vec![format!("{total} batch file(s); page {page}, newest first")];
                lines.extend(views.iter().map(batch_line));
                lines.join("\n")
            });
        }
        BatchCommand::Show { org, id } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            let view = BatchView::from(store.batches().get_batch(&scope, &id).await?);
            let value = serde_json::to_value(&view)?;
            emit(json, value, || {
                let mut lines = vec![batch_line(&view)];
                lines.push(format!(
                    "  received {} ({} bytes, sha256 {}) by {} via {}",
                    view.received_at.format("%Y-%m-%d %H:%M:%S UTC"),
                    view.size,
                    view.sha256,
                    view.username.as_deref().unwrap_or("-"),
                    view.source
                ));
                if let Some(earlier) = &view.duplicate_of {
                    lines.push(format!(
                        "  the same content as batch {earlier}: nothing was loaded"
                    ));
                }
                if let Some(error) = &view.error {
                    lines.push(format!("  failed: {error}"));
                }
                if let Some(summary) = &view.summary {
                    lines.push(format!("  report: {summary:#}").replace('\n', "\n  "));
                }
                lines.join("\n")
            });
        }
    }
    Ok(())
}

fn batch_line(b: &BatchView) -> String {
    let counts = match (b.rows, b.loaded, b.rejected) {
        (Some(rows), Some(loaded), Some(rejected)) => {
            format!("  rows {rows}, loaded {loaded}, rejected {rejected}")
        }
        _ => String::new(),
    };
    format!(
        "{}  {}  {:<10}  {}{counts}",
        b.id,
        b.received_at.format("%Y-%m-%d %H:%M"),
        b.state,
        b.file_name
    )
}
