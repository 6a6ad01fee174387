//! A member's activities: what a member did, in a campaign, that rules with `on = "activity"`
//! may award tokens for. The table's records live here, where every domain that records one in
//! its own transaction can reach them (a first wallet, a published review, a first order); the
//! ledger awards them (`Ledger::award_activity`) and answers the API.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::types::Json;

use crate::StoreError;
use crate::backend::Tx;
use crate::common::ids::{Fingerprint, new_id};
use crate::error::known;
use seam::Tokens;

/// The activities the platform records itself, which a client may not record.
pub const BUILT_IN: [&str; 5] = [
    SIGNED_UP,
    BIRTHDAY,
    REVIEW_PUBLISHED,
    ORDER_FIRST,
    CONVERTED,
];
/// A member's first wallet in a campaign (its sign-up to the programme).
pub const SIGNED_UP: &str = "member.signed_up";
/// A member's birthday (its birth date's day, in the campaign's programme's time zone).
pub const BIRTHDAY: &str = "member.birthday";
/// A member's review visible to others (at once, or when an operator approves it).
pub const REVIEW_PUBLISHED: &str = "review.published";
/// A member's first order in a campaign.
pub const ORDER_FIRST: &str = "order.first";
/// A referral converted: recorded for the referee and the referrer (`crate::referrals`).
pub use rules::REFERRAL_CONVERTED as CONVERTED;

/// The start of the earn id of an activity's award (then the activity's id): the ledger's EARN
/// of it.
pub const AWARD_KEY: &str = "activity:";

/// The longest activity type, and why a text is not one (the rules check the type a campaign
/// names as these do).
pub use rules::{MAX_ACTIVITY_TYPE as MAX_TYPE, activity_type_problem as type_problem};

string_enum! {
    /// Who recorded an activity.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ActivitySource ("activity source") {
        /// A client, over the API.
        Api = "api",
        /// The platform itself (the built-in types).
        Platform = "platform",
        /// A batch file's row.
        File = "file",
    }
}

/// An activity to record.
#[derive(Debug, Clone, PartialEq)]
pub struct NewActivity {
    pub campaign_id: String,
    pub member_id: String,
    /// Unique in the organisation: the same activity again answers the first.
    pub external_id: String,
    pub kind: String,
    /// When it happened; `None`: when it is recorded (and a repeat without it is the same).
    pub occurred_at: Option<DateTime<Utc>>,
    /// A JSON object, or none.
    pub attributes: Option<Value>,
    pub source: ActivitySource,
    /// The batch file whose row it is.
    pub batch_id: Option<String>,
}

impl NewActivity {
    /// What a repeat under its external id must match: the same campaign (another campaign's
    /// key cannot read an activity of its own through one), member, type, time and attributes.
    pub fn fingerprint(&self) -> Fingerprint {
        Fingerprint::of(
            &["campaignId", "memberId", "type", "occurredAt", "attributes"],
            vec![
                json!(self.campaign_id),
                json!(self.member_id),
                json!(self.kind),
                json!(self.occurred_at),
                json!(self.attributes),
            ],
        )
    }
}

/// What an activity earned in one wallet: its EARN transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Award {
    pub wallet_id: String,
    pub transaction_id: String,
    pub tokens: Tokens,
    /// What each rule contributed, and each limit that cut (the compact trace).
    pub trace: Option<String>,
}

/// A recorded activity and what it earned.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Activity {
    pub id: String,
    pub campaign_id: String,
    pub member_id: String,
    pub external_id: String,
    pub kind: String,
    pub occurred_at: DateTime<Utc>,
    pub attributes: Option<Value>,
    pub source: ActivitySource,
    /// The batch file whose row recorded it.
    pub batch_id: Option<String>,
    /// Empty until awarded, and when no rule gave anything (or the member has no wallet in the
    /// campaign).
    pub awards: Vec<Award>,
    /// When its awards were settled; `None` while it waits for them.
    pub awarded_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl events::Payload for Activity {
    const RECORD: &'static str = "activity";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

#[macro_export]
macro_rules! activity_columns {
    () => {
        "id, campaign_id, member_id, external_id, type, occurred_at, attributes, source, batch_id, \
         awards, awarded_at, created_at, fingerprint"
    };
}
pub use activity_columns;

row_struct! {
    /// The columns of `activity_columns!`, in order.
    pub struct ActivityRow {
        id: String,
        campaign_id: String,
        member_id: String,
        external_id: String,
        kind: String,
        occurred_at: DateTime<Utc>,
        attributes: Option<Json<Value>>,
        source: String,
        batch_id: Option<String>,
        awards: Option<Json<Vec<Award>>>,
        awarded_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
        fingerprint: String,
    }
}

impl ActivityRow {
    /// Refuses `new` sent under this activity's external id unless it is the same activity:
    /// `already_exists` naming the first field that differs.
    pub fn same_as(&self, new: &NewActivity) -> Result<(), StoreError> {
        let fingerprint = new.fingerprint();
        match fingerprint.matches(&self.fingerprint) {
            Ok(()) => Ok(()),
            Err(_) => Err(fingerprint.conflict("externalId", &self.fingerprint)),
        }
    }

    pub fn campaign_id(&self) -> &str {
        &self.campaign_id
    }

    pub fn activity(self) -> Result<Activity, StoreError> {
        Ok(Activity {
            source: known(
                ActivitySource::parse(&self.source),
                "activities",
                "source",
                &self.source,
            )?,
            id: self.id,
            campaign_id: self.campaign_id,
            member_id: self.member_id,
            external_id: self.external_id,
            kind: self.kind,
            occurred_at: self.occurred_at,
            attributes: self.attributes.map(|a| a.0),
            batch_id: self.batch_id,
            awards: self.awards.map(|a| a.0).unwrap_or_default(),
            awarded_at: self.awarded_at,
            created_at: self.created_at,
        })
    }
}

/// The organisation's activity under external id `$2` (org `$1`).
pub const BY_EXTERNAL_ID: &str = concat!(
    "SELECT ",
    activity_columns!(),
    " FROM activities WHERE org_id = $1 AND external_id = $2"
);

/// Records `new` for organisation `org_id` in `tx` at `now`: the new activity, or the one its
/// external id holds already (`false`) when it is the same; another activity under the id is
/// `already_exists` naming the first field that differs.
pub async fn record(
    tx: &mut impl Tx,
    org_id: &str,
    new: &NewActivity,
    now: DateTime<Utc>,
) -> Result<(Activity, bool), StoreError> {
    const INSERT: &str = "INSERT INTO activities (id, org_id, campaign_id, member_id, \
         external_id, type, occurred_at, attributes, fingerprint, source, batch_id, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) \
         ON CONFLICT (org_id, external_id) DO NOTHING";
    let fingerprint = new.fingerprint();
    let (id, source) = (new_id(), new.source.as_str());
    let occurred_at = new.occurred_at.unwrap_or(now);
    let args = params![
        id,
        org_id,
        new.campaign_id,
        new.member_id,
        new.external_id,
        new.kind,
        occurred_at,
        new.attributes,
        fingerprint.text,
        source,
        new.batch_id,
        now
    ];
    let inserted = tx.execute(INSERT, args).await? == 1;
    let row: Option<ActivityRow> = tx
        .row(BY_EXTERNAL_ID, params![org_id, new.external_id])
        .await?;
    let row = row.ok_or(StoreError::NotFound { what: "activity" })?;
    if !inserted {
        row.same_as(new)?;
    }
    Ok((row.activity()?, inserted))
}

/// Records the platform's own activity `kind` of member `member_id` in campaign `campaign_id`,
/// once for `key` (its external id is `<kind>:<key>`): a second is ignored.
pub async fn record_built_in(
    tx: &mut impl Tx,
    (org_id, campaign_id): (&str, &str),
    member_id: &str,
    (kind, key): (&str, &str),
    attributes: Value,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let new = NewActivity {
        campaign_id: campaign_id.to_string(),
        member_id: member_id.to_string(),
        external_id: format!("{kind}:{key}"),
        kind: kind.to_string(),
        occurred_at: Some(at),
        attributes: Some(attributes),
        source: ActivitySource::Platform,
        batch_id: None,
    };
    match record(tx, org_id, &new, at).await {
        // The same key with other attributes (a first order recorded, another placed in a
        // race): the first stands.
        Ok(_) | Err(StoreError::Refused { .. }) => Ok(()),
        Err(err) => Err(err),
    }
}
