//! `rewards serve`: logging, the HTTP server and a graceful stop on Ctrl-C or SIGTERM.

use store::Store;
use tokio::net::TcpListener;

use crate::config::{Config, LogFormat};

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

pub async fn serve(config: &Config, store: Store) -> anyhow::Result<()> {
    let listener = TcpListener::bind(config.http_addr).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} (REWARDS_HTTP_ADDR): {e}",
            config.http_addr
        )
    })?;
    let sftp_listener = TcpListener::bind(config.sftp_addr).await.map_err(|e| {
        anyhow::anyhow!(
            "cannot listen on {} (REWARDS_SFTP_ADDR): {e}",
            config.sftp_addr
        )
    })?;
    let (http, sftp) = (listener.local_addr()?, sftp_listener.local_addr()?);
    // A host key that cannot be read or made stops the start, not just the SFTP door.
    ingest::keys::host_key(&config.data_dir).map_err(anyhow::Error::msg)?;
    let codes = config.code_key()?;
    if config.codes_key.is_none() && store.backend() == store::Backend::Postgres {
        tracing::warn!(
            "codes_key is not set: this node seals redemption codes with the key in its data \
             directory; every node of one database needs the same key (set REWARDS_CODES_KEY)"
        );
    }
    let workers = config.background_workers;
    // An embedded database has one serving process: batches it had claimed when it stopped
    // are taken up again now rather than when their lease runs out.
    if store.backend() == store::Backend::Sqlite {
        match store.release_batch_claims().await {
            Ok(0) => {}
            Ok(released) => {
                tracing::info!(released, "batches interrupted by a stop are taken up again")
            }
            Err(err) => tracing::error!(%err, "interrupted batches could not be released"),
        }
    }
    // Files moved to the spool by a process that stopped before recording them.
    match ingest::intake::recover(&store, &config.data_dir).await {
        Ok(0) => {}
        Ok(recovered) => tracing::info!(recovered, "recorded files left in the spool"),
        Err(err) => tracing::error!(%err, "the spool could not be checked"),
    }
    tracing::info!(%http, %sftp, backend = ?store.backend(), data_dir = %config.data_dir.display(), workers, "listening");
    let (stop, stopped) = tokio::sync::watch::channel(false);
    let sftp_server = tokio::spawn(ingest::sftp::serve(
        sftp_listener,
        store.clone(),
        config.data_dir.clone(),
        config.sftp.clone(),
        {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }
        },
    ));
    let watcher = tokio::spawn(ingest::watcher::watch(
        store.clone(),
        config.data_dir.clone(),
        ingest::watcher::Watching::default(),
        {
            let mut stopped = stopped.clone();
            async move {
                let _ = stopped.wait_for(|stop| *stop).await;
            }
        },
    ));
    let pipeline = workers.then(|| {
        tokio::spawn(ingest::pipeline::run(
            store.clone(),
            config.data_dir.clone(),
            {
                let mut stopped = stopped.clone();
                async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                }
            },
        ))
    });
    let exports = workers.then(|| {
        tokio::spawn(ingest::export::scheduled::run(
            store.clone(),
            config.data_dir.clone(),
            ingest::export::scheduled::LOOK,
            {
                let mut stopped = stopped.clone();
                async move {
                    let _ = stopped.wait_for(|stop| *stop).await;
                }
            },
        ))
    });
    api::serve(
        listener,
        api::AppState::new(store.clone(), codes).with_settings(config.api.clone()),
        workers,
        async move {
            shutdown_signal().await;
            let _ = stop.send(true);
        },
    )
    .await?;
    if let Some(pipeline) = pipeline {
        let _ = pipeline.await;
    }
    if let Some(exports) = exports {
        let _ = exports.await;
    }
    match watcher.await {
        Ok(Err(err)) => tracing::error!(%err, "the inbox watcher failed"),
        Err(err) => tracing::error!(%err, "the inbox watcher stopped abnormally"),
        Ok(Ok(())) => {}
    }
    match sftp_server.await {
        Ok(Err(err)) => tracing::error!(%err, "the SFTP server failed"),
        Err(err) => tracing::error!(%err, "the SFTP server stopped abnormally"),
        Ok(Ok(())) => {}
    }
    store.close().await;
    tracing::info!("stopped");
    Ok(())
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
