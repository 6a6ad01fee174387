//! Reading reviews: one by id, a campaign's lists with their average rating (shown reviews
//! only), and the organisation's reviews waiting for an operator.

use crate::Campaign;
use crate::OrgScope;
use chrono::{DateTime, Utc};

use super::{Moderation, Review, shown, waiting};
use crate::backend::{Arg, ToArg, Tx};
use crate::error::known;
use crate::{Community, Page, Paged, StoreError};

/// Which reviews a list holds; `None` leaves a field unfiltered.
#[derive(Debug, Clone, Default)]
pub struct ReviewFilter {
    pub voucher_id: Option<String>,
    pub partner_id: Option<String>,
    /// A member id or external id.
    pub member: Option<String>,
}

/// A page of shown reviews, newest first, with the count (`page.total`) and average rating of
/// all the reviews the filter shows.
#[derive(Debug, Clone)]
pub struct ReviewList {
    pub page: Paged<Review>,
    /// `None` when the list is empty.
    pub average_rating: Option<f64>,
}

macro_rules! review_columns {
    () => {
        "r.id, r.campaign_id, r.member_id, r.voucher_id, r.partner_id, r.rating, r.review_text, \
         r.profanity_score, r.moderation, r.reported_by_id, r.reports, r.created_at, r.updated_at"
    };
}

row_struct! {
    struct ReviewRow {
        id: String,
        campaign_id: String,
        member_id: String,
        voucher_id: String,
        partner_id: String,
        rating: i64,
        review_text: String,
        profanity_score: f64,
        moderation: String,
        reported_by_id: Option<String>,
        reports: i64,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    }
}

/// Review `$1`, in the caller's transaction.
pub(super) async fn review_within(tx: &mut impl Tx, id: &str) -> Result<Review, StoreError> {
    const SQL: &str = concat!(
        "SELECT ",
        review_columns!(),
        " FROM reviews r WHERE r.id = $1"
    );
    let row: Option<ReviewRow> = tx.row(SQL, params![id]).await?;
    review_from_row(row.ok_or(StoreError::NotFound { what: "review" })?)
}

fn review_from_row(r: ReviewRow) -> Result<Review, StoreError> {
    Ok(Review {
        decision: known(
            r.moderation.parse().ok(),
            "reviews",
            "moderation",
            &r.moderation,
        )?,
        id: r.id,
        campaign_id: r.campaign_id,
        member_id: r.member_id,
        voucher_id: r.voucher_id,
        partner_id: r.partner_id,
        rating: r.rating.clamp(0, 5) as u8,
        review_text: r.review_text,
        profanity_score: r.profanity_score,
        reported_by_id: r.reported_by_id,
        reports: r.reports.clamp(0, i64::from(u32::MAX)) as u32,
        created_at: r.created_at,
        updated_at: r.updated_at,
    })
}

/// Reviews, read: a campaign's reviews as moderation shows them, and those waiting for a decision
/// (scope: `&Campaign`, or `OrgScope` for moderation).
impl Community {
    /// Review `id` of the organisation (in `campaign`, when given), unless removed.
    #[tracing::instrument(skip_all)]
    pub async fn review_by_id(
        &self,
        org: &OrgScope,
        campaign: Option<&Campaign>,
        id: &str,
    ) -> Result<Review, StoreError> {
        let (org_id, campaign_id) = (org.id(), campaign.map(|c| c.id.as_str()));
        const SQL: &str = concat!(
            "SELECT ",
            review_columns!(),
            " FROM reviews r WHERE r.org_id = $1 AND ($2 IS NULL OR r.campaign_id = $2) \
             AND r.id = $3 AND r.moderation <> 'removed'"
        );
        let row: Option<ReviewRow> = self.read_row(SQL, params![org_id, campaign_id, id]).await?;
        row.map(review_from_row)
            .transpose()?
            .ok_or(StoreError::NotFound { what: "review" })
    }

    /// The reviews of campaign `campaign_id` (of `org_id`) that `filter` selects and `rules`
    /// show, newest first.
    #[tracing::instrument(skip_all)]
    pub async fn list_reviews(
        &self,
        campaign: &Campaign,
        filter: &ReviewFilter,
        rules: &Moderation,
        page: Page,
    ) -> Result<ReviewList, StoreError> {
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        let member = match &filter.member {
            None => None,
            Some(member) => match self.members.member_id_of(org_id, member).await? {
                Some(id) => Some(id),
                // A member that does not exist has written nothing.
                None => {
                    return Ok(ReviewList {
                        page: Paged {
                            items: Vec::new(),
                            total: 0,
                            page,
                        },
                        average_rating: None,
                    });
                }
            },
        };
        let mut args = vec![org_id.to_string(), campaign_id.to_string()];
        let mut from = String::from("FROM reviews r WHERE r.org_id = $1 AND r.campaign_id = $2");
        for (column, value) in [
            ("voucher_id", &filter.voucher_id),
            ("partner_id", &filter.partner_id),
            ("member_id", &member),
        ] {
            if let Some(value) = value {
                args.push(value.clone());
                from.push_str(&format!(" AND r.{column} = ${}", args.len()));
            }
        }
        from.push_str(&format!(" AND {}", shown(args.len() + 1, args.len() + 2)));
        let newest_first = "r.created_at DESC, r.id DESC";
        let (count, sum, rows) = self
            .select_reviews(&from, newest_first, &args, rules, page)
            .await?;
        Ok(ReviewList {
            average_rating: (count > 0).then(|| sum as f64 / count as f64),
            page: Paged::of((count, rows), page, review_from_row)?,
        })
    }

    /// The reviews of organisation `org_id` (all its campaigns) that `rules` hide until an
    /// operator decides, oldest first: the queue an operator works through.
    #[tracing::instrument(skip_all)]
    pub async fn pending_reviews(
        &self,
        org: &OrgScope,
        rules: &Moderation,
        page: Page,
    ) -> Result<Paged<Review>, StoreError> {
        let org_id = org.id();
        let from = format!("FROM reviews r WHERE r.org_id = $1 AND {}", waiting(2, 3));
        let (count, _, rows) = self
            .select_reviews(
                &from,
                "r.created_at, r.id",
                &[org_id.to_string()],
                rules,
                page,
            )
            .await?;
        Paged::of((count, rows), page, review_from_row)
    }

    /// The count, rating sum and `page` (in `order`) of the reviews `from` selects, with `args`
    /// bound to its first placeholders and the thresholds of `rules` to the two after them.
    async fn select_reviews(
        &self,
        from: &str,
        order: &str,
        args: &[String],
        rules: &Moderation,
        page: Page,
    ) -> Result<(u64, i64, Vec<ReviewRow>), StoreError> {
        let summary = format!("SELECT COUNT(*), CAST(COALESCE(SUM(r.rating), 0) AS BIGINT) {from}");
        let list = format!(
            "SELECT {} {from} ORDER BY {order} LIMIT {} OFFSET {}",
            review_columns!(),
            page.limit(),
            page.offset()
        );
        let (score, reports) = (rules.profanity_threshold, i64::from(rules.report_threshold));
        let mut bound: Vec<Arg<'_>> = args.iter().map(|arg| arg.to_arg()).collect();
        bound.extend([score.to_arg(), reports.to_arg()]);
        let (count, sum): (i64, i64) = self.read_row(&summary, &bound).await?.unwrap_or((0, 0));
        let rows = if page.limit == 0 {
            Vec::new()
        } else {
            self.read_rows(&list, &bound).await?
        };
        Ok((count.max(0) as u64, sum, rows))
    }
}
