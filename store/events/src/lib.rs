//! Events out: what happened in a programme, for its webhook endpoints and its event feed. It
//! knows no domain: each domain builds its own payloads (`Payload`, in `record.rs`) and records
//! them in its own transactions; the store above every domain reads them back as its typed
//! union. Where things live:
//!
//! - `record.rs`: an event as recorded (`Event`), an event to record with a change
//!   (`NewEvent`), the stored record (`Record`: a payload's name, its shape's version and its
//!   JSON) and the `Payload` trait each domain's types implement.
//! - `feed.rs`: the `Events` handle and the feed a client pages through.
//! - `deliveries.rs`: numbering events, fanning them out to endpoints, claiming deliveries,
//!   their attempts, redeliveries and test events.
//! - `endpoints.rs`: webhook endpoints and their sealed secrets.
//! - `retention.rs`: how long events are kept, and the sweep that deletes them.
//!
//! An event is written by the change it describes, in the same database transaction
//! (`record`): a change that rolls back leaves no event, and a committed one always has its
//! event, whatever happens to the process after the commit. Events are numbered after they
//! commit, by one dispatcher at a time (`deliveries.rs`): an event's `seq` is its place in the
//! feed, so a reader paging by it never skips an event that committed after a later-numbered
//! one.

#![allow(async_fn_in_trait)]

#[macro_use]
extern crate seam;

#[macro_use]
mod record;
pub mod deliveries;
pub mod endpoints;
mod feed;
pub mod retention;

use seam::{backend, common, error};

pub use deliveries::{
    AttemptOutcome, ClaimedDelivery, DeliveryAttempt, DeliveryStatus, Dispatched, EndpointAfter,
    FIRST_RETRY, ManualBounds, Redelivery,
};
pub use endpoints::{EndpointPatch, EndpointStatus, NewEndpoint, Secrets, WebhookEndpoint};
pub use feed::{EventFilter, Events};
pub use record::{
    EVENT_COLUMNS, Event, EventRow, EventType, NewEvent, Payload, Record, TestEvent, record,
    record_all, replace_data,
};
pub use retention::EVENT_RETENTION;
