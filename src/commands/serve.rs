//! `rewards serve`: logging, the HTTP server and a graceful stop on Ctrl-C or SIGTERM.

use rewards::Application;
use store::Store;

use rewards::config::{Config, LogFormat};

/// Logs go to stdout, one line per event; `REWARDS_LOG` (or `RUST_LOG`) sets the filter.
pub fn init_logging(format: LogFormat) {
    let filter = std::env::var("REWARDS_LOG")
        .or_else(|_| std::env::var("RUST_LOG"))
        .unwrap_or_else(|_| "info,sqlx=warn".to_string());
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(ansi);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Text => builder.init(),
    }
}

/// The service until Ctrl-C or SIGTERM.
pub async fn serve(config: &Config, store: Store) -> anyhow::Result<()> {
    let application = Application::build(config.clone(), store).await?;
    application.run(shutdown_signal()).await
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
