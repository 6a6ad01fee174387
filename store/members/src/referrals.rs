//! Referrals: a member's referral code, the members it brought (each a referee, referred once),
//! and their conversion.
//!
//! A code is made on request (random, not derived from any id, unique in the organisation) and
//! given at a member's creation or sign-up: the new member becomes the code owner's referee,
//! `pending`. It converts once, in the campaign where the referee's first completed earn is
//! credited (in that credit's transaction: see the ledger's `credit`), or where an activity of
//! the type the campaign's rules name (`[programme] referral_converts_on`) is awarded; the
//! conversion records `referral.converted` for both members in that campaign (the referrer's
//! with its count of converted referees, which its tiers read) and the `referral.converted`
//! event. The ledger's earn worker awards those activities as any other.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::activities::{self, CONVERTED};
use crate::backend::{Backend, Steps, Tx};
use crate::common::codes::{self, new_referral_code, referral_shown};
use crate::common::ids::new_id;
use crate::error::known;
use crate::{Members, Page, Paged, StoreError};
use events::{EventType, NewEvent};
use seam::scope::OrgScope;

string_enum! {
    /// Where a referral stands.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub enum ReferralStatus ("referral status") {
        /// Its referee has not earned yet (nor done what the campaign names).
        Pending = "pending",
        /// Its referee's first earn (or the named activity) came: both members were rewarded
        /// as the campaign's rules say.
        Converted = "converted",
    }
}

/// A member brought by another with its code.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Referral {
    pub id: String,
    /// The member whose code it was.
    pub referrer_id: String,
    /// The member it brought.
    pub referee_id: String,
    /// The code, as members see it (`XXXX-XXXX`).
    pub code: String,
    pub status: ReferralStatus,
    /// The campaign it converted in.
    pub campaign_id: Option<String>,
    pub converted_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
}

impl events::Payload for Referral {
    const RECORD: &'static str = "referral";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// A member's referral code.
#[derive(Debug, Clone, PartialEq)]
pub struct ReferralCode {
    pub member_id: String,
    /// As members see it (`XXXX-XXXX`); typed in any case, with or without the dash.
    pub code: String,
    /// How many of its owner's referees converted.
    pub converted: i64,
    pub created_at: DateTime<Utc>,
}

/// Whose referrals a list holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReferralRole {
    /// Those the member brought.
    Referrer,
    /// The one that brought the member.
    Referee,
}

#[macro_export]
macro_rules! referral_columns {
    () => {
        "id, referrer_id, referee_id, code, status, campaign_id, converted_at, created_at"
    };
}
pub use referral_columns;

row_struct! {
    /// The columns of `referral_columns!`, in order.
    pub struct ReferralRow {
        id: String,
        referrer_id: String,
        referee_id: String,
        code: String,
        status: String,
        campaign_id: Option<String>,
        converted_at: Option<DateTime<Utc>>,
        created_at: DateTime<Utc>,
    }
}

impl ReferralRow {
    pub fn referral(self) -> Result<Referral, StoreError> {
        Ok(Referral {
            status: known(
                ReferralStatus::parse(&self.status),
                "referrals",
                "status",
                &self.status,
            )?,
            id: self.id,
            referrer_id: self.referrer_id,
            referee_id: self.referee_id,
            code: referral_shown(&self.code),
            campaign_id: self.campaign_id,
            converted_at: self.converted_at,
            created_at: self.created_at,
        })
    }
}

/// How often a new code is drawn again when it clashes with one in use (40 random bits: a
/// clash is rare even among millions of codes).
const DRAWS: usize = 5;

/// Referrals (scope: `OrgScope`).
impl Members {
    /// The live member `member_id`'s referral code, made on the first request.
    #[tracing::instrument(skip_all)]
    pub async fn referral_code(
        &self,
        org: &OrgScope,
        member_id: &str,
    ) -> Result<ReferralCode, StoreError> {
        self.write(MakingCode {
            org_id: org.id().to_string(),
            member_id: member_id.to_string(),
            at: self.now(),
        })
        .await
    }

    /// The member `member_id`'s referral code, if one was made.
    #[tracing::instrument(skip_all)]
    pub async fn held_referral_code(
        &self,
        org: &OrgScope,
        member_id: &str,
    ) -> Result<Option<ReferralCode>, StoreError> {
        let row: Option<CodeRow> = self.read_row(CODE, params![member_id, org.id()]).await?;
        Ok(row.map(code_of))
    }

    /// Makes the live member `referee_id` the referee of the owner of `code` (as typed): a
    /// member signing up with a code after its creation. Refused: a code no live member holds
    /// (`Invalid` naming `referralCode`), the member's own code (`self_referral`), a member
    /// referred already (`already_referred`), one with a wallet already (`already_a_member`),
    /// and one that brought the code's owner, directly or not (`referral_cycle`).
    #[tracing::instrument(skip_all)]
    pub async fn refer(
        &self,
        org: &OrgScope,
        referee_id: &str,
        code: &str,
    ) -> Result<Referral, StoreError> {
        self.write(Referring {
            org_id: org.id().to_string(),
            referee_id: referee_id.to_string(),
            code: codes::normalised(code),
            at: self.now(),
        })
        .await
    }

    /// The live member `member_id`'s referrals: those it brought, newest first, or the one
    /// that brought it.
    #[tracing::instrument(skip_all)]
    pub async fn list_referrals(
        &self,
        org: &OrgScope,
        member_id: &str,
        role: Option<ReferralRole>,
        page: Page,
    ) -> Result<Paged<Referral>, StoreError> {
        let filter = match role {
            None => "(referrer_id = $2 OR referee_id = $2)",
            Some(ReferralRole::Referrer) => "referrer_id = $2",
            Some(ReferralRole::Referee) => "referee_id = $2",
        };
        let from = format!("FROM referrals WHERE org_id = $1 AND {filter}");
        let rows = self
            .read_page(
                page,
                referral_columns!(),
                &from,
                "created_at DESC, id DESC",
                params![org.id(), member_id],
            )
            .await?;
        Paged::of(rows, page, ReferralRow::referral)
    }
}

/// The referral code of member `$1` (of organisation `$2`).
const CODE: &str = "SELECT member_id, code, converted, created_at FROM referral_codes \
     WHERE member_id = $1 AND org_id = $2";

/// A row of `CODE`.
type CodeRow = (String, String, i64, DateTime<Utc>);

fn code_of((member_id, code, converted, created_at): CodeRow) -> ReferralCode {
    ReferralCode {
        member_id,
        code: referral_shown(&code),
        converted,
        created_at,
    }
}

/// `NotFound` unless `member_id` is a live member of `org_id`.
async fn live_member(tx: &mut impl Tx, org_id: &str, member_id: &str) -> Result<(), StoreError> {
    const LIVE: &str =
        "SELECT id FROM members WHERE org_id = $1 AND id = $2 AND deleted_at IS NULL";
    let live: Option<(String,)> = tx.row(LIVE, params![org_id, member_id]).await?;
    live.map(drop)
        .ok_or(StoreError::NotFound { what: "member" })
}

/// The live owner of code `$2` (normalised) in organisation `$1`.
const CODE_OWNER: &str = "SELECT c.member_id FROM referral_codes c JOIN members m \
     ON m.id = c.member_id WHERE c.org_id = $1 AND c.code = $2 AND m.deleted_at IS NULL";

/// The owner of `code` (normalised) in `org_id`, or `Invalid` naming `referralCode`.
async fn code_owner(tx: &mut impl Tx, org_id: &str, code: &str) -> Result<String, StoreError> {
    let owner: Option<(String,)> = tx.row(CODE_OWNER, params![org_id, code]).await?;
    owner.map(|(id,)| id).ok_or_else(|| {
        StoreError::invalid(
            "referralCode",
            "no member of the organisation has this referral code",
        )
    })
}

/// Records `referee_id` as the referee of `referrer_id` (through `code`) in `tx`; `false` when
/// the referee was referred already.
pub(crate) async fn insert_referral(
    tx: &mut impl Tx,
    org_id: &str,
    (referrer_id, referee_id): (&str, &str),
    code: &str,
    at: DateTime<Utc>,
) -> Result<bool, StoreError> {
    const INSERT: &str = "INSERT INTO referrals (id, org_id, referrer_id, referee_id, code, \
         status, created_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6) \
         ON CONFLICT (referee_id) DO NOTHING";
    let id = new_id();
    let args = params![id, org_id, referrer_id, referee_id, code, at];
    Ok(tx.execute(INSERT, args).await? == 1)
}

/// A new member's referrer: the live owner of `code` (as typed) in `org_id`, resolved in the
/// member's creation's transaction (`Invalid` naming `referralCode` for none).
pub(crate) async fn referrer_of(
    tx: &mut impl Tx,
    org_id: &str,
    code: &str,
) -> Result<(String, String), StoreError> {
    let code = codes::normalised(code);
    let owner = code_owner(tx, org_id, &code).await?;
    Ok((owner, code))
}

/// A member's referral code, made unless it has one.
struct MakingCode {
    org_id: String,
    member_id: String,
    at: DateTime<Utc>,
}

impl Steps for MakingCode {
    type Output = ReferralCode;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<ReferralCode, StoreError> {
        const INSERT: &str = "INSERT INTO referral_codes (member_id, org_id, code, created_at) \
             VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING";
        let (org_id, member_id) = (&self.org_id, &self.member_id);
        live_member(tx, org_id, member_id).await?;
        for _ in 0..DRAWS {
            let held: Option<CodeRow> = tx.row(CODE, params![member_id, org_id]).await?;
            if let Some(row) = held {
                return Ok(code_of(row));
            }
            // Nothing inserted: the code clashed with another member's (drawn again), or
            // another request made this member's meanwhile (read above).
            let code = new_referral_code();
            tx.execute(INSERT, params![member_id, org_id, code, self.at])
                .await?;
        }
        Err(StoreError::NotCommitted(
            "no free referral code was drawn".into(),
        ))
    }
}

/// A member signing up with a code after its creation.
struct Referring {
    org_id: String,
    referee_id: String,
    /// Normalised.
    code: String,
    at: DateTime<Utc>,
}

impl Steps for Referring {
    type Output = Referral;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Referral, StoreError> {
        const HAS_WALLET: &str = "SELECT id FROM wallets WHERE org_id = $1 AND owner_id = $2 \
             LIMIT 1";
        // The referrer and those above it: a cycle if the referee is among them.
        const ABOVE: &str = "WITH RECURSIVE above (id) AS (SELECT CAST($1 AS TEXT) \
             UNION SELECT r.referrer_id FROM referrals r JOIN above a ON r.referee_id = a.id) \
             SELECT id FROM above WHERE id = $2";
        const BY_REFEREE: &str = concat!(
            "SELECT ",
            referral_columns!(),
            " FROM referrals WHERE referee_id = $1"
        );
        let (org_id, referee) = (self.org_id.as_str(), self.referee_id.as_str());
        if T::BACKEND == Backend::Postgres {
            // Two sign-ups that would close a cycle between them, each checked before the
            // other commits, would both pass: one organisation's referrals are made one at a
            // time (SQLite's one writer does that already).
            const SERIAL: &str = "SELECT pg_advisory_xact_lock(hashtext('referrals ' || $1))";
            tx.execute(SERIAL, params![org_id]).await?;
        }
        live_member(tx, org_id, referee).await?;
        let referrer = code_owner(tx, org_id, &self.code).await?;
        let refused = |code, message: &str| {
            Err(StoreError::refused(
                code,
                Some("referralCode".into()),
                message.to_string(),
            ))
        };
        if referrer == referee {
            return refused("self_referral", "the code is the member's own");
        }
        let earlier: Option<ReferralRow> = tx.row(BY_REFEREE, params![referee]).await?;
        if earlier.is_some() {
            return refused("already_referred", "the member was referred already");
        }
        let wallet: Option<(String,)> = tx.row(HAS_WALLET, params![org_id, referee]).await?;
        if wallet.is_some() {
            return refused(
                "already_a_member",
                "the member has a wallet already: a referral brings new members",
            );
        }
        let cycle: Option<(String,)> = tx.row(ABOVE, params![referrer, referee]).await?;
        if cycle.is_some() {
            return refused(
                "referral_cycle",
                "the code's owner was referred by this member, directly or through others",
            );
        }
        let pair = (referrer.as_str(), referee);
        if !insert_referral(tx, org_id, pair, &self.code, self.at).await? {
            return refused("already_referred", "the member was referred already");
        }
        let row: Option<ReferralRow> = tx.row(BY_REFEREE, params![referee]).await?;
        row.ok_or(StoreError::NotFound { what: "referral" })?
            .referral()
    }
}

/// Whose pending referrals a conversion looks for.
#[derive(Debug, Clone, Copy)]
pub enum Converting<'a> {
    /// The owners of these wallets (those a credit's first earns went to).
    WalletOwners(&'a [&'a str]),
    /// This member (whose named activity came).
    Member(&'a str),
}

/// Converts, in `tx` at `at`, the pending referrals of `referees` in organisation `org_id`, in
/// campaign `campaign_id` (see the module's description); how many. One indexed look-up when
/// the organisation has no pending referral.
pub async fn convert<T: Tx>(
    tx: &mut T,
    (org_id, campaign_id): (&str, &str),
    referees: Converting<'_>,
    at: DateTime<Utc>,
) -> Result<usize, StoreError> {
    const ANY_PENDING: &str =
        "SELECT id FROM referrals WHERE org_id = $1 AND status = 'pending' LIMIT 1";
    const COUNTED: &str = "UPDATE referral_codes SET converted = converted + 1 \
         WHERE member_id = $1 RETURNING converted";
    let any: Option<(String,)> = tx.row(ANY_PENDING, params![org_id]).await?;
    if any.is_none() {
        return Ok(0);
    }
    let (referees_sql, referees_arg) = match referees {
        Converting::Member(id) => ("$4".to_string(), id.to_string()),
        Converting::WalletOwners(wallets) => {
            let each = match T::BACKEND {
                Backend::Sqlite => "SELECT value FROM json_each($4)",
                Backend::Postgres => "SELECT jsonb_array_elements_text($4::jsonb)",
            };
            let sql = format!("SELECT owner_id FROM wallets WHERE id IN ({each})");
            (sql, json!(wallets).to_string())
        }
    };
    let update = format!(
        "UPDATE referrals SET status = 'converted', campaign_id = $2, converted_at = $3 \
         WHERE org_id = $1 AND status = 'pending' AND referee_id IN ({referees_sql}) \
         RETURNING {}",
        referral_columns!()
    );
    let args = params![org_id, campaign_id, at, referees_arg];
    let rows: Vec<ReferralRow> = tx.rows(&update, args).await?;
    let mut converted = rows
        .into_iter()
        .map(ReferralRow::referral)
        .collect::<Result<Vec<_>, _>>()?;
    // Each referrer's count is taken under its code's lock, in one order for every writer.
    converted.sort_by(|a, b| (&a.referrer_id, &a.id).cmp(&(&b.referrer_id, &b.id)));
    let scope = (org_id, campaign_id);
    for referral in &converted {
        let key = format!("{}:referee", referral.id);
        let referee = json!({
            "role": "referee",
            "referralId": referral.id,
            "referrerId": referral.referrer_id,
        });
        let kind = (CONVERTED, key.as_str());
        activities::record_built_in(tx, scope, &referral.referee_id, kind, referee, at).await?;
        // No count: the referrer was erased (its code with it), and is rewarded no more.
        let count: Option<(i64,)> = tx.row(COUNTED, params![referral.referrer_id]).await?;
        if let Some((count,)) = count {
            let key = format!("{}:referrer", referral.id);
            let referrer = json!({
                "role": "referrer",
                "referralId": referral.id,
                "refereeId": referral.referee_id,
                "converted": count,
            });
            let kind = (CONVERTED, key.as_str());
            let member = referral.referrer_id.as_str();
            activities::record_built_in(tx, scope, member, kind, referrer, at).await?;
        }
        let event = NewEvent::new(
            org_id,
            Some(campaign_id),
            EventType::ReferralConverted,
            referral,
            at,
        )?;
        events::record(tx, &event).await?;
    }
    Ok(converted.len())
}
