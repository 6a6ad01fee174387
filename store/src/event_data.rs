//! The records events carry, as one typed union: the `events` crate stores each domain's
//! payload under its name and shape version and knows none of them; here, above every domain,
//! a stored record reads back as the domain type it was made from.

use chrono::NaiveDate;
use events::{Payload, Record, TestEvent};

use crate::{
    Batch, Booking, EarnRequest, Member, Order, Redeemed, Review, ReviewStatus, StoreError, Tokens,
    Transaction,
};
use community::reviews::ReviewEvent;
use ledger::expiry_notices::PointsExpiring;
use members::ErasedMember;
use members::activities::Activity;
use members::referrals::Referral;
use programme::tiers::{TierChanged, TierRef};

/// The record an event carries, as the change left it.
#[derive(Debug, Clone, PartialEq)]
pub enum EventData {
    /// `transaction.created`: the transaction written.
    Transaction(Box<Transaction>),
    /// `member.created`, `member.updated`: the member as the change left it.
    Member(Box<Member>),
    /// `member.deleted`, and what a deleted member's earlier events carry from then on: the
    /// member's id, no personal data.
    MemberErased { id: String },
    /// `batch.completed`, `batch.failed`, `batch.duplicate`: the file as it ended (counts,
    /// summary with the reports' names, why it failed, the batch a duplicate repeats).
    Batch(Box<Batch>),
    /// `earn.completed`, `earn.rejected`: the earn request as it ended.
    Earn(Box<EarnRequest>),
    /// `order.created`, `order.cancelled`: the order with its lines as the change left them
    /// (codes masked).
    Order(Box<Order>),
    /// `code.redeemed`: the code (masked) and what it was for.
    Redeemed(Box<Redeemed>),
    /// `booking.created`, `booking.status_changed`: the booking as the change left it.
    Booking(Box<Booking>),
    /// `review.created`, `review.held`, `review.reported`: the review, and where it stood with
    /// moderation after the change.
    Review {
        review: Box<Review>,
        status: ReviewStatus,
    },
    /// `wallet.tier_changed`: the wallet, its owner and its tiers before and after (`None`: no
    /// tier).
    TierChanged {
        wallet_id: String,
        member_id: String,
        from: Option<TierRef>,
        to: Option<TierRef>,
    },
    /// `wallet.points_expiring`: what the wallet's lots hold that expires on `date` (UTC).
    PointsExpiring {
        wallet_id: String,
        member_id: String,
        tokens: Tokens,
        date: NaiveDate,
    },
    /// `activity.recorded`: a member's activity with what it earned.
    Activity(Box<Activity>),
    /// `referral.converted`: the referral as its conversion left it.
    Referral(Box<Referral>),
    /// `webhook.test`: the endpoint it was sent to.
    Test { endpoint_id: String },
}

impl EventData {
    /// What `record` holds, read as its domain's type.
    pub fn of(record: &Record) -> Result<EventData, StoreError> {
        let data = match record.record.as_str() {
            Transaction::RECORD => EventData::Transaction(Box::new(record.read()?)),
            Member::RECORD => EventData::Member(Box::new(record.read()?)),
            ErasedMember::RECORD => {
                let ErasedMember { id } = record.read()?;
                EventData::MemberErased { id }
            }
            Batch::RECORD => EventData::Batch(Box::new(record.read()?)),
            EarnRequest::RECORD => EventData::Earn(Box::new(record.read()?)),
            Order::RECORD => EventData::Order(Box::new(record.read()?)),
            Redeemed::RECORD => EventData::Redeemed(Box::new(record.read()?)),
            Booking::RECORD => EventData::Booking(Box::new(record.read()?)),
            Activity::RECORD => EventData::Activity(Box::new(record.read()?)),
            Referral::RECORD => EventData::Referral(Box::new(record.read()?)),
            ReviewEvent::RECORD => {
                let ReviewEvent { review, status } = record.read()?;
                EventData::Review { review, status }
            }
            TierChanged::RECORD => {
                let TierChanged {
                    wallet_id,
                    member_id,
                    from,
                    to,
                } = record.read()?;
                EventData::TierChanged {
                    wallet_id,
                    member_id,
                    from,
                    to,
                }
            }
            PointsExpiring::RECORD => {
                let PointsExpiring {
                    wallet_id,
                    member_id,
                    tokens,
                    date,
                } = record.read()?;
                EventData::PointsExpiring {
                    wallet_id,
                    member_id,
                    tokens,
                    date,
                }
            }
            TestEvent::RECORD => {
                let TestEvent { endpoint_id } = record.read()?;
                EventData::Test { endpoint_id }
            }
            other => {
                return Err(StoreError::UnknownStored {
                    table: "events",
                    column: "data",
                    value: format!("a record named `{other}`"),
                });
            }
        };
        Ok(data)
    }
}
