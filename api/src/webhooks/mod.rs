//! Webhooks: the organisation's endpoints, managed with a key holding the `webhooks`
//! permission, or by an operator (the admin API calls the same organisation-scoped functions
//! exported here; `rewards webhook ...`). Deliveries are sent by the node's runtime (the
//! `runtime` crate) through the `outbound` client.

mod endpoints;

pub use crate::events::event_types;
pub use endpoints::{
    AttemptView, EndpointUpdate, EndpointView, NewEndpointView, NewFields, Queued, RedeliveryInput,
    RotationInput, add, attempts, deliver_again, get, list, remove, rotate, router, test, update,
    url_schema, version_schema,
};
