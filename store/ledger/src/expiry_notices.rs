//! Expiry notices: once a day, each campaign whose tokens expire announces to its endpoints what
//! each wallet's lots hold that expires within the campaign's notice (`expiry_notice_days`), one
//! `wallet.points_expiring` event per wallet and day of expiry. A day is announced once, the
//! first time it comes within the notice (`expiry_notices` remembers it until the day has
//! passed), so a member hears of it once, about `expiry_notice_days` ahead; tokens earned later
//! that expire on a day already announced are not announced again (the wallet's `expiring`
//! answers with what expires now).
//!
//! One node looks at a campaign a day: it claims the campaign's day (`expiry_noticed_on`) first.
//! A node that dies while looking leaves the rest of that day's notices to the next day's look,
//! whose window still holds them (a day later, at most).

use chrono::{DateTime, Duration, NaiveDate, Utc};

use crate::backend::{Steps, Tx};
use crate::in_time::ExpiringDay;
use crate::{Ledger, StoreError};
use events::{EventType, NewEvent};

/// Wallets read at once, by id, from a campaign being looked at.
const PAGE: i64 = 500;

/// Campaigns whose tokens expire and are announced, and whose look of day `$1` is still to do.
const DUE: &str = "SELECT p.campaign_id, c.org_id, CAST(p.expiry_notice_days AS BIGINT) \
     FROM campaign_policies p JOIN campaigns c ON c.id = p.campaign_id \
     WHERE p.expiry_notice_days > 0 AND p.expiry <> 'never' \
     AND (p.expiry_noticed_on IS NULL OR p.expiry_noticed_on < $1)";
/// Campaign `$1`'s look of day `$2`, claimed by this node (no row changed: another's).
const CLAIM: &str = "UPDATE campaign_policies SET expiry_noticed_on = $2 WHERE campaign_id = $1 \
     AND (expiry_noticed_on IS NULL OR expiry_noticed_on < $2)";
/// Wallets of campaign `$2` (of organisation `$1`) after `$4` by id whose earliest expiry is
/// by `$3`.
const WALLETS: &str = "SELECT id, owner_id FROM wallets WHERE org_id = $1 AND campaign_id = $2 \
     AND id > $4 AND expires_next IS NOT NULL AND expires_next <= $3 ORDER BY id LIMIT $5";
/// The days of wallet `$1` announced already.
const NOTICED: &str =
    "SELECT CAST(expires_on AS TEXT) FROM expiry_notices WHERE wallet_id = $1 AND expires_on >= $2";
/// Notices of days gone by.
const FORGET: &str = "DELETE FROM expiry_notices WHERE expires_on < $1";

/// Expiry notices (operator-wide: the background sweep).
impl Ledger {
    /// Looks, for each campaign not looked at on `at`'s day, for tokens that expire within its
    /// notice and records a `wallet.points_expiring` for each wallet and day not announced
    /// before; how many this call recorded.
    #[tracing::instrument(skip_all)]
    pub async fn notice_expiring(&self, at: DateTime<Utc>) -> Result<usize, StoreError> {
        let today = at.date_naive();
        let due: Vec<(String, String, i64)> = self.read_rows(DUE, params![today]).await?;
        let mut noticed = 0;
        let mut looked = false;
        for (campaign_id, org_id, days) in due {
            if self.execute(CLAIM, params![campaign_id, today]).await? == 0 {
                continue;
            }
            looked = true;
            let campaign = NoticeScope {
                org_id,
                campaign_id,
                until: at + Duration::days(days),
            };
            noticed += self.notice_campaign(&campaign, at).await?;
        }
        if looked {
            self.execute(FORGET, params![today]).await?;
        }
        Ok(noticed)
    }

    /// Announces what the campaign's wallets hold that expires after `at` and by its notice's
    /// end; how many notices that recorded.
    async fn notice_campaign(
        &self,
        campaign: &NoticeScope,
        at: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let (org, id, until) = (&campaign.org_id, &campaign.campaign_id, campaign.until);
        let mut after = String::new();
        let mut noticed = 0;
        loop {
            let wallets: Vec<(String, String)> = self
                .read_rows(WALLETS, params![org, id, until, after, PAGE])
                .await?;
            let Some((last, _)) = wallets.last() else {
                return Ok(noticed);
            };
            after = last.clone();
            for (wallet_id, member_id) in wallets {
                let days = self.expiring_days(&wallet_id, Some(at), until).await?;
                if days.is_empty() {
                    continue;
                }
                let known: Vec<(String,)> = self
                    .read_rows(NOTICED, params![wallet_id, at.date_naive()])
                    .await?;
                let new: Vec<ExpiringDay> = days
                    .into_iter()
                    .filter(|d| !known.iter().any(|(k,)| *k == d.date.to_string()))
                    .collect();
                if new.is_empty() {
                    continue;
                }
                let notice = Notice {
                    org_id: org.clone(),
                    campaign_id: id.clone(),
                    wallet_id,
                    member_id,
                    days: new,
                    at,
                };
                noticed += self.write(notice).await?;
            }
        }
    }
}

/// The campaign being looked at, and the end of its notice.
struct NoticeScope {
    org_id: String,
    campaign_id: String,
    until: DateTime<Utc>,
}

/// A wallet's days of expiry to announce, each once (another node may have announced one).
struct Notice {
    org_id: String,
    campaign_id: String,
    wallet_id: String,
    member_id: String,
    days: Vec<ExpiringDay>,
    at: DateTime<Utc>,
}

impl Steps for Notice {
    type Output = usize;
    async fn run<T: Tx>(self, tx: &mut T) -> Result<usize, StoreError> {
        const INSERT: &str = "INSERT INTO expiry_notices (wallet_id, expires_on, tokens, \
             noticed_at) VALUES ($1, $2, $3, $4) ON CONFLICT (wallet_id, expires_on) DO NOTHING";
        let mut made = Vec::new();
        for day in &self.days {
            let (date, micros): (NaiveDate, i64) = (day.date, day.tokens.micros());
            let args = params![self.wallet_id, date, micros, self.at];
            if tx.execute(INSERT, args).await? == 0 {
                continue;
            }
            let data = PointsExpiring {
                wallet_id: self.wallet_id.clone(),
                member_id: self.member_id.clone(),
                tokens: day.tokens,
                date,
            };
            let campaign = Some(self.campaign_id.as_str());
            let kind = EventType::WalletPointsExpiring;
            made.push(NewEvent::new(&self.org_id, campaign, kind, &data, self.at)?);
        }
        events::record_all(tx, &made).await?;
        Ok(made.len())
    }
}

/// `wallet.points_expiring`: what the wallet's lots hold that expires on `date` (UTC), as the
/// daily notice found it.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct PointsExpiring {
    pub wallet_id: String,
    pub member_id: String,
    pub tokens: crate::Tokens,
    pub date: NaiveDate,
}

impl events::Payload for PointsExpiring {
    const RECORD: &'static str = "points_expiring";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.wallet_id)
    }
}
