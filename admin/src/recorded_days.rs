//! The days a campaign's ledger recorded, summed per type (`DayView`), and the days of each
//! campaign this node has summed, kept once they are over (`ClosedDays`): a recorded day does
//! not change once over, an hour after its end (so that a transaction still committing at
//! midnight is in it). And each campaign's latest overview (`Latest`), given again while the
//! ledger's marker is unchanged.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, PoisonError};

use chrono::{DateTime, Duration, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use store::{RecordedDay, Tokens, TransactionKind};
use utoipa::ToSchema;

/// The longest period a chart covers, in days.
pub const MAX_DAYS: i64 = 366;

/// The days of each campaign this node has summed, kept once they are over.
#[derive(Clone, Default)]
pub struct ClosedDays(Arc<Mutex<HashMap<String, BTreeMap<NaiveDate, DayView>>>>);

/// The tokens the ledger recorded on a day (UTC), per type.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct DayView {
    pub day: NaiveDate,
    #[schema(value_type = f64)]
    pub earned: Tokens,
    #[schema(value_type = f64)]
    pub burned: Tokens,
    #[schema(value_type = f64)]
    pub expired: Tokens,
    /// Taken back by reversals (returns, corrections).
    #[schema(value_type = f64)]
    pub reversed: Tokens,
    /// Given back by refunds of burns.
    #[schema(value_type = f64)]
    pub refunded: Tokens,
    /// Moved between wallets (out of one, into another: the same tokens).
    #[schema(value_type = f64)]
    pub transferred: Tokens,
    pub transactions: u64,
}

impl DayView {
    pub fn add(&mut self, recorded: &RecordedDay) {
        let tokens = recorded.tokens;
        match recorded.kind {
            TransactionKind::Earn => self.earned = plus(self.earned, tokens),
            TransactionKind::Burn => self.burned = plus(self.burned, tokens),
            TransactionKind::Expiry => self.expired = plus(self.expired, tokens),
            TransactionKind::Reversal => self.reversed = plus(self.reversed, tokens),
            TransactionKind::Refund => self.refunded = plus(self.refunded, tokens),
            TransactionKind::TransferIn => self.transferred = plus(self.transferred, tokens),
            TransactionKind::TransferOut => {}
        }
        self.transactions += recorded.transactions;
    }
}

fn plus(a: Tokens, b: Tokens) -> Tokens {
    Tokens::from_micros(a.micros().saturating_add(b.micros()))
}

/// What a node has kept of a campaign's period, and where its gap starts.
pub struct Summed {
    pub days: BTreeMap<NaiveDate, DayView>,
    /// The first day of the period not kept; `None`: every day is.
    pub first_missing: Option<DateTime<Utc>>,
}

/// A day is over for good an hour after its end.
fn closed(day: NaiveDate, now: DateTime<Utc>) -> bool {
    let end = day
        .and_hms_opt(0, 0, 0)
        .map(|d| d.and_utc() + Duration::days(1));
    end.is_some_and(|end| end + Duration::hours(1) <= now)
}

impl ClosedDays {
    pub fn read(&self, campaign: &str, first: DateTime<Utc>, now: DateTime<Utc>) -> Summed {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut days = BTreeMap::new();
        let mut day = first;
        let known = kept.get(campaign);
        loop {
            let date = day.date_naive();
            match known.and_then(|k| k.get(&date)) {
                Some(view) if closed(date, now) => {
                    days.insert(date, view.clone());
                }
                _ if day > now => {
                    return Summed {
                        days,
                        first_missing: None,
                    };
                }
                _ => {
                    return Summed {
                        days,
                        first_missing: Some(day),
                    };
                }
            }
            day += Duration::days(1);
        }
    }

    /// Keeps the closed days of `by_day` from `from` on.
    pub fn keep(
        &self,
        campaign: &str,
        by_day: &BTreeMap<NaiveDate, DayView>,
        from: DateTime<Utc>,
        now: DateTime<Utc>,
    ) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let days = kept.entry(campaign.to_owned()).or_default();
        for (date, view) in by_day.range(from.date_naive()..) {
            if closed(*date, now) {
                days.insert(*date, view.clone());
            }
        }
        // A year and a little of days a campaign at most.
        while days.len() > (MAX_DAYS + 2) as usize {
            days.pop_first();
        }
    }
}

/// The longest an answer is given again while the ledger's marker is unchanged: a transaction
/// that commits after a later one (a file's chunk) does not move the marker.
const FRESH_FOR: Duration = Duration::minutes(1);

/// The ledger's marker (`Ledger::campaign_marker`).
pub type Marker = (Option<DateTime<Utc>>, Option<String>);

/// An answer kept: the marker it was summed at, when, and the answer.
type Kept = (Marker, DateTime<Utc>, OverviewView);

/// Each campaign's latest answer, per period (the campaign's id and the days).
#[derive(Clone, Default)]
pub struct Latest(Arc<Mutex<HashMap<(String, i64), Kept>>>);

impl Latest {
    /// The answer for `campaign` over `days` summed at most `FRESH_FOR` before `now`, today,
    /// with the marker `marker`.
    pub fn get(
        &self,
        key: &(String, i64),
        marker: &Marker,
        now: DateTime<Utc>,
    ) -> Option<OverviewView> {
        let kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let (at, summed, view) = kept.get(key)?;
        let fresh =
            at == marker && now - *summed < FRESH_FOR && summed.date_naive() == now.date_naive();
        fresh.then(|| view.clone())
    }

    pub fn keep(
        &self,
        key: (String, i64),
        marker: Marker,
        now: DateTime<Utc>,
        view: &OverviewView,
    ) {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.insert(key, (marker, now, view.clone()));
    }
}

/// A campaign now.
#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct OverviewView {
    pub wallets: u64,
    /// Wallets whose balance changed within the period.
    pub active_wallets: u64,
    /// What the wallets hold: the tokens the programme owes its members.
    #[schema(value_type = f64)]
    pub outstanding: Tokens,
    /// Tokens earned and not vested yet.
    #[schema(value_type = f64)]
    pub pending: Tokens,
    /// Wallets per tier, the most first (`tierId` absent: no tier).
    pub tiers: Vec<TierShareView>,
    /// Each day of the period, oldest first, with what the ledger recorded that day.
    pub days: Vec<DayView>,
}

#[derive(Debug, Clone, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct TierShareView {
    pub tier_id: Option<String>,
    pub name: Option<String>,
    pub wallets: u64,
}
