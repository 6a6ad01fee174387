//! Returns from batch files: a row naming an earn by the client's own id (`reverses`) takes
//! back (part of) it as `Ledger::correct` does, under the row's own id: the corrections'
//! idempotency key, so a file row and an API reversal with one id are one correction.
//!
//! A chunk of rows is one write, like a chunk of earns: the earns and wallets the rows name are
//! read first, all at once, then each row is corrected in file order inside one transaction
//! (on PostgreSQL a few, each holding the rows of its own wallets, side by side). A row refused
//! is undone alone, its refusal kept as an API request's is (`Correcting::run_keeping`).

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rules::Decimal;
use serde_json::Value;

use crate::backend::{Steps, Tx};
use crate::{Batches, Campaign, NewCorrection, OrgScope, StoreError, Tokens, TransactionKind};
use ledger::corrections::{Correcting, Origin, What};
use ledger::transactions::{SELECT_BY_ID, TransactionRow, idem_key, transaction_from_row};

/// A return row of a file, mapped and checked.
#[derive(Debug, Clone, PartialEq)]
pub struct FileReturn {
    /// The row's number in its file.
    pub row: u64,
    /// The row's id: its correction's idempotency key.
    pub id: String,
    /// The client's id of the earn it returns (the earn's `id`).
    pub reverses: String,
    /// Whether an earlier row of the same file is that earn. An earn a later row of the file
    /// credits is not returned, even when it is credited first.
    pub earn_earlier_in_file: bool,
    /// The purchase value returned; `None`: all of it not returned yet.
    pub amount: Option<Decimal>,
    /// The wallet the row names, if any: it must hold the earn (by id or reference).
    pub wallet: Option<String>,
    /// When the return happened; `None`: when it is written.
    pub date: Option<DateTime<Utc>>,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
}

/// What became of a return row.
#[derive(Debug, Clone, PartialEq)]
pub enum ReturnOutcome {
    /// Reversed now: the REVERSAL and the tokens it took back (in a check: would be, without a
    /// transaction; the tokens are then not known).
    Reversed {
        transaction_id: Option<String>,
        tokens: Tokens,
    },
    /// This batch reversed it already (an attempt interrupted by a crash).
    ReversedBefore { transaction_id: String },
    /// The same return was made before under this id (by the API or another file).
    Duplicate { transaction_id: String },
    /// Not reversed: `code` as the API says it (`earn_not_credited`, `wallet_mismatch`,
    /// `reversal_exceeds_earn`, `reversal_shortfall`, `already_exists`, `not_positive`), naming
    /// `field`.
    Refused {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
}

/// How many transactions a chunk's returns are written in, side by side: on SQLite one (its one
/// writer writes them all anyway), on PostgreSQL a few, each over its own wallets (so they
/// never wait on each other's locks).
const PARTS_SQLITE: usize = 1;
const PARTS_POSTGRES: usize = 4;

/// The earns the rows name, by the client's id.
const EARNS_BY_KEY: &str = "SELECT external_id, id, campaign_id, wallet_id, batch_id, rule_version \
     FROM transactions WHERE idem_key {key}";
type EarnRow = (String, String, String, String, Option<String>, Option<i64>);
/// The references of the wallets rows name otherwise than by id.
const WALLET_REFERENCES: &str = "SELECT id, external_id FROM wallets WHERE id {key}";
const BATCH_OF: &str = "SELECT batch_id FROM transactions WHERE id = $1";

/// An earn a row names, as credited.
struct Earn {
    id: String,
    campaign_id: String,
    wallet_id: String,
    /// The batch that credited it.
    batch_id: Option<String>,
    rule_version: Option<i64>,
}

/// What a chunk's rows name: their earns (by the client's id) and the references of the
/// wallets holding those a row names by something else than the wallet's id.
struct Named {
    earns: HashMap<String, Earn>,
    references: HashMap<String, Option<String>>,
}

/// Returns from batch files (scope: `OrgScope`).
impl Batches {
    /// Reverses each row's earn under batch `batch_id`; each row's outcome, in order. An `Err`
    /// is a store failure: none of the rows' returns are written then (on PostgreSQL, some
    /// wallets' may be), and those that are are recognised as this batch's when the file is
    /// run again.
    #[tracing::instrument(skip_all)]
    pub async fn reverse_file_rows(
        &self,
        org: &OrgScope,
        batch_id: &str,
        rows: Vec<FileReturn>,
    ) -> Result<Vec<ReturnOutcome>, StoreError> {
        let named = self.named_by_returns(org, &rows).await?;
        let mut outcomes = vec![None; rows.len()];
        let mut campaigns: HashMap<String, Arc<Campaign>> = HashMap::new();
        let parts = self.dialect(PARTS_SQLITE, PARTS_POSTGRES);
        let mut works: Vec<Vec<Prepared>> = (0..parts).map(|_| Vec::new()).collect();
        for (at, row) in rows.into_iter().enumerate() {
            let earn = match named.earn_for(Some(batch_id), &row) {
                Ok(Some(earn)) => earn,
                Ok(None) => {
                    outcomes[at] = Some(not_credited(&row));
                    continue;
                }
                Err(refused) => {
                    outcomes[at] = Some(refused);
                    continue;
                }
            };
            let campaign = match campaigns.get(&earn.campaign_id) {
                Some(campaign) => campaign.clone(),
                None => {
                    let campaign =
                        Arc::new(self.tenancy().get_campaign(org, &earn.campaign_id).await?);
                    campaigns.insert(earn.campaign_id.clone(), campaign.clone());
                    campaign
                }
            };
            if row.amount.is_some_and(|a| a <= Decimal::ZERO) {
                outcomes[at] = Some(ReturnOutcome::Refused {
                    code: "not_positive",
                    field: Some("amount".into()),
                    message: "a return's amount must be more than 0".into(),
                });
                continue;
            }
            let what = match self
                .ledger()
                .reversal(&campaign, earn.rule_version, row.amount)
                .await
            {
                Ok(what) => what,
                Err(err) => {
                    outcomes[at] = Some(refused(err)?);
                    continue;
                }
            };
            let part = wallet_part(&earn.wallet_id, parts);
            works[part].push(Prepared {
                at,
                earn_id: earn.id.clone(),
                campaign,
                what,
                date: row.date,
                correction: NewCorrection {
                    transaction_id: earn.id.clone(),
                    external_id: row.id,
                    amount: row.amount,
                    description: row.description,
                    comment: row.comment,
                    meta: row.meta,
                },
            });
        }
        let mut running = tokio::task::JoinSet::new();
        for rows in works.into_iter().filter(|rows| !rows.is_empty()) {
            let (store, batch_id, at) = (self.clone(), batch_id.to_string(), self.now());
            let returning = Returning { batch_id, rows, at };
            running.spawn(async move { store.write(returning).await });
        }
        while let Some(joined) = running.join_next().await {
            let done = joined
                .map_err(|e| StoreError::NotCommitted(format!("a file's returns: {e}")))??;
            for (at, outcome) in done {
                outcomes[at] = Some(outcome);
            }
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// What `reverse_file_rows` would do with `rows`, changing nothing: a row whose earn is
    /// credited before the file (or in an earlier row of it), to the wallet it names, would be
    /// reversed; the value left, the shortfall policy and the row's id are looked at when it
    /// is.
    #[tracing::instrument(skip_all)]
    pub async fn check_file_returns(
        &self,
        org: &OrgScope,
        batch_id: Option<&str>,
        rows: &[FileReturn],
    ) -> Result<Vec<ReturnOutcome>, StoreError> {
        let named = self.named_by_returns(org, rows).await?;
        let outcomes = rows.iter().map(|row| match named.earn_for(batch_id, row) {
            Ok(_) => ReturnOutcome::Reversed {
                transaction_id: None,
                tokens: Tokens::ZERO,
            },
            Err(refused) => refused,
        });
        Ok(outcomes.collect())
    }

    /// The earns `rows` name, and the references of their wallets where a row names one by
    /// something other than its id: read at once.
    async fn named_by_returns(
        &self,
        org: &OrgScope,
        rows: &[FileReturn],
    ) -> Result<Named, StoreError> {
        let mut keys: Vec<Vec<u8>> = rows
            .iter()
            .map(|row| idem_key(org.id(), TransactionKind::Earn, &row.reverses))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        let found: Vec<EarnRow> = self.read_each(EARNS_BY_KEY, &[], &keys).await?;
        let earns: HashMap<String, Earn> = found
            .into_iter()
            .map(
                |(named, id, campaign_id, wallet_id, batch_id, rule_version)| {
                    let earn = Earn {
                        id,
                        campaign_id,
                        wallet_id,
                        batch_id,
                        rule_version,
                    };
                    (named, earn)
                },
            )
            .collect();
        let mut wallets: Vec<String> = rows
            .iter()
            .filter_map(|row| {
                let earn = earns.get(&row.reverses)?;
                let named = row.wallet.as_deref()?;
                (named != earn.wallet_id).then(|| earn.wallet_id.clone())
            })
            .collect();
        wallets.sort_unstable();
        wallets.dedup();
        let references: Vec<(String, Option<String>)> =
            self.read_each(WALLET_REFERENCES, &[], &wallets).await?;
        Ok(Named {
            earns,
            references: references.into_iter().collect(),
        })
    }
}

impl Named {
    /// The earn `row` returns, as credited before the file or by an earlier row of it (`None`:
    /// not credited, but an earlier row of the file is that earn: a check credits nothing), or
    /// the row's refusal: not credited, or credited to another wallet than the row names.
    fn earn_for(
        &self,
        batch_id: Option<&str>,
        row: &FileReturn,
    ) -> Result<Option<&Earn>, ReturnOutcome> {
        let earn = match self.earns.get(&row.reverses) {
            None if row.earn_earlier_in_file => return Ok(None),
            None => return Err(not_credited(row)),
            // Credited by a later row of the return's own chunk, whose earns are credited first.
            Some(earn)
                if earn.batch_id.is_some()
                    && earn.batch_id.as_deref() == batch_id
                    && !row.earn_earlier_in_file =>
            {
                return Err(not_credited(row));
            }
            Some(earn) => earn,
        };
        match row.wallet.as_deref() {
            Some(named)
                if named != earn.wallet_id
                    && self
                        .references
                        .get(&earn.wallet_id)
                        .cloned()
                        .flatten()
                        .as_deref()
                        != Some(named) =>
            {
                Err(ReturnOutcome::Refused {
                    code: "wallet_mismatch",
                    field: Some("walletId".into()),
                    message: format!("the earn {} was credited to another wallet", row.reverses),
                })
            }
            _ => Ok(Some(earn)),
        }
    }
}

/// Which of `parts` transactions writes the returns of `wallet`'s earns.
fn wallet_part(wallet: &str, parts: usize) -> usize {
    let mut hasher = DefaultHasher::new();
    wallet.hash(&mut hasher);
    (hasher.finish() % parts as u64) as usize
}

/// A row's return, ready to write.
struct Prepared {
    /// The row's place in its chunk.
    at: usize,
    earn_id: String,
    campaign: Arc<Campaign>,
    what: What,
    correction: NewCorrection,
    date: Option<DateTime<Utc>>,
}

/// Rows' returns written in one transaction, in order.
struct Returning {
    batch_id: String,
    rows: Vec<Prepared>,
    /// When its rows are written, as the store's clock says.
    at: DateTime<Utc>,
}

impl Returning {
    async fn reverse(self, tx: &mut impl Tx) -> Result<Vec<(usize, ReturnOutcome)>, StoreError> {
        let mut done = Vec::with_capacity(self.rows.len());
        for row in self.rows {
            let earn: TransactionRow =
                tx.row(SELECT_BY_ID, params![row.earn_id])
                    .await?
                    .ok_or(StoreError::NotFound {
                        what: "transaction",
                    })?;
            let origin = Origin {
                batch_id: Some(&self.batch_id),
                date: row.date,
                at: self.at,
            };
            let earn = transaction_from_row(earn)?;
            let correcting = Correcting::new(&row.campaign, earn, row.correction, row.what, origin);
            let outcome = match correcting.run_keeping(tx).await? {
                Ok(corrected) if !corrected.replayed => ReturnOutcome::Reversed {
                    tokens: corrected.transaction.amount,
                    transaction_id: Some(corrected.transaction.id),
                },
                Ok(corrected) => {
                    let transaction_id = corrected.transaction.id;
                    let (made_by,): (Option<String>,) = tx
                        .row(BATCH_OF, params![transaction_id])
                        .await?
                        .unwrap_or((None,));
                    if made_by.as_deref() == Some(&self.batch_id) {
                        ReturnOutcome::ReversedBefore { transaction_id }
                    } else {
                        ReturnOutcome::Duplicate { transaction_id }
                    }
                }
                Err(err) => refused(err)?,
            };
            done.push((row.at, outcome));
        }
        Ok(done)
    }
}

impl Steps for Returning {
    type Output = Vec<(usize, ReturnOutcome)>;

    async fn run<T: Tx>(self, tx: &mut T) -> Result<Self::Output, StoreError> {
        self.reverse(tx).await
    }
}

/// A row's refusal, from the store's: any other error is a failure of the store.
fn refused(err: StoreError) -> Result<ReturnOutcome, StoreError> {
    match err {
        StoreError::Refused {
            code,
            field,
            message,
        } => Ok(ReturnOutcome::Refused {
            code,
            field,
            message,
        }),
        err => Err(err),
    }
}

fn not_credited(row: &FileReturn) -> ReturnOutcome {
    ReturnOutcome::Refused {
        code: "earn_not_credited",
        field: Some("reverses".into()),
        message: format!(
            "no earn with the id {} is credited in the organisation (yet)",
            row.reverses
        ),
    }
}
