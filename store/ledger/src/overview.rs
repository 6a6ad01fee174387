//! A campaign at a glance, for the operators' console: its wallets (how many, how many moved
//! lately), the tokens it owes its members (the programme's liability), how its wallets spread
//! over its tiers, and the tokens the ledger recorded each day, by transaction type.
//!
//! Days are the days the ledger recorded each transaction (`created_at`), not the transactions'
//! own dates: a recorded day does not change once it is over, so a reader may keep it. A marker
//! (`campaign_marker`) tells a reader cheaply whether the figures may have changed since.

use chrono::{DateTime, Utc};

use crate::error::known;
use crate::{Campaign, Ledger, StoreError, Tokens, TransactionKind};

/// A campaign's wallets now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CampaignFigures {
    pub wallets: u64,
    /// Wallets whose balance changed since the instant asked about.
    pub active_wallets: u64,
    /// The sum of the wallets' balances.
    pub outstanding: Tokens,
    /// Tokens earned and not yet vested.
    pub pending: Tokens,
    /// Wallets per tier: the tier's id and name (`None`: no tier), and how many.
    pub tiers: Vec<(Option<String>, Option<String>, u64)>,
}

/// What the ledger recorded of one type on one day.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RecordedDay {
    /// The day's first instant (UTC).
    pub day: DateTime<Utc>,
    pub kind: TransactionKind,
    pub tokens: Tokens,
    pub transactions: u64,
}

impl Ledger {
    /// Campaign `campaign`'s wallets: their count, those changed since `since`, what they hold
    /// and how they spread over the tiers.
    #[tracing::instrument(skip_all)]
    pub async fn campaign_figures(
        &self,
        campaign: &Campaign,
        since: DateTime<Utc>,
    ) -> Result<CampaignFigures, StoreError> {
        const TOTALS: &str = "SELECT COUNT(*), \
             CAST(COALESCE(SUM(CASE WHEN updated_at >= $3 THEN 1 ELSE 0 END), 0) AS BIGINT), \
             CAST(COALESCE(SUM(balance), 0) AS BIGINT), CAST(COALESCE(SUM(pending), 0) AS BIGINT) \
             FROM wallets WHERE org_id = $1 AND campaign_id = $2";
        const TIERS: &str = "SELECT w.tier_id, t.name, COUNT(*) FROM wallets w \
             LEFT JOIN tiers t ON t.id = w.tier_id \
             WHERE w.org_id = $1 AND w.campaign_id = $2 GROUP BY w.tier_id, t.name \
             ORDER BY COUNT(*) DESC";
        let (wallets, active, outstanding, pending): (i64, i64, i64, i64) = self
            .read_row(TOTALS, params![&campaign.org_id, &campaign.id, since])
            .await?
            .unwrap_or_default();
        let tiers: Vec<(Option<String>, Option<String>, i64)> = self
            .read_rows(TIERS, params![&campaign.org_id, &campaign.id])
            .await?;
        let count = |n: i64| u64::try_from(n).unwrap_or_default();
        Ok(CampaignFigures {
            wallets: count(wallets),
            active_wallets: count(active),
            outstanding: Tokens::from_micros(outstanding),
            pending: Tokens::from_micros(pending),
            tiers: tiers
                .into_iter()
                .map(|(id, name, n)| (id, name, count(n)))
                .collect(),
        })
    }

    /// The tokens and transactions of each type the ledger recorded for campaign `campaign`
    /// from `from` to `to` (excluded), per day, oldest first.
    #[tracing::instrument(skip_all)]
    pub async fn recorded_by_day(
        &self,
        campaign: &Campaign,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Vec<RecordedDay>, StoreError> {
        let day = self.day_of_sql("created_at");
        let sql = format!(
            "SELECT {day}, kind, CAST(SUM(amount) AS BIGINT), COUNT(*) FROM transactions \
             WHERE org_id = $1 AND created_at >= $3 AND created_at < $4 AND campaign_id = $2 \
             GROUP BY {day}, kind ORDER BY {day}"
        );
        let rows: Vec<(DateTime<Utc>, String, i64, i64)> = self
            .read_rows(&sql, params![&campaign.org_id, &campaign.id, from, to])
            .await?;
        rows.into_iter()
            .map(|(day, kind, tokens, transactions)| {
                Ok(RecordedDay {
                    day,
                    kind: known(TransactionKind::parse(&kind), "transactions", "kind", &kind)?,
                    tokens: Tokens::from_micros(tokens),
                    transactions: u64::try_from(transactions).unwrap_or_default(),
                })
            })
            .collect()
    }

    /// What changes when campaign `campaign`'s figures may have: the instant of the latest
    /// transaction its organisation recorded and its newest wallet's id. Two index probes, so
    /// a reader can tell whether figures it summed still hold without summing them again.
    #[tracing::instrument(skip_all)]
    pub async fn campaign_marker(
        &self,
        campaign: &Campaign,
    ) -> Result<(Option<DateTime<Utc>>, Option<String>), StoreError> {
        const SQL: &str = "SELECT \
             (SELECT MAX(created_at) FROM transactions WHERE org_id = $1), \
             (SELECT MAX(id) FROM wallets WHERE org_id = $1 AND campaign_id = $2)";
        let marker: Option<(Option<DateTime<Utc>>, Option<String>)> = self
            .read_row(SQL, params![&campaign.org_id, &campaign.id])
            .await?;
        Ok(marker.unwrap_or_default())
    }
}
