//! Returns from batch files: a row naming an earn by the client's own id (`reverses`) takes
//! back (part of) it as `Store::correct` does, under the row's own id: the corrections'
//! idempotency key, so a file row and an API reversal with one id are one correction. Rows
//! reversing one earn are taken in file order; others run side by side (the wallet's lock
//! orders them).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use chrono::{DateTime, Utc};
use rules::Decimal;
use serde_json::Value;

use crate::ledger::corrections::Origin;
use crate::ledger::transactions::idem_key;
use crate::{Campaign, NewCorrection, OrgScope, Store, StoreError, Tokens, TransactionKind};

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
    /// `reversal_exceeds_earn`, `reversal_shortfall`, `already_exists`), naming `field`.
    Refused {
        code: &'static str,
        field: Option<String>,
        message: String,
    },
}

/// How many earns' returns are written at once.
const AT_ONCE: usize = 128;

const EARN_BY_KEY: &str =
    "SELECT id, campaign_id, wallet_id, batch_id FROM transactions WHERE idem_key = $1";
type EarnRow = (String, String, String, Option<String>);
const WALLET_REFERENCE: &str = "SELECT external_id FROM wallets WHERE id = $1";
const BATCH_OF: &str = "SELECT batch_id FROM transactions WHERE id = $1";

/// Returns from batch files (scope: `OrgScope`).
impl Store {
    /// Reverses each row's earn under batch `batch_id`; each row's outcome, in order. An `Err`
    /// is a store failure: the rows reversed so far stay reversed, and are recognised as this
    /// batch's when the file is run again.
    pub async fn reverse_file_rows(
        &self,
        org: &OrgScope,
        batch_id: &str,
        rows: Vec<FileReturn>,
    ) -> Result<Vec<ReturnOutcome>, StoreError> {
        let count = rows.len();
        let mut by_earn: HashMap<String, Vec<(usize, FileReturn)>> = HashMap::new();
        for (i, row) in rows.into_iter().enumerate() {
            by_earn
                .entry(row.reverses.clone())
                .or_default()
                .push((i, row));
        }
        let campaigns = Arc::new(Mutex::new(HashMap::new()));
        let mut outcomes = vec![None; count];
        let mut running = tokio::task::JoinSet::new();
        for (_, group) in by_earn {
            if running.len() >= AT_ONCE {
                collect(&mut running, &mut outcomes).await?;
            }
            let (store, org, batch_id) = (self.clone(), org.clone(), batch_id.to_string());
            let campaigns = campaigns.clone();
            running.spawn(async move {
                let mut done = Vec::with_capacity(group.len());
                for (i, row) in group {
                    let outcome = store.reverse_row(&org, &batch_id, row, &campaigns).await?;
                    done.push((i, outcome));
                }
                Ok(done)
            });
        }
        while !running.is_empty() {
            collect(&mut running, &mut outcomes).await?;
        }
        Ok(outcomes.into_iter().flatten().collect())
    }

    /// What `reverse_file_rows` would do with `rows`, changing nothing: a row whose earn is
    /// credited before the file (or in an earlier row of it), to the wallet it names, would be
    /// reversed; the value left, the shortfall policy and the row's id are looked at when it
    /// is.
    pub async fn check_file_returns(
        &self,
        org: &OrgScope,
        batch_id: Option<&str>,
        rows: &[FileReturn],
    ) -> Result<Vec<ReturnOutcome>, StoreError> {
        let mut outcomes = Vec::with_capacity(rows.len());
        for row in rows {
            let outcome = match self.earn_of(org, batch_id, row).await? {
                Err(refused) => refused,
                Ok(None) => would_reverse(),
                Ok(Some((_, _, wallet_id, _))) => match self.wallet_refused(row, &wallet_id).await?
                {
                    Some(refused) => refused,
                    None => would_reverse(),
                },
            };
            outcomes.push(outcome);
        }
        Ok(outcomes)
    }

    async fn reverse_row(
        &self,
        org: &OrgScope,
        batch_id: &str,
        row: FileReturn,
        campaigns: &Mutex<HashMap<String, Campaign>>,
    ) -> Result<ReturnOutcome, StoreError> {
        let (earn_id, campaign_id, wallet_id) =
            match self.earn_of(org, Some(batch_id), &row).await? {
                Ok(Some((earn_id, campaign_id, wallet_id, _))) => (earn_id, campaign_id, wallet_id),
                Ok(None) => return Ok(not_credited(&row)),
                Err(refused) => return Ok(refused),
            };
        if let Some(refused) = self.wallet_refused(&row, &wallet_id).await? {
            return Ok(refused);
        }
        let known = campaigns
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&campaign_id)
            .cloned();
        let campaign = match known {
            Some(campaign) => campaign,
            None => {
                let campaign = self.get_campaign(org, &campaign_id).await?;
                let mut campaigns = campaigns.lock().unwrap_or_else(|e| e.into_inner());
                campaigns.insert(campaign_id, campaign.clone());
                campaign
            }
        };
        let original = self.get_transaction(&campaign, &earn_id).await?;
        let correction = NewCorrection {
            transaction_id: earn_id,
            external_id: row.id,
            amount: row.amount,
            description: row.description,
            comment: row.comment,
            meta: row.meta,
        };
        let origin = Origin {
            batch_id: Some(batch_id),
            date: row.date,
        };
        let corrected = match self
            .correct_original(&campaign, original, correction, origin)
            .await
        {
            Ok(corrected) => corrected,
            Err(StoreError::Refused {
                code,
                field,
                message,
            }) => {
                return Ok(ReturnOutcome::Refused {
                    code,
                    field,
                    message,
                });
            }
            Err(err) => return Err(err),
        };
        let transaction_id = corrected.transaction.id;
        if !corrected.replayed {
            let tokens = corrected.transaction.amount;
            return Ok(ReturnOutcome::Reversed {
                transaction_id: Some(transaction_id),
                tokens,
            });
        }
        let (made_by,): (Option<String>,) = self
            .read_row(BATCH_OF, params![transaction_id])
            .await?
            .unwrap_or((None,));
        Ok(if made_by.as_deref() == Some(batch_id) {
            ReturnOutcome::ReversedBefore { transaction_id }
        } else {
            ReturnOutcome::Duplicate { transaction_id }
        })
    }

    /// The earn `row` returns, as credited before the file or by an earlier row of it (`None`:
    /// not credited, but an earlier row of the file is that earn: a check credits nothing).
    async fn earn_of(
        &self,
        org: &OrgScope,
        batch_id: Option<&str>,
        row: &FileReturn,
    ) -> Result<Result<Option<EarnRow>, ReturnOutcome>, StoreError> {
        let key = idem_key(org.id(), TransactionKind::Earn, &row.reverses);
        let found: Option<EarnRow> = self.read_row(EARN_BY_KEY, params![key]).await?;
        Ok(match found {
            None if row.earn_earlier_in_file => Ok(None),
            None => Err(not_credited(row)),
            // Credited by a later row of this file, whose chunk was written first.
            Some((.., Some(by))) if batch_id == Some(&by) && !row.earn_earlier_in_file => {
                Err(not_credited(row))
            }
            Some(earn) => Ok(Some(earn)),
        })
    }

    /// The refusal of a row naming a wallet other than `wallet_id` (by id or reference).
    async fn wallet_refused(
        &self,
        row: &FileReturn,
        wallet_id: &str,
    ) -> Result<Option<ReturnOutcome>, StoreError> {
        let Some(named) = row.wallet.as_deref().filter(|w| *w != wallet_id) else {
            return Ok(None);
        };
        let reference: Option<(Option<String>,)> =
            self.read_row(WALLET_REFERENCE, params![wallet_id]).await?;
        if reference.and_then(|(r,)| r).as_deref() == Some(named) {
            return Ok(None);
        }
        Ok(Some(ReturnOutcome::Refused {
            code: "wallet_mismatch",
            field: Some("walletId".into()),
            message: format!("the earn {} was credited to another wallet", row.reverses),
        }))
    }
}

type Done = Result<Vec<(usize, ReturnOutcome)>, StoreError>;

/// Waits for the next group of rows and places its outcomes.
async fn collect(
    running: &mut tokio::task::JoinSet<Done>,
    outcomes: &mut [Option<ReturnOutcome>],
) -> Result<(), StoreError> {
    let Some(joined) = running.join_next().await else {
        return Ok(());
    };
    let done = joined.map_err(|e| StoreError::NotCommitted(format!("a file's returns: {e}")))??;
    for (i, outcome) in done {
        outcomes[i] = Some(outcome);
    }
    Ok(())
}

fn would_reverse() -> ReturnOutcome {
    ReturnOutcome::Reversed {
        transaction_id: None,
        tokens: Tokens::ZERO,
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
