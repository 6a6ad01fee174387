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
    /// How many deliveries to one endpoint a node sends at once (`webhook_concurrency`).
    pub concurrency: usize,
    /// How long the window of a secret rotation keeps the old secret signing by default.
    pub rotation_window: Duration,
    /// The wait after a delivery's first failure (doubling after each failure after it).
    pub first_retry: Duration,
}

impl Default for WebhookSettings {
    fn default() -> Self {
        WebhookSettings {
            rules: AddressRules::default(),
            timeout: Duration::from_secs(10),
            concurrency: 16,
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
    ) -> Result<Delivery, serde_json::Error> {
        let id = event.id.clone();
        let view = crate::events::EventView::render(event, version);
        let body = serde_json::to_vec(&view)?;
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
