//! Webhook deliveries out, for the node's runtime and the endpoints' checks: `client` (the
//! HTTPS client and the address rules it keeps on every connection), `signature` (Standard
//! Webhooks secrets and signatures), and here the settings an operator tunes.

pub mod client;
pub mod signature;

use std::time::Duration;

pub use client::{AddressRules, Network, Sender};

/// What an operator may tune about deliveries.
#[derive(Debug, Clone, PartialEq)]
pub struct WebhookSettings {
    /// Which endpoint addresses are allowed (`webhook_allow_http`, `webhook_allow`).
    pub rules: AddressRules,
    /// How long one attempt may take, connecting and answering (`webhook_timeout_secs`).
    pub timeout: Duration,
    /// How many deliveries to one endpoint a node sends at once (`webhook_concurrency`), at
    /// most: fewer while its receiver does not answer.
    pub concurrency: usize,
    /// How many deliveries a node sends at once over every endpoint (`webhook_sockets`).
    pub sockets: usize,
    /// Of `sockets`, how many one organisation's endpoints take at most (`webhook_org_sockets`).
    pub org_sockets: usize,
    /// How many endpoints an organisation may have (`webhook_endpoints_per_org`).
    pub endpoints_per_org: usize,
    /// How many deliveries an organisation may ask for by hand (redeliveries and tests).
    pub manual: store::ManualBounds,
    /// How long the window of a secret rotation keeps the old secret signing by default.
    pub rotation_window: Duration,
    /// The wait after a delivery's first failure (doubling after each failure after it).
    pub first_retry: Duration,
}

/// `sockets` where the descriptor limit says nothing better (see `sockets_within`).
pub const DEFAULT_SOCKETS: usize = 64;

/// The most sockets deliveries may keep open when the process may open `descriptors` files
/// and the HTTP listener serves `http_connections` at once: a quarter of what is left after
/// the listener and 256 more (database, SFTP, files), from 8 to 1,024.
pub fn sockets_within(descriptors: u64, http_connections: usize) -> usize {
    let left = descriptors.saturating_sub(http_connections as u64 + 256);
    usize::try_from(left / 4)
        .unwrap_or(usize::MAX)
        .clamp(8, 1_024)
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            rules: AddressRules::default(),
            timeout: Duration::from_secs(10),
            concurrency: 16,
            sockets: DEFAULT_SOCKETS,
            org_sockets: DEFAULT_SOCKETS / 4,
            endpoints_per_org: 25,
            manual: store::ManualBounds::default(),
            rotation_window: Duration::from_secs(24 * 3600),
            first_retry: store::FIRST_RETRY
                .to_std()
                .unwrap_or(Duration::from_secs(10)),
        }
    }
}
