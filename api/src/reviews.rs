//! Reviews (seed #34-35 and the Review resource): members review a campaign's vouchers and
//! partners, each review scored for profanity; members report reviews; lists show what
//! moderation lets through, with the average rating. Operators decide on hidden reviews from
//! the command line (`rewards reviews`).

use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::{Number, Value};
use store::{Moderation, NewReview, Review, ReviewFilter, ReviewStatus};
use utoipa::openapi::schema::{ObjectBuilder, OneOfBuilder, Schema, Type};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

use crate::AppState;
use crate::http::auth::Caller;
use crate::http::checks::{Checks, MAX_LONG_TEXT, schema};
use crate::http::error::{ApiError, Problem};
use crate::http::json::JsonBody;
use crate::http::paging::{PagedList, Paging, PagingParams};
use crate::http::query::QueryParams;

pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_review, list_reviews))
        .routes(routes!(get_review))
        .routes(routes!(report_review))
}

/// A new review; every field is required.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReviewInput {
    /// The reviewing member: id or external id.
    #[schema(schema_with = schema::id, required = true)]
    member_id: Option<String>,
    /// A product or variant id of the campaign's catalogue.
    #[schema(schema_with = schema::id, required = true)]
    voucher_id: Option<String>,
    /// The client's own id for the partner, kept as given.
    #[schema(schema_with = schema::id, required = true)]
    partner_id: Option<String>,
    #[schema(schema_with = rating, required = true)]
    rating: Option<Number>,
    /// 1 to 4,000 characters, not blank.
    #[schema(schema_with = schema::long_text, required = true)]
    review_text: Option<String>,
}

fn rating() -> Schema {
    Schema::Object(
        ObjectBuilder::new()
            .schema_type(Type::Integer)
            .minimum(Some(1))
            .maximum(Some(5))
            .description(Some("A whole number of stars, 1 to 5."))
            .build(),
    )
}

/// A report of a review.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct ReportInput {
    /// The reporting member: id or external id, as a string or a whole number.
    #[schema(schema_with = reporter, required = true)]
    reporter_id: Option<Value>,
}

/// A string id, or a whole number that fits 64 bits (signed or not), as `reporter_id` reads it.
fn reporter() -> Schema {
    let number = ObjectBuilder::new()
        .schema_type(Type::Integer)
        .minimum(Some(i64::MIN))
        .maximum(Some(u64::MAX));
    Schema::OneOf(OneOfBuilder::new().item(schema::id()).item(number).build())
}

/// A whole JSON number as the text of an id (`12345`; `12345.0` too); `None` for a fraction or
/// a number past 64 bits.
fn reporter_id(n: &Number) -> Option<String> {
    if n.is_i64() || n.is_u64() {
        return Some(n.to_string());
    }
    let f = n.as_f64()?;
    // Whole, and within i64 (2^63 is exact in an f64).
    (f.fract() == 0.0 && f.abs() < 9_223_372_036_854_775_808.0).then(|| (f as i64).to_string())
}

/// Where a review stands with moderation. (Named apart from other statuses in the OpenAPI
/// document, where one name holds one schema.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
#[schema(as = ReviewStatus)]
pub enum Status {
    /// Listed and counted in averages.
    Visible,
    /// Hidden from lists and averages until an operator decides: its profanity score or its
    /// reports passed a threshold.
    Pending,
    /// Approved by an operator: listed whatever is reported later.
    Approved,
}

/// The seed's Review.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewView {
    pub id: String,
    pub rating: u8,
    pub review_text: String,
    /// 0.0 (clean) to 1.0: the most severe language found (mild 0.25, moderate 0.6, severe 1.0).
    pub profanity_score: f64,
    /// The reviewer's member id.
    pub member_id: String,
    pub voucher_id: String,
    pub partner_id: String,
    /// The member id of the latest of the members who reported it.
    pub reported_by_id: Option<String>,
    /// How many distinct members reported it.
    pub reports: u32,
    pub status: Status,
    pub created_at: DateTime<Utc>,
}

impl ReviewView {
    pub fn new(review: Review, rules: &Moderation) -> Self {
        let status = review.status(rules);
        ReviewView::with_status(review, status)
    }

    /// `review` standing as `status` says (an event's review, as it stood then).
    pub fn with_status(review: Review, status: ReviewStatus) -> Self {
        let status = match status {
            ReviewStatus::Visible => Status::Visible,
            ReviewStatus::Pending => Status::Pending,
            ReviewStatus::Approved => Status::Approved,
        };
        ReviewView {
            id: review.id,
            rating: review.rating,
            review_text: review.review_text,
            profanity_score: review.profanity_score,
            member_id: review.member_id,
            voucher_id: review.voucher_id,
            partner_id: review.partner_id,
            reported_by_id: review.reported_by_id,
            reports: review.reports,
            status,
            created_at: review.created_at,
        }
    }
}

/// A page of reviews (`PagedList`) with the average rating of every review the list holds.
#[derive(Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ReviewPage {
    pub data: Vec<ReviewView>,
    pub total: u64,
    pub current_page: u32,
    pub page_size: u32,
    pub total_pages: u64,
    /// The mean rating of all `total` reviews (not only this page's); `null` when there are none.
    pub average_rating: Option<f64>,
}

#[derive(Deserialize, IntoParams)]
#[serde(rename_all = "camelCase")]
#[into_params(parameter_in = Query)]
struct ReviewQuery {
    /// Only reviews of this product or variant.
    voucher_id: Option<String>,
    /// Only reviews of this partner.
    partner_id: Option<String>,
    /// Only this member's reviews (id or external id); an unknown member has none.
    member_id: Option<String>,
}

#[utoipa::path(post, path = "/v1/reviews", tag = "reviews", summary = "Create a review",
    description = "The seed's \"Search Reviews\" (#34), which creates a review. The text is \
        scored for profanity; a review whose score passes the configured threshold is held back \
        (`status: pending`) until an operator decides. One review per member and voucher.",
    request_body = ReviewInput,
    responses((status = 201, body = ReviewView),
        (status = 400, description = "a missing or bad field, each named", body = Problem),
        (status = 404, description = "`memberId` or `voucherId` names nothing in the organisation or the campaign's catalogue", body = Problem),
        (status = 409, description = "`already_reviewed`: the member has reviewed this voucher before", body = Problem)))]
async fn create_review(
    State(state): State<AppState>,
    caller: Caller,
    JsonBody(input): JsonBody<ReviewInput>,
) -> Result<(StatusCode, Json<ReviewView>), ApiError> {
    let mut checks = Checks::default();
    let member = checks.required_id("memberId", input.member_id);
    let voucher_id = checks.required_id("voucherId", input.voucher_id);
    let partner_id = checks.required_id("partnerId", input.partner_id);
    let rating = checks.whole("rating", input.rating.as_ref(), 1..=5);
    if input.rating.is_none() {
        checks.fail("rating", "missing_field", "is required");
    }
    let review_text = checks.required("reviewText", input.review_text, MAX_LONG_TEXT);
    let new = checks.finish(NewReview {
        member,
        voucher_id,
        partner_id,
        rating: rating.unwrap_or_default() as u8,
        review_text,
    })?;
    let review = state
        .store
        .community()
        .create_review(&caller.context.campaign, new, &state.settings.moderation)
        .await?;
    let view = ReviewView::new(review, &state.settings.moderation);
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/reviews", tag = "reviews", summary = "Read reviews",
    description = "The campaign's reviews, newest first, with their average rating. Reviews held \
        back for an operator (profanity, or reported by enough members) and removed ones are \
        neither listed nor averaged.",
    params(PagingParams, ReviewQuery),
    responses((status = 200, body = ReviewPage), (status = 400, body = Problem)))]
async fn list_reviews(
    State(state): State<AppState>,
    caller: Caller,
    Paging(page): Paging,
    QueryParams(query): QueryParams<ReviewQuery>,
) -> Result<Json<ReviewPage>, ApiError> {
    let filter = ReviewFilter {
        voucher_id: query.voucher_id,
        partner_id: query.partner_id,
        member: query.member_id,
    };
    let rules = state.settings.moderation;
    let campaign = &caller.context.campaign;
    let found = state
        .store
        .community()
        .list_reviews(campaign, &filter, &rules, page)
        .await?;
    let list = PagedList::from_page(found.page, |r| ReviewView::new(r, &rules));
    Ok(Json(ReviewPage {
        data: list.data,
        total: list.total,
        current_page: list.current_page,
        page_size: list.page_size,
        total_pages: list.total_pages,
        average_rating: found.average_rating,
    }))
}

#[utoipa::path(get, path = "/v1/reviews/{id}", tag = "reviews", summary = "Get a review",
    description = "A review of the campaign, whatever its moderation `status`; a removed one is \
        gone.",
    params(("id" = String, Path)),
    responses((status = 200, body = ReviewView), (status = 404, body = Problem)))]
async fn get_review(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
) -> Result<Json<ReviewView>, ApiError> {
    let campaign = &caller.context.campaign;
    let review = state
        .store
        .community()
        .review_by_id(&campaign.org(), Some(campaign), &id)
        .await?;
    Ok(Json(ReviewView::new(review, &state.settings.moderation)))
}

#[utoipa::path(post, path = "/v1/reviews/{reviewId}/report", tag = "reviews", summary = "Report Review",
    description = "A member reports a review: each member counts once (`reports`) and the \
        latest becomes `reportedById`; the same member again changes nothing. Enough distinct \
        reporters hold the review back until an operator decides, unless an operator approved it.",
    params(("reviewId" = String, Path)),
    request_body = ReportInput,
    responses((status = 200, body = ReviewView),
        (status = 400, description = "`reporterId` missing, or neither a string nor a whole number", body = Problem),
        (status = 404, description = "no such review, or `reporterId` names no member of the organisation", body = Problem),
        (status = 409, description = "`own_review`: a member cannot report their own review", body = Problem)))]
async fn report_review(
    State(state): State<AppState>,
    caller: Caller,
    Path(id): Path<String>,
    JsonBody(input): JsonBody<ReportInput>,
) -> Result<Json<ReviewView>, ApiError> {
    let mut checks = Checks::default();
    let reporter = match input.reporter_id {
        None | Some(Value::Null) => checks.required_id("reporterId", None),
        Some(Value::String(text)) => checks.required_id("reporterId", Some(text)),
        other => {
            let number = other
                .as_ref()
                .and_then(Value::as_number)
                .and_then(reporter_id);
            number.unwrap_or_else(|| {
                checks.fail(
                    "reporterId",
                    "invalid_type",
                    "must be a member's id or external id: a string, or a whole number within \
                     64 bits",
                );
                String::new()
            })
        }
    };
    let reporter = checks.finish(reporter)?;
    let review = state
        .store
        .community()
        .report_review(
            &caller.context.campaign,
            &id,
            &reporter,
            &state.settings.moderation,
        )
        .await?;
    Ok(Json(ReviewView::new(review, &state.settings.moderation)))
}
