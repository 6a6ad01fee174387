//! The embedded SFTP server (russh and russh-sftp): operator-issued users, each confined to its
//! organisation's tree, uploading earn files into `inbox/` and reading `reports/` and
//! `templates/`. Hardened as a reviewer would expect beside SFTPGo: bounded packets, a constant
//! delay on every rejected login, a cap on login attempts per connection, an idle timeout, and a
//! defender that bans an address after repeated failures.

mod bounded;
mod defender;
mod files;
pub mod keys;
mod session;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use russh::server::Server as _;
use store::Store;
use tokio::net::TcpListener;

use crate::error::{Context, IngestError};

pub use defender::Policy as BanPolicy;

/// The server's limits; `Settings::default()` holds the documented defaults.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The largest file accepted, in bytes.
    pub max_upload_bytes: u64,
    /// The largest SFTP packet a client may send.
    pub max_packet_bytes: u32,
    /// Every rejected login is answered after this long, whatever the reason.
    pub auth_rejection_delay: Duration,
    /// Login attempts allowed on one connection.
    pub max_auth_attempts: usize,
    /// A connection silent this long is closed.
    pub idle_timeout: Duration,
    pub ban: BanPolicy,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            max_upload_bytes: 1 << 30,
            max_packet_bytes: 256 * 1024,
            auth_rejection_delay: Duration::from_secs(1),
            max_auth_attempts: 6,
            idle_timeout: Duration::from_secs(600),
            ban: BanPolicy {
                failures: 5,
                window: Duration::from_secs(300),
                ban: Duration::from_secs(900),
            },
        }
    }
}

struct Server {
    context: Arc<files::Context>,
    defender: Arc<defender::Defender>,
}

impl russh::server::Server for Server {
    type Handler = session::Connection;

    fn new_client(&mut self, peer: Option<std::net::SocketAddr>) -> session::Connection {
        session::Connection {
            context: self.context.clone(),
            defender: self.defender.clone(),
            peer,
            login: None,
            channels: HashMap::new(),
        }
    }
}

/// Serves SFTP on `listener` until `shutdown` resolves. The host key is read from (or made in)
/// `data_dir`.
pub async fn serve(
    listener: TcpListener,
    store: Store,
    data_dir: PathBuf,
    settings: Settings,
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> Result<(), IngestError> {
    let host_key = crate::sftp::keys::host_key(&data_dir)?;
    tracing::info!(
        fingerprint = %crate::sftp::keys::fingerprint(host_key.public_key()),
        "SFTP host key"
    );
    let config = russh::server::Config {
        auth_rejection_time: settings.auth_rejection_delay,
        // OpenSSH clients first ask with "none" to learn the methods: no delay for that.
        auth_rejection_time_initial: Some(Duration::ZERO),
        max_auth_attempts: settings.max_auth_attempts,
        inactivity_timeout: Some(settings.idle_timeout),
        keys: vec![host_key],
        methods: russh::MethodSet::from(
            &[russh::MethodKind::Password, russh::MethodKind::PublicKey][..],
        ),
        nodelay: true,
        ..Default::default()
    };
    let mut server = Server {
        defender: Arc::new(defender::Defender::new(settings.ban)),
        context: Arc::new(files::Context {
            store,
            data_dir,
            settings,
        }),
    };
    let running = server.run_on_socket(Arc::new(config), &listener);
    let handle = running.handle();
    tokio::select! {
        result = running => result.context("the SFTP server"),
        () = shutdown => {
            handle.shutdown("server shutting down".into());
            Ok(())
        }
    }
}
