//! Members' records: creating, reading, changing and erasing them, and what their events carry.

use crate::OrgScope;
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;

use crate::backend::{Arg, Steps, ToArg, Tx};
use crate::common::ids::new_id;
use crate::error::conflict_on;
use crate::error::known;
use crate::referrals;
use crate::{Members, Page, Paged, StoreError};
use events::{EventType, NewEvent};

/// The categories a member's communication preferences are kept for, in the seed's order.
pub const CATEGORIES: [&str; 5] = ["general", "marketing", "booking", "earn", "order"];

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Channels {
    pub email: bool,
    pub sms: bool,
}

/// Consent per category and channel; everything is off until the member opts in. Stored once in
/// this shape; each API version renders its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct CommunicationPreferences {
    pub general: Channels,
    pub marketing: Channels,
    pub booking: Channels,
    pub earn: Channels,
    pub order: Channels,
}

impl CommunicationPreferences {
    /// The categories with their channels, in `CATEGORIES` order.
    pub fn categories(&self) -> [(&'static str, Channels); 5] {
        [
            ("general", self.general),
            ("marketing", self.marketing),
            ("booking", self.booking),
            ("earn", self.earn),
            ("order", self.order),
        ]
    }

    fn category_mut(&mut self, category: &str) -> Option<&mut Channels> {
        match category {
            "general" => Some(&mut self.general),
            "marketing" => Some(&mut self.marketing),
            "booking" => Some(&mut self.booking),
            "earn" => Some(&mut self.earn),
            "order" => Some(&mut self.order),
            _ => None,
        }
    }

    pub fn apply(&mut self, patch: &PreferencesPatch) {
        for (category, change) in &patch.0 {
            if let Some(channels) = self.category_mut(category) {
                channels.email = change.email.unwrap_or(channels.email);
                channels.sms = change.sms.unwrap_or(channels.sms);
            }
        }
    }
}

/// A change to some channels of one category; `None` keeps the current value.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChannelsPatch {
    pub email: Option<bool>,
    pub sms: Option<bool>,
}

/// Changes per category (names from `CATEGORIES`); categories not listed keep their values.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PreferencesPatch(pub Vec<(&'static str, ChannelsPatch)>);

string_enum! {
    #[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
    pub enum MemberStatus ("member status") {
        #[default]
        Active = "active",
        Inactive = "inactive",
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Member {
    pub id: String,
    pub first_name: String,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub status: MemberStatus,
    /// The identity provider `user_id` belongs to; `reference` when the client keeps its own ids.
    pub idp: String,
    pub user_id: String,
    /// The client's reference for the member, used by orders and wallets; unique per organisation.
    pub external_id: String,
    pub meta: Option<Value>,
    pub communication_preferences: CommunicationPreferences,
    /// Its day is the member's `member.birthday` activity's.
    pub birth_date: Option<NaiveDate>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewMember {
    pub first_name: String,
    pub last_name: Option<String>,
    pub email: Option<String>,
    pub phone: Option<String>,
    pub status: MemberStatus,
    pub idp: String,
    pub user_id: String,
    pub external_id: String,
    pub meta: Option<Value>,
    pub communication_preferences: CommunicationPreferences,
    pub birth_date: Option<NaiveDate>,
    /// Another member's referral code, as typed: the new member is its referee.
    pub referral_code: Option<String>,
}

/// A partial update: `None` keeps a field; `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MemberPatch {
    pub first_name: Option<String>,
    pub last_name: Option<Option<String>>,
    pub email: Option<Option<String>>,
    pub phone: Option<Option<String>>,
    pub status: Option<MemberStatus>,
    pub idp: Option<String>,
    pub user_id: Option<String>,
    pub external_id: Option<String>,
    pub meta: Option<Option<Value>>,
    pub communication_preferences: Option<PreferencesPatch>,
    pub birth_date: Option<Option<NaiveDate>>,
}

impl Member {
    fn apply(&mut self, patch: MemberPatch) {
        fn set<T>(field: &mut T, value: Option<T>) {
            if let Some(value) = value {
                *field = value;
            }
        }
        set(&mut self.first_name, patch.first_name);
        set(&mut self.last_name, patch.last_name);
        set(&mut self.email, patch.email);
        set(&mut self.phone, patch.phone);
        set(&mut self.status, patch.status);
        set(&mut self.idp, patch.idp);
        set(&mut self.user_id, patch.user_id);
        set(&mut self.external_id, patch.external_id);
        set(&mut self.meta, patch.meta);
        set(&mut self.birth_date, patch.birth_date);
        if let Some(preferences) = &patch.communication_preferences {
            self.communication_preferences.apply(preferences);
        }
    }
}

macro_rules! member_columns {
    () => {
        "id, first_name, last_name, email, phone, status, idp, user_id, external_id, meta, \
         communication_preferences, birth_date, created_at, updated_at"
    };
}

const SELECT_LIVE: &str = concat!(
    "SELECT ",
    member_columns!(),
    " FROM members WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL"
);

row_struct! {
    /// The columns of `member_columns!`, in order. Personal fields are nullable because erasure
    /// clears them.
    struct MemberRow {
        id: String,
        first_name: Option<String>,
        last_name: Option<String>,
        email: Option<String>,
        phone: Option<String>,
        status: String,
        idp: Option<String>,
        user_id: Option<String>,
        external_id: Option<String>,
        meta: Option<Json<Value>>,
        communication_preferences: Option<Json<CommunicationPreferences>>,
        birth_date: Option<String>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

fn member_from_row(r: MemberRow) -> Result<Member, StoreError> {
    Ok(Member {
        status: known(r.status.parse().ok(), "members", "status", &r.status)?,
        id: r.id,
        first_name: r.first_name.unwrap_or_default(),
        last_name: r.last_name,
        email: r.email,
        phone: r.phone,
        idp: r.idp.unwrap_or_default(),
        user_id: r.user_id.unwrap_or_default(),
        external_id: r.external_id.unwrap_or_default(),
        meta: r.meta.map(|m| m.0),
        communication_preferences: r.communication_preferences.map(|p| p.0).unwrap_or_default(),
        birth_date: r
            .birth_date
            .map(|d| {
                let day = NaiveDate::parse_from_str(&d, "%Y-%m-%d").ok();
                known(day, "members", "birth_date", &d)
            })
            .transpose()?,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

/// Unique indexes of `members` and the API fields they protect.
impl Member {
    /// The values of `first_name` to `birth_date` (`preferences`, the member's preferences as
    /// JSON; `birth_date`, its text), in the table's order: `$3` to `$13` of its insert and its
    /// update.
    fn column_args<'a>(
        &'a self,
        preferences: &'a serde_json::Value,
        birth_date: &'a Option<String>,
    ) -> [Arg<'a>; 11] {
        [
            self.first_name.to_arg(),
            self.last_name.to_arg(),
            self.email.to_arg(),
            self.phone.to_arg(),
            self.status.to_arg(),
            self.idp.to_arg(),
            self.user_id.to_arg(),
            self.external_id.to_arg(),
            self.meta.to_arg(),
            preferences.to_arg(),
            birth_date.to_arg(),
        ]
    }
}

const MEMBER_UNIQUE: &[(&str, &str)] = &[("external_id", "externalId"), ("user_id", "userId")];

/// Members: an organisation's members and their communication preferences (scope: `OrgScope`).
impl Members {
    /// Creates a member. `externalId` and (`idp`, `userId`) are unique among the organisation's
    /// live members: a clash is `Conflict` naming the field.
    #[tracing::instrument(skip_all)]
    pub async fn create_member(
        &self,
        org: &OrgScope,
        new: NewMember,
    ) -> Result<Member, StoreError> {
        let org_id = org.id();
        let now = self.now();
        let member = Member {
            id: new_id(),
            first_name: new.first_name,
            last_name: new.last_name,
            email: new.email,
            phone: new.phone,
            status: new.status,
            idp: new.idp,
            user_id: new.user_id,
            external_id: new.external_id,
            meta: new.meta,
            communication_preferences: new.communication_preferences,
            birth_date: new.birth_date,
            created_at: now,
            updated_at: now,
        };
        self.write(Create {
            org_id: org_id.to_string(),
            member,
            referral_code: new.referral_code,
        })
        .await
    }

    /// The organisation's live members in creation order.
    #[tracing::instrument(skip_all)]
    pub async fn list_members(
        &self,
        org: &OrgScope,
        page: Page,
    ) -> Result<Paged<Member>, StoreError> {
        let org_id = org.id();
        let rows = self
            .read_page_by_key(
                page,
                member_columns!(),
                "members",
                "WHERE org_id = $1 AND deleted_at IS NULL",
                "id",
                params![org_id],
            )
            .await?;
        Paged::of(rows, page, member_from_row)
    }

    /// The organisation's live members that `query` names, in creation order: by id, external
    /// id, user id (at any identity provider) or e-mail (in any case). What support looks up.
    #[tracing::instrument(skip_all)]
    pub async fn find_members(
        &self,
        org: &OrgScope,
        query: &str,
        page: Page,
    ) -> Result<Paged<Member>, StoreError> {
        let query = query.trim();
        // Each way of naming a member through its own index: behind one `OR` of the four, a
        // planner walks every member of the organisation. On PostgreSQL the found members are
        // fenced (`OFFSET 0`) before they are ordered: otherwise its plan for any query walks
        // the organisation's members in id order to meet them (39 ms at 100,000).
        let found = "SELECT * FROM members WHERE org_id = $1 AND deleted_at IS NULL AND id IN \
             (SELECT id FROM members WHERE id = $2 \
             UNION SELECT id FROM members WHERE org_id = $1 AND external_id = $2 \
             UNION SELECT id FROM members WHERE org_id = $1 AND deleted_at IS NULL \
             AND user_id = $2 \
             UNION SELECT id FROM members WHERE org_id = $1 AND deleted_at IS NULL \
             AND lower(email) = lower($2))";
        let from = self.dialect(
            format!("FROM ({found}) members"),
            format!("FROM ({found} OFFSET 0) members"),
        );
        let rows = self
            .read_page(
                page,
                member_columns!(),
                &from,
                "id",
                params![org.id(), query],
            )
            .await?;
        Paged::of(rows, page, member_from_row)
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_member(&self, org: &OrgScope, id: &str) -> Result<Member, StoreError> {
        let org_id = org.id();
        let row: Option<MemberRow> = self.read_row(SELECT_LIVE, params![org_id, id]).await?;
        row.ok_or(StoreError::NotFound { what: "member" })
            .and_then(member_from_row)
    }

    /// The live member linked to `user_id` at identity provider `idp`.
    #[tracing::instrument(skip_all)]
    pub async fn find_member_by_idp(
        &self,
        org: &OrgScope,
        idp: &str,
        user_id: &str,
    ) -> Result<Member, StoreError> {
        let org_id = org.id();
        const SQL: &str = concat!(
            "SELECT ",
            member_columns!(),
            " FROM members WHERE org_id = $1 AND idp = $2 AND user_id = $3 AND deleted_at IS NULL"
        );
        let row: Option<MemberRow> = self.read_row(SQL, params![org_id, idp, user_id]).await?;
        row.ok_or(StoreError::NotFound { what: "member" })
            .and_then(member_from_row)
    }

    /// Applies `patch` to a live member atomically (concurrent updates do not lose each other's
    /// changes to communication preferences) and returns the member as it now is.
    #[tracing::instrument(skip_all)]
    pub async fn update_member(
        &self,
        org: &OrgScope,
        id: &str,
        patch: MemberPatch,
    ) -> Result<Member, StoreError> {
        let org_id = org.id();
        self.write(Change {
            org_id: org_id.to_string(),
            id: id.to_string(),
            change: Changing::Patch(Box::new(patch)),
            at: self.now(),
        })
        .await
    }

    /// Deletes a live member: erases every personal field (identifiers included, so they may be
    /// used again), marks it inactive and deleted, and returns the member as it was.
    #[tracing::instrument(skip_all)]
    pub async fn delete_member(&self, org: &OrgScope, id: &str) -> Result<Member, StoreError> {
        let org_id = org.id();
        self.write(Change {
            org_id: org_id.to_string(),
            id: id.to_string(),
            change: Changing::Erase,
            at: self.now(),
        })
        .await
    }
}

/// A new member and its `member.created` (and its referral, given a code), in one transaction.
struct Create {
    org_id: String,
    member: Member,
    referral_code: Option<String>,
}

impl Steps for Create {
    type Output = Member;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Member, StoreError> {
        const INSERT: &str = "INSERT INTO members (org_id, id, first_name, last_name, email, \
             phone, status, idp, user_id, external_id, meta, communication_preferences, \
             birth_date, created_at, updated_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)";
        let member = self.member;
        let referrer = match &self.referral_code {
            Some(code) => Some(referrals::referrer_of(tx, &self.org_id, code).await?),
            None => None,
        };
        let preferences = serde_json::json!(member.communication_preferences);
        let birth_date = member.birth_date.map(|d| d.to_string());
        let mut args = params![self.org_id, member.id].to_vec();
        args.extend(member.column_args(&preferences, &birth_date));
        args.extend(params![member.created_at, member.updated_at]);
        tx.execute(INSERT, &args)
            .await
            .map_err(|e| conflict_on(e, MEMBER_UNIQUE))?;
        let at = member.created_at;
        if let Some((referrer, code)) = referrer {
            let pair = (referrer.as_str(), member.id.as_str());
            referrals::insert_referral(tx, &self.org_id, pair, &code, at).await?;
        }
        let event = NewEvent::new(&self.org_id, None, EventType::MemberCreated, &member, at)?;
        events::record(tx, &event).await?;
        Ok(member)
    }
}

/// A change to a live member, read and written in one transaction (concurrent updates do not
/// lose each other's changes).
struct Change {
    org_id: String,
    id: String,
    change: Changing,
    /// When it is made, as the store's clock says.
    at: DateTime<Utc>,
}

enum Changing {
    Patch(Box<MemberPatch>),
    Erase,
}

impl Steps for Change {
    type Output = Member;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Member, StoreError> {
        const UPDATE: &str = "UPDATE members SET first_name = $3, last_name = $4, email = $5, \
             phone = $6, status = $7, idp = $8, user_id = $9, external_id = $10, meta = $11, \
             communication_preferences = $12, birth_date = $13, updated_at = $14 \
             WHERE org_id = $1 AND id = $2";
        const ERASE: &str = "UPDATE members SET first_name = NULL, last_name = NULL, \
             email = NULL, phone = NULL, idp = NULL, user_id = NULL, external_id = NULL, \
             meta = NULL, communication_preferences = NULL, birth_date = NULL, \
             status = 'inactive', \
             updated_at = $3, deleted_at = $3 WHERE org_id = $1 AND id = $2";
        let (org_id, id) = (&self.org_id, &self.id);
        let row: Option<MemberRow> = tx.row_locked(SELECT_LIVE, params![org_id, id]).await?;
        let mut member = member_from_row(row.ok_or(StoreError::NotFound { what: "member" })?)?;
        match self.change {
            Changing::Patch(patch) => {
                member.apply(*patch);
                member.updated_at = self.at;
                let preferences = serde_json::json!(member.communication_preferences);
                let birth_date = member.birth_date.map(|d| d.to_string());
                let mut args = params![org_id, id].to_vec();
                args.extend(member.column_args(&preferences, &birth_date));
                args.extend(params![member.updated_at]);
                tx.execute(UPDATE, &args)
                    .await
                    .map_err(|e| conflict_on(e, MEMBER_UNIQUE))?;
                let event =
                    NewEvent::new(org_id, None, EventType::MemberUpdated, &member, self.at)?;
                events::record(tx, &event).await?;
            }
            Changing::Erase => {
                tx.execute(ERASE, params![org_id, id, self.at]).await?;
                // What a member's activities carry is the client's: as personal as its meta.
                const ACTIVITIES: &str = "UPDATE activities SET attributes = NULL \
                     WHERE org_id = $1 AND member_id = $2";
                tx.execute(ACTIVITIES, params![org_id, id]).await?;
                // Its words: its reviews are removed, their text with them.
                const REVIEWS: &str = "UPDATE reviews SET review_text = '', \
                     moderation = 'removed', updated_at = $3 WHERE org_id = $1 AND member_id = $2";
                tx.execute(REVIEWS, params![org_id, id, self.at]).await?;
                // Its limits' counts, by its id or its wallets'.
                const COUNTERS: &str = "DELETE FROM limit_counters WHERE scope = $2 \
                     OR scope IN (SELECT id FROM wallets WHERE org_id = $1 AND owner_id = $2)";
                tx.execute(COUNTERS, params![org_id, id]).await?;
                // Its referral code; the referrals stay (member ids alone), so a referee is
                // referred once and a referrer's count of converted referees stands.
                const CODE: &str = "DELETE FROM referral_codes WHERE member_id = $1";
                tx.execute(CODE, params![id]).await?;
                erase_from_events(tx, org_id, id).await?;
                let data = ErasedMember { id: id.clone() };
                let event = NewEvent::new(org_id, None, EventType::MemberDeleted, &data, self.at)?;
                events::record(tx, &event).await?;
            }
        }
        Ok(member)
    }
}

impl events::Payload for Member {
    const RECORD: &'static str = "member";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// What a deleted member's events carry from then on: the member's id, no personal data.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ErasedMember {
    pub id: String,
}

impl events::Payload for ErasedMember {
    const RECORD: &'static str = "member_erased";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// The name orders' events store their record under.
const ORDER_RECORD: &str = "order";

/// Replaces the data of the member's earlier events with its id alone, and clears its external
/// id from its orders' events, in the caller's transaction (the member's erasure): no personal
/// data of the member stays in the events or reaches an endpoint after it.
async fn erase_from_events(
    tx: &mut impl Tx,
    org_id: &str,
    member_id: &str,
) -> Result<(), StoreError> {
    let erased = ErasedMember {
        id: member_id.to_string(),
    };
    let kinds = [EventType::MemberCreated, EventType::MemberUpdated];
    events::replace_data(tx, org_id, member_id, &kinds, &erased).await?;
    // Its activities' and reviews' events carry their attributes and words: reduced to the
    // member's id too.
    const OWN_EVENTS: &str = "UPDATE events SET data = $3 WHERE org_id = $1 \
         AND ((type = 'activity.recorded' AND subject_id IN \
         (SELECT id FROM activities WHERE org_id = $1 AND member_id = $2)) \
         OR (type LIKE 'review.%' AND subject_id IN \
         (SELECT id FROM reviews WHERE org_id = $1 AND member_id = $2)))";
    let data = events::Record::of(&erased)?.text()?;
    tx.execute(OWN_EVENTS, params![org_id, member_id, data])
        .await?;
    // The member's orders name it by its external id: gone from their events as from the
    // orders themselves (which read it from the member).
    const ORDER_EVENTS: &str = "SELECT id, data FROM events WHERE org_id = $1 \
         AND type IN ('order.created', 'order.cancelled') AND subject_id IN \
         (SELECT id FROM orders WHERE org_id = $1 AND owner_id = $2)";
    const REWRITE: &str = "UPDATE events SET data = $2 WHERE id = $1";
    let rows: Vec<(String, String)> = tx.rows(ORDER_EVENTS, params![org_id, member_id]).await?;
    for (id, data) in rows {
        let mut record = events::Record::stored(&id, &data)?;
        // An order's record (`orders` builds it, above this crate) names its owner by the
        // member's external id in `owner`.
        if record.record != ORDER_RECORD {
            continue;
        }
        if let Some(owner) = record.value.get_mut("owner") {
            *owner = Value::String(String::new());
        }
        tx.execute(REWRITE, params![id, record.text()?]).await?;
    }
    Ok(())
}
