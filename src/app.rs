//! The composition root: the whole service (the HTTP API, the admin API, the node's runtime,
//! the SFTP door, the inbox watcher, the batch pipeline, scheduled exports) put together from a
//! configuration and a store, and run until one stop signal. `rewards serve` runs it with Ctrl-C / SIGTERM as
//! the signal; tests run it in-process on port 0 with a channel of their own.

use std::future::Future;
use std::net::SocketAddr;

use anyhow::Context;
use store::Store;
use tokio::net::TcpListener;
use tokio::sync::watch;

use crate::config::Config;

/// The service, its ports bound and its start-up checks done, not yet running.
pub struct Application {
    config: Config,
    store: Store,
    http: TcpListener,
    sftp: TcpListener,
    admin: TcpListener,
    codes: store::CodeKey,
}

impl Application {
    /// Binds the HTTP and SFTP ports (port 0 picks a free one), makes or reads the SFTP host key
    /// and the codes key, and takes up what a stopped process left: batches it had claimed (on
    /// SQLite, which has one serving process) and files in the spool without a record.
    pub async fn build(config: Config, store: Store) -> anyhow::Result<Application> {
        let bind = |addr: SocketAddr, variable: &'static str| async move {
            TcpListener::bind(addr)
                .await
                .with_context(|| format!("cannot listen on {addr} ({variable})"))
        };
        let http = bind(config.http_addr, "REWARDS_HTTP_ADDR").await?;
        let sftp = bind(config.sftp_addr, "REWARDS_SFTP_ADDR").await?;
        let admin = bind(config.admin_addr, "REWARDS_ADMIN_ADDR").await?;
        // A host key that cannot be read or made stops the start, not just the SFTP door.
        ingest::sftp::keys::host_key(&config.data_dir).map_err(anyhow::Error::msg)?;
        let codes = config.code_key()?;
        if config.codes_key.is_none() && store.backend() == store::Backend::Postgres {
            tracing::warn!(
                "codes_key is not set: this node seals redemption codes with the key in its data \
                 directory; every node of one database needs the same key (set REWARDS_CODES_KEY)"
            );
        }
        if store.backend() == store::Backend::Sqlite {
            match store.batches().release_batch_claims().await {
                Ok(0) => {}
                Ok(released) => {
                    tracing::info!(released, "batches interrupted by a stop are taken up again");
                }
                Err(err) => tracing::error!(%err, "interrupted batches could not be released"),
            }
        }
        match ingest::intake::recover(&store, &config.data_dir).await {
            Ok(0) => {}
            Ok(recovered) => tracing::info!(recovered, "recorded files left in the spool"),
            Err(err) => tracing::error!(%err, "the spool could not be checked"),
        }
        Ok(Application {
            config,
            store,
            http,
            sftp,
            admin,
            codes,
        })
    }

    /// Where the HTTP API listens.
    pub fn http_addr(&self) -> std::io::Result<SocketAddr> {
        self.http.local_addr()
    }

    /// Where the operators' API listens.
    pub fn admin_addr(&self) -> std::io::Result<SocketAddr> {
        self.admin.local_addr()
    }

    /// Where the SFTP door listens.
    pub fn sftp_addr(&self) -> std::io::Result<SocketAddr> {
        self.sftp.local_addr()
    }

    /// Runs every part until `stop` resolves, then lets each finish its work in flight (requests,
    /// the chunk being credited, the file being written) and closes the store.
    pub async fn run(self, stop: impl Future<Output = ()> + Send + 'static) -> anyhow::Result<()> {
        let Application {
            config,
            store,
            http,
            sftp,
            admin,
            codes,
        } = self;
        let workers = config.background_workers;
        tracing::info!(http = %http.local_addr()?, sftp = %sftp.local_addr()?,
            admin = %admin.local_addr()?,
            backend = ?store.backend(), data_dir = %config.data_dir.display(), workers, "listening");
        let (stopping, stopped) = watch::channel(false);
        let sftp_server = tokio::spawn(ingest::sftp::serve(
            sftp,
            store.clone(),
            config.data_dir.clone(),
            config.sftp.clone(),
            until(&stopped),
        ));
        let watcher = tokio::spawn(ingest::watcher::watch(
            store.clone(),
            config.data_dir.clone(),
            ingest::watcher::Watching::default(),
            until(&stopped),
        ));
        let live_batches = ingest::batch::live::LiveBatches::default();
        let pipeline = workers.then(|| {
            tokio::spawn(ingest::batch::pipeline::run(
                store.clone(),
                config.data_dir.clone(),
                live_batches.clone(),
                until(&stopped),
            ))
        });
        let exports = workers.then(|| {
            tokio::spawn(exports::scheduled::run(
                store.clone(),
                config.data_dir.clone(),
                exports::scheduled::LOOK,
                until(&stopped),
            ))
        });
        let state = api::AppState::new(store.clone(), codes).with_settings(config.api.clone());
        // The earn inbox's writer and the metrics' upkeep always; with `workers`, the earn
        // worker, the expiry sweep, event dispatch, webhook deliveries and the leaderboards.
        let runtime = runtime::start(&state, workers, &stopped);
        let admin_server = tokio::spawn(console::serve(
            admin,
            admin::AdminState {
                live_batches,
                ..admin::AdminState::new(state.clone(), config.data_dir.clone())
            },
            until(&stopped),
        ));
        let grace = config.api.http.grace;
        let (stopped_at, stopped_at_rx) = tokio::sync::oneshot::channel();
        api::serve(http, state, async move {
            stop.await;
            let _ = stopped_at.send(tokio::time::Instant::now());
            let _ = stopping.send(true);
        })
        .await?;
        // The workers' grace is counted from the stop, as the requests' is.
        let stopped_at = stopped_at_rx
            .await
            .unwrap_or_else(|_| tokio::time::Instant::now());
        runtime.finish(stopped_at + grace).await;
        for part in [pipeline, exports].into_iter().flatten() {
            let _ = part.await;
        }
        match admin_server.await {
            Ok(Err(err)) => tracing::error!(%err, "the admin API failed"),
            Err(err) => tracing::error!(%err, "the admin API stopped abnormally"),
            Ok(Ok(())) => {}
        }
        for (name, part) in [
            ("the inbox watcher", watcher),
            ("the SFTP server", sftp_server),
        ] {
            match part.await {
                Ok(Err(err)) => tracing::error!(%err, "{name} failed"),
                Err(err) => tracing::error!(%err, "{name} stopped abnormally"),
                Ok(Ok(())) => {}
            }
        }
        store.close().await;
        tracing::info!("stopped");
        Ok(())
    }
}

/// The one stop signal, as each part takes it: a future that resolves once the service stops.
fn until(stopped: &watch::Receiver<bool>) -> impl Future<Output = ()> + Send + 'static {
    let mut stopped = stopped.clone();
    async move {
        let _ = stopped.wait_for(|stop| *stop).await;
    }
}

/// Opens the configured database (making the SQLite data directory private) and brings its
/// schema up to date.
pub async fn open_store(config: &Config) -> anyhow::Result<Store> {
    let store = match &config.database_url {
        Some(url) => Store::connect(url.expose(), config.db_max_connections)
            .await
            .with_context(|| format!("connecting to {url}"))?,
        None => {
            std::fs::create_dir_all(&config.data_dir).with_context(|| {
                format!(
                    "creating data directory {} (REWARDS_DATA_DIR)",
                    config.data_dir.display()
                )
            })?;
            tighten(&config.data_dir)?;
            let path = config.data_dir.join("rewards.db");
            Store::open_sqlite(&path)
                .await
                .with_context(|| format!("opening {}", path.display()))?
        }
    };
    store
        .migrate()
        .await
        .context("applying database migrations")?;
    let ahead = chrono::Duration::from_std(config.dates_ahead).unwrap_or(store::DATES_AHEAD);
    Ok(store.with_dates_ahead(ahead))
}

/// A data directory made by an earlier version (or by hand) is closed to other users too.
#[cfg(unix)]
fn tighten(data_dir: &std::path::Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let set = |path: &std::path::Path, mode: u32| -> anyhow::Result<()> {
        match std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            done => done.with_context(|| format!("making {} private", path.display())),
        }
    };
    set(data_dir, 0o700)?;
    for file in ["rewards.db", "rewards.db-wal", "rewards.db-shm"] {
        set(&data_dir.join(file), 0o600)?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn tighten(_: &std::path::Path) -> anyhow::Result<()> {
    Ok(())
}
