//! An event and the record it carries. A record is a payload's name (`record`), the version of
//! its shape (`v`, 1 when absent) and its JSON (`value`), as the domain that made it serialised
//! it: the domain owns the type and says, through `Payload`, how an older shape reads as
//! today's. A stored event therefore never depends on a type it cannot see, and a field added to
//! a domain's type does not make the events already written unreadable.

use chrono::{DateTime, Utc};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::backend::{Arg, ToArg, Tx};
use crate::common::ids::new_id;
use crate::error::{StoreError, known};

string_enum! {
    /// What an event says happened.
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum EventType ("event type") {
        EarnCompleted = "earn.completed",
        EarnRejected = "earn.rejected",
        TransactionCreated = "transaction.created",
        WalletTierChanged = "wallet.tier_changed",
        WalletPointsExpiring = "wallet.points_expiring",
        BatchCompleted = "batch.completed",
        BatchFailed = "batch.failed",
        BatchDuplicate = "batch.duplicate",
        OrderCreated = "order.created",
        OrderCancelled = "order.cancelled",
        CodeRedeemed = "code.redeemed",
        BookingCreated = "booking.created",
        BookingStatusChanged = "booking.status_changed",
        ReviewCreated = "review.created",
        ReviewHeld = "review.held",
        ReviewReported = "review.reported",
        MemberCreated = "member.created",
        MemberUpdated = "member.updated",
        MemberDeleted = "member.deleted",
        ActivityRecorded = "activity.recorded",
        ReferralConverted = "referral.converted",
        /// Sent to one endpoint by an operator's test; never in the feed.
        WebhookTest = "webhook.test",
    }
}

/// A domain's type that an event carries.
pub trait Payload: Serialize + DeserializeOwned {
    /// The record's name in stored events.
    const RECORD: &'static str;
    /// The version of the type's stored shape: raised when a change to the type would not read
    /// what was written before, with `upgrade` taking each older shape to this one.
    const VERSION: u32 = 1;

    /// The id of the record the event is about.
    fn subject_id(&self) -> Option<&str>;

    /// `value`, stored in shape `version` (older than `VERSION`), as this version reads it.
    fn upgrade(version: u32, _value: Value) -> Result<Value, String> {
        Err(format!("no reading of shape {version}"))
    }
}

fn first_version() -> u32 {
    1
}

fn is_first(version: &u32) -> bool {
    *version == 1
}

/// The record an event carries, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Which payload it is (`Payload::RECORD`).
    pub record: String,
    /// Its shape's version (`Payload::VERSION` when it was written).
    #[serde(
        default = "first_version",
        skip_serializing_if = "is_first",
        rename = "v"
    )]
    pub version: u32,
    pub value: Value,
}

impl Record {
    /// `payload`'s record.
    pub fn of<P: Payload>(payload: &P) -> Result<Record, StoreError> {
        let value = serde_json::to_value(payload)
            .map_err(|e| StoreError::NotCommitted(format!("an event's record: {e}")))?;
        Ok(Record {
            record: P::RECORD.to_string(),
            version: P::VERSION,
            value,
        })
    }

    /// Whether this record is a `P`.
    pub fn is<P: Payload>(&self) -> bool {
        self.record == P::RECORD
    }

    /// The `P` this record holds, read from whichever shape it was stored in.
    pub fn read<P: Payload>(&self) -> Result<P, StoreError> {
        let unreadable = |why: String| StoreError::UnknownStored {
            table: "events",
            column: "data",
            value: format!("{} record: {why}", self.record),
        };
        if !self.is::<P>() {
            return Err(unreadable(format!("not a {} record", P::RECORD)));
        }
        let value = match self.version {
            v if v == P::VERSION => self.value.clone(),
            v if v < P::VERSION => P::upgrade(v, self.value.clone()).map_err(unreadable)?,
            v => {
                return Err(unreadable(format!(
                    "shape {v} is newer than this build reads"
                )));
            }
        };
        serde_json::from_value(value).map_err(|e| unreadable(e.to_string()))
    }

    /// The record as an event row stores it.
    pub fn text(&self) -> Result<String, StoreError> {
        serde_json::to_string(self)
            .map_err(|e| StoreError::NotCommitted(format!("an event's record: {e}")))
    }

    /// Event `id`'s record, from its row's `data`.
    pub fn stored(id: &str, data: &str) -> Result<Record, StoreError> {
        serde_json::from_str(data).map_err(|e| StoreError::UnknownStored {
            table: "events",
            column: "data",
            value: format!("{id}: {e}"),
        })
    }
}

/// `webhook.test`: the endpoint an operator's test was sent to.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TestEvent {
    pub endpoint_id: String,
}

impl Payload for TestEvent {
    const RECORD: &'static str = "test";
    fn subject_id(&self) -> Option<&str> {
        None
    }
}

/// One event, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    pub id: String,
    pub org_id: String,
    /// `None`: an event of the organisation's, not of one campaign's.
    pub campaign_id: Option<String>,
    pub kind: EventType,
    pub occurred_at: DateTime<Utc>,
    pub data: Record,
    /// Its place in the organisation's feed (`None` until the dispatcher numbers it).
    pub seq: Option<i64>,
}

/// An event to record with a change, its JSON made before the change's transaction starts.
#[derive(Debug, Clone)]
pub struct NewEvent {
    pub id: String,
    pub org_id: String,
    pub campaign_id: Option<String>,
    pub kind: EventType,
    pub subject_id: Option<String>,
    pub occurred_at: DateTime<Utc>,
    pub data: String,
}

impl NewEvent {
    /// `kind` about `payload`, in the organisation (and the campaign, if any), as it happened
    /// `at` (the time of the change it goes with).
    pub fn new<P: Payload>(
        org_id: &str,
        campaign_id: Option<&str>,
        kind: EventType,
        payload: &P,
        at: DateTime<Utc>,
    ) -> Result<NewEvent, StoreError> {
        Ok(NewEvent {
            id: new_id(),
            org_id: org_id.to_string(),
            campaign_id: campaign_id.map(str::to_string),
            kind,
            subject_id: payload.subject_id().map(str::to_string),
            occurred_at: at,
            data: Record::of(payload)?.text()?,
        })
    }

    /// The statement's arguments, in `INSERT`'s column order.
    pub fn args(&self) -> [Arg<'_>; 7] {
        [
            self.id.to_arg(),
            self.org_id.to_arg(),
            self.campaign_id.to_arg(),
            self.kind.to_arg(),
            self.subject_id.to_arg(),
            self.occurred_at.to_arg(),
            self.data.to_arg(),
        ]
    }
}

/// `INSERT`'s column list (`NewEvent::args` gives their values); a statement that records an
/// event with other work names these.
#[macro_export]
macro_rules! event_columns {
    () => {
        "id, org_id, campaign_id, type, subject_id, occurred_at, data"
    };
}

const INSERT: &str = concat!(
    "INSERT INTO events (",
    event_columns!(),
    ") VALUES ($1, $2, $3, $4, $5, $6, $7)"
);

/// Records `event` in the caller's transaction: it commits or rolls back with the change.
pub async fn record(tx: &mut impl Tx, event: &NewEvent) -> Result<(), StoreError> {
    tx.execute(INSERT, &event.args()).await?;
    Ok(())
}

/// Records `events` in the caller's transaction (on PostgreSQL in multi-row statements).
pub async fn record_all(tx: &mut impl Tx, events: &[NewEvent]) -> Result<(), StoreError> {
    if events.is_empty() {
        return Ok(());
    }
    let values: Vec<_> = events.iter().flat_map(NewEvent::args).collect();
    let head = concat!("INSERT INTO events (", event_columns!(), ")");
    tx.insert_rows(head, "", 7, &values).await?;
    Ok(())
}

/// Replaces the record of the organisation's events of `kinds` about `subject_id` with
/// `payload`'s, in the caller's transaction (an erasure: what they said is gone).
pub async fn replace_data<P: Payload>(
    tx: &mut impl Tx,
    org_id: &str,
    subject_id: &str,
    kinds: &[EventType],
    payload: &P,
) -> Result<(), StoreError> {
    const SQL: &str = "UPDATE events SET data = $3 WHERE subject_id = $2 AND org_id = $1 \
         AND type = $4";
    let data = Record::of(payload)?.text()?;
    for kind in kinds {
        tx.execute(SQL, params![org_id, subject_id, &data, kind])
            .await?;
    }
    Ok(())
}

row_struct! {
    pub struct EventRow {
        id: String,
        org_id: String,
        campaign_id: Option<String>,
        kind: String,
        occurred_at: DateTime<Utc>,
        data: String,
        seq: Option<i64>,
    }
}

/// The columns an `EventRow` reads.
pub const EVENT_COLUMNS: &str = "id, org_id, campaign_id, type, occurred_at, data, seq";

impl EventRow {
    /// The event this row holds.
    pub fn into_event(self) -> Result<Event, StoreError> {
        let kind = known(EventType::parse(&self.kind), "events", "type", &self.kind)?;
        let data = Record::stored(&self.id, &self.data)?;
        Ok(Event {
            id: self.id,
            org_id: self.org_id,
            campaign_id: self.campaign_id,
            kind,
            occurred_at: self.occurred_at,
            data,
            seq: self.seq,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A domain's type as it was first stored.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Parcel {
        id: String,
        weight: u32,
    }

    impl Payload for Parcel {
        const RECORD: &'static str = "parcel";
        fn subject_id(&self) -> Option<&str> {
            Some(&self.id)
        }
    }

    /// The same type after it gained a field its readers require.
    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct ParcelWithPostcode {
        id: String,
        weight: u32,
        postcode: String,
    }

    impl Payload for ParcelWithPostcode {
        const RECORD: &'static str = "parcel";
        const VERSION: u32 = 2;
        fn subject_id(&self) -> Option<&str> {
            Some(&self.id)
        }
        fn upgrade(version: u32, mut value: Value) -> Result<Value, String> {
            match version {
                1 => {
                    value["postcode"] = Value::from("unknown");
                    Ok(value)
                }
                other => Err(format!("no reading of shape {other}")),
            }
        }
    }

    fn stored<P: Payload>(payload: &P) -> String {
        NewEvent::new("org", None, EventType::WebhookTest, payload, Utc::now())
            .unwrap()
            .data
    }

    #[test]
    fn an_event_written_before_its_type_gained_a_field_reads_back() {
        let old = stored(&Parcel {
            id: "p1".into(),
            weight: 3,
        });
        assert_eq!(
            old, r#"{"record":"parcel","value":{"id":"p1","weight":3}}"#,
            "today's stored shape: no version written for the first"
        );
        let read: ParcelWithPostcode = Record::stored("e1", &old).unwrap().read().unwrap();
        assert_eq!(
            read,
            ParcelWithPostcode {
                id: "p1".into(),
                weight: 3,
                postcode: "unknown".into(),
            }
        );
        let new = stored(&read);
        let again: ParcelWithPostcode = Record::stored("e2", &new).unwrap().read().unwrap();
        assert_eq!(again, read, "the new shape reads as itself");
        // A build that knows only the first shape refuses the newer one instead of guessing.
        let refused = Record::stored("e2", &new).unwrap().read::<Parcel>();
        assert!(
            matches!(refused, Err(StoreError::UnknownStored { .. })),
            "{refused:?}"
        );
    }

    #[test]
    fn a_record_reads_only_as_its_own_type() {
        let test = Record::stored(
            "e",
            &stored(&TestEvent {
                endpoint_id: "x".into(),
            }),
        )
        .unwrap();
        assert!(test.is::<TestEvent>());
        assert!(test.read::<Parcel>().is_err());
        assert_eq!(
            test.read::<TestEvent>().unwrap(),
            TestEvent {
                endpoint_id: "x".into()
            }
        );
    }
}
