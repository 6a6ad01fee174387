//! `rewards reviews`: an operator's decisions on reviews the thresholds held back.

use serde_json::json;
use store::{Moderation, Page, Review, Store};

use super::emit;
use crate::cli::ReviewsCommand;

pub async fn run(
    store: &Store,
    command: ReviewsCommand,
    rules: &Moderation,
    json: bool,
) -> anyhow::Result<()> {
    match command {
        ReviewsCommand::Pending { org, limit } => {
            let scope = store.tenancy().find_org(&org).await?.scope();
            let page = Page { page: 1, limit };
            let pending = store
                .community()
                .pending_reviews(&scope, rules, page)
                .await?;
            let listed: Vec<_> = pending.items.iter().map(|r| view(r, rules)).collect();
            let value = json!({"total": pending.total, "reviews": listed});
            emit(json, value, || {
                if pending.items.is_empty() {
                    return "no reviews are waiting".to_string();
                }
                let mut lines = vec![format!(
                    "{} review(s) waiting{}",
                    pending.total,
                    if pending.total > u64::from(limit) {
                        format!(", the oldest {limit} shown")
                    } else {
                        String::new()
                    }
                )];
                for r in &pending.items {
                    lines.push(format!(
                        "{}  {}  voucher {}  by {}  rating {}  profanity {:.2}  reports {}\n    {}",
                        r.id,
                        r.created_at.format("%Y-%m-%d %H:%M"),
                        r.voucher_id,
                        r.member_id,
                        r.rating,
                        r.profanity_score,
                        r.reports,
                        r.review_text.replace('\n', " ")
                    ));
                }
                lines.join("\n")
            });
            Ok(())
        }
        ReviewsCommand::Approve { org, review_id } => {
            decide(store, &org, &review_id, true, json).await
        }
        ReviewsCommand::Remove { org, review_id } => {
            decide(store, &org, &review_id, false, json).await
        }
    }
}

async fn decide(
    store: &Store,
    org: &str,
    review_id: &str,
    approve: bool,
    json: bool,
) -> anyhow::Result<()> {
    let scope = store.tenancy().find_org(org).await?.scope();
    store
        .community()
        .moderate_review(&scope, review_id, approve)
        .await?;
    let decision = if approve { "approved" } else { "removed" };
    emit(json, json!({"id": review_id, "decision": decision}), || {
        format!("review {review_id} {decision}")
    });
    Ok(())
}

fn view(r: &Review, rules: &Moderation) -> serde_json::Value {
    json!({
        "id": r.id,
        "campaignId": r.campaign_id,
        "memberId": r.member_id,
        "voucherId": r.voucher_id,
        "partnerId": r.partner_id,
        "rating": r.rating,
        "reviewText": r.review_text,
        "profanityScore": r.profanity_score,
        "reports": r.reports,
        "reportedById": r.reported_by_id,
        "status": r.status(rules).as_str(),
        "createdAt": r.created_at,
    })
}
