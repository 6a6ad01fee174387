//! Writing reviews: creating one (one per member and voucher), members reporting one, and an
//! operator's decision.

use crate::OrgScope;
use chrono::{DateTime, Utc};

use crate::backend::{Steps, Tx};
use crate::common::ids::new_id;
use crate::error::conflict_on;
use crate::reviews::read::review_within;
use crate::reviews::{Decision, Moderation, Review, ReviewStatus, profanity_score};
use crate::{Campaign, Community, StoreError};
use events::{EventType, NewEvent};
use members::activities;

/// A review as a client submits it; the API has checked the bounds of each field.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReview {
    /// The reviewing member: an id or external id of the organisation.
    pub member: String,
    /// A product or variant id of the campaign's catalogue.
    pub voucher_id: String,
    /// The client's own id for the partner, kept as given.
    pub partner_id: String,
    pub rating: u8,
    pub review_text: String,
}

/// Reviews, written: members' reviews, reports and moderators' decisions.
impl Community {
    /// Records `new` in `campaign` with its profanity score. `UnknownReference` on `memberId`
    /// or `voucherId` when either names nothing; `Refused` (`already_reviewed`) when the
    /// member has reviewed the voucher before (even if that review was removed).
    #[tracing::instrument(skip_all)]
    pub async fn create_review(
        &self,
        campaign: &Campaign,
        new: NewReview,
        rules: &Moderation,
    ) -> Result<Review, StoreError> {
        const VOUCHER: &str = "SELECT id FROM products WHERE campaign_id = $1 AND id = $2 \
             UNION ALL SELECT id FROM variants WHERE campaign_id = $1 AND id = $2";
        let member = self
            .members
            .member_id_of(&campaign.org_id, &new.member)
            .await?
            .ok_or_else(|| StoreError::UnknownReference {
                field: "memberId",
                message: format!("no member `{}` in this organisation", new.member),
            })?;
        let voucher: Option<(String,)> = self
            .read_row(VOUCHER, params![campaign.id, new.voucher_id])
            .await?;
        if voucher.is_none() {
            return Err(StoreError::UnknownReference {
                field: "voucherId",
                message: format!(
                    "no product or variant `{}` in this campaign's catalogue",
                    new.voucher_id
                ),
            });
        }
        // Scoring 4,000 characters takes a moment of CPU; not on the async workers' time.
        let text = new.review_text.clone();
        let score = tokio::task::spawn_blocking(move || profanity_score(&text))
            .await
            .map_err(|e| StoreError::NotCommitted(format!("scoring the review: {e}")))?;
        let (id, at) = (new_id(), self.now());
        let refused = format!(
            "member `{}` has already reviewed voucher `{}`",
            new.member, new.voucher_id
        );
        let review = Review {
            id,
            campaign_id: campaign.id.clone(),
            member_id: member,
            voucher_id: new.voucher_id,
            partner_id: new.partner_id,
            rating: new.rating,
            review_text: new.review_text,
            profanity_score: score,
            decision: Decision::Open,
            reported_by_id: None,
            reports: 0,
            created_at: at,
            updated_at: at,
        };
        let creating = Creating {
            org_id: campaign.org_id.clone(),
            review,
            rules: *rules,
        };
        self.write(creating).await.map_err(|e| {
            match conflict_on(e, &[("member_id", "voucherId")]) {
                StoreError::Conflict { .. } => {
                    StoreError::refused("already_reviewed", Some("voucherId".into()), refused)
                }
                other => other,
            }
        })
    }

    /// Member `reporter` (an id or external id) reports review `id` of `campaign`: the first
    /// report of each member counts once and makes them `reportedById`; a repeat changes
    /// nothing. `NotFound` for an unknown (or removed) review, `UnknownReference` on
    /// `reporterId` for an unknown member, `Refused` (`own_review`) for the review's author.
    #[tracing::instrument(skip_all)]
    pub async fn report_review(
        &self,
        campaign: &Campaign,
        id: &str,
        reporter: &str,
        rules: &Moderation,
    ) -> Result<Review, StoreError> {
        const REVIEW: &str = "SELECT member_id FROM reviews WHERE org_id = $1 \
             AND campaign_id = $2 AND id = $3 AND moderation <> 'removed'";
        let author: Option<(String,)> = self
            .read_row(REVIEW, params![campaign.org_id, campaign.id, id])
            .await?;
        let (author,) = author.ok_or(StoreError::NotFound { what: "review" })?;
        let reporter_id = self
            .members
            .member_id_of(&campaign.org_id, reporter)
            .await?
            .ok_or_else(|| StoreError::UnknownReference {
                field: "reporterId",
                message: format!("no member `{reporter}` in this organisation"),
            })?;
        if reporter_id == author {
            return Err(StoreError::refused(
                "own_review",
                Some("reporterId".into()),
                "a member cannot report their own review".into(),
            ));
        }
        let at = self.now();
        self.write(Report {
            org_id: campaign.org_id.clone(),
            review: id.to_string(),
            reporter: reporter_id,
            at,
            rules: *rules,
        })
        .await
    }

    /// An operator approves (`true`: listed whatever is reported later) or removes review `id`
    /// of organisation `org_id`. `NotFound` when it does not exist or was removed before.
    #[tracing::instrument(skip_all)]
    pub async fn moderate_review(
        &self,
        org: &OrgScope,
        id: &str,
        approve: bool,
    ) -> Result<(), StoreError> {
        self.write(Moderating {
            org_id: org.id().to_string(),
            id: id.to_string(),
            approve,
            at: self.now(),
        })
        .await
    }
}

/// An operator's decision on a review; an approval publishes it (`review.published`).
struct Moderating {
    org_id: String,
    id: String,
    approve: bool,
    at: DateTime<Utc>,
}

impl Steps for Moderating {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE reviews SET moderation = $3, updated_at = $4 \
             WHERE org_id = $1 AND id = $2 AND moderation <> 'removed'";
        const REVIEW: &str = "SELECT campaign_id, member_id, voucher_id, partner_id, rating \
             FROM reviews WHERE org_id = $1 AND id = $2";
        let decision = if self.approve {
            Decision::Approved
        } else {
            Decision::Removed
        };
        let (org_id, id) = (&self.org_id, &self.id);
        let changed = tx
            .execute(SQL, params![org_id, id, decision.as_str(), self.at])
            .await?;
        if changed == 0 {
            return Err(StoreError::NotFound { what: "review" });
        }
        if self.approve {
            type Row = (String, String, String, String, i64);
            let row: Option<Row> = tx.row(REVIEW, params![org_id, id]).await?;
            if let Some((campaign_id, member_id, voucher_id, partner_id, rating)) = row {
                let facts = Published {
                    id,
                    voucher_id: &voucher_id,
                    partner_id: &partner_id,
                    rating,
                };
                published(tx, (org_id, &campaign_id), &member_id, facts, self.at).await?;
            }
        }
        Ok(())
    }
}

/// What a published review's activity says of it.
struct Published<'a> {
    id: &'a str,
    voucher_id: &'a str,
    partner_id: &'a str,
    rating: i64,
}

/// Records the member's `review.published` activity (once a review).
async fn published(
    tx: &mut impl Tx,
    scope: (&str, &str),
    member_id: &str,
    review: Published<'_>,
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let attributes = serde_json::json!({
        "reviewId": review.id,
        "voucherId": review.voucher_id,
        "partnerId": review.partner_id,
        "rating": review.rating,
    });
    let kind = (activities::REVIEW_PUBLISHED, review.id);
    activities::record_built_in(tx, scope, member_id, kind, attributes, at).await
}

/// A new review, with its `review.created` event (and `review.held` when its language holds
/// it back).
struct Creating {
    org_id: String,
    review: Review,
    rules: Moderation,
}

impl Steps for Creating {
    type Output = Review;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Review, StoreError> {
        const INSERT: &str = "INSERT INTO reviews (id, org_id, campaign_id, member_id, \
             voucher_id, partner_id, rating, review_text, profanity_score, moderation, reports, \
             created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 0, $11, $11)";
        let r = &self.review;
        let (rating, decision) = (i64::from(r.rating), r.decision.as_str());
        let args = params![
            r.id,
            self.org_id,
            r.campaign_id,
            r.member_id,
            r.voucher_id,
            r.partner_id,
            rating,
            r.review_text,
            r.profanity_score,
            decision,
            r.created_at
        ];
        tx.execute(INSERT, args).await?;
        let mut kinds = vec![EventType::ReviewCreated];
        if r.status(&self.rules) == ReviewStatus::Pending {
            kinds.push(EventType::ReviewHeld);
        } else {
            let facts = Published {
                id: &r.id,
                voucher_id: &r.voucher_id,
                partner_id: &r.partner_id,
                rating,
            };
            let scope = (self.org_id.as_str(), r.campaign_id.as_str());
            published(tx, scope, &r.member_id, facts, r.created_at).await?;
        }
        review_events(tx, &self.org_id, &self.review, &self.rules, &kinds).await?;
        Ok(self.review)
    }
}

/// Records an event of each of `kinds` for `review` as it now stands under `rules`.
async fn review_events(
    tx: &mut impl Tx,
    org_id: &str,
    review: &Review,
    rules: &Moderation,
    kinds: &[EventType],
) -> Result<(), StoreError> {
    let data = super::ReviewEvent {
        review: Box::new(review.clone()),
        status: review.status(rules),
    };
    let campaign = Some(review.campaign_id.as_str());
    let made: Vec<NewEvent> = kinds
        .iter()
        .map(|kind| NewEvent::new(org_id, campaign, *kind, &data, review.updated_at))
        .collect::<Result<_, _>>()?;
    events::record_all(tx, &made).await
}

/// A member's report of a review: counted once per member, with its `review.reported` event
/// (and `review.held` when the report is the one that hides it).
struct Report {
    org_id: String,
    review: String,
    reporter: String,
    at: DateTime<Utc>,
    rules: Moderation,
}

impl Steps for Report {
    type Output = Review;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<Review, StoreError> {
        const REPORT: &str = "INSERT INTO review_reports (review_id, member_id, created_at) \
             VALUES ($1, $2, $3) ON CONFLICT (review_id, member_id) DO NOTHING";
        // `reports + 1`, not a count of the reports: of two reports at once on PostgreSQL, the
        // second update reads the row the first left, where a count would read its snapshot.
        const COUNT: &str = "UPDATE reviews SET reported_by_id = $2, updated_at = $3, \
             reports = reports + 1 WHERE id = $1";
        let args = params![self.review, self.reporter, self.at];
        if tx.execute(REPORT, args).await? == 0 {
            return review_within(tx, &self.review).await;
        }
        tx.execute(COUNT, args).await?;
        let review = review_within(tx, &self.review).await?;
        let mut kinds = vec![EventType::ReviewReported];
        let before = Review {
            reports: review.reports.saturating_sub(1),
            ..review.clone()
        };
        let held = |r: &Review| r.status(&self.rules) == ReviewStatus::Pending;
        if held(&review) && !held(&before) {
            kinds.push(EventType::ReviewHeld);
        }
        review_events(tx, &self.org_id, &review, &self.rules, &kinds).await?;
        Ok(review)
    }
}
