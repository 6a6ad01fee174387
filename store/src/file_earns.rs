//! Crediting earns from batch files: each row's wallet is found by id or reference within the
//! organisation (a file may mix campaigns), the row is evaluated with that campaign's active
//! rules, and the rows of a call are credited together. The earn id is the same idempotency key
//! as the API's: a row whose id was credited before, by either door, credits nothing.

use std::collections::HashMap;

use crate::db::Pool;
use crate::direct;
use crate::evaluate::{Target, WalletContext, credit_for};
use crate::{Credited, EarnInput, RuleBook, Store, StoreError, Tokens};

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
    Credited {
        transaction_id: String,
        tokens: Tokens,
        /// What each rule contributed.
        trace: String,
    },
    /// Its id was credited before (by the API, an earlier file, or earlier in this file).
    Duplicate {
        transaction_id: Option<String>,
    },
    /// This batch credited it already: an attempt interrupted by a crash, or an earlier row.
    CreditedBefore {
        transaction_id: String,
    },
    UnknownWallet,
    /// The rules gave an amount the ledger cannot hold.
    Refused(String),
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
    Option<String>,
    String,
    String,
);

impl Store {
    /// Evaluates and credits `earns` of batch `batch_id` of organisation `org_id` in one database
    /// transaction;
    /// returns each row's outcome, in order. Rows see their wallet's balance and tier as they were
    /// before the call.
    pub async fn credit_file_earns(
        &self,
        book: &RuleBook,
        org_id: &str,
        batch_id: &str,
        earns: &[FileEarn],
    ) -> Result<Vec<FileOutcome>, StoreError> {
        let mut references: Vec<&str> = earns.iter().map(|e| e.earn.wallet.as_str()).collect();
        references.sort_unstable();
        references.dedup();
        let wallets = self.file_wallets(org_id, &references).await?;
        let mut outcomes: Vec<Option<FileOutcome>> = vec![None; earns.len()];
        let (mut credits, mut credited_rows) = (Vec::new(), Vec::new());
        for (i, row) in earns.iter().enumerate() {
            let Some(wallet) = wallets.get(&row.earn.wallet) else {
                outcomes[i] = Some(FileOutcome::UnknownWallet);
                continue;
            };
            let target = Target {
                org_id,
                campaign_id: &wallet.campaign_id,
                wallet_id: &wallet.id,
                wallet: &wallet.context,
            };
            match credit_for(book, &target, &row.earn, None).await? {
                Ok(credit) => {
                    credits.push(crate::Credit {
                        batch_id: Some(batch_id.to_string()),
                        ..credit
                    });
                    credited_rows.push(i);
                }
                Err(reason) => outcomes[i] = Some(FileOutcome::Refused(reason)),
            }
        }
        let results = self.credit_all(&credits).await?;
        for ((i, result), credit) in credited_rows.into_iter().zip(results).zip(credits) {
            outcomes[i] = Some(match result {
                Credited::New { transaction_id } => FileOutcome::Credited {
                    transaction_id,
                    tokens: credit.tokens,
                    trace: credit.trace,
                },
                Credited::Duplicate {
                    transaction_id: Some(transaction_id),
                    batch_id: Some(earlier),
                } if earlier == batch_id => FileOutcome::CreditedBefore { transaction_id },
                Credited::Duplicate { transaction_id, .. } => {
                    FileOutcome::Duplicate { transaction_id }
                }
            });
        }
        Ok(outcomes
            .into_iter()
            .map(|o| o.unwrap_or_else(|| FileOutcome::Refused("not evaluated".into())))
            .collect())
    }

    /// The organisation's wallets named by `references` (ids or external references), keyed by
    /// the reference; an id wins over another wallet's equal reference.
    async fn file_wallets(
        &self,
        org_id: &str,
        references: &[&str],
    ) -> Result<HashMap<String, FileWallet>, StoreError> {
        const SELECT: &str = "SELECT w.id, w.external_id, w.campaign_id, w.balance, t.name, \
             m.status, w.currency FROM wallets w JOIN members m ON m.id = w.owner_id \
             LEFT JOIN tiers t ON t.id = w.tier_id WHERE w.org_id = $1 ";
        let rows: Vec<WalletRow> = match &self.pool {
            Pool::Sqlite { direct, .. } => {
                let sql = format!("{SELECT}AND (w.id = $2 OR w.external_id = $2)");
                direct.read(|c| {
                    let mut rows = Vec::new();
                    for reference in references {
                        rows.extend(direct::rows::<WalletRow>(
                            c,
                            &sql,
                            args![org_id, *reference],
                        )?);
                    }
                    Ok(rows)
                })?
            }
            Pool::Postgres(pool) => {
                let sql = format!("{SELECT}AND (w.id = ANY($2) OR w.external_id = ANY($2))");
                let references: Vec<String> = references.iter().map(|r| r.to_string()).collect();
                sqlx::query_as(sqlx::AssertSqlSafe(sql))
                    .bind(org_id)
                    .bind(&references)
                    .fetch_all(pool)
                    .await?
            }
        };
        let mut wallets = HashMap::new();
        let mut by_id = Vec::new();
        for (id, external_id, campaign_id, balance, tier, status, currency) in rows {
            let wallet = FileWallet {
                id: id.clone(),
                campaign_id,
                context: WalletContext {
                    balance,
                    tier,
                    status,
                    currency,
                },
            };
            if let Some(external_id) = external_id.filter(|e| references.contains(&e.as_str())) {
                wallets.insert(external_id, wallet.clone());
            }
            by_id.push((id, wallet));
        }
        for (id, wallet) in by_id {
            if references.contains(&id.as_str()) {
                wallets.insert(id, wallet);
            }
        }
        Ok(wallets)
    }
}
