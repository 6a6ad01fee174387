//! Earning: the one path every earn takes. An API earn is stored durably (`submit_earn`, the
//! 202), then a worker claims it (`process_earns`), runs the campaign's rules and credits the
//! wallet. Batch-file rows will join at `credit`. The earn's `id` is unique per organisation: the
//! database refuses a second EARN with it, so a repeat is reported `duplicate` and credits
//! nothing, however it arrives.

use std::collections::{HashMap, HashSet};
use std::str::FromStr;

use chrono::{DateTime, Duration, Utc};
use rules::{Context, Decimal, Row};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json;

use crate::db::{WritePool, claim};
use crate::ids::{new_id, now};
use crate::{Campaign, RuleBook, Store, StoreError, Tokens};

/// An earn as submitted: what the rules need and what the transaction keeps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EarnInput {
    /// The client's id for this earn: unique in the organisation.
    pub earn_id: String,
    /// The wallet's id or external reference.
    pub wallet: String,
    /// The value of the transaction, as exact decimal text.
    pub amount: String,
    pub date: DateTime<Utc>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EarnStatus {
    Accepted,
    Processing,
    Completed,
    Rejected,
    Duplicate,
}

impl EarnStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EarnStatus::Accepted => "accepted",
            EarnStatus::Processing => "processing",
            EarnStatus::Completed => "completed",
            EarnStatus::Rejected => "rejected",
            EarnStatus::Duplicate => "duplicate",
        }
    }

    fn parse(text: &str) -> EarnStatus {
        match text {
            "processing" => EarnStatus::Processing,
            "completed" => EarnStatus::Completed,
            "rejected" => EarnStatus::Rejected,
            "duplicate" => EarnStatus::Duplicate,
            _ => EarnStatus::Accepted,
        }
    }
}

/// An earn whose wallet was found, ready to be stored.
#[derive(Debug, Clone)]
pub struct PendingEarn {
    pub org_id: String,
    pub campaign_id: String,
    pub wallet_id: String,
    pub earn: EarnInput,
}

/// An earn request and where it stands.
#[derive(Debug, Clone, PartialEq)]
pub struct EarnRequest {
    pub id: String,
    pub earn_id: String,
    pub wallet_id: String,
    pub status: EarnStatus,
    /// Why it was rejected.
    pub reason: Option<String>,
    /// The EARN transaction (completed), or the earlier one with the same id (duplicate).
    pub transaction_id: Option<String>,
    pub tokens: Option<Tokens>,
    /// completed: what each rule contributed (the compact trace kept with the transaction).
    pub trace: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

/// What the ledger records for one evaluated earn.
#[derive(Debug, Clone)]
pub struct Credit {
    pub org_id: String,
    pub campaign_id: String,
    pub earn: EarnInput,
    pub wallet_id: String,
    /// The wallet's currency, kept on the transaction.
    pub currency: String,
    pub tokens: Tokens,
    pub trace: String,
    pub rule_version: Option<i64>,
    /// The API request to mark completed or duplicate with the credit, if the earn came so.
    pub request_id: Option<String>,
}

/// How long a claimed request stays with its worker before another may take it over.
const LEASE: i64 = 60;
/// A request that failed this many times is rejected rather than retried for ever.
const MAX_ATTEMPTS: i64 = 5;

macro_rules! request_columns {
    () => {
        "r.id, r.earn_id, r.wallet_id, r.status, r.reason, r.transaction_id, r.tokens, r.created_at, \
         r.updated_at, t.trace"
    };
}

type RequestRow = (
    String,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    Option<i64>,
    DateTime<Utc>,
    DateTime<Utc>,
    Option<String>,
);

fn request_from_row(r: RequestRow) -> EarnRequest {
    EarnRequest {
        id: r.0,
        earn_id: r.1,
        wallet_id: r.2,
        status: EarnStatus::parse(&r.3),
        reason: r.4,
        transaction_id: r.5,
        tokens: r.6.map(Tokens::from_micros),
        created_at: r.7,
        updated_at: r.8,
        // A duplicate points at the earlier transaction, whose trace is not this request's.
        trace: if r.3 == "completed" { r.9 } else { None },
    }
}

/// What the rules know of a wallet when its earn is evaluated.
struct WalletContext {
    /// Micro-tokens, before this earn.
    balance: i64,
    tier: Option<String>,
    /// The owning member's status.
    status: String,
    currency: String,
}

/// A request a worker has claimed.
struct Claimed {
    id: String,
    org_id: String,
    campaign_id: String,
    wallet_id: String,
    body: EarnInput,
    attempts: i64,
}

/// The outcome of crediting: the new transaction, or the earlier one holding the earn id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credited {
    New { transaction_id: String },
    Duplicate { transaction_id: Option<String> },
}

impl Store {
    /// Stores an earn for processing and returns its request (status `accepted`). The wallet
    /// must exist in the campaign (`NotFound` otherwise); everything else is decided later.
    pub async fn submit_earn(
        &self,
        campaign: &Campaign,
        earn: EarnInput,
    ) -> Result<EarnRequest, StoreError> {
        let pending = self.pending_earn(campaign, earn).await?;
        let mut stored = self.store_earns(vec![pending]).await?;
        Ok(stored.remove(0))
    }

    /// Checks an earn's wallet and prepares it for `store_earns`.
    pub async fn pending_earn(
        &self,
        campaign: &Campaign,
        earn: EarnInput,
    ) -> Result<PendingEarn, StoreError> {
        let wallet = self.get_wallet(campaign, &earn.wallet).await?;
        Ok(PendingEarn {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            wallet_id: wallet.id,
            earn,
        })
    }

    /// Stores many checked earns with one statement (a caller may gather concurrent submissions
    /// into one write), each as an `accepted` request, in order.
    pub async fn store_earns(
        &self,
        pending: Vec<PendingEarn>,
    ) -> Result<Vec<EarnRequest>, StoreError> {
        let at = now();
        let requests: Vec<EarnRequest> = pending
            .iter()
            .map(|p| EarnRequest {
                id: new_id(),
                earn_id: p.earn.earn_id.clone(),
                wallet_id: p.wallet_id.clone(),
                status: EarnStatus::Accepted,
                reason: None,
                transaction_id: None,
                tokens: None,
                trace: None,
                created_at: at,
                updated_at: at,
            })
            .collect();
        // Nine parameters a row, 1,000 rows a statement: well under SQLite's limit of 32,766.
        for (requests, pending) in requests.chunks(1000).zip(pending.chunks(1000)) {
            with_writer!(self, |pool| {
                let mut insert = sqlx::QueryBuilder::new(
                    "INSERT INTO earn_requests (id, org_id, campaign_id, earn_id, wallet_id, body, status, \
                     created_at, updated_at) ",
                );
                insert.push_values(requests.iter().zip(pending), |mut row, (request, p)| {
                    row.push_bind(&request.id)
                        .push_bind(&p.org_id)
                        .push_bind(&p.campaign_id)
                        .push_bind(&request.earn_id)
                        .push_bind(&p.wallet_id)
                        .push_bind(Json(&p.earn))
                        .push_bind("accepted")
                        .push_bind(at)
                        .push_bind(at);
                });
                insert
                    .build()
                    .execute(pool)
                    .await
                    .map(|done| done.rows_affected())
            })?;
        }
        Ok(requests)
    }

    pub async fn earn_request(
        &self,
        campaign: &Campaign,
        id: &str,
    ) -> Result<EarnRequest, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            request_columns!(),
            " FROM earn_requests r LEFT JOIN transactions t ON t.id = r.transaction_id \
             WHERE r.org_id = $1 AND r.campaign_id = $2 AND r.id = $3"
        );
        let row: Option<RequestRow> = with_pool!(self, |pool| {
            sqlx::query_as(SQL)
                .bind(&campaign.org_id)
                .bind(&campaign.id)
                .bind(id)
                .fetch_optional(pool)
                .await
        })?;
        row.map(request_from_row).ok_or(StoreError::NotFound {
            what: "earn request",
        })
    }

    /// Claims up to `limit` waiting requests (and any whose worker's lease ran out, e.g. after a
    /// crash), evaluates and credits each. Several processes may call this at once: each request
    /// goes to one of them. Returns how many requests were claimed.
    pub async fn process_earns(&self, book: &RuleBook, limit: i64) -> Result<usize, StoreError> {
        let claimed = self.claim_earns(limit).await?;
        let contexts = self
            .wallet_contexts(claimed.iter().map(|r| r.wallet_id.as_str()))
            .await?;
        let mut credits = Vec::with_capacity(claimed.len());
        for request in &claimed {
            match self
                .evaluate_earn(book, request, contexts.get(&request.wallet_id))
                .await
            {
                Ok(Some(credit)) => credits.push(credit),
                Ok(None) => {}
                Err(err) => self.failed(request, err).await?,
            }
        }
        // One transaction for the batch; if it fails, each earn on its own, so one bad earn
        // cannot hold the others back.
        if let Err(err) = self.credit_all(&credits).await {
            tracing::warn!(%err, batch = credits.len(), "batch credit failed; crediting one by one");
            for credit in &credits {
                if let Err(err) = self.credit_all(std::slice::from_ref(credit)).await {
                    let request = claimed
                        .iter()
                        .find(|r| Some(r.id.as_str()) == credit.request_id.as_deref());
                    if let Some(request) = request {
                        self.failed(request, err).await?;
                    }
                }
            }
        }
        Ok(claimed.len())
    }

    /// Notes a failed attempt: the request stays claimed until its lease ends and is tried again,
    /// unless it has failed too often.
    async fn failed(&self, request: &Claimed, err: StoreError) -> Result<(), StoreError> {
        tracing::warn!(request = %request.id, attempts = request.attempts, %err, "earn failed");
        if request.attempts >= MAX_ATTEMPTS {
            self.reject_request(&request.id, format!("failed {MAX_ATTEMPTS} times: {err}"))
                .await?;
        }
        Ok(())
    }

    async fn claim_earns(&self, limit: i64) -> Result<Vec<Claimed>, StoreError> {
        const SQL: &str = "UPDATE earn_requests SET status = 'processing', attempts = attempts + 1, \
             claimed_until = $1, updated_at = $2 WHERE id IN (SELECT id FROM earn_requests \
             WHERE status = 'accepted' OR (status = 'processing' AND claimed_until < $2) \
             ORDER BY created_at LIMIT $3{skip_locked}) \
             RETURNING id, org_id, campaign_id, wallet_id, body, attempts";
        let at = now();
        let rows: Vec<(String, String, String, String, Json<EarnInput>, i64)> =
            with_writer!(self, |pool| async {
                let mut tx = pool.begin_write().await?;
                let rows = sqlx::query_as(claim(pool, SQL))
                    .bind(at + Duration::seconds(LEASE))
                    .bind(at)
                    .bind(limit)
                    .fetch_all(&mut *tx)
                    .await?;
                tx.commit().await?;
                Ok::<_, sqlx::Error>(rows)
            }
            .await)?;
        Ok(rows
            .into_iter()
            .map(
                |(id, org_id, campaign_id, wallet_id, body, attempts)| Claimed {
                    id,
                    org_id,
                    campaign_id,
                    wallet_id,
                    body: body.0,
                    attempts,
                },
            )
            .collect())
    }

    /// Runs the campaign's rules on a claimed earn. `None` when the earn was rejected.
    /// What the rules know of each wallet of a batch, in one query.
    async fn wallet_contexts<'a>(
        &self,
        wallet_ids: impl Iterator<Item = &'a str>,
    ) -> Result<HashMap<String, WalletContext>, StoreError> {
        let mut ids: Vec<&str> = wallet_ids.collect();
        ids.sort_unstable();
        ids.dedup();
        if ids.is_empty() {
            return Ok(HashMap::new());
        }
        let rows: Vec<(String, i64, Option<String>, String, String)> = with_pool!(self, |pool| {
            let mut select = sqlx::QueryBuilder::new(
                "SELECT w.id, w.balance, t.name, m.status, w.currency FROM wallets w \
                 JOIN members m ON m.id = w.owner_id LEFT JOIN tiers t ON t.id = w.tier_id WHERE w.id IN (",
            );
            let mut list = select.separated(", ");
            for id in &ids {
                list.push_bind(*id);
            }
            select.push(")");
            select.build_query_as().fetch_all(pool).await
        })?;
        Ok(rows
            .into_iter()
            .map(|(id, balance, tier, status, currency)| {
                (
                    id,
                    WalletContext {
                        balance,
                        tier,
                        status,
                        currency,
                    },
                )
            })
            .collect())
    }

    async fn evaluate_earn(
        &self,
        book: &RuleBook,
        request: &Claimed,
        wallet: Option<&WalletContext>,
    ) -> Result<Option<Credit>, StoreError> {
        let wallet = wallet.ok_or(StoreError::NotFound { what: "wallet" })?;
        let amount = match Decimal::from_str(&request.body.amount) {
            Ok(amount) => amount,
            Err(_) => {
                let reason = format!("amount `{}` is not a number", request.body.amount);
                self.reject_request(&request.id, reason).await?;
                return Ok(None);
            }
        };
        let (version, rules) = book.active(&request.org_id, &request.campaign_id).await?;
        let earn = &request.body;
        let row = Row {
            id: &earn.earn_id,
            amount,
            date: earn.date,
            currency: &wallet.currency,
            description: earn.description.as_deref().unwrap_or(""),
            meta: earn.meta.as_ref(),
        };
        let ctx = Context {
            wallet_tier: wallet.tier.as_deref(),
            wallet_balance: Tokens::from_micros(wallet.balance).to_decimal(),
            member_status: &wallet.status,
        };
        let outcome = rules.evaluate(&row, &ctx);
        let tokens = match Tokens::from_decimal(outcome.tokens) {
            Ok(tokens) => tokens,
            Err(reason) => {
                self.reject_request(&request.id, reason).await?;
                return Ok(None);
            }
        };
        Ok(Some(Credit {
            org_id: request.org_id.clone(),
            campaign_id: request.campaign_id.clone(),
            earn: earn.clone(),
            wallet_id: request.wallet_id.clone(),
            currency: wallet.currency.clone(),
            tokens,
            trace: rules.compact(&outcome.steps),
            rule_version: version,
            request_id: Some(request.id.clone()),
        }))
    }

    /// Records evaluated earns in one database transaction with a handful of statements
    /// whatever their number: the EARN transactions (an earn id credited before, or twice in the
    /// batch, is `Duplicate` and credits nothing), their expiry lots, each wallet's balance and
    /// tier, and, for API earns, the requests' outcomes. A crash at any point leaves all of it or
    /// none.
    pub async fn credit_all(&self, credits: &[Credit]) -> Result<Vec<Credited>, StoreError> {
        let mut outcomes = Vec::with_capacity(credits.len());
        // SQLite allows 32,766 parameters a statement; a transaction row takes 15.
        for chunk in credits.chunks(1000) {
            outcomes.extend(self.credit_chunk(chunk).await?);
        }
        Ok(outcomes)
    }

    async fn credit_chunk(&self, credits: &[Credit]) -> Result<Vec<Credited>, StoreError> {
        if credits.is_empty() {
            return Ok(Vec::new());
        }
        let mut policies = HashMap::new();
        for credit in credits {
            if !policies.contains_key(&credit.campaign_id) {
                policies.insert(
                    credit.campaign_id.clone(),
                    self.policy(&credit.campaign_id).await?,
                );
            }
        }
        let at = now();
        let ids: Vec<String> = credits.iter().map(|_| new_id()).collect();
        with_writer!(self, |pool| {
            async {
            let mut tx = pool.begin_write().await?;
            let mut insert = sqlx::QueryBuilder::new(
                "INSERT INTO transactions (id, org_id, campaign_id, wallet_id, kind, amount, external_id, \
                 source_amount, currency, description, comment, meta, date, trace, rule_version, created_at) ",
            );
            insert.push_values(credits.iter().zip(&ids), |mut row, (c, id)| {
                row.push_bind(id)
                    .push_bind(&c.org_id)
                    .push_bind(&c.campaign_id)
                    .push_bind(&c.wallet_id)
                    .push_bind("EARN")
                    .push_bind(c.tokens.micros())
                    .push_bind(&c.earn.earn_id)
                    .push_bind(&c.earn.amount)
                    .push_bind(&c.currency)
                    .push_bind(&c.earn.description)
                    .push_bind(&c.earn.comment)
                    .push_bind(c.earn.meta.as_ref().map(Json))
                    .push_bind(c.earn.date)
                    .push_bind(&c.trace)
                    .push_bind(c.rule_version)
                    .push_bind(at);
            });
            insert.push(" ON CONFLICT (org_id, kind, external_id) DO NOTHING RETURNING id");
            let inserted: HashSet<String> =
                insert.build_query_as::<(String,)>().fetch_all(&mut *tx).await?.into_iter().map(|(id,)| id).collect();

            // The earlier transaction of each duplicate, by earn id.
            let duplicates: Vec<&Credit> =
                credits.iter().zip(&ids).filter(|(_, id)| !inserted.contains(*id)).map(|(c, _)| c).collect();
            let mut earlier: HashMap<(String, String), String> = HashMap::new();
            if !duplicates.is_empty() {
                let mut select = sqlx::QueryBuilder::new(
                    "SELECT org_id, external_id, id FROM transactions WHERE kind = 'EARN' AND (org_id, external_id) IN ",
                );
                select.push_tuples(&duplicates, |mut row, c| {
                    row.push_bind(&c.org_id).push_bind(&c.earn.earn_id);
                });
                let rows: Vec<(String, String, String)> = select.build_query_as().fetch_all(&mut *tx).await?;
                earlier = rows.into_iter().map(|(org, earn, id)| ((org, earn), id)).collect();
            }

            let new: Vec<(&Credit, &String)> =
                credits.iter().zip(&ids).filter(|(c, id)| inserted.contains(*id) && c.tokens.is_positive()).collect();
            if !new.is_empty() {
                let mut lots = sqlx::QueryBuilder::new(
                    "INSERT INTO lots (id, wallet_id, transaction_id, amount, remaining, earned_at, expires_at) ",
                );
                lots.push_values(&new, |mut row, (c, id)| {
                    let expiry = policies.get(&c.campaign_id).map(|p: &crate::Policy| p.expiry).unwrap_or_default();
                    row.push_bind(new_id())
                        .push_bind(&c.wallet_id)
                        .push_bind(*id)
                        .push_bind(c.tokens.micros())
                        .push_bind(c.tokens.micros())
                        .push_bind(c.earn.date)
                        .push_bind(expiry.expires_at(c.earn.date));
                });
                lots.build().execute(&mut *tx).await?;

                // One row a wallet, with everything it earned in the batch; the tier follows the
                // new lifetime total (SET expressions read the row as it was).
                let mut per_wallet: Vec<(&str, i64)> = Vec::new();
                for (c, _) in &new {
                    match per_wallet.iter_mut().find(|(w, _)| *w == c.wallet_id) {
                        Some((_, sum)) => *sum += c.tokens.micros(),
                        None => per_wallet.push((&c.wallet_id, c.tokens.micros())),
                    }
                }
                let mut credit = sqlx::QueryBuilder::new(
                    "UPDATE wallets SET balance = balance + v.column2, earned = earned + v.column2, updated_at = ",
                );
                credit.push_bind(at).push(
                    ", tier_id = (SELECT t.id FROM tiers t WHERE t.campaign_id = wallets.campaign_id \
                     AND t.threshold <= wallets.earned + v.column2 ORDER BY t.threshold DESC, t.precedence ASC LIMIT 1) \
                     FROM (",
                );
                credit.push_values(&per_wallet, |mut row, (wallet, sum)| {
                    row.push_bind(*wallet).push_bind(*sum);
                });
                credit.push(") AS v WHERE wallets.id = v.column1");
                credit.build().execute(&mut *tx).await?;
            }

            let outcomes: Vec<Credited> = credits
                .iter()
                .zip(&ids)
                .map(|(c, id)| {
                    if inserted.contains(id) {
                        Credited::New { transaction_id: id.clone() }
                    } else {
                        let key = (c.org_id.clone(), c.earn.earn_id.clone());
                        Credited::Duplicate { transaction_id: earlier.get(&key).cloned() }
                    }
                })
                .collect();
            let finished: Vec<(&str, &str, Option<&String>, Option<i64>)> = credits
                .iter()
                .zip(&outcomes)
                .filter_map(|(c, outcome)| {
                    let request = c.request_id.as_deref()?;
                    Some(match outcome {
                        Credited::New { transaction_id } => {
                            (request, "completed", Some(transaction_id), Some(c.tokens.micros()))
                        }
                        Credited::Duplicate { transaction_id } => (request, "duplicate", transaction_id.as_ref(), None),
                    })
                })
                .collect();
            if !finished.is_empty() {
                let mut finish = sqlx::QueryBuilder::new(
                    "UPDATE earn_requests SET status = v.column2, transaction_id = v.column3, tokens = v.column4, \
                     claimed_until = NULL, updated_at = ",
                );
                finish.push_bind(at).push(" FROM (");
                finish.push_values(&finished, |mut row, (request, status, transaction, tokens)| {
                    row.push_bind(*request).push_bind(*status).push_bind(*transaction).push_bind(*tokens);
                });
                finish.push(") AS v WHERE earn_requests.id = v.column1");
                finish.build().execute(&mut *tx).await?;
            }
            tx.commit().await?;
            Ok::<_, StoreError>(outcomes)
        }
        .await
        })
    }

    async fn reject_request(&self, id: &str, reason: String) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE earn_requests SET status = 'rejected', reason = $2, claimed_until = NULL, \
             updated_at = $3 WHERE id = $1";
        with_writer!(self, |pool| {
            sqlx::query(SQL)
                .bind(id)
                .bind(&reason)
                .bind(now())
                .execute(pool)
                .await
                .map(|done| done.rows_affected())
        })?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that claimed a request and died leaves it to others once its lease runs out.
    async fn a_claim_whose_worker_died_is_taken_over(store: Store) {
        let (campaign, wallet) = crate::testing::wallet_fixture(&store).await;
        let earn = EarnInput {
            earn_id: "e-1".into(),
            wallet: wallet.id.clone(),
            amount: "7".into(),
            date: now(),
            description: None,
            comment: None,
            meta: None,
        };
        let request = store.submit_earn(&campaign, earn).await.unwrap();
        let book = RuleBook::new(store.clone());

        assert_eq!(
            store.claim_earns(10).await.unwrap().len(),
            1,
            "claimed by a worker that then dies"
        );
        assert_eq!(
            store.process_earns(&book, 10).await.unwrap(),
            0,
            "the lease still holds"
        );
        assert_eq!(
            store
                .earn_request(&campaign, &request.id)
                .await
                .unwrap()
                .status,
            EarnStatus::Processing
        );

        with_writer!(store, |pool| {
            sqlx::query("UPDATE earn_requests SET claimed_until = $1 WHERE id = $2")
                .bind(now() - Duration::seconds(1))
                .bind(&request.id)
                .execute(pool)
                .await
                .map(|_| ())
        })
        .unwrap();
        assert_eq!(store.process_earns(&book, 10).await.unwrap(), 1);
        let done = store.earn_request(&campaign, &request.id).await.unwrap();
        assert_eq!(done.status, EarnStatus::Completed);
        assert_eq!(
            store
                .get_wallet(&campaign, &wallet.id)
                .await
                .unwrap()
                .balance,
            Tokens::whole(7)
        );
    }

    crate::backend_tests!(a_claim_whose_worker_died_is_taken_over);
}
