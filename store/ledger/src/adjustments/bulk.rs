//! Bulk adjustments: a CSV file of requests (`wallet,amount,reason,comment`, and optionally
//! `external_id`), checked row by row first (a dry run writes nothing and says what each row
//! would come to) and then made one by one, each an adjustment of its own with the file's
//! batch id, with a report of every row's outcome. A row without an `external_id` is keyed by
//! the file's content and its line, so the same file sent again (after a failure part way)
//! makes only the rows not made yet, and answers the others as they were.

use std::collections::{HashMap, HashSet};

use serde::Serialize;

use super::{
    AdjustmentRules, AdjustmentStatus, NewAdjustment, Reason, Requester, check_request,
    fingerprint_of,
};
use crate::common::ids::{hex, new_id, sha256};
use crate::{Campaign, Ledger, StoreError, Tokens};

/// The most rows one file may hold.
pub const MAX_ROWS: usize = 10_000;

/// The columns a file must have (`external_id` may be added).
const COLUMNS: [&str; 4] = ["wallet", "amount", "reason", "comment"];

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum RowOutcome ("bulk row outcome") {
        /// Made and applied.
        Applied = "applied",
        /// Made, waiting for a second operator's approval.
        Pending = "pending",
        /// Made before, by the same request: its adjustment is answered.
        Replayed = "replayed",
        /// Refused: nothing was made (`code`, `field` and `message` say why).
        Refused = "refused",
        /// Dry run: would be applied.
        WouldApply = "would_apply",
        /// Dry run: would wait for approval.
        WouldWait = "would_wait",
    }
}

// One row's outcome, as the admin API answers it (`BulkRowView`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = BulkRowView))]
#[serde(rename_all = "camelCase")]
pub struct BulkRow {
    /// Its line in the file (the header is line 1).
    pub line: u64,
    pub wallet: Option<String>,
    #[cfg_attr(feature = "schema", schema(value_type = Option<f64>))]
    pub amount: Option<Tokens>,
    #[cfg_attr(feature = "schema", schema(value_type = String,
        pattern = "^(applied|pending|replayed|refused|would_apply|would_wait)$"))]
    pub outcome: RowOutcome,
    /// Made (or replayed): the adjustment.
    pub adjustment_id: Option<String>,
    /// Refused: why, as an API error would say it.
    pub code: Option<String>,
    pub field: Option<String>,
    pub message: Option<String>,
}

// A file's report, as the admin API answers it (`BulkReportView`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "schema", derive(utoipa::ToSchema), schema(as = BulkReportView))]
#[serde(rename_all = "camelCase")]
pub struct BulkReport {
    /// The id every adjustment made from the file carries (none for a dry run).
    pub batch_id: Option<String>,
    pub dry_run: bool,
    /// Rows made and applied (dry run: that would be).
    pub applied: usize,
    /// Rows made and waiting for approval (dry run: that would).
    pub pending: usize,
    pub replayed: usize,
    pub refused: usize,
    pub rows: Vec<BulkRow>,
}

/// A row read from the file: its request, or what is wrong with it.
struct Read {
    line: u64,
    wallet: Option<String>,
    amount: Option<Tokens>,
    /// The request, or the field that is wrong and why.
    request: Result<NewAdjustment, (&'static str, String)>,
}

/// The file's rows, or `Invalid` naming `file` when it is not a CSV file with the columns.
fn read(csv: &[u8]) -> Result<Vec<Read>, StoreError> {
    let bad = |message: String| StoreError::invalid("file", message);
    let mut reader = ::csv::ReaderBuilder::new()
        .flexible(true)
        .trim(::csv::Trim::All)
        .from_reader(csv);
    let headers = reader
        .headers()
        .map_err(|e| bad(format!("not a CSV file: {e}")))?
        .clone();
    let position = |name: &str| headers.iter().position(|h| h.eq_ignore_ascii_case(name));
    let mut at = [0; 4];
    for (slot, name) in at.iter_mut().zip(COLUMNS) {
        *slot = position(name).ok_or_else(|| {
            bad(format!(
                "the header must name the columns {} (and optionally external_id); `{name}` is \
                 missing",
                COLUMNS.join(", ")
            ))
        })?;
    }
    let key_at = position("external_id");
    let file_key = hex(&sha256(&String::from_utf8_lossy(csv))[..8]);
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| bad(format!("not a CSV file: {e}")))?;
        if record.iter().all(str::is_empty) {
            continue;
        }
        if rows.len() == MAX_ROWS {
            return Err(bad(format!("a file holds at most {MAX_ROWS} rows")));
        }
        let line = record.position().map_or(0, ::csv::Position::line);
        let cell = |i: usize| record.get(i).unwrap_or_default().to_owned();
        let wallet = cell(at[0]);
        let amount = Tokens::from_text(&cell(at[1]));
        let key = key_at
            .map(cell)
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| format!("file:{file_key}:{line}"));
        let request = (|| {
            if wallet.is_empty() {
                return Err(("wallet", "must not be blank".to_owned()));
            }
            let amount = amount.clone().map_err(|e| ("amount", e))?;
            let reason = cell(at[2]).parse::<Reason>().map_err(|e| ("reason", e))?;
            Ok(NewAdjustment {
                wallet: wallet.clone(),
                amount,
                reason,
                comment: cell(at[3]),
                external_id: Some(key),
            })
        })();
        rows.push(Read {
            line,
            wallet: (!wallet.is_empty()).then_some(wallet),
            amount: amount.ok(),
            request,
        });
    }
    if rows.is_empty() {
        return Err(bad("the file holds no rows".into()));
    }
    Ok(rows)
}

impl BulkRow {
    fn of(read: &Read, outcome: RowOutcome, adjustment_id: Option<String>) -> BulkRow {
        BulkRow {
            line: read.line,
            wallet: read.wallet.clone(),
            amount: read.amount,
            outcome,
            adjustment_id,
            code: None,
            field: None,
            message: None,
        }
    }

    /// The row refused for `error`: `Err` when the error is not the row's but the service's.
    fn refused(read: &Read, error: StoreError) -> Result<BulkRow, StoreError> {
        let (code, field, message) = match error {
            StoreError::Invalid { field, message } => {
                ("invalid_value", Some(field.into()), message)
            }
            StoreError::Refused {
                code,
                field,
                message,
            } => (code, field, message),
            StoreError::Conflict { field } => (
                "already_exists",
                Some(field.into()),
                format!("{field} is already in use"),
            ),
            StoreError::NotFound { what } => (
                "not_found",
                Some("wallet".into()),
                format!("{what} not found"),
            ),
            e @ StoreError::InsufficientBalance { .. } => {
                ("insufficient_balance", Some("amount".into()), e.to_string())
            }
            other => return Err(other),
        };
        Ok(BulkRow {
            code: Some(code.into()),
            field,
            message: Some(message),
            ..BulkRow::of(read, RowOutcome::Refused, None)
        })
    }
}

/// Bulk adjustments of a campaign's wallets (scope: `&Campaign`).
impl Ledger {
    /// Adjusts the campaign's wallets by the rows of the CSV file `csv` for `requester` within
    /// `rules` (each row as `adjust` would), or (`dry_run`) says what each row would come to,
    /// writing nothing. `Invalid` naming `file` for a file that is not CSV with the columns,
    /// or holds no rows or more than `MAX_ROWS`; a row's own problem is its outcome.
    #[tracing::instrument(skip_all)]
    pub async fn adjust_bulk(
        &self,
        campaign: &Campaign,
        csv: &[u8],
        requester: &Requester,
        rules: &AdjustmentRules,
        dry_run: bool,
    ) -> Result<BulkReport, StoreError> {
        let rows = read(csv)?;
        let batch_id = (!dry_run).then(new_id);
        let mut report = BulkReport {
            batch_id: batch_id.clone(),
            dry_run,
            applied: 0,
            pending: 0,
            replayed: 0,
            refused: 0,
            rows: Vec::with_capacity(rows.len()),
        };
        let mut trial = Trial::default();
        for read in &rows {
            let outcome = match &read.request {
                Err((field, message)) => {
                    BulkRow::refused(read, StoreError::invalid(field, message.clone()))
                }
                Ok(new) if dry_run => match self.try_row(campaign, new, rules, &mut trial).await {
                    Ok(outcome) => Ok(BulkRow::of(read, outcome, None)),
                    Err(e) => BulkRow::refused(read, e),
                },
                Ok(new) => {
                    let made = self
                        .adjust_in_batch(
                            campaign,
                            new.clone(),
                            requester,
                            rules,
                            batch_id.as_deref(),
                        )
                        .await;
                    match made {
                        Ok(made) => {
                            let outcome = match (made.replayed, made.adjustment.status) {
                                (true, _) => RowOutcome::Replayed,
                                (false, AdjustmentStatus::Pending) => RowOutcome::Pending,
                                (false, _) => RowOutcome::Applied,
                            };
                            Ok(BulkRow::of(read, outcome, Some(made.adjustment.id)))
                        }
                        Err(e) => BulkRow::refused(read, e),
                    }
                }
            }?;
            match outcome.outcome {
                RowOutcome::Applied | RowOutcome::WouldApply => report.applied += 1,
                RowOutcome::Pending | RowOutcome::WouldWait => report.pending += 1,
                RowOutcome::Replayed => report.replayed += 1,
                RowOutcome::Refused => report.refused += 1,
            }
            report.rows.push(outcome);
        }
        Ok(report)
    }

    /// What `new` would come to, after the rows tried before it (`trial`), writing nothing.
    async fn try_row(
        &self,
        campaign: &Campaign,
        new: &NewAdjustment,
        rules: &AdjustmentRules,
        trial: &mut Trial,
    ) -> Result<RowOutcome, StoreError> {
        check_request(new, rules)?;
        let wallet = self.get_wallet(campaign, &new.wallet).await?;
        if let Some(key) = &new.external_id {
            if !trial.keys.insert(key.clone()) {
                return Err(StoreError::Conflict {
                    field: "externalId",
                });
            }
            if let Some(stored) = self.adjustment_fingerprint(campaign, key).await? {
                let fingerprint = fingerprint_of(&wallet.id, new);
                return match fingerprint.matches(&stored) {
                    Ok(()) => Ok(RowOutcome::Replayed),
                    Err(_) => Err(fingerprint.conflict("externalId", &stored)),
                };
            }
        }
        if rules.needs_approval(new.amount) {
            return Ok(RowOutcome::WouldWait);
        }
        let available = match trial.available.get(&wallet.id) {
            Some(available) => *available,
            None => {
                let min = match trial.min_balance {
                    Some(min) => min,
                    None => *trial
                        .min_balance
                        .insert(self.programme().policy(campaign).await?.min_balance),
                };
                wallet.balance.micros() - wallet.held.micros() - min.micros()
            }
        };
        let after = available + new.amount.micros();
        if new.amount.micros() < 0 && after < 0 {
            return Err(StoreError::InsufficientBalance {
                available: Tokens::from_micros(available.max(0)),
            });
        }
        trial.available.insert(wallet.id, after);
        Ok(RowOutcome::WouldApply)
    }
}

/// What a dry run has tried so far: what each wallet could spend after the rows before, and
/// the keys the rows took; the campaign's minimum balance, read once when first needed.
#[derive(Default)]
struct Trial {
    available: HashMap<String, i64>,
    keys: HashSet<String>,
    min_balance: Option<Tokens>,
}
