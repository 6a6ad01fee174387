//! Reversals: a return takes back the tokens its purchase earned. Returning part of the value
//! takes the same part of the tokens, rounded as the earn's rule set rounds; the reversal that
//! returns the last of the value takes exactly the tokens left, so an earn's reversals add up
//! to it. The tokens leave the earn's own lot first, then the wallet's oldest lots; what the
//! member has already spent beyond that is the campaign's shortfall policy's to decide (see
//! `Shortfall`). The wallet's lifetime earnings fall by the tokens reversed, and its tier
//! follows them.

use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet};

use super::Moved;
use crate::backend::Tx;
use crate::fifo::{Earn, Position};
use crate::spend::take;
use crate::{Shortfall, StoreError, Tokens, Transaction};

/// The value and tokens earlier reversals took off the earn (only reversals correct an earn;
/// naming their kind here would offer the planner the index of every reversal instead).
pub(super) const REVERSED: &str = "SELECT source_amount, amount + COALESCE(forgiven, 0) FROM transactions \
     WHERE corrects = $1";
const EXPIRES: &str = "SELECT expires_at FROM transactions WHERE id = $1";
/// The wallet after a reversal: `$2` off its balance, `$3` more owed, `$4` off its lifetime
/// earnings (and its tier as they now say).
const TAKE_BACK: &str = concat!(
    "UPDATE wallets SET balance = balance - $2, owed = owed + $3, earned = earned - $4, \
     updated_at = $5, tier_id = ",
    tier_for!("wallets.earned - $4"),
    " WHERE id = $1"
);

/// The wallet after a reversal of pending tokens: `$2` off what is pending, `$3` off its
/// lifetime earnings (and its tier as they now say).
const TAKE_BACK_PENDING: &str = concat!(
    "UPDATE wallets SET pending = pending - $2, earned = earned - $3, updated_at = $4, tier_id = ",
    tier_for!("wallets.earned - $3"),
    " WHERE id = $1"
);
/// A pending earn `$2` micro-tokens smaller, cancelled at `$3` when nothing is left (SET
/// expressions read the row as it was).
const CANCEL_PENDING: &str = "UPDATE pending_earns SET amount = amount - $2, \
     status = CASE WHEN amount = $2 THEN 'cancelled' ELSE status END, \
     settled_at = CASE WHEN amount = $2 THEN $3 ELSE settled_at END \
     WHERE transaction_id = $1 AND status = 'pending'";

/// A return of (part of) an earn's purchase.
pub(super) struct Returned<'a> {
    pub earn: &'a Transaction,
    /// The value returned; `None`: all of it not returned yet.
    pub value: Option<Decimal>,
    /// The earn's rule set (for a part's rounding): given with `value`.
    pub rules: Option<&'a RuleSet>,
    pub shortfall: Shortfall,
    /// When it is written, as the store's clock says.
    pub at: DateTime<Utc>,
}

impl Returned<'_> {
    /// The value this return takes off the earn and the micro-tokens that come with it, as the
    /// earn's earlier reversals leave them; `Refused` (`reversal_exceeds_earn`) when more than
    /// is left. Reads only.
    pub(super) async fn share(&self, tx: &mut impl Tx) -> Result<(Decimal, i64), StoreError> {
        let earlier: Vec<(Option<String>, i64)> = tx.rows(REVERSED, params![self.earn.id]).await?;
        self.share_after(&earlier)
    }

    /// Takes `share` (from `share`) back from the earn's wallet at `position`, under its lock.
    pub(super) async fn take_back(
        &self,
        tx: &mut impl Tx,
        position: Option<Position<DateTime<Utc>>>,
        (value, tokens): (Decimal, i64),
    ) -> Result<Moved, StoreError> {
        let earn = self.earn;
        let (expires_at,): (Option<DateTime<Utc>>,) = tx
            .row(EXPIRES, params![earn.id])
            .await?
            .ok_or(StoreError::NotFound {
                what: "transaction",
            })?;
        let lot = Earn {
            date: earn.date,
            id: earn.id.clone(),
            amount: earn.amount.micros(),
            expires_at,
        };
        let (spent, short) = take(tx, &earn.wallet_id, position, tokens, Some(&lot)).await?;
        let (amount, owed, forgiven) = match self.shortfall {
            _ if short == 0 => (tokens, 0, None),
            Shortfall::Debt => (tokens, short, None),
            Shortfall::Clip => (tokens - short, 0, Some(short)),
            Shortfall::Refuse => {
                return Err(StoreError::refused(
                    "reversal_shortfall",
                    Some("amount".into()),
                    format!(
                        "the member has already spent {} of the {} tokens this return takes \
                         back, and the campaign's policy refuses a shortfall",
                        Tokens::from_micros(short),
                        Tokens::from_micros(tokens)
                    ),
                ));
            }
        };
        let args = params![earn.wallet_id, amount, owed, tokens, self.at];
        tx.execute(TAKE_BACK, args).await?;
        Ok(Moved {
            amount,
            source_amount: Some(value.normalize().to_string()),
            forgiven,
            lots: spent.takes,
        })
    }

    /// Takes `share` (from `share`) off the earn's tokens while they are pending (`counted`:
    /// they count toward lifetime earnings already), under its wallet's lock: nothing leaves
    /// the balance or the lots, the earn vests that much less (nothing: it is cancelled).
    pub(super) async fn take_back_pending(
        &self,
        tx: &mut impl Tx,
        (value, tokens): (Decimal, i64),
        counted: bool,
    ) -> Result<Moved, StoreError> {
        let (earn, at) = (self.earn, self.at);
        let args = params![earn.id, tokens, at];
        if tx.execute(CANCEL_PENDING, args).await? != 1 {
            return Err(StoreError::NotCommitted(format!(
                "earn {} vested meanwhile",
                earn.id
            )));
        }
        let earned = if counted { tokens } else { 0 };
        let args = params![earn.wallet_id, tokens, earned, at];
        tx.execute(TAKE_BACK_PENDING, args).await?;
        Ok(Moved {
            amount: tokens,
            source_amount: Some(value.normalize().to_string()),
            forgiven: None,
            // Recorded as taken from the earn's lot: the lot holds what vests, the earn less
            // its reversals.
            lots: vec![(earn.id.clone(), tokens)],
        })
    }

    /// The value this return takes off the earn and the micro-tokens that come with it, given
    /// what `earlier` reversals took (each one's value and tokens).
    fn share_after(&self, earlier: &[(Option<String>, i64)]) -> Result<(Decimal, i64), StoreError> {
        let earn = self.earn;
        let value_of = |text: Option<&str>| {
            text.map_or(Ok(Decimal::ZERO), |t| {
                t.parse::<Decimal>().map_err(|_| {
                    StoreError::NotCommitted(format!("transaction {}: amount `{t}`", earn.id))
                })
            })
        };
        let whole = value_of(earn.source_amount.as_deref())?;
        let mut value_left = whole;
        let mut tokens_left = earn.amount.micros();
        for (value, tokens) in earlier {
            value_left -= value_of(value.as_deref())?;
            tokens_left -= tokens;
        }
        let value = self.value.unwrap_or(value_left);
        let exceeds = |left: String| {
            StoreError::refused(
                "reversal_exceeds_earn",
                Some("amount".into()),
                format!("{left} of the earn's {whole} is left to reverse"),
            )
        };
        if value > value_left || (value_left.is_zero() && tokens_left == 0) {
            return Err(exceeds(value_left.normalize().to_string()));
        }
        if value == value_left {
            return Ok((value, tokens_left));
        }
        // A part: the same part of the tokens, rounded as the earn was. (`value < value_left`,
        // so the earn's value is more than 0.)
        let rules = self.rules.ok_or_else(|| {
            StoreError::NotCommitted("a part of an earn returned without its rule set".into())
        })?;
        let share = earn
            .amount
            .to_decimal()
            .checked_mul(value)
            .and_then(|t| t.checked_div(whole))
            .ok_or_else(|| StoreError::invalid("amount", "is too large"))?;
        let tokens = Tokens::from_decimal(rules.round(share))
            .map_err(|why| StoreError::invalid("amount", why))?;
        Ok((value, tokens.micros().clamp(0, tokens_left)))
    }
}
