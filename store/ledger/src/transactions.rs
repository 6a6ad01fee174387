//! Ledger transactions: EARN adds tokens, BURN spends them, EXPIRY removes what expired, a
//! REVERSAL takes back (part of) an earn and a REFUND gives back (part of) a burn. Each is
//! immutable once written (a correction is a transaction of its own naming what it corrects);
//! a wallet's balance always equals EARN + REFUND + TRANSFER_IN - BURN - EXPIRY - REVERSAL -
//! TRANSFER_OUT.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::types::Json;

use crate::backend::{Arg, ToArg};
pub use crate::common::ids::idem_key_of;
use crate::common::ids::{Fingerprint, new_id};
use crate::error::known;
use crate::{Backend, Campaign, Ledger, Page, Paged, StoreError, Tokens};

string_enum! {
    #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
    pub enum TransactionKind ("transaction type") {
        Earn = "EARN",
        Burn = "BURN",
        Expiry = "EXPIRY",
        /// Tokens a burn spent, given back (it names the burn it corrects).
        Refund = "REFUND",
        /// Tokens an earn credited, taken back: a return (it names the earn it corrects).
        Reversal = "REVERSAL",
        /// Tokens a wallet gave another (a transfer's sending side).
        TransferOut = "TRANSFER_OUT",
        /// Tokens a wallet received from another, one per expiry date among the lots given: a
        /// lot of its own (it names the TRANSFER_OUT it came from).
        TransferIn = "TRANSFER_IN",
    }
}

impl TransactionKind {
    /// Whether a transaction of this kind is a lot: tokens the wallet holds until spent or
    /// expired, in (date, id) order with the others (see `fifo`).
    pub fn is_lot(self) -> bool {
        matches!(self, TransactionKind::Earn | TransactionKind::TransferIn)
    }
}

/// What a transaction (SQL, unqualified columns) adds to its wallet's balance: its amount, or
/// less it.
macro_rules! signed_amount {
    () => {
        "CASE kind WHEN 'EARN' THEN amount WHEN 'REFUND' THEN amount \
         WHEN 'TRANSFER_IN' THEN amount ELSE -amount END"
    };
}
pub(crate) use signed_amount;

/// The kinds of transaction that are lots (`TransactionKind::is_lot`), as an SQL list.
macro_rules! lot_kinds {
    () => {
        "('EARN', 'TRANSFER_IN')"
    };
}
pub(crate) use lot_kinds;

/// What a write of transactions dated from `$d` on sets in its wallet's UPDATE (which holds the
/// wallet's lock): the wallet's summed days (`balance_days`, see `in_time`) hold only before
/// that date from now on. A wallet whose days nobody summed (NULL) stays so.
macro_rules! unsum {
    ($d:literal) => {
        concat!(
            "summed_to = CASE WHEN summed_to > ",
            $d,
            " THEN ",
            $d,
            " ELSE summed_to END"
        )
    };
}
pub(crate) use unsum;

#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Transaction {
    pub id: String,
    pub wallet_id: String,
    pub kind: TransactionKind,
    /// Never negative (an EARN may be 0 when the rules award nothing); the kind says which way
    /// it moves the balance.
    pub amount: Tokens,
    /// The earn's `id` or the burn's `externalId`.
    pub external_id: Option<String>,
    /// EARN: the amount the rules were given (exact decimal text).
    pub source_amount: Option<String>,
    pub currency: String,
    pub description: Option<String>,
    pub comment: Option<String>,
    pub meta: Option<Value>,
    pub date: DateTime<Utc>,
    /// EARN: the compact rule trace.
    pub trace: Option<String>,
    /// EARN: the rule-set version that decided the tokens (`None`: the default rule set).
    pub rule_version: Option<i64>,
    pub created_at: DateTime<Utc>,
    /// REVERSAL, REFUND: the transaction it corrects.
    pub corrects: Option<String>,
    /// EARN, BURN: the tokens its corrections took or gave back so far.
    pub corrected: Tokens,
    /// EARN credited pending: when its tokens vest.
    pub vests_at: Option<DateTime<Utc>>,
    /// EARN: its tokens are pending still (not vested, not all reversed).
    pub pending: bool,
}

#[derive(Debug, Clone, Default)]
pub struct TransactionFilter {
    pub wallet_id: Option<String>,
    pub date_from: Option<DateTime<Utc>>,
    pub date_to: Option<DateTime<Utc>>,
    /// Empty: every kind.
    pub kinds: Vec<TransactionKind>,
}

macro_rules! transaction_columns {
    () => {
        "id, wallet_id, kind, amount, external_id, source_amount, currency, description, comment, \
         meta, date, trace, rule_version, created_at, fingerprint, corrects, \
         CAST((SELECT SUM(c.amount + COALESCE(c.forgiven, 0)) FROM transactions c \
         WHERE c.corrects = transactions.id) AS BIGINT), \
         (SELECT p.vests_at FROM pending_earns p WHERE p.transaction_id = transactions.id), \
         (SELECT p.status FROM pending_earns p WHERE p.transaction_id = transactions.id)"
    };
}
pub(crate) use transaction_columns;

/// The transaction written under an idempotency key (`$1`), with its request's fingerprint.
pub(crate) const SELECT_BY_KEY: &str = concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE idem_key = $1"
);

/// Transaction `$1`.
pub const SELECT_BY_ID: &str = concat!(
    "SELECT ",
    transaction_columns!(),
    " FROM transactions WHERE id = $1"
);

/// An earlier transaction under a request's key: the same request again (its transaction), or
/// another one (`already_exists` naming the first field that differs).
pub(crate) fn replay_or_conflict(
    mut earlier: TransactionRow,
    fingerprint: &Fingerprint,
) -> Result<Transaction, StoreError> {
    let stored = earlier.fingerprint.take().unwrap_or_default();
    match fingerprint.matches(&stored) {
        Ok(()) => transaction_from_row(earlier),
        Err(_) => Err(fingerprint.conflict("externalId", &stored)),
    }
}

/// Every column a transaction is written with, in the order `INSERT_TRANSACTION` binds them.
macro_rules! entry_columns {
    () => {
        "id, org_id, campaign_id, wallet_id, kind, amount, external_id, source_amount, currency, \
         description, comment, meta, date, trace, rule_version, created_at, batch_id, fingerprint, \
         expires_at, idem_key"
    };
}
pub(crate) use entry_columns;

/// The one statement that writes a transaction. A repeated (organisation, kind, external id)
/// writes nothing: that unique key (as `idem_key`) is what makes earns, burns and expiries
/// idempotent.
macro_rules! insert_transaction {
    () => {
        concat!(
            "INSERT INTO transactions (",
            $crate::transactions::entry_columns!(),
            ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, \
             $17, $18, $19, $20) ON CONFLICT (idem_key) DO NOTHING"
        )
    };
}
pub(crate) use insert_transaction;
pub(crate) const INSERT_TRANSACTION: &str = insert_transaction!();

/// A transaction's idempotency key: the first 16 bytes of the SHA-256 of its organisation,
/// kind and external id. The unique index is over these instead of the three texts (about 90
/// bytes an entry, at a random place in the index for clients' random ids): a quarter of the
/// pages to read and write per row once the ledger is large. 128 bits make a collision between
/// two different ids out of reach (about 1 in 10^20 at a billion rows). Migration 13 computes
/// the same bytes in SQL on PostgreSQL (SQLite's are filled by
/// `backend::migrations::fill_idem_keys`).
pub fn idem_key(org_id: &str, kind: TransactionKind, external_id: &str) -> Vec<u8> {
    idem_key_of(org_id, kind.as_str(), external_id)
}

/// A transaction to write with `INSERT_TRANSACTION` (or `COPY`): its values in `args`.
pub(crate) struct Entry<'a> {
    pub id: &'a str,
    pub org_id: &'a str,
    pub campaign_id: &'a str,
    pub wallet_id: &'a str,
    pub kind: TransactionKind,
    /// Micro-tokens.
    pub amount: i64,
    pub external_id: &'a str,
    pub source_amount: Option<&'a str>,
    pub currency: &'a str,
    pub description: Option<&'a str>,
    pub comment: Option<&'a str>,
    pub meta: Option<&'a Value>,
    pub date: DateTime<Utc>,
    pub trace: Option<&'a str>,
    pub rule_version: Option<i64>,
    pub created_at: DateTime<Utc>,
    pub batch_id: Option<&'a str>,
    pub fingerprint: Option<&'a str>,
    /// EARN: when its tokens expire (None: never).
    pub expires_at: Option<DateTime<Utc>>,
}

/// An `Entry`'s JSON and times rendered as SQLite stores them, by a caller that writes many:
/// meta rendered in parallel, the creation time once for all.
pub(crate) struct EntryText<'a> {
    pub meta: Option<&'a str>,
    pub date: &'a str,
    pub created_at: &'a str,
    pub expires_at: Option<&'a str>,
}

impl Entry<'_> {
    /// The transaction this entry writes, as it reads back just written.
    pub(crate) fn transaction(&self) -> Transaction {
        Transaction {
            id: self.id.to_string(),
            wallet_id: self.wallet_id.to_string(),
            kind: self.kind,
            amount: Tokens::from_micros(self.amount),
            external_id: Some(self.external_id.to_string()),
            source_amount: self.source_amount.map(str::to_string),
            currency: self.currency.to_string(),
            description: self.description.map(str::to_string),
            comment: self.comment.map(str::to_string),
            meta: self.meta.cloned(),
            date: self.date,
            trace: self.trace.map(str::to_string),
            rule_version: self.rule_version,
            created_at: self.created_at,
            corrects: None,
            corrected: Tokens::ZERO,
            vests_at: None,
            pending: false,
        }
    }
}

impl Transaction {
    /// A transaction the ledger writes at `at`, dated then: `amount` of `kind` on `wallet_id`
    /// in `currency`, under the key `external_id`; no words (see `saying`), correcting nothing,
    /// not pending. What a kind carries beyond that (its own date, what it corrects) is set on
    /// it after.
    pub fn new(
        kind: TransactionKind,
        wallet_id: String,
        amount: Tokens,
        external_id: String,
        currency: String,
        at: DateTime<Utc>,
    ) -> Transaction {
        Transaction {
            id: new_id(),
            wallet_id,
            kind,
            amount,
            external_id: Some(external_id),
            source_amount: None,
            currency,
            description: None,
            comment: None,
            meta: None,
            date: at,
            trace: None,
            rule_version: None,
            created_at: at,
            corrects: None,
            corrected: Tokens::ZERO,
            vests_at: None,
            pending: false,
        }
    }

    /// This transaction with the words its request gave it.
    pub fn saying(
        mut self,
        description: Option<String>,
        comment: Option<String>,
        meta: Option<Value>,
    ) -> Transaction {
        (self.description, self.comment, self.meta) = (description, comment, meta);
        self
    }

    /// The entry that writes this transaction (one made by a request, with its `fingerprint`:
    /// a burn or a correction, which have no expiry of their own) in `org_id`'s `campaign_id`.
    pub(crate) fn entry<'a>(
        &'a self,
        org_id: &'a str,
        campaign_id: &'a str,
        fingerprint: &'a str,
    ) -> Entry<'a> {
        Entry {
            id: &self.id,
            org_id,
            campaign_id,
            wallet_id: &self.wallet_id,
            kind: self.kind,
            amount: self.amount.micros(),
            external_id: self.external_id.as_deref().unwrap_or_default(),
            source_amount: self.source_amount.as_deref(),
            currency: &self.currency,
            description: self.description.as_deref(),
            comment: self.comment.as_deref(),
            meta: self.meta.as_ref(),
            date: self.date,
            trace: self.trace.as_deref(),
            rule_version: self.rule_version,
            created_at: self.created_at,
            batch_id: None,
            fingerprint: Some(fingerprint),
            expires_at: None,
        }
    }
}

impl Entry<'_> {
    pub fn idem_key(&self) -> Vec<u8> {
        idem_key(self.org_id, self.kind, self.external_id)
    }

    /// Its values in `entry_columns!` order, `key` being its `idem_key`: how every path writes
    /// a transaction. `text`: its JSON and times as already rendered.
    pub(crate) fn args<'s>(&'s self, key: &'s [u8], text: Option<&EntryText<'s>>) -> [Arg<'s>; 20] {
        let (meta, date, created_at, expires_at) = match text {
            Some(t) => (
                Arg::JsonText(t.meta),
                Arg::TimeText(Some(t.date)),
                Arg::TimeText(Some(t.created_at)),
                Arg::TimeText(t.expires_at),
            ),
            None => (
                self.meta.to_arg(),
                self.date.to_arg(),
                self.created_at.to_arg(),
                self.expires_at.to_arg(),
            ),
        };
        [
            self.id.to_arg(),
            self.org_id.to_arg(),
            self.campaign_id.to_arg(),
            self.wallet_id.to_arg(),
            self.kind.as_str().to_arg(),
            self.amount.to_arg(),
            self.external_id.to_arg(),
            self.source_amount.to_arg(),
            self.currency.to_arg(),
            self.description.to_arg(),
            self.comment.to_arg(),
            meta,
            date,
            self.trace.to_arg(),
            self.rule_version.to_arg(),
            created_at,
            self.batch_id.to_arg(),
            self.fingerprint.to_arg(),
            expires_at,
            Arg::Bytes(Some(key)),
        ]
    }
}

row_struct! {
    /// The columns of `transaction_columns!`, in order.
    pub struct TransactionRow {
        id: String,
        wallet_id: String,
        kind: String,
        amount: i64,
        external_id: Option<String>,
        source_amount: Option<String>,
        currency: String,
        description: Option<String>,
        comment: Option<String>,
        meta: Option<Json<Value>>,
        date: DateTime<Utc>,
        trace: Option<String>,
        rule_version: Option<i64>,
        created_at: DateTime<Utc>,
        /// A burn's request, to tell its replay from a conflicting reuse of its `externalId`.
        fingerprint: Option<String>,
        corrects: Option<String>,
        corrected: Option<i64>,
        vests_at: Option<DateTime<Utc>>,
        pending_status: Option<String>,
    }
}

pub fn transaction_from_row(r: TransactionRow) -> Result<Transaction, StoreError> {
    Ok(Transaction {
        kind: known(
            TransactionKind::parse(&r.kind),
            "transactions",
            "kind",
            &r.kind,
        )?,
        id: r.id,
        wallet_id: r.wallet_id,
        amount: Tokens::from_micros(r.amount),
        external_id: r.external_id,
        source_amount: r.source_amount,
        currency: r.currency,
        description: r.description,
        comment: r.comment,
        meta: r.meta.map(|m| m.0),
        date: r.date,
        trace: r.trace,
        rule_version: r.rule_version,
        created_at: r.created_at,
        corrects: r.corrects,
        corrected: Tokens::from_micros(r.corrected.unwrap_or(0)),
        vests_at: r.vests_at,
        pending: r.pending_status.as_deref() == Some("pending"),
    })
}

/// Transactions: a campaign's ledger entries, listed and read back (scope: `&Campaign`).
impl Ledger {
    /// The campaign's transactions, newest first, filtered.
    #[tracing::instrument(skip_all)]
    pub async fn list_transactions(
        &self,
        campaign: &Campaign,
        filter: &TransactionFilter,
        page: Page,
    ) -> Result<Paged<Transaction>, StoreError> {
        let kinds = if filter.kinds.is_empty() {
            TransactionKind::ALL.to_vec()
        } else {
            filter.kinds.clone()
        };
        let has = |k: TransactionKind| kinds.contains(&k);
        // Kinds not asked for are bound as a value no row has; every kind has its place.
        const _: () = assert!(TransactionKind::ALL.len() == 7);
        // Kinds not asked for are bound as a value no row has.
        let kind = |k: TransactionKind| if has(k) { k.as_str() } else { "" };
        // One wallet's history is read through its own index (wallet, date, id): a planner
        // cannot use it behind `$3 IS NULL OR wallet_id = $3`, and SQLite, without statistics,
        // would count the rows through the organisation's index instead.
        let from = match (&filter.wallet_id, self.backend()) {
            (Some(_), backend) => format!(
                "FROM transactions {} WHERE org_id = $1 AND campaign_id = $2 \
                 AND wallet_id = $3 AND ($4 IS NULL OR date >= $4) \
                 AND ($5 IS NULL OR date <= $5) AND kind IN ($6, $7, $8, $9, $10, $11, $12)",
                match backend {
                    Backend::Sqlite => "INDEXED BY transactions_wallet_date",
                    Backend::Postgres => "",
                }
            ),
            (None, _) => "FROM transactions WHERE org_id = $1 AND campaign_id = $2 \
                 AND ($3 IS NULL OR wallet_id = $3) AND ($4 IS NULL OR date >= $4) \
                 AND ($5 IS NULL OR date <= $5) AND kind IN ($6, $7, $8, $9, $10, $11, $12)"
                .to_owned(),
        };
        let rows = self
            .read_page(
                page,
                transaction_columns!(),
                &from,
                "date DESC, id DESC",
                params![
                    &campaign.org_id,
                    &campaign.id,
                    &filter.wallet_id,
                    filter.date_from,
                    filter.date_to,
                    kind(TransactionKind::Earn),
                    kind(TransactionKind::Burn),
                    kind(TransactionKind::Expiry),
                    kind(TransactionKind::Refund),
                    kind(TransactionKind::Reversal),
                    kind(TransactionKind::TransferOut),
                    kind(TransactionKind::TransferIn)
                ],
            )
            .await?;
        Paged::of(rows, page, transaction_from_row)
    }

    #[tracing::instrument(skip_all)]
    pub async fn get_transaction(
        &self,
        campaign: &Campaign,
        id: &str,
    ) -> Result<Transaction, StoreError> {
        const SQL: &str = concat!(
            "SELECT ",
            transaction_columns!(),
            " FROM transactions WHERE org_id = $1 AND campaign_id = $2 AND id = $3"
        );
        let row: Option<TransactionRow> = self
            .read_row(SQL, params![campaign.org_id, campaign.id, id])
            .await?;
        row.ok_or(StoreError::NotFound {
            what: "transaction",
        })
        .and_then(transaction_from_row)
    }
}

/// A stored EARN with what its wallet and member are now, for re-evaluating it.
#[derive(Debug, Clone)]
pub struct EarnReplay {
    pub transaction_id: String,
    pub wallet_id: String,
    /// The tokens it was credited.
    pub tokens: Tokens,
    pub earn_id: String,
    /// The amount the rules were given.
    pub source_amount: String,
    pub currency: String,
    pub description: Option<String>,
    pub meta: Option<Value>,
    pub date: DateTime<Utc>,
    /// The compact trace of the rules that decided `tokens`.
    pub trace: Option<String>,
    pub wallet_tier: Option<String>,
    pub wallet_balance: Tokens,
    pub member_status: String,
    /// The wallet's owner.
    pub member_id: String,
    /// The type of the activity it awarded, when it is an activity's award.
    pub activity: Option<String>,
}

impl Ledger {
    /// The campaign's EARN transactions dated in `from..=to`, in date order (then id order)
    /// after `after` (a date and a transaction id), at most `limit`: page through them by
    /// passing the last one's back. Date order is the order a load counts limits in.
    #[tracing::instrument(skip_all)]
    pub async fn earns_between(
        &self,
        campaign: &Campaign,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
        after: Option<(DateTime<Utc>, &str)>,
        limit: i64,
    ) -> Result<Vec<EarnReplay>, StoreError> {
        const SQL: &str = "SELECT t.id, t.wallet_id, t.amount, t.external_id, t.source_amount, t.currency, \
             t.description, t.meta, t.date, t.trace, tr.name, w.balance, m.status, m.id \
             FROM transactions t JOIN wallets w ON w.id = t.wallet_id JOIN members m ON m.id = w.owner_id \
             LEFT JOIN tiers tr ON tr.id = w.tier_id \
             WHERE t.org_id = $1 AND t.campaign_id = $2 AND t.kind = 'EARN' AND t.date >= $3 AND t.date <= $4 \
             AND ($5 IS NULL OR t.date > $5 OR (t.date = $5 AND t.id > $6)) \
             ORDER BY t.date, t.id LIMIT $7";
        row_struct! {
            struct Row {
                transaction_id: String,
                wallet_id: String,
                tokens: i64,
                earn_id: Option<String>,
                source_amount: Option<String>,
                currency: String,
                description: Option<String>,
                meta: Option<Json<Value>>,
                date: DateTime<Utc>,
                trace: Option<String>,
                wallet_tier: Option<String>,
                wallet_balance: i64,
                member_status: String,
                member_id: String,
            }
        }
        let (after_date, after_id) = (after.map(|a| a.0), after.map(|a| a.1));
        let (org_id, campaign_id) = (campaign.org_id.as_str(), campaign.id.as_str());
        let args = params![org_id, campaign_id, from, to, after_date, after_id, limit];
        let rows: Vec<Row> = self.read_rows(SQL, args).await?;
        Ok(rows
            .into_iter()
            .map(|r| EarnReplay {
                // An award's description is its activity's type.
                activity: r
                    .earn_id
                    .as_deref()
                    .is_some_and(|id| id.starts_with(members::activities::AWARD_KEY))
                    .then(|| r.description.clone().unwrap_or_default()),
                transaction_id: r.transaction_id,
                wallet_id: r.wallet_id,
                tokens: Tokens::from_micros(r.tokens),
                earn_id: r.earn_id.unwrap_or_default(),
                source_amount: r.source_amount.unwrap_or_default(),
                currency: r.currency,
                description: r.description,
                meta: r.meta.map(|m| m.0),
                date: r.date,
                trace: r.trace,
                wallet_tier: r.wallet_tier,
                wallet_balance: Tokens::from_micros(r.wallet_balance),
                member_status: r.member_status,
                member_id: r.member_id,
            })
            .collect())
    }
}

impl events::Payload for Transaction {
    const RECORD: &'static str = "transaction";
    fn subject_id(&self) -> Option<&str> {
        Some(&self.id)
    }
}

/// Records `transaction.created` for `transaction`, written by an API request or a sweep (not
/// a batch file's row: a file makes one event for all its rows), in the caller's transaction.
pub(crate) async fn transaction_created(
    tx: &mut impl crate::backend::Tx,
    org_id: &str,
    campaign_id: &str,
    transaction: &Transaction,
) -> Result<(), StoreError> {
    let kind = events::EventType::TransactionCreated;
    let at = transaction.created_at;
    let event = events::NewEvent::new(org_id, Some(campaign_id), kind, transaction, at)?;
    events::record(tx, &event).await
}
