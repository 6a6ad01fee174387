//! A member's own data, for a right-of-access request: everything the service holds about one
//! member of an organisation, gathered from every domain (so it lives here, above them all).
//! What each table holds of a member, and whether this export and the erasure cover it, is
//! checked table by table by the store's `personal_data` test.

use chrono::{DateTime, Utc};

use crate::{
    Activity, Campaign, EarnRequest, Event, Hold, HoldFilter, Member, Order, OrderScope, Page,
    Referral, ReferralCode, Review, Store, StoreError, Transaction, TransactionFilter, Wallet,
    WalletFilter,
};
use seam::scope::OrgScope;

/// Rows read at once from a list.
const PAGE: Page = Page {
    page: 1,
    limit: 100,
};

/// Everything the service holds about a member.
#[derive(Debug, Clone, PartialEq)]
pub struct MemberData {
    /// Its profile: names, contacts, identifiers, meta, preferences, birth date.
    pub member: Member,
    /// Its wallets in every campaign of the organisation.
    pub wallets: Vec<Wallet>,
    /// Every transaction of those wallets.
    pub transactions: Vec<Transaction>,
    /// Earns sent for those wallets over the API, those rejected included.
    pub earn_requests: Vec<EarnRequest>,
    pub holds: Vec<Hold>,
    /// Its orders in every campaign, with their lines and bookings (codes masked).
    pub orders: Vec<Order>,
    /// Its reviews, whatever moderation decided.
    pub reviews: Vec<Review>,
    /// The reviews it reported: the review's id and when.
    pub reports: Vec<(String, DateTime<Utc>)>,
    pub activities: Vec<Activity>,
    /// Its referral code, if one was made.
    pub referral_code: Option<ReferralCode>,
    /// The members it brought, and the one that brought it.
    pub referrals: Vec<Referral>,
    /// What its limits have counted of it (by its id or its wallets').
    pub limits: Vec<LimitCount>,
    /// The organisation's events about it or any of the records above.
    pub events: Vec<Event>,
}

row_struct! {
    /// What a limit (or budget) counted in one period, for one member or wallet.
    #[derive(Debug, Clone, PartialEq)]
    pub struct LimitCount {
        campaign_id: String,
        /// `"{period} {scope} {rule}"` (see `rules::limits`).
        counter: String,
        /// The member's id, or one of its wallets'.
        scope: String,
        /// The first day of the period (the day itself for a rolling one), `YYYY-MM-DD`.
        bucket: String,
        times: i64,
        /// Micro-tokens.
        tokens: i64,
    }
}

impl Store {
    /// The data of the organisation's live member `reference` (id or external id); `NotFound`
    /// for none (a deleted member's personal data is gone).
    #[tracing::instrument(skip_all)]
    pub async fn member_data(
        &self,
        org: &OrgScope,
        reference: &str,
    ) -> Result<MemberData, StoreError> {
        let id = self
            .members()
            .member_id_by_reference(org, reference)
            .await?
            .ok_or(StoreError::NotFound { what: "member" })?;
        let member = self.members().get_member(org, &id).await?;
        let mut data = MemberData {
            member,
            wallets: Vec::new(),
            transactions: Vec::new(),
            earn_requests: Vec::new(),
            holds: Vec::new(),
            orders: Vec::new(),
            reviews: Vec::new(),
            reports: Vec::new(),
            activities: Vec::new(),
            referral_code: self.members().held_referral_code(org, &id).await?,
            referrals: Vec::new(),
            limits: Vec::new(),
            events: Vec::new(),
        };
        for campaign in self.tenancy().list_campaigns(org).await? {
            self.gather_in(&campaign, &mut data).await?;
        }
        let scope = OrderScope {
            org_id: org.id().to_string(),
            campaign_id: None,
        };
        data.orders = all_pages(|page| {
            self.orders()
                .list_orders(&scope, Some(data.member.id.as_str()), true, page)
        })
        .await?;
        data.referrals = all_pages(|page| {
            self.members()
                .list_referrals(org, &data.member.id, None, page)
        })
        .await?;
        const REVIEWS: &str =
            "SELECT id FROM reviews WHERE org_id = $1 AND member_id = $2 ORDER BY id";
        let reviews: Vec<(String,)> = self.read_rows(REVIEWS, params![org.id(), id]).await?;
        for (review,) in reviews {
            let review = self.community().review_by_id(org, None, &review).await;
            match review {
                Ok(review) => data.reviews.push(review),
                // Removed by an operator: not a review any more, its text kept only so that the
                // member cannot post it again.
                Err(StoreError::NotFound { .. }) => {}
                Err(err) => return Err(err),
            }
        }
        const REPORTS: &str = "SELECT r.review_id, r.created_at FROM review_reports r \
             JOIN reviews v ON v.id = r.review_id WHERE v.org_id = $1 AND r.member_id = $2 \
             ORDER BY r.created_at, r.review_id";
        data.reports = self.read_rows(REPORTS, params![org.id(), id]).await?;
        const LIMITS: &str = "SELECT campaign_id, counter, scope, CAST(bucket AS TEXT), times, \
             tokens FROM limit_counters WHERE scope = $2 \
             OR scope IN (SELECT id FROM wallets WHERE org_id = $1 AND owner_id = $2) \
             ORDER BY campaign_id, counter, scope, bucket";
        data.limits = self.read_rows(LIMITS, params![org.id(), id]).await?;
        let subjects = data.subjects();
        data.events = self.events().events_about(org, &subjects).await?;
        Ok(data)
    }

    /// Adds what campaign `campaign` holds of `data`'s member: its wallets there, their
    /// transactions, earn requests and holds, and its activities.
    async fn gather_in(
        &self,
        campaign: &Campaign,
        data: &mut MemberData,
    ) -> Result<(), StoreError> {
        let ledger = self.ledger();
        let member = data.member.id.clone();
        let owned = WalletFilter {
            owner: Some(member.clone()),
            ..Default::default()
        };
        let wallets = all_pages(|page| ledger.list_wallets(campaign, &owned, page)).await?;
        for wallet in &wallets {
            let filter = TransactionFilter {
                wallet_id: Some(wallet.id.clone()),
                ..Default::default()
            };
            let transactions =
                all_pages(|page| ledger.list_transactions(campaign, &filter, page)).await?;
            data.transactions.extend(transactions);
            let held = HoldFilter {
                wallet_id: Some(wallet.id.clone()),
                status: None,
            };
            data.holds
                .extend(all_pages(|page| ledger.list_holds(campaign, &held, page)).await?);
            const REQUESTS: &str = "SELECT id FROM earn_requests WHERE org_id = $1 \
                 AND campaign_id = $2 AND wallet_id = $3 ORDER BY created_at, id";
            let args = params![campaign.org_id, campaign.id, wallet.id];
            let requests: Vec<(String,)> = self.read_rows(REQUESTS, args).await?;
            for (request,) in requests {
                data.earn_requests
                    .push(ledger.earn_request(campaign, &request).await?);
            }
        }
        data.wallets.extend(wallets);
        data.activities
            .extend(all_pages(|page| ledger.list_activities(campaign, &member, None, page)).await?);
        Ok(())
    }
}

impl MemberData {
    /// The ids of the member and of every record of it: what its events are about.
    fn subjects(&self) -> Vec<String> {
        let mut ids = vec![self.member.id.clone()];
        ids.extend(self.wallets.iter().map(|w| w.id.clone()));
        ids.extend(self.transactions.iter().map(|t| t.id.clone()));
        ids.extend(self.earn_requests.iter().map(|r| r.id.clone()));
        ids.extend(self.holds.iter().map(|h| h.id.clone()));
        for order in &self.orders {
            ids.push(order.id.clone());
            let bookings = order.lines.iter().filter_map(|l| l.booking.as_ref());
            ids.extend(bookings.map(|b| b.id.clone()));
        }
        ids.extend(self.reviews.iter().map(|r| r.id.clone()));
        ids.extend(self.activities.iter().map(|a| a.id.clone()));
        ids.extend(self.referrals.iter().map(|r| r.id.clone()));
        ids
    }
}

/// Every item of a paged list, page after page.
async fn all_pages<T, F, Fut>(mut list: F) -> Result<Vec<T>, StoreError>
where
    F: FnMut(Page) -> Fut,
    Fut: Future<Output = Result<crate::Paged<T>, StoreError>>,
{
    let mut items = Vec::new();
    for page in 1.. {
        let found = list(Page { page, ..PAGE }).await?;
        let last = found.items.len() < PAGE.limit as usize;
        items.extend(found.items);
        if last {
            return Ok(items);
        }
    }
    Ok(items)
}
