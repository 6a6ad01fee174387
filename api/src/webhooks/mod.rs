//! Webhooks: the organisation's endpoints, managed with a key holding the `webhooks`
//! permission (or by the operator: `rewards webhook ...`). Deliveries are sent by the node's
//! runtime (the `runtime` crate) through the `outbound` client.

mod endpoints;

pub use endpoints::{AttemptView, EndpointView, NewEndpointView, Queued, router};
