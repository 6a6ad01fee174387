//! `rewards`: the service (`serve`) and the operator's commands, on one configuration.

/// `println!` for the commands' output: a closed pipe (`rewards org list | head -1`) ends the
/// command quietly instead of panicking.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::commands::print_line(format_args!($($arg)*))
    };
}

mod cli;
mod commands;

#[cfg(feature = "generate")]
use anyhow::Context;
use clap::{CommandFactory, FromArgMatches};

use crate::cli::{Cli, Command};
use crate::commands::local::Audited;
use rewards::{Config, open_store};

fn main() -> std::process::ExitCode {
    // Before the runtime starts its threads: each would otherwise get an arena of its own.
    rewards::arenas::limit();
    private_files();
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let json = cli.json;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build();
    let outcome = match runtime {
        Ok(runtime) => runtime.block_on(run(cli, &matches)),
        Err(err) => Err(anyhow::Error::from(err).context("no async runtime")),
    };
    match outcome {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) if json => {
            eprintln!("{}", error_json(&err));
            std::process::ExitCode::FAILURE
        }
        Err(err) => {
            eprintln!("error: {err:#}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// A failed command's error as `--json` prints it (on standard error): `error` (the whole
/// message), `code` (stable, as the API's problems have it) and `field` where one applies.
fn error_json(err: &anyhow::Error) -> serde_json::Value {
    use store::StoreError;
    let store = err.chain().find_map(|e| e.downcast_ref::<StoreError>());
    let (code, field) = match store {
        Some(StoreError::Invalid { field, .. }) => ("invalid_value", Some(field.to_string())),
        Some(StoreError::Conflict { field }) => ("already_exists", Some(field.to_string())),
        Some(StoreError::NotFound { .. }) => ("not_found", None),
        Some(StoreError::UnknownReference { field, .. }) => ("not_found", Some(field.to_string())),
        Some(StoreError::InsufficientBalance { .. }) => ("insufficient_balance", None),
        Some(StoreError::InvalidRules(_)) => ("invalid_rules", None),
        Some(StoreError::InvalidCatalogue(_) | StoreError::Rejected(_)) => {
            ("validation_failed", None)
        }
        Some(StoreError::Refused { code, field, .. }) => (*code, field.clone()),
        Some(_) => ("database_error", None),
        None => ("failed", None),
    };
    let mut value = serde_json::json!({"error": format!("{err:#}"), "code": code});
    if let Some(field) = field {
        value["field"] = field.into();
    }
    value
}

async fn run(cli: Cli, matches: &clap::ArgMatches) -> anyhow::Result<()> {
    let config = Config::load(cli.config.as_deref())?;
    if let Command::Serve = cli.command {
        commands::serve::init_logging(config.log_format);
    }
    // Testing a rule set on sample rows needs no database, nor does the host key.
    if let Command::Rules(cli::RulesCommand::Test { file, rows }) = &cli.command {
        return commands::rules::test(file, rows, cli.json);
    }
    #[cfg(feature = "generate")]
    if let Command::Catalogue(cli::CatalogueCommand::Generate {
        products,
        seed,
        file,
    }) = &cli.command
    {
        return commands::catalogue::generate(*products, *seed, file, cli.json);
    }
    if let Command::Sftp(cli::SftpCommand::HostKey) = cli.command {
        return commands::sftp::host_key(&config, cli.json);
    }
    #[cfg(feature = "generate")]
    if let Command::Generate {
        rows,
        wallets,
        wallet_prefix,
        bad_share,
        seed,
        month,
        file,
    } = cli.command
    {
        let spec = generators::earns::Spec {
            rows,
            wallets,
            wallet_prefix,
            bad_share,
            seed,
            month,
        };
        let extension = |name: &str| {
            file.extension()
                .is_some_and(|e| e.eq_ignore_ascii_case(name))
        };
        if extension("parquet") {
            generators::earns::earn_parquet(&spec, &file).map_err(anyhow::Error::msg)
        } else {
            let out = std::fs::File::create(&file)
                .with_context(|| format!("creating {}", file.display()))?;
            if extension("xlsx") {
                generators::earns::earn_xlsx(&spec, out)
            } else {
                generators::earns::earn_csv(&spec, out)
            }
            .map_err(anyhow::Error::from)
        }
        .with_context(|| format!("writing {}", file.display()))?;
        let value = serde_json::json!({"file": file, "rows": rows, "wallets": wallets});
        commands::emit(cli.json, value, || {
            format!("{rows} rows written to {}", file.display())
        });
        return Ok(());
    }
    let store = open_store(&config).await?;
    // The operator's changes from the command line are recorded as `local` (commands/local.rs).
    match commands::local::audited(&store, matches).await {
        Audited::EachWrite(action) => {
            let trail = store::audit::Trail::new(commands::local::actor(), action);
            store
                .acting(trail, |store| async move {
                    Box::pin(dispatch(cli, config, store)).await
                })
                .await
        }
        Audited::Once(action) => {
            let trail = store::audit::Trail::new(commands::local::actor(), action);
            let result = Box::pin(dispatch(cli, config, store.clone())).await;
            trail.record(store.db(), &result).await?;
            result
        }
        Audited::Not => Box::pin(dispatch(cli, config, store)).await,
    }
}

/// Runs a command that needs the database.
async fn dispatch(cli: Cli, config: Config, store: store::Store) -> anyhow::Result<()> {
    match cli.command {
        Command::Serve => {
            let mut config = config;
            if let Some(descriptors) = raise_descriptor_limit() {
                config.derive_sockets(descriptors);
            }
            commands::serve::serve(&config, store).await
        }
        Command::Migrate => {
            let backend = format!("{:?}", store.backend()).to_lowercase();
            if cli.json {
                outln!(
                    "{}",
                    serde_json::json!({"migrated": true, "backend": backend})
                );
            } else {
                outln!("migrations applied ({backend})");
            }
            Ok(())
        }
        Command::Org(command) => commands::tenancy::org(&store, command, cli.json).await,
        Command::Campaign(command) => commands::tenancy::campaign(&store, command, cli.json).await,
        Command::Key(command) => commands::tenancy::key(&store, command, cli.json).await,
        Command::Webhook(command) => {
            commands::webhooks::run(&config, &store, command, cli.json).await
        }
        Command::Rules(command) => commands::rules::run(&store, command, cli.json).await,
        Command::Tier(command) => commands::ledger::tier(&store, command, cli.json).await,
        Command::Catalogue(command) => commands::catalogue::run(&store, command, cli.json).await,
        Command::SftpUser(command) => commands::sftp::user(&store, command, cli.json).await,
        Command::Mapping(command) => commands::batch::mapping(&store, command, cli.json).await,
        Command::Ingest { org, dry_run, file } => {
            commands::batch::ingest(&config, &store, &org, &file, dry_run, cli.json).await
        }
        Command::Sftp(command) => commands::sftp::bans(&store, command, cli.json).await,
        Command::Batch(command) => commands::batch::batches(&store, command, cli.json).await,
        #[cfg(feature = "generate")]
        Command::Generate { .. } => unreachable!("handled before the store opens"),
        Command::Reviews(command) => {
            commands::reviews::run(&store, command, &config.api.moderation, cli.json).await
        }
        Command::Export(command) => commands::export::run(&store, command, cli.json).await,
        Command::Expire => commands::ledger::expire(&store, cli.json).await,
        Command::Audit => commands::ledger::audit(&store, cli.json).await,
        Command::Operator(command) => commands::operators::run(&store, command, cli.json).await,
        Command::Adjustment(command) => commands::adjustments::run(&store, command, cli.json).await,
        Command::AuditLog(command) => {
            commands::operators::audit_log(&store, command, cli.json).await
        }
    }
}

/// Everything the service creates (the database and its journal, uploads, reports, exports,
/// keys) holds members' data or secrets: readable by its own user only, folders 0700, files
/// 0600, whatever the umask it was started with.
#[cfg(unix)]
#[allow(unsafe_code)]
fn private_files() {
    // SAFETY: `umask` only sets the process's file-creation mask; it is called before any
    // thread is started.
    unsafe {
        libc::umask(0o077);
    }
}

#[cfg(not(unix))]
fn private_files() {}

/// Raises the process's open-file limit to its hard limit (a node serves thousands of
/// connections and webhook sockets; a common soft limit is 1,024); the limit it has now.
#[cfg(unix)]
#[allow(unsafe_code)]
fn raise_descriptor_limit() -> Option<u64> {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `getrlimit` and `setrlimit` read and write the struct given, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) != 0 {
            return None;
        }
        if limit.rlim_cur < limit.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: limit.rlim_max,
                rlim_max: limit.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                limit = raised;
            }
        }
    }
    Some(limit.rlim_cur)
}

#[cfg(not(unix))]
fn raise_descriptor_limit() -> Option<u64> {
    None
}
