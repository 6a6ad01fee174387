//! Crediting earns from batch files: each row's wallet is found by id or reference within the
//! organisation (a file may mix campaigns), the row is evaluated with that campaign's active
//! rules, and the rows of a call are credited together. The earn id is the same idempotency key
//! as the API's: a row whose id was credited before, by either door, credits nothing.

use crate::OrgScope;
use std::collections::HashMap;

use crate::backend::direct;
use rayon::prelude::*;

use crate::{Batches, Credit, Credited, EarnInput, RuleBook, StoreError, Tokens, TransactionKind};
use ledger::earlier_columns;
use ledger::earn::evaluate::{Refusal, Target, WalletContext, evaluate, within_ceiling};
use ledger::earn::same_earn::EarlierEarn;
use ledger::transactions::idem_key;

/// One row of a file, already mapped and checked.
#[derive(Debug, Clone)]
pub struct FileEarn {
    /// The row's number in its file.
    pub row: u64,
    pub earn: EarnInput,
}

/// What became of a row.
#[derive(Debug, Clone, PartialEq)]
pub enum FileOutcome {
    /// Credited (or, in a check, would be: no transaction id).
    Credited {
        transaction_id: Option<String>,
        tokens: Tokens,
        /// What each rule contributed.
        trace: String,
    },
    /// Its id was credited before (by the API, an earlier file, or earlier in this file).
    Duplicate {
        transaction_id: Option<String>,
    },
    /// Its id holds another earn (by either door), which differs in `field`.
    Conflict {
        transaction_id: Option<String>,
        field: &'static str,
    },
    /// This batch credited it already: an attempt interrupted by a crash, or an earlier row.
    CreditedBefore {
        transaction_id: String,
    },
    UnknownWallet,
    /// Dated outside the window its campaign takes earns in (`Ledger::date_window`).
    OutOfWindow(String),
    /// The rules gave an amount the ledger cannot hold.
    Refused(String),
    /// The wallet's balance or lifetime earnings would pass the ledger's ceiling.
    OverCeiling(String),
    /// The row could not be evaluated (a defect, logged).
    Failed(String),
}

impl From<Refusal> for FileOutcome {
    fn from(refusal: Refusal) -> Self {
        match refusal {
            Refusal::Rules(reason) => FileOutcome::Refused(reason),
            Refusal::Ceiling(reason) => FileOutcome::OverCeiling(reason),
            Refusal::Failed(reason) => FileOutcome::Failed(reason),
        }
    }
}

#[derive(Clone)]
struct FileWallet {
    id: String,
    campaign_id: String,
    context: WalletContext,
}

type WalletRow = (
    String,
    Option<String>,
    String,
    i64,
    i64,
    Option<String>,
    String,
    String,
    String,
);

/// A chunk of rows evaluated by the rules, not yet credited.
pub struct Evaluated {
    /// Each row's outcome where it is already decided (unknown wallet, refused by the rules).
    outcomes: Vec<Option<FileOutcome>>,
    /// The credits of the other rows, with their index.
    credits: Vec<(usize, Credit)>,
}

impl Evaluated {
    /// The index of each row already decided: one that will not be credited.
    pub fn decided(&self) -> impl Iterator<Item = usize> + '_ {
        let decided = self.outcomes.iter().enumerate();
        decided.filter_map(|(i, outcome)| outcome.as_ref().map(|_| i))
    }
}

/// What a file's rows have given each wallet so far, so that a wallet's rows in different
/// chunks cannot together take it past the ledger's ceiling. Each wallet is counted from its
/// standing when the file first met it (later chunks may read it with earlier ones committed,
/// or not yet). Keyed by a hash of the wallet's id (24 bytes a wallet): two wallets that share
/// one count together, which can only refuse sooner, and only near the ceiling. Other writers
/// meanwhile (an API earn) are the write's own check's to catch.
/// The file's own total (every row it credits, reported in its summary) has the same ceiling.
#[derive(Default)]
pub struct FileTotals {
    wallets: HashMap<u64, (i64, i64)>,
    all: i64,
    /// In a check: what the file's rows so far used of limits, per campaign (a load counts in
    /// the ledger instead).
    limits: HashMap<String, rules::Tally>,
}

impl FileTotals {
    /// Counts `credit` against its wallet and the file, or refuses it if either would pass the
    /// ceiling.
    fn count(&mut self, wallet: &WalletContext, credit: &Credit) -> Result<(), FileOutcome> {
        let micros = credit.tokens.micros().max(0);
        if self.all > Tokens::MAX.micros() - micros {
            return Err(FileOutcome::OverCeiling(format!(
                "the file's credited total would pass the ledger's {} tokens",
                Tokens::MAX
            )));
        }
        use std::hash::BuildHasher;
        let key = std::hash::BuildHasherDefault::<std::hash::DefaultHasher>::default()
            .hash_one(&credit.wallet_id);
        let (standing, so_far) = self
            .wallets
            .entry(key)
            .or_insert((wallet.balance.max(wallet.earned), 0));
        within_ceiling(standing.saturating_add(*so_far), credit.tokens)
            .map_err(FileOutcome::from)?;
        *so_far = so_far.saturating_add(micros);
        self.all += micros;
        Ok(())
    }
}

/// Batch rows: a file's earns evaluated and credited chunk by chunk (scope: `OrgScope`).
impl Batches {
    /// Evaluates and credits `earns` of batch `batch_id` of organisation `org_id` in one database
    /// transaction, committed when this returns; returns each row's outcome, in order. Rows see
    /// their wallet's balance and tier as they were before the call.
    #[tracing::instrument(skip_all)]
    pub async fn credit_file_earns(
        &self,
        book: &RuleBook,
        org: &OrgScope,
        batch_id: &str,
        earns: &[FileEarn],
    ) -> Result<Vec<FileOutcome>, StoreError> {
        let totals = &mut FileTotals::default();
        let evaluated = self.evaluate_file_earns(book, org, earns, totals).await?;
        let mut load = self.file_load(org, batch_id);
        let chunk = load.credit(evaluated).await;
        let outcomes = load.outcomes(chunk).await?;
        load.finish().await?;
        Ok(outcomes)
    }

    /// Credits the rows of `evaluated` under batch `batch_id` as one bulk write once `turn`
    /// completes (what needs no database is prepared before); returns each row's outcome, in
    /// order, and on SQLite the bulk transaction's commit to wait on (see `FileLoad`).
    #[tracing::instrument(skip_all)]
    pub(crate) async fn credit_evaluated(
        &self,
        batch_id: &str,
        evaluated: Evaluated,
        turn: impl Future<Output = ()>,
    ) -> Result<(Vec<FileOutcome>, Option<direct::Commit>), StoreError> {
        let Evaluated {
            mut outcomes,
            credits,
        } = evaluated;
        let (rows, mut credits): (Vec<usize>, Vec<Credit>) = credits.into_iter().unzip();
        for credit in &mut credits {
            credit.batch_id = Some(batch_id.to_string());
        }
        let (results, credits, commit) = self.ledger().credit_owned(credits, true, turn).await?;
        for ((i, result), credit) in rows.into_iter().zip(results).zip(credits) {
            outcomes[i] = Some(match result {
                Credited::New { transaction_id } => FileOutcome::Credited {
                    transaction_id: Some(transaction_id),
                    tokens: credit.tokens,
                    trace: credit.trace,
                },
                Credited::Duplicate {
                    transaction_id: Some(transaction_id),
                    batch_id: Some(earlier),
                    ..
                } if earlier == batch_id => FileOutcome::CreditedBefore { transaction_id },
                Credited::Duplicate {
                    transaction_id,
                    differs: Some(field),
                    ..
                } => FileOutcome::Conflict {
                    transaction_id,
                    field,
                },
                Credited::Duplicate { transaction_id, .. } => {
                    FileOutcome::Duplicate { transaction_id }
                }
            });
        }
        Ok((finished(outcomes), commit))
    }

    /// What `credit_file_earns` would do with `earns`, changing nothing: each row evaluated
    /// (`Credited` without a transaction id), or why it would not be credited. An id credited
    /// before is a `Duplicate`.
    #[tracing::instrument(skip_all)]
    pub async fn check_file_earns(
        &self,
        book: &RuleBook,
        org: &OrgScope,
        batch_id: Option<&str>,
        earns: &[FileEarn],
        totals: &mut FileTotals,
    ) -> Result<Vec<FileOutcome>, StoreError> {
        let org_id = org.id();
        let Evaluated {
            mut outcomes,
            credits: evaluated,
        } = self.evaluate_file_earns(book, org, earns, totals).await?;
        let ids: Vec<&str> = evaluated
            .iter()
            .map(|(_, c)| c.earn.earn_id.as_str())
            .collect();
        let credited = self.credited_earns(org_id, &ids).await?;
        let (rows, mut credits): (Vec<usize>, Vec<Credit>) = evaluated.into_iter().unzip();
        let before = |key: &[u8]| credited.contains_key(key);
        self.ledger()
            .count_dry(&mut credits, before, &mut totals.limits)
            .await?;
        for (i, credit) in rows.into_iter().zip(credits) {
            let earlier = credited.get(&credit.idem_key());
            let differs = earlier.and_then(|e| e.differs(&credit.earn, &credit.wallet_id));
            outcomes[i] = Some(match (earlier, differs) {
                (Some(e), _) if e.batch_id.is_some() && e.batch_id.as_deref() == batch_id => {
                    FileOutcome::CreditedBefore {
                        transaction_id: e.id.clone(),
                    }
                }
                (Some(e), Some(field)) => FileOutcome::Conflict {
                    transaction_id: Some(e.id.clone()),
                    field,
                },
                (Some(e), None) => FileOutcome::Duplicate {
                    transaction_id: Some(e.id.clone()),
                },
                (None, _) => FileOutcome::Credited {
                    transaction_id: None,
                    tokens: credit.tokens,
                    trace: credit.trace,
                },
            });
        }
        Ok(finished(outcomes))
    }

    /// Evaluates `earns` of organisation `org_id` by their campaigns' active rules, in
    /// parallel. Rows see their wallet's balance and tier as last committed; `totals` (the
    /// file's, from chunk to chunk) keeps each wallet under the ledger's ceiling.
    #[tracing::instrument(skip_all)]
    pub async fn evaluate_file_earns(
        &self,
        book: &RuleBook,
        org: &OrgScope,
        earns: &[FileEarn],
        totals: &mut FileTotals,
    ) -> Result<Evaluated, StoreError> {
        let org_id = org.id();
        let mut references: Vec<&str> = earns.iter().map(|e| e.earn.wallet.as_str()).collect();
        references.sort_unstable();
        references.dedup();
        let wallets = self.file_wallets(org_id, &references).await?;
        let (mut rule_sets, mut windows) = (HashMap::new(), HashMap::new());
        for wallet in wallets.values() {
            if !rule_sets.contains_key(&wallet.campaign_id) {
                let active = book.active(org_id, &wallet.campaign_id).await?;
                rule_sets.insert(wallet.campaign_id.clone(), active);
                let back = self
                    .ledger()
                    .programme()
                    .policy_of(&wallet.campaign_id)
                    .await?
                    .earn_max_age_days;
                windows.insert(wallet.campaign_id.clone(), self.ledger().date_window(back));
            }
        }
        let evaluated: Vec<Result<Credit, FileOutcome>> = earns
            .par_iter()
            .map(|row| {
                let wallet = wallets
                    .get(&row.earn.wallet)
                    .ok_or(FileOutcome::UnknownWallet)?;
                windows[&wallet.campaign_id]
                    .check(row.earn.date)
                    .map_err(|refused| FileOutcome::OutOfWindow(refused.message()))?;
                let (version, rules) = &rule_sets[&wallet.campaign_id];
                let target = Target {
                    org_id,
                    campaign_id: &wallet.campaign_id,
                    wallet_id: &wallet.id,
                    wallet: &wallet.context,
                };
                evaluate(*version, rules, &target, &row.earn, None).map_err(FileOutcome::from)
            })
            .collect();
        let mut outcomes = vec![None; earns.len()];
        let mut credits = Vec::new();
        for (i, result) in evaluated.into_iter().enumerate() {
            let counted = result.and_then(|credit| {
                totals.count(&wallets[&earns[i].earn.wallet].context, &credit)?;
                Ok(credit)
            });
            match counted {
                Ok(credit) => credits.push((i, credit)),
                Err(outcome) => outcomes[i] = Some(outcome),
            }
        }
        Ok(Evaluated { outcomes, credits })
    }

    /// Of `ids`, the organisation's EARN transactions that hold them, by idempotency key.
    async fn credited_earns(
        &self,
        org_id: &str,
        ids: &[&str],
    ) -> Result<HashMap<Vec<u8>, EarlierEarn>, StoreError> {
        const SELECT: &str = concat!(
            "SELECT ",
            earlier_columns!(),
            " FROM transactions WHERE idem_key {key}"
        );
        let keys: Vec<Vec<u8>> = ids
            .iter()
            .map(|id| idem_key(org_id, TransactionKind::Earn, id))
            .collect();
        let rows: Vec<EarlierEarn> = self.read_each(SELECT, params![], &keys).await?;
        Ok(rows.into_iter().map(|e| (e.idem_key.clone(), e)).collect())
    }

    /// The organisation's wallets named by `references` (ids or external references, sorted and
    /// without repeats), keyed by the reference; an id wins over another wallet's equal
    /// reference.
    async fn file_wallets(
        &self,
        org_id: &str,
        references: &[&str],
    ) -> Result<HashMap<String, FileWallet>, StoreError> {
        let sql = file_wallets_sql(self);
        let rows: Vec<WalletRow> = self.read_each(sql, params![org_id], references).await?;
        // A chunk names thousands of wallets: found by halving, not one by one.
        debug_assert!(references.is_sorted());
        let named = |reference: &str| references.binary_search(&reference).is_ok();
        let mut wallets = HashMap::new();
        let mut by_id = Vec::new();
        for (id, external_id, campaign_id, balance, earned, tier, status, currency, member_id) in
            rows
        {
            let wallet = FileWallet {
                id: id.clone(),
                campaign_id,
                context: WalletContext {
                    balance,
                    earned,
                    tier,
                    status,
                    currency,
                    member_id,
                },
            };
            if let Some(external_id) = external_id.filter(|e| named(e)) {
                wallets.insert(external_id, wallet.clone());
            }
            by_id.push((id, wallet));
        }
        for (id, wallet) in by_id {
            if named(&id) {
                wallets.insert(id, wallet);
            }
        }
        Ok(wallets)
    }
}

/// A chunk's wallets by id or external reference (`file_wallets`), each reference one probe of
/// an index. On PostgreSQL the references are a table (`{keys}`): with `w.id = ANY(...) OR
/// w.external_id = ANY(...)`, PostgreSQL 15 scanned all of the organisation's wallets and
/// compared each with every reference, on the statistics of a new programme (0.8 s a
/// 5,000-row chunk over 5,000 wallets). SQLite looks up one reference at a time, and for that
/// form it reads the organisation's wallets instead of probing.
fn file_wallets_sql(store: &Batches) -> &'static str {
    store.dialect(
        "SELECT w.id, w.external_id, w.campaign_id, w.balance, w.earned, t.name, \
         m.status, w.currency, m.id FROM wallets w JOIN members m ON m.id = w.owner_id \
         LEFT JOIN tiers t ON t.id = w.tier_id \
         WHERE w.org_id = $1 AND (w.id {key} OR w.external_id {key})",
        "SELECT w.id, w.external_id, w.campaign_id, w.balance, w.earned, t.name, \
         m.status, w.currency, m.id FROM wallets w JOIN members m ON m.id = w.owner_id \
         LEFT JOIN tiers t ON t.id = w.tier_id \
         WHERE w.org_id = $1 AND w.id IN ({keys} UNION SELECT x.id FROM wallets x \
         WHERE x.org_id = $1 AND x.external_id IN ({keys}))",
    )
}

fn finished(outcomes: Vec<Option<FileOutcome>>) -> Vec<FileOutcome> {
    outcomes
        .into_iter()
        .map(|o| o.unwrap_or_else(|| FileOutcome::Refused("not evaluated".into())))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Plan;

    /// The plan of a chunk's wallet lookup for `references`, as text.
    async fn plan(store: &Batches, org_id: &str, references: &[String]) -> String {
        let sql = file_wallets_sql(store);
        store
            .query_plan(sql, params![org_id], Some(references), Plan::AsRun)
            .await
    }

    /// A chunk's wallet lookup probes an index once a reference, on a programme's first file
    /// (no statistics yet) as later: no plan node compares wallets with the whole list of
    /// references (PostgreSQL), no wallet table read through (SQLite).
    async fn wallets_are_looked_up_by_one_probe_a_reference(store: Batches) {
        let (campaign, wallet) = ledger::testing::wallet_fixture(store.ledger()).await;
        let mut references: Vec<String> = (0..2_000).map(|i| format!("card-{i}")).collect();
        references.push(wallet.id.clone());
        let plan = plan(&store, &campaign.org_id, &references).await;
        assert!(!plan.contains("ANY"), "{plan}");
        let reads_all = |line: &str| {
            line.ends_with("(org_id=?)") || line.starts_with("SCAN w") || line.starts_with("SCAN x")
        };
        assert!(!plan.lines().any(reads_all), "{plan}");
        let found = store
            .file_wallets(&campaign.org_id, &[wallet.id.as_str(), "nobody"])
            .await
            .unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(found[&wallet.id].id, wallet.id);
    }

    seam::tests_on_both!(crate::testing::batches_on; wallets_are_looked_up_by_one_probe_a_reference);
}
