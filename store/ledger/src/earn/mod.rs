//! Earning: the one path every earn takes. An API earn is stored durably (`submit_earn`, the
//! 202), then a worker claims it (`process_earns`), runs the campaign's rules and credits the
//! wallet. Batch-file rows join at `evaluate` and `credit`. The earn's `id` is unique per organisation: the
//! database refuses a second EARN with it, so a repeat is reported `duplicate` and credits
//! nothing, however it arrives.

use std::collections::HashMap;

use chrono::{DateTime, Duration, Utc};
use sqlx::types::Json;

use crate::backend::direct;
use crate::backend::{Arg, OwnedArg, Steps, Tx, borrowed, owned};
use crate::common::ids::new_id;
use crate::error::{known, panicked};
pub mod evaluate;
mod request;
pub mod same_earn;
pub mod trials;

pub use request::{Credit, Credited, EarnInput, EarnRequest, EarnStatus, PendingEarn};

use crate::{Campaign, Ledger, RuleBook, StoreError, Tokens};
use evaluate::{Target, WalletContext, credit_for};
use events::{EventType, NewEvent};
use same_earn::Earlier;

/// What the rules know of a wallet (`w`), read with its member (`m`) and tier: a
/// `ContextRow`, then the query's own `WHERE`.
macro_rules! wallet_context_from {
    () => {
        "SELECT w.id, w.balance, w.earned, t.name, m.status, w.currency, m.id FROM wallets w \
         JOIN members m ON m.id = w.owner_id LEFT JOIN tiers t ON t.id = w.tier_id"
    };
}
pub(crate) use wallet_context_from;

/// A row of `wallet_context_from!`.
pub(crate) type ContextRow = (String, i64, i64, Option<String>, String, String, String);

/// A `ContextRow` as its wallet's id and context.
pub(crate) fn wallet_context(row: ContextRow) -> (String, WalletContext) {
    let (id, balance, earned, tier, status, currency, member_id) = row;
    let context = WalletContext {
        balance,
        earned,
        tier,
        status,
        currency,
        member_id,
    };
    (id, context)
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
pub(crate) use request_columns;

/// Where `request_columns!` are read from: the requests (`r`) and their transactions (`t`).
macro_rules! requests_joined {
    () => {
        " FROM earn_requests r LEFT JOIN transactions t ON t.id = r.transaction_id"
    };
}
pub(crate) use requests_joined;

row_struct! {
    /// The columns of `request_columns!`, in order.
    pub(crate) struct RequestRow {
        id: String,
        earn_id: String,
        wallet_id: String,
        status: String,
        reason: Option<String>,
        transaction_id: Option<String>,
        tokens: Option<i64>,
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
        trace: Option<String>,
    }
}

/// Earn request `$1` as it stands, for its event.
pub(crate) const REQUEST_BY_ID: &str = concat!(
    "SELECT ",
    request_columns!(),
    requests_joined!(),
    " WHERE r.id = $1"
);

/// The event of the campaign's earn request that ended as `row` says: `earn.completed` or
/// `earn.rejected` (a duplicate makes none: the earn it repeats had its own).
pub(crate) fn earn_event(
    org_id: &str,
    campaign_id: &str,
    row: RequestRow,
) -> Result<Option<NewEvent>, StoreError> {
    let request = request_from_row(row)?;
    let kind = match request.status {
        EarnStatus::Completed => EventType::EarnCompleted,
        EarnStatus::Rejected => EventType::EarnRejected,
        _ => return Ok(None),
    };
    NewEvent::new(
        org_id,
        Some(campaign_id),
        kind,
        &request,
        request.updated_at,
    )
    .map(Some)
}

/// Records the event of earn request `id` of the campaign as it now stands, in `tx`.
pub(crate) async fn record_earn_event(
    tx: &mut impl Tx,
    org_id: &str,
    campaign_id: &str,
    id: &str,
) -> Result<(), StoreError> {
    let row: Option<RequestRow> = tx.row(REQUEST_BY_ID, params![id]).await?;
    if let Some(event) = row
        .map(|row| earn_event(org_id, campaign_id, row))
        .transpose()?
        .flatten()
    {
        events::record(tx, &event).await?;
    }
    Ok(())
}

fn request_from_row(r: RequestRow) -> Result<EarnRequest, StoreError> {
    let status = known(
        EarnStatus::parse(&r.status),
        "earn_requests",
        "status",
        &r.status,
    )?;
    Ok(EarnRequest {
        status,
        id: r.id,
        earn_id: r.earn_id,
        wallet_id: r.wallet_id,
        reason: r.reason,
        transaction_id: r.transaction_id,
        tokens: r.tokens.map(Tokens::from_micros),
        created_at: r.created_at,
        updated_at: r.updated_at,
        // A duplicate points at the earlier transaction, whose trace is not this request's.
        trace: if status == EarnStatus::Completed {
            r.trace
        } else {
            None
        },
    })
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

/// Earns: accepted over the API, evaluated by the rules and credited by the workers (scope:
/// `&Campaign`).
impl Ledger {
    /// Stores an earn for processing and returns its request (status `accepted`), or, for an
    /// id used before, the first request for the same earn or `already_exists` (see
    /// `store_earns`). The wallet must exist in the campaign (`NotFound` otherwise); everything
    /// else is decided later.
    #[tracing::instrument(skip_all)]
    pub async fn submit_earn(
        &self,
        campaign: &Campaign,
        earn: EarnInput,
    ) -> Result<EarnRequest, StoreError> {
        let pending = self.pending_earn(campaign, earn).await?;
        self.store_earns(vec![pending]).await?.remove(0)
    }

    /// Checks an earn's date (in the campaign's `date_window`) and wallet and prepares it for
    /// `store_earns`.
    #[tracing::instrument(skip_all)]
    pub async fn pending_earn(
        &self,
        campaign: &Campaign,
        earn: EarnInput,
    ) -> Result<PendingEarn, StoreError> {
        let back = self.programme().policy(campaign).await?.earn_max_age_days;
        if let Err(refused) = self.date_window(back).check(earn.date) {
            return Err(StoreError::invalid("date", refused.message()));
        }
        let wallet = self.get_wallet(campaign, &earn.wallet).await?;
        Ok(PendingEarn {
            org_id: campaign.org_id.clone(),
            campaign_id: campaign.id.clone(),
            wallet_id: wallet.id,
            earn,
        })
    }

    /// Stores many checked earns with one statement (a caller gathers concurrent submissions
    /// into one write), each as an `accepted` request; each one's answer, in order. An earn
    /// whose id was used before (by a request, a file row, or an earlier earn of the batch) is
    /// answered with the first request for the same earn, or refused as `already_exists`
    /// naming the first field in which it is another (see `same_earn`): what the batch's ids
    /// hold is read once for the batch.
    #[tracing::instrument(skip_all)]
    pub async fn store_earns(
        &self,
        pending: Vec<PendingEarn>,
    ) -> Result<Vec<Result<EarnRequest, StoreError>>, StoreError> {
        let earlier = self.earlier_earns(&pending).await?;
        let new: Vec<PendingEarn> = pending
            .iter()
            .zip(&earlier)
            .filter(|(_, e)| matches!(e, Earlier::New))
            .map(|(p, _)| p.clone())
            .collect();
        let mut stored = self.store_new_earns(new).await?.into_iter();
        let mut answers: Vec<Result<EarnRequest, StoreError>> = Vec::with_capacity(pending.len());
        for (p, e) in pending.iter().zip(earlier) {
            let answer = match e {
                Earlier::New => Ok(stored.next().expect("one request a new earn")),
                Earlier::InBatch(i) => match &answers[i] {
                    Ok(first) => Ok(first.clone()),
                    Err(_) => unreachable!("an earn the batch repeats is new"),
                },
                Earlier::Request(id) => self.request_of(&p.org_id, &p.campaign_id, &id).await,
                Earlier::Other(field) => Err(same_earn::conflict(field)),
            };
            answers.push(answer);
        }
        Ok(answers)
    }

    /// Stores `pending` as `accepted` requests with one statement, whatever their ids hold.
    pub(crate) async fn store_new_earns(
        &self,
        pending: Vec<PendingEarn>,
    ) -> Result<Vec<EarnRequest>, StoreError> {
        if pending.is_empty() {
            return Ok(Vec::new());
        }
        let at = self.now();
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
        let bodies: Vec<String> = pending.iter().map(|p| direct::json(&p.earn)).collect();
        let mut values = Vec::with_capacity(requests.len() * 9);
        for ((r, p), body) in requests.iter().zip(&pending).zip(&bodies) {
            values.extend(params![
                r.id,
                p.org_id,
                p.campaign_id,
                r.earn_id,
                p.wallet_id
            ]);
            values.push(Arg::JsonText(Some(body)));
            values.extend(params!["accepted", at, at]);
        }
        self.write(Accepting(owned(&values))).await?;
        Ok(requests)
    }

    #[tracing::instrument(skip_all)]
    pub async fn earn_request(
        &self,
        campaign: &Campaign,
        id: &str,
    ) -> Result<EarnRequest, StoreError> {
        self.request_of(&campaign.org_id, &campaign.id, id).await
    }

    async fn request_of(
        &self,
        org_id: &str,
        campaign_id: &str,
        id: &str,
    ) -> Result<EarnRequest, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            request_columns!(),
            requests_joined!(),
            " WHERE r.org_id = $1 AND r.campaign_id = $2 AND r.id = $3"
        );
        let row: Option<RequestRow> = self.read_row(SQL, params![org_id, campaign_id, id]).await?;
        row.ok_or(StoreError::NotFound {
            what: "earn request",
        })
        .and_then(request_from_row)
    }

    /// Claims up to `limit` waiting requests (and any whose worker's lease ran out, e.g. after a
    /// crash), evaluates and credits each. Several processes may call this at once: each request
    /// goes to one of them. Returns how many requests were claimed.
    #[tracing::instrument(skip_all)]
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
        if let Err(err) = self.credit_apart(credits.clone()).await {
            tracing::warn!(%err, batch = credits.len(), "batch credit failed; crediting one by one");
            for credit in credits {
                let request_id = credit.request_id.clone();
                if let Err(err) = self.credit_apart(vec![credit]).await {
                    let request = claimed.iter().find(|r| Some(&r.id) == request_id.as_ref());
                    if let Some(request) = request {
                        self.failed(request, err).await?;
                    }
                }
            }
        }
        Ok(claimed.len())
    }

    /// Credits `credits` in a task of their own: a panic on the way fails these credits (undone
    /// with their transaction), not the worker that asked.
    async fn credit_apart(&self, credits: Vec<Credit>) -> Result<(), StoreError> {
        let store = self.clone();
        let credit = async move {
            let ready = std::future::ready(());
            store.credit_owned(credits, false, ready).await.map(drop)
        };
        match tokio::spawn(credit).await {
            Ok(result) => result,
            Err(join) => Err(match join.try_into_panic() {
                Ok(payload) => panicked("crediting earns", payload.as_ref()),
                Err(join) => StoreError::NotCommitted(join.to_string()),
            }),
        }
    }

    /// Notes a failed attempt: the request stays claimed until its lease ends and is tried again,
    /// unless it has failed too often, or failed for a reason that trying again cannot change
    /// (a refusal, a defect), when it is rejected with that reason.
    async fn failed(&self, request: &Claimed, err: StoreError) -> Result<(), StoreError> {
        tracing::warn!(request = %request.id, attempts = request.attempts, %err, "earn failed");
        let reason = match &err {
            StoreError::Refused { code, message, .. } => format!("{code}: {message}"),
            StoreError::Panicked(what) => format!("internal_error: {what}"),
            _ if request.attempts >= MAX_ATTEMPTS => format!("failed {MAX_ATTEMPTS} times: {err}"),
            _ => return Ok(()),
        };
        self.reject_request(request, reason).await
    }

    async fn claim_earns(&self, limit: i64) -> Result<Vec<Claimed>, StoreError> {
        const SQL: &str = "UPDATE earn_requests SET status = 'processing', attempts = attempts + 1, \
             claimed_until = $1, updated_at = $2 WHERE id IN (SELECT id FROM earn_requests \
             WHERE status IN ('accepted', 'processing') AND (status = 'accepted' OR claimed_until < $2) \
             ORDER BY created_at LIMIT $3{skip_locked}) \
             RETURNING id, org_id, campaign_id, wallet_id, body, attempts";
        let at = self.now();
        let until = at + Duration::seconds(LEASE);
        let rows: Vec<(String, String, String, String, Json<EarnInput>, i64)> = self
            .write_rows(&self.claiming(SQL), params![until, at, limit])
            .await?;
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
        const SELECT: &str = concat!(wallet_context_from!(), " WHERE w.id {key}");
        let rows: Vec<ContextRow> = self.read_each(SELECT, params![], &ids).await?;
        Ok(rows.into_iter().map(wallet_context).collect())
    }

    /// Runs the campaign's rules on a claimed earn. `None` when the earn was rejected.
    async fn evaluate_earn(
        &self,
        book: &RuleBook,
        request: &Claimed,
        wallet: Option<&WalletContext>,
    ) -> Result<Option<Credit>, StoreError> {
        let wallet = wallet.ok_or(StoreError::NotFound { what: "wallet" })?;
        let target = Target {
            org_id: &request.org_id,
            campaign_id: &request.campaign_id,
            wallet_id: &request.wallet_id,
            wallet,
        };
        match credit_for(book, &target, &request.body, Some(request.id.clone())).await? {
            Ok(credit) => Ok(Some(credit)),
            Err(refusal) => {
                self.reject_request(request, refusal.reason()).await?;
                Ok(None)
            }
        }
    }

    /// Rejects `request` for `reason`, with its `earn.rejected` event.
    async fn reject_request(&self, request: &Claimed, reason: String) -> Result<(), StoreError> {
        let rejecting = Rejecting {
            org_id: request.org_id.clone(),
            campaign_id: request.campaign_id.clone(),
            id: request.id.clone(),
            reason,
            at: self.now(),
        };
        self.write(rejecting).await
    }
}

/// An earn request rejected before it reached the ledger.
struct Rejecting {
    org_id: String,
    campaign_id: String,
    id: String,
    reason: String,
    /// When it is rejected, as the store's clock says.
    at: DateTime<Utc>,
}

impl Steps for Rejecting {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        const SQL: &str = "UPDATE earn_requests SET status = 'rejected', reason = $2, \
             claimed_until = NULL, updated_at = $3 WHERE id = $1";
        tx.execute(SQL, params![self.id, self.reason, self.at])
            .await?;
        record_earn_event(tx, &self.org_id, &self.campaign_id, &self.id).await
    }
}

/// Accepted earn requests (9 values each), stored together.
struct Accepting(Vec<OwnedArg>);

impl Steps for Accepting {
    type Output = ();
    async fn run<T: Tx>(self, tx: &mut T) -> Result<(), StoreError> {
        tx.insert_rows(
            "INSERT INTO earn_requests (id, org_id, campaign_id, earn_id, wallet_id, body, status, \
             created_at, updated_at)",
            "",
            9,
            &borrowed(&self.0),
        )
        .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A worker that claimed a request and died leaves it to others once its lease runs out.
    async fn a_claim_whose_worker_died_is_taken_over(store: Ledger) {
        let (campaign, wallet) = crate::testing::wallet_fixture(&store).await;
        let earn = EarnInput {
            activity: None,
            earn_id: "e-1".into(),
            wallet: wallet.id.clone(),
            amount: "7".into(),
            date: store.now(),
            description: None,
            comment: None,
            meta: None,
        };
        let request = store.submit_earn(&campaign, earn).await.unwrap();
        let book = RuleBook::new(store.programme().clone());

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

        store
            .execute(
                "UPDATE earn_requests SET claimed_until = $1 WHERE id = $2",
                params![store.now() - Duration::seconds(1), request.id],
            )
            .await
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

    fn earn(id: &str, wallet: &str, amount: &str, description: Option<&str>) -> EarnInput {
        EarnInput {
            activity: None,
            earn_id: id.into(),
            wallet: wallet.into(),
            amount: amount.into(),
            date: chrono::Utc::now(),
            description: description.map(Into::into),
            comment: None,
            meta: None,
        }
    }

    /// A defect met by one earn (here a panic injected while its rules run, or while it is
    /// written) rejects that earn with its reason; the earns claimed with it, of its own
    /// organisation and of others, are credited, and the worker goes on.
    async fn a_panic_fails_its_earn_alone(store: Ledger) {
        let (ours, our_wallet) = crate::testing::wallet_fixture(&store).await;
        let (theirs, their_wallet) = crate::testing::wallet_fixture(&store).await;
        let book = RuleBook::new(store.programme().clone());
        let mut requests = Vec::new();
        for (id, description) in [
            ("e-1", Some("panic at evaluate")),
            ("e-2", None),
            ("e-3", Some("panic at credit")),
        ] {
            let input = earn(id, &our_wallet.id, "7", description);
            requests.push(store.submit_earn(&ours, input).await.unwrap());
        }
        let input = earn("e-1", &their_wallet.id, "5", None);
        let other = store.submit_earn(&theirs, input).await.unwrap();

        assert_eq!(store.process_earns(&book, 10).await.unwrap(), 4);
        let status = |campaign, id| {
            let store = store.clone();
            async move { store.earn_request(campaign, id).await.unwrap() }
        };
        for failed in [&requests[0], &requests[2]] {
            let failed = status(&ours, &failed.id).await;
            assert_eq!(failed.status, EarnStatus::Rejected);
            let reason = failed.reason.unwrap();
            assert!(reason.starts_with("internal_error: "), "{reason}");
        }
        assert_eq!(
            status(&ours, &requests[1].id).await.status,
            EarnStatus::Completed
        );
        assert_eq!(
            status(&theirs, &other.id).await.status,
            EarnStatus::Completed
        );
        let balance = |campaign, wallet| {
            let store = store.clone();
            async move { store.get_wallet(campaign, wallet).await.unwrap().balance }
        };
        assert_eq!(balance(&ours, &our_wallet.id).await, Tokens::whole(7));
        assert_eq!(balance(&theirs, &their_wallet.id).await, Tokens::whole(5));

        let input = earn("e-4", &our_wallet.id, "1", None);
        let later = store.submit_earn(&ours, input).await.unwrap();
        assert_eq!(store.process_earns(&book, 10).await.unwrap(), 1);
        assert_eq!(status(&ours, &later.id).await.status, EarnStatus::Completed);
        assert!(store.audit().await.unwrap().is_empty());
    }

    /// No balance or lifetime total passes `Tokens::MAX`: an earn that would take it past is
    /// rejected with its own reason, whether it meets the wallet's earlier credits in its own
    /// batch (refused by the write) or in the database (refused by the rules' check), and the
    /// wallet stays readable and spendable.
    async fn an_earn_past_the_ceiling_is_rejected_alone(store: Ledger) {
        let (campaign, wallet) = crate::testing::wallet_fixture(&store).await;
        let book = RuleBook::new(store.programme().clone());
        let submit = |id: &str, amount: &str| {
            let (store, campaign) = (store.clone(), campaign.clone());
            let input = earn(id, &wallet.id, amount, None);
            async move { store.submit_earn(&campaign, input).await.unwrap() }
        };
        let huge = submit("huge", "5000000000000").await;
        let first = submit("first", "600000000000").await;
        let together = submit("together", "600000000000").await;
        assert_eq!(store.process_earns(&book, 10).await.unwrap(), 3);
        let later = submit("later", "400000000001").await;
        let fits = submit("fits", "400000000000").await;
        assert_eq!(store.process_earns(&book, 10).await.unwrap(), 2);

        let request = |id: String| {
            let (store, campaign) = (store.clone(), campaign.clone());
            async move { store.earn_request(&campaign, &id).await.unwrap() }
        };
        let huge = request(huge.id).await;
        assert_eq!(huge.status, EarnStatus::Rejected);
        assert!(huge.reason.unwrap().contains("1000000000000 tokens"));
        // Of two earns claimed together, one is credited (whichever the worker took first).
        let (first, together) = (request(first.id).await, request(together.id).await);
        let mut pair = [first.status, together.status];
        pair.sort_by_key(|s| s.as_str());
        assert_eq!(pair, [EarnStatus::Completed, EarnStatus::Rejected]);
        let refused = [first, together, request(later.id).await];
        for refused in refused.iter().filter(|r| r.status == EarnStatus::Rejected) {
            let reason = refused.reason.as_deref().unwrap();
            assert!(reason.starts_with("balance_ceiling: "), "{reason}");
        }
        assert_eq!(refused[2].status, EarnStatus::Rejected);
        assert_eq!(request(fits.id).await.status, EarnStatus::Completed);
        let read = store.get_wallet(&campaign, &wallet.id).await.unwrap();
        assert_eq!(read.balance, Tokens::MAX);
        assert!(store.audit().await.unwrap().is_empty());
    }

    crate::testing::ledger_tests!(
        a_claim_whose_worker_died_is_taken_over,
        a_panic_fails_its_earn_alone,
        an_earn_past_the_ceiling_is_rejected_alone
    );
}
