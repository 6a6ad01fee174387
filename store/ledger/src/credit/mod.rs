//! Recording evaluated earns in the ledger, for the API's workers and for batch files alike: the
//! EARN transactions (an earn id credited before, or twice in one call, is `Duplicate` and
//! credits nothing), their expiry lots, each wallet's balance and tier (once per wallet), and,
//! for API earns, the requests' outcomes. One database transaction per call: a crash leaves all
//! of it or none.
//!
//! What a call changes in its wallets (`Settlement`) is worked out here; how the rows are
//! written differs: on SQLite one prepared statement per row on the writer thread (`sqlite.rs`),
//! on PostgreSQL a handful of multi-row statements, or `COPY` for a batch file's chunk
//! (`postgres.rs`).

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};

use crate::backend::{Forked, Tx, direct};
use crate::earn::same_earn::{self, EarlierEarn};
use crate::transactions::{Entry, idem_key};
use crate::{Credit, Credited, Ledger, Policy, StoreError, Tokens, TransactionKind};

mod postgres;
mod sqlite;

/// `expires_next`, moved earlier to `$at` if that is sooner (NULL: nothing new expires).
macro_rules! sooner {
    ($at:literal) => {
        concat!(
            "CASE WHEN ",
            $at,
            " IS NOT NULL AND (wallets.expires_next IS NULL OR ",
            $at,
            " < wallets.expires_next) THEN ",
            $at,
            " ELSE wallets.expires_next END"
        )
    };
}
pub(crate) use sooner;

/// An earn set aside: recorded behind its wallet's spending position (see `fifo`), or pending
/// (holding nothing until it vests).
pub(crate) const SET_ASIDE: &str = "INSERT INTO lots_aside (transaction_id, wallet_id, \
     earned_at, remaining, expires_at) VALUES ($1, $2, $3, $4, $5)";

/// An earn whose tokens are pending: `$3` micro-tokens until `$4`.
const PENDING: &str = "INSERT INTO pending_earns (transaction_id, wallet_id, amount, vests_at, \
     counted, status, created_at) VALUES ($1, $2, $3, $4, $5, 'pending', $6)";

/// Crediting: evaluated earns written to the ledger, one transaction a chunk.
impl Ledger {
    /// Records `credits` (see the module's description) and returns each one's outcome, in order.
    #[tracing::instrument(skip_all)]
    pub async fn credit_all(&self, credits: &[Credit]) -> Result<Vec<Credited>, StoreError> {
        let credits = credits.to_vec();
        Ok(self
            .credit_owned(credits, false, std::future::ready(()))
            .await?
            .0)
    }

    /// `credit_all`, taking the credits and handing them back (a batch file's chunk is large:
    /// neither copied for the writer thread nor dropped on it). `bulk` (a batch file's chunk):
    /// on SQLite the call returns before its transaction commits, with the `Commit` to wait on
    /// (see `direct::Direct::write_bulk`); PostgreSQL commits before returning. Nothing is
    /// written before `turn` completes (a file's chunks are written in order); what can be
    /// prepared without the database is prepared before.
    pub async fn credit_owned<F: Future<Output = ()>>(
        &self,
        credits: Vec<Credit>,
        bulk: bool,
        turn: F,
    ) -> Result<(Vec<Credited>, Vec<Credit>, Option<direct::Commit>), StoreError> {
        if credits.is_empty() {
            turn.await;
            return Ok((Vec::new(), credits, None));
        }
        let mut policies = HashMap::new();
        for credit in &credits {
            if !policies.contains_key(&credit.campaign_id) {
                let policy = self.programme().policy_of(&credit.campaign_id).await?;
                policies.insert(credit.campaign_id.clone(), policy);
            }
        }
        let crediting = Crediting {
            credits,
            policies,
            at: self.now(),
            bulk,
            turn,
        };
        self.fork(crediting).await
    }
}

/// One call's credits, for the backend's half (`OnSqlite`, `OnPostgres`).
struct Crediting<F> {
    credits: Vec<Credit>,
    policies: HashMap<String, Policy>,
    at: DateTime<Utc>,
    bulk: bool,
    /// Completes when the call's rows may be written.
    turn: F,
}

impl<F> Forked for Crediting<F> {
    type Output = (Vec<Credited>, Vec<Credit>, Option<direct::Commit>);
}

impl Credit {
    /// This credit's campaign's policy among `policies` (the default if it has none).
    fn policy(&self, policies: &HashMap<String, Policy>) -> Policy {
        policies.get(&self.campaign_id).copied().unwrap_or_default()
    }

    /// When this credit's tokens expire under `policies`.
    pub(crate) fn expires_at(&self, policies: &HashMap<String, Policy>) -> Option<DateTime<Utc>> {
        let policy = self.policy(policies);
        policy.expires_at(self.earn.date, self.pending_days)
    }

    /// Whether this credit's tokens are pending when credited at `now` under `policies`: when
    /// they vest, and whether they count toward lifetime earnings meanwhile.
    pub(crate) fn pending(
        &self,
        policies: &HashMap<String, Policy>,
        now: DateTime<Utc>,
    ) -> Option<Pending> {
        let policy = self.policy(policies);
        let vests_at = policy.vests_at(self.earn.date, self.pending_days, now)?;
        Some(Pending {
            vests_at,
            counted: policy.pending_counts_tier,
        })
    }

    /// This credit's outcome when `earlier` holds its earn id already.
    pub(crate) fn duplicate(&self, earlier: Option<&EarlierEarn>) -> Credited {
        Credited::Duplicate {
            transaction_id: earlier.map(|e| e.id.clone()),
            batch_id: earlier.and_then(|e| e.batch_id.clone()),
            differs: earlier.and_then(|e| e.differs(&self.earn, &self.wallet_id)),
        }
    }

    /// The idempotency key of the EARN transaction this credit writes.
    pub fn idem_key(&self) -> Vec<u8> {
        idem_key(&self.org_id, TransactionKind::Earn, &self.earn.earn_id)
    }

    /// The EARN transaction this credit writes, as `id`, created at `created_at`.
    pub(crate) fn entry<'a>(
        &'a self,
        id: &'a str,
        created_at: DateTime<Utc>,
        expires_at: Option<DateTime<Utc>>,
    ) -> Entry<'a> {
        #[cfg(test)]
        crate::faults::fault(self.earn.description.as_deref(), "credit");
        Entry {
            id,
            org_id: &self.org_id,
            campaign_id: &self.campaign_id,
            wallet_id: &self.wallet_id,
            kind: TransactionKind::Earn,
            amount: self.tokens.micros(),
            external_id: &self.earn.earn_id,
            source_amount: Some(&self.earn.amount),
            currency: &self.currency,
            description: self.earn.description.as_deref(),
            comment: self.earn.comment.as_deref(),
            meta: self.earn.meta.as_ref(),
            date: self.earn.date,
            trace: Some(&self.trace),
            rule_version: self.rule_version,
            created_at,
            batch_id: self.batch_id.as_deref(),
            fingerprint: None,
            expires_at,
        }
    }
}

/// An earn's tokens pending when credited.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Pending {
    pub vests_at: DateTime<Utc>,
    /// They count toward lifetime earnings now, not when they vest.
    pub counted: bool,
}

/// What a call's credits change in one wallet, in micro-tokens.
#[derive(Default)]
struct WalletCredit {
    /// Added to the balance (the tokens not pending).
    balance: i64,
    /// Added to lifetime earnings.
    earned: i64,
    /// Added to what is pending.
    pending: i64,
    /// The earliest time the tokens added to the balance expire.
    first: Option<DateTime<Utc>>,
    /// The earliest date of its new earns (see `unsum!`).
    dated: Option<DateTime<Utc>>,
}

/// What a call's new EARN transactions change in their wallets (`per_wallet`), and the new
/// lots, some of which go aside (see `behind`), and those pending, whose lots are aside and
/// empty until they vest.
#[derive(Default)]
struct Settlement<'a> {
    per_wallet: HashMap<&'a str, WalletCredit>,
    /// The new lots: the credit, its transaction id and its expiry.
    lots: Vec<(&'a Credit, &'a str, Option<DateTime<Utc>>)>,
    /// The new pending earns: the credit, its transaction id, its expiry and its vesting.
    pending: Vec<(&'a Credit, &'a str, Option<DateTime<Utc>>, Pending)>,
}

impl<'a> Settlement<'a> {
    /// Counts `credit`, written as the new transaction `id` that expires at `expires_at`,
    /// pending as `pending` says.
    fn add(
        &mut self,
        credit: &'a Credit,
        id: &'a str,
        expires_at: Option<DateTime<Utc>>,
        pending: Option<Pending>,
    ) {
        if !credit.tokens.is_positive() {
            return;
        }
        let tokens = credit.tokens.micros();
        let wallet = self.per_wallet.entry(&credit.wallet_id).or_default();
        let date = credit.earn.date;
        wallet.dated = Some(wallet.dated.map_or(date, |d| d.min(date)));
        if let Some(pending) = pending {
            wallet.pending = wallet.pending.saturating_add(tokens);
            if pending.counted {
                wallet.earned = wallet.earned.saturating_add(tokens);
            }
            self.pending.push((credit, id, expires_at, pending));
            return;
        }
        wallet.balance = wallet.balance.saturating_add(tokens);
        wallet.earned = wallet.earned.saturating_add(tokens);
        wallet.first = match (wallet.first, expires_at) {
            (Some(f), Some(e)) => Some(f.min(e)),
            (f, e) => f.or(e),
        };
        self.lots.push((credit, id, expires_at));
    }

    /// The new lots dated before their wallet's spending position (`positions`: wallet to
    /// (date, earn id)), which must be set aside: the position says every earn before it is
    /// spent.
    fn behind<'p>(
        &'p self,
        positions: &'p HashMap<String, (DateTime<Utc>, String)>,
    ) -> impl Iterator<Item = &'p (&'a Credit, &'a str, Option<DateTime<Utc>>)> {
        self.lots.iter().filter(|(c, id, _)| {
            positions
                .get(&c.wallet_id)
                .is_some_and(|(date, at)| (&c.earn.date, *id) < (date, at.as_str()))
        })
    }
}

/// An API earn request's outcome.
struct Finished<'a> {
    request: &'a str,
    status: &'static str,
    transaction_id: Option<&'a String>,
    tokens: Option<i64>,
    /// rejected: why.
    reason: Option<String>,
}

/// The outcome of `credit`'s request, if it came by the API: completed, a duplicate of the
/// same earn, or rejected when its id holds another earn.
fn finished<'a>(credit: &'a Credit, outcome: &'a Credited) -> Option<Finished<'a>> {
    let request = credit.request_id.as_deref()?;
    Some(match outcome {
        Credited::New { transaction_id } => Finished {
            request,
            status: "completed",
            transaction_id: Some(transaction_id),
            tokens: Some(credit.tokens.micros()),
            reason: None,
        },
        Credited::Duplicate {
            transaction_id,
            differs,
            ..
        } => Finished {
            request,
            status: if differs.is_some() {
                "rejected"
            } else {
                "duplicate"
            },
            transaction_id: transaction_id.as_ref(),
            tokens: None,
            reason: differs.map(|field| {
                let refused = same_earn::conflict(field);
                format!("already_exists: {refused}")
            }),
        },
    })
}

/// Converts, in the call's transaction `tx`, the pending referrals of the owners of the wallets
/// whose credits `outcomes` says are new and convert (`Credit::converts_referral`), each in its
/// credit's campaign: a referee's first completed earn, whatever door it came through. One
/// indexed look-up per campaign when its organisation has no pending referral.
pub(crate) async fn convert_referrals<T: Tx>(
    tx: &mut T,
    credits: &[Credit],
    outcomes: &[Credited],
    at: DateTime<Utc>,
) -> Result<(), StoreError> {
    let mut wallets: BTreeMap<(&str, &str), Vec<&str>> = BTreeMap::new();
    for (credit, outcome) in credits.iter().zip(outcomes) {
        if credit.converts_referral && matches!(outcome, Credited::New { .. }) {
            let scope = (credit.org_id.as_str(), credit.campaign_id.as_str());
            wallets.entry(scope).or_default().push(&credit.wallet_id);
        }
    }
    for (scope, mut ids) in wallets {
        ids.sort_unstable();
        ids.dedup();
        let owners = members::referrals::Converting::WalletOwners(&ids);
        members::referrals::convert(tx, scope, owners, at).await?;
    }
    Ok(())
}

/// A credit the ledger's ceiling refuses: the whole write is undone (the earn worker then credits
/// the earns one by one, and the one that passes the ceiling is rejected with this reason).
fn over_ceiling() -> StoreError {
    StoreError::refused(
        "balance_ceiling",
        Some("amount".into()),
        format!(
            "the wallet's balance or lifetime earnings would pass the ledger's {} tokens",
            Tokens::MAX
        ),
    )
}
