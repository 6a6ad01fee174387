//! Webhooks: the organisation's endpoints, managed with a key holding the `webhooks`
//! permission (or by the operator: `rewards webhook ...`), and how deliveries are made:
//! `signature` (Standard Webhooks), `client` (the HTTP client and its address rules). The
//! delivery workers are `jobs::deliveries`.

pub mod client;
mod endpoints;
pub mod signature;

use std::time::Duration;

pub use client::{AddressRules, Network, Sender};
pub use endpoints::{AttemptView, EndpointView, NewEndpointView, Queued, router};

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

/// The request a delivery makes: its headers and its body.
pub struct Delivery {
    pub headers: Vec<(&'static str, String)>,
    pub body: hyper::body::Bytes,
}

impl Delivery {
    /// `event` as delivered to an endpoint pinned to `version`, signed with `secrets` at
    /// `timestamp` (Unix seconds).
    pub fn new<'a>(
        event: store::Event,
        version: store::ApiVersion,
        secrets: impl IntoIterator<Item = &'a str>,
        timestamp: i64,
    ) -> Result<Delivery, String> {
        let id = event.id.clone();
        let view = crate::events::EventView::render(event, version)
            .map_err(|err| format!("the event could not be read: {err}"))?;
        let body = serde_json::to_vec(&view)
            .map_err(|err| format!("the event could not be written as JSON: {err}"))?;
        let signature = signature::header(secrets, &id, timestamp, &body);
        Ok(Delivery {
            headers: vec![
                ("webhook-id", id),
                ("webhook-timestamp", timestamp.to_string()),
                ("webhook-signature", signature),
            ],
            body: body.into(),
        })
    }
}
