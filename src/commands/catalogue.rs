//! `rewards catalogue`: import and export a campaign's reward catalogue.
use anyhow::Context;
use serde_json::json;
use store::{ImportOptions, ImportReport, Store, StoreError};

use super::emit;
use crate::cli::CatalogueCommand;

pub async fn run(store: &Store, command: CatalogueCommand, json: bool) -> anyhow::Result<()> {
    match command {
        CatalogueCommand::Import {
            campaign,
            dry_run,
            replace,
            file,
        } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let text =
                std::fs::read(&file).with_context(|| format!("reading {}", file.display()))?;
            let options = ImportOptions { dry_run, replace };
            match store
                .catalogue()
                .import_document(&campaign, &text, options)
                .await
            {
                Ok(report) => {
                    emit(json, json!(report), || summary(&report));
                    Ok(())
                }
                Err(StoreError::InvalidCatalogue(problems)) => {
                    let listed: Vec<String> = problems.iter().map(ToString::to_string).collect();
                    emit(
                        json,
                        json!({ "errors": problems.iter().map(|p| json!({"path": p.path, "message": p.message})).collect::<Vec<_>>() }),
                        || listed.join("\n"),
                    );
                    anyhow::bail!(
                        "{} has {} problem(s); nothing was imported",
                        file.display(),
                        problems.len()
                    )
                }
                Err(err) => Err(err.into()),
            }
        }
        #[cfg(feature = "generate")]
        CatalogueCommand::Generate {
            products,
            seed,
            file,
        } => generate(products, seed, &file, json),
        CatalogueCommand::Export { campaign, file } => {
            let campaign = store.tenancy().find_campaign(&campaign, None).await?;
            let catalogue = store.catalogue().export_catalogue(&campaign).await?;
            let text = serde_json::to_string_pretty(&catalogue)?;
            match file {
                Some(path) => {
                    std::fs::write(&path, text + "\n")
                        .with_context(|| format!("writing {}", path.display()))?;
                    let products = catalogue.products.len();
                    let categories = catalogue.categories.len();
                    let value =
                        json!({"file": path, "products": products, "categories": categories});
                    emit(json, value, || {
                        format!(
                            "{products} products in {categories} categories written to {}",
                            path.display()
                        )
                    });
                }
                // The document itself is the output.
                None => outln!("{text}"),
            }
            Ok(())
        }
    }
}

/// Writes a generated catalogue of `products` products to `file`.
#[cfg(feature = "generate")]
pub fn generate(
    products: usize,
    seed: u64,
    file: &std::path::Path,
    json: bool,
) -> anyhow::Result<()> {
    let catalogue = generators::catalogue::catalogue(products, seed);
    let text = serde_json::to_string_pretty(&catalogue)?;
    std::fs::write(file, text + "\n").with_context(|| format!("writing {}", file.display()))?;
    emit(
        json,
        json!({"file": file, "products": products, "seed": seed}),
        || format!("{products} products written to {}", file.display()),
    );
    Ok(())
}

fn summary(report: &ImportReport) -> String {
    let line = |what: &str, c: store::Counts| {
        format!(
            "{what:<11} {:>7} created {:>7} updated {:>7} removed",
            c.created, c.updated, c.removed
        )
    };
    let head = if report.dry_run {
        format!(
            "dry run: nothing written (catalogue version stays {})",
            report.version
        )
    } else {
        format!("imported: catalogue version {}", report.version)
    };
    [
        head,
        line("categories", report.categories),
        line("tags", report.tags),
        line("tiers", report.tiers),
        line("products", report.products),
        line("variants", report.variants),
    ]
    .join("\n")
}
