//! Members' activities awarded: an activity (recorded over the API here, or by another domain
//! in its own transaction: see `members::activities`) is evaluated under its campaign's rules
//! with `on = "activity"` and credited to the member's first wallet in the campaign as an EARN
//! whose earn id is `activity:<activity id>` (so an activity is credited once, however often it
//! is awarded: the journal refuses the id twice). Its awards are then settled on it once, with
//! its `activity.recorded` event.
//!
//! An activity posted over the API is awarded before the call answers; one the platform records
//! (or one whose caller died before its award) is awarded by the earn worker's pass
//! (`award_waiting_activities`). Two nodes awarding the same activity credit it once and settle
//! it once.

use chrono::{DateTime, Datelike, NaiveDate, Utc};
use std::sync::Arc;

use members::activities::{
    self, AWARD_KEY, Activity, ActivityRow, ActivitySource, Award, NewActivity, activity_columns,
};
use members::referrals::{self, Converting};
use rules::RuleSet;
use seam::common::calendar::DateWindow;

use crate::backend::{Steps, Tx};
use crate::earn::evaluate::{Target, evaluate};
use crate::earn::{ContextRow, wallet_context, wallet_context_from};
use crate::{Campaign, Credited, EarnInput, Ledger, Page, Paged, RuleBook, StoreError};
use events::{EventType, NewEvent};

/// The activity `$2` of organisation `$1`.
const BY_ID: &str = concat!(
    "SELECT ",
    activity_columns!(),
    " FROM activities WHERE org_id = $1 AND id = $2"
);

/// Activities: recorded, awarded under the rules, listed (scope: `&Campaign`).
impl Ledger {
    /// Records `new` in `campaign` (its member a live member of the organisation) and awards
    /// it under `book`'s rules: the activity with its awards, and whether it is new (`false`:
    /// its external id held the same activity, which is answered as it stands). Another
    /// activity under the external id is `already_exists`.
    #[tracing::instrument(skip_all)]
    pub async fn record_activity(
        &self,
        book: &RuleBook,
        campaign: &Campaign,
        new: NewActivity,
    ) -> Result<(Activity, bool), StoreError> {
        let at = self.now();
        check(&new, at, self.date_window(None))?;
        let org_id = campaign.org_id.clone();
        let (activity, new) = self
            .write(Recording {
                org_id: org_id.clone(),
                new,
                at,
            })
            .await?;
        if activity.awarded_at.is_some() {
            return Ok((activity, new));
        }
        Ok((self.award_activity(book, &org_id, activity).await?, new))
    }

    /// Refuses `new` as `record_activity` would (its type, date and attributes), recording
    /// nothing: a dry run's check.
    pub fn check_activity(&self, new: &NewActivity) -> Result<(), StoreError> {
        check(new, self.now(), self.date_window(None))
    }

    /// Awards `activity` of organisation `org_id` (see the module's description) and returns
    /// it as settled.
    #[tracing::instrument(skip_all)]
    pub async fn award_activity(
        &self,
        book: &RuleBook,
        org_id: &str,
        activity: Activity,
    ) -> Result<Activity, StoreError> {
        let (version, rules) = book.active(org_id, &activity.campaign_id).await?;
        let awards = self
            .credit_activity((version, &rules), org_id, &activity)
            .await?;
        let converts = rules.referral_converts_on() == Some(activity.kind.as_str());
        self.write(Settling {
            org_id: org_id.to_string(),
            id: activity.id,
            campaign_id: activity.campaign_id,
            member_id: activity.member_id,
            converts,
            awards,
            at: self.now(),
        })
        .await
    }

    /// Awards up to `limit` activities that wait for their awards, oldest first; how many.
    #[tracing::instrument(skip_all)]
    pub async fn award_waiting_activities(
        &self,
        book: &RuleBook,
        limit: i64,
    ) -> Result<usize, StoreError> {
        const WAITING: &str = "SELECT org_id, id FROM activities WHERE awarded_at IS NULL \
             ORDER BY created_at, id LIMIT $1";
        let waiting: Vec<(String, String)> = self.read_rows(WAITING, params![limit]).await?;
        for (org_id, id) in &waiting {
            let row: Option<ActivityRow> = self.read_row(BY_ID, params![org_id, id]).await?;
            let Some(activity) = row.map(ActivityRow::activity).transpose()? else {
                continue;
            };
            if activity.awarded_at.is_none() {
                self.award_activity(book, org_id, activity).await?;
            }
        }
        Ok(waiting.len())
    }

    /// Records the `member.birthday` of the members born on this day (in the campaign's
    /// programme's time zone, at `at`), for each campaign whose active rules award activities
    /// and whose day was not looked at yet (one node looks: it claims the day), once a member
    /// and year; on 28 February of a year without a 29th, those born on the 29th too. The earn
    /// worker awards them. How many were recorded.
    #[tracing::instrument(skip_all)]
    pub async fn record_birthdays(
        &self,
        book: &RuleBook,
        at: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        const CAMPAIGNS: &str = "SELECT org_id, id FROM campaigns ORDER BY id";
        const CLAIM: &str = "INSERT INTO birthday_sweeps (campaign_id, swept_on) VALUES ($1, $2) \
             ON CONFLICT (campaign_id) DO UPDATE SET swept_on = excluded.swept_on \
             WHERE birthday_sweeps.swept_on < excluded.swept_on";
        const BORN: &str = "SELECT m.id FROM members m WHERE m.org_id = $1 \
             AND m.birth_date IS NOT NULL AND substr(m.birth_date, 6, 5) IN ($2, $3) \
             AND m.deleted_at IS NULL AND EXISTS (SELECT 1 FROM wallets w \
             WHERE w.org_id = $1 AND w.campaign_id = $4 AND w.owner_id = m.id) ORDER BY m.id";
        let campaigns: Vec<(String, String)> = self.read_rows(CAMPAIGNS, params![]).await?;
        let mut recorded = 0;
        for (org_id, campaign_id) in campaigns {
            let (_, rules) = book.active(&org_id, &campaign_id).await?;
            if !rules.has_activity_rules() {
                continue;
            }
            let today = at.with_timezone(&rules.time_zone()).date_naive();
            let day_text = today.to_string();
            if self.execute(CLAIM, params![campaign_id, day_text]).await? == 0 {
                continue;
            }
            let (day, leap_day) = birthdays_on(today);
            let args = params![org_id, day, leap_day, campaign_id];
            let born: Vec<(String,)> = self.read_rows(BORN, args).await?;
            for members in born.chunks(500) {
                recorded += members.len();
                self.write(Birthdays {
                    org_id: org_id.clone(),
                    campaign_id: campaign_id.clone(),
                    members: members.iter().map(|(id,)| id.clone()).collect(),
                    year: today.year(),
                    at,
                })
                .await?;
            }
        }
        Ok(recorded)
    }

    /// The campaign's activity `id`.
    #[tracing::instrument(skip_all)]
    pub async fn activity(&self, campaign: &Campaign, id: &str) -> Result<Activity, StoreError> {
        let row: Option<ActivityRow> = self.read_row(BY_ID, params![campaign.org_id, id]).await?;
        row.filter(|r| r.campaign_id() == campaign.id)
            .ok_or(StoreError::NotFound { what: "activity" })?
            .activity()
    }

    /// Member `member_id`'s activities in the campaign, of type `kind` if given, newest first
    /// (by when they happened).
    #[tracing::instrument(skip_all)]
    pub async fn list_activities(
        &self,
        campaign: &Campaign,
        member_id: &str,
        kind: Option<&str>,
        page: Page,
    ) -> Result<Paged<Activity>, StoreError> {
        let from = "FROM activities WHERE member_id = $1 AND campaign_id = $2 \
             AND ($3 IS NULL OR type = $3)";
        let rows = self
            .read_page(
                page,
                activity_columns!(),
                from,
                "occurred_at DESC, id DESC",
                params![member_id, campaign.id, kind],
            )
            .await?;
        Paged::of(rows, page, ActivityRow::activity)
    }

    /// Credits `activity`'s award to its member's first wallet in its campaign, if the
    /// campaign's rules (`rules`, version `version`) give it anything: the award, or none.
    async fn credit_activity(
        &self,
        (version, rules): (Option<i64>, &Arc<RuleSet>),
        org_id: &str,
        activity: &Activity,
    ) -> Result<Vec<Award>, StoreError> {
        if !rules.has_activity_rules() {
            return Ok(Vec::new());
        }
        const WALLET: &str = concat!(
            wallet_context_from!(),
            " WHERE w.org_id = $1 AND w.campaign_id = $2 AND w.owner_id = $3 \
             AND m.deleted_at IS NULL ORDER BY w.created_at, w.id LIMIT 1"
        );
        let args = params![org_id, activity.campaign_id, activity.member_id];
        let Some((wallet_id, wallet)) = self
            .read_row::<ContextRow>(WALLET, args)
            .await?
            .map(wallet_context)
        else {
            return Ok(Vec::new());
        };
        let earn = EarnInput {
            earn_id: format!("{AWARD_KEY}{}", activity.id),
            wallet: wallet_id.clone(),
            amount: "0".to_string(),
            date: activity.occurred_at,
            description: Some(activity.kind.clone()),
            comment: None,
            meta: activity.attributes.clone(),
            activity: Some(activity.kind.clone()),
        };
        let target = Target {
            org_id,
            campaign_id: &activity.campaign_id,
            wallet_id: &wallet_id,
            wallet: &wallet,
        };
        let credit = match evaluate(version, rules, &target, &earn, None) {
            Ok(credit) if credit.tokens.is_positive() => credit,
            Ok(_) => return Ok(Vec::new()),
            Err(refusal) => {
                // The ceiling of the wallet, or a defect: the activity is settled without it.
                tracing::warn!(activity = %activity.id, reason = %refusal.reason(), "an activity's award was refused");
                return Ok(Vec::new());
            }
        };
        let credited = self.credit_all(std::slice::from_ref(&credit)).await?;
        let transaction_id = match credited.into_iter().next() {
            Some(Credited::New { transaction_id }) => transaction_id,
            Some(Credited::Duplicate {
                transaction_id: Some(id),
                ..
            }) => id,
            _ => return Ok(Vec::new()),
        };
        const CREDITED: &str = "SELECT amount, trace FROM transactions WHERE id = $1";
        let row: Option<(i64, Option<String>)> =
            self.read_row(CREDITED, params![transaction_id]).await?;
        let Some((amount, trace)) = row else {
            return Ok(Vec::new());
        };
        Ok(vec![Award {
            wallet_id,
            transaction_id,
            tokens: crate::Tokens::from_micros(amount),
            trace,
        }])
    }
}

/// Refuses `new` when its type is not a type (or one the platform records itself, unless the
/// platform records it), `window` does not hold its date, or its attributes are not an object.
fn check(new: &NewActivity, now: DateTime<Utc>, window: DateWindow) -> Result<(), StoreError> {
    if let Some(problem) = activities::type_problem(&new.kind) {
        return Err(StoreError::invalid("type", problem));
    }
    if new.source != ActivitySource::Platform && activities::BUILT_IN.contains(&new.kind.as_str()) {
        return Err(StoreError::invalid(
            "type",
            format!("`{}` is recorded by the platform itself", new.kind),
        ));
    }
    if let Err(refused) = window.check(new.occurred_at.unwrap_or(now)) {
        return Err(StoreError::invalid("occurredAt", refused.message()));
    }
    if new.attributes.as_ref().is_some_and(|a| !a.is_object()) {
        return Err(StoreError::invalid("attributes", "must be a JSON object"));
    }
    Ok(())
}

/// The month and day (`MM-DD`) of the birth dates whose birthday is `today`, and a second one:
/// `02-29` on 28 February of a year without a 29th (else the first again).
fn birthdays_on(today: NaiveDate) -> (String, String) {
    let day = today.format("%m-%d").to_string();
    let without_29th = (today.month(), today.day()) == (2, 28) && !today.leap_year();
    let second = if without_29th {
        "02-29".to_string()
    } else {
        day.clone()
    };
    (day, second)
}

/// Members' birthdays of one campaign and year, recorded.
struct Birthdays {
    org_id: String,
    campaign_id: String,
    members: Vec<String>,
    year: i32,
    at: DateTime<Utc>,
}

impl Steps for Birthdays {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        let scope = (self.org_id.as_str(), self.campaign_id.as_str());
        for member in &self.members {
            let key = format!("{}:{member}:{}", self.campaign_id, self.year);
            let kind = (activities::BIRTHDAY, key.as_str());
            let attributes = serde_json::json!({ "year": self.year });
            activities::record_built_in(tx, scope, member, kind, attributes, self.at).await?;
        }
        Ok(())
    }
}

/// An activity recorded over the API.
struct Recording {
    org_id: String,
    new: NewActivity,
    at: DateTime<Utc>,
}

impl Steps for Recording {
    type Output = (Activity, bool);
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(Activity, bool), StoreError> {
        activities::record(tx, &self.org_id, &self.new, self.at).await
    }
}

/// An activity's awards settled, with its event: once, whoever settles it first; and the
/// member's pending referral converted if its campaign names the activity's type.
struct Settling {
    org_id: String,
    id: String,
    campaign_id: String,
    member_id: String,
    converts: bool,
    awards: Vec<Award>,
    at: DateTime<Utc>,
}

impl Steps for Settling {
    type Output = Activity;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Activity, StoreError> {
        const SETTLE: &str = "UPDATE activities SET awards = $3, awarded_at = $4 \
             WHERE org_id = $1 AND id = $2 AND awarded_at IS NULL";
        let awards = serde_json::to_value(&self.awards)
            .map_err(|e| StoreError::NotCommitted(format!("an activity's awards: {e}")))?;
        let settled = tx
            .execute(SETTLE, params![self.org_id, self.id, awards, self.at])
            .await?;
        let row: Option<ActivityRow> = tx.row(BY_ID, params![self.org_id, self.id]).await?;
        let activity = row
            .ok_or(StoreError::NotFound { what: "activity" })?
            .activity()?;
        if settled == 1 {
            let kind = EventType::ActivityRecorded;
            let campaign = Some(self.campaign_id.as_str());
            let event = NewEvent::new(&self.org_id, campaign, kind, &activity, self.at)?;
            events::record(tx, &event).await?;
            if self.converts {
                let scope = (self.org_id.as_str(), self.campaign_id.as_str());
                let member = Converting::Member(&self.member_id);
                referrals::convert(tx, scope, member, self.at).await?;
            }
        }
        Ok(activity)
    }
}
