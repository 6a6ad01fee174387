//! An earn under its campaign's rules: the one evaluation both API earns and batch-file rows go
//! through before they are credited.

use std::str::FromStr;
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rules::{Context, Decimal, Row, RuleSet};
use serde_json::Value;

pub use super::request::{Limited, WalletContext};
use crate::{Credit, EarnInput, EarnReplay, RuleBook, StoreError, Tokens};

/// What the rules are given for one earn: its own fields, and its wallet and member as they
/// were before it. The one place a rules `Row` and `Context` are made: for crediting (API earns
/// and batch rows), for `rules test` samples and for backtests over recorded earns, so the
/// three cannot disagree about what a rule sees.
#[derive(Debug, Clone, Copy)]
pub struct RulesInput<'a> {
    pub earn_id: &'a str,
    /// The purchase amount as given (a decimal number).
    pub amount: &'a str,
    pub date: DateTime<Utc>,
    /// The wallet's currency.
    pub currency: &'a str,
    pub description: Option<&'a str>,
    pub meta: Option<&'a Value>,
    pub wallet_tier: Option<&'a str>,
    pub wallet_balance: Tokens,
    pub member_status: &'a str,
    /// The wallet's id and its owner's: whose uses a `wallet` or `member` limit counts.
    pub wallet_id: &'a str,
    pub member_id: Option<&'a str>,
    /// An activity's type (see `EarnInput::activity`).
    pub activity: Option<&'a str>,
}

impl<'a> RulesInput<'a> {
    /// The row and context the rules evaluate, or why the amount is not a number.
    pub fn parts(&self) -> Result<(Row<'a>, Context<'a>), String> {
        let Ok(amount) = Decimal::from_str(self.amount) else {
            return Err(format!("amount `{}` is not a number", self.amount));
        };
        let row = Row {
            id: self.earn_id,
            amount,
            date: self.date,
            currency: self.currency,
            description: self.description.unwrap_or(""),
            meta: self.meta,
            activity: self.activity,
        };
        let context = Context {
            wallet_tier: self.wallet_tier,
            wallet_balance: self.wallet_balance.to_decimal(),
            member_status: self.member_status,
            wallet_id: self.wallet_id,
            member_id: self.member_id,
        };
        Ok((row, context))
    }
}

impl EarnReplay {
    /// What the rules were given when this earn was credited.
    pub fn rules_input(&self) -> RulesInput<'_> {
        RulesInput {
            earn_id: &self.earn_id,
            amount: &self.source_amount,
            date: self.date,
            currency: &self.currency,
            description: self.description.as_deref(),
            meta: self.meta.as_ref(),
            wallet_tier: self.wallet_tier.as_deref(),
            wallet_balance: self.wallet_balance,
            member_status: &self.member_status,
            wallet_id: &self.wallet_id,
            member_id: Some(&self.member_id),
            activity: self.activity.as_deref(),
        }
    }
}

/// Where an earn goes.
pub struct Target<'a> {
    pub org_id: &'a str,
    pub campaign_id: &'a str,
    pub wallet_id: &'a str,
    pub wallet: &'a WalletContext,
}

/// Why an earn is not credited.
#[derive(Debug, Clone, PartialEq)]
pub enum Refusal {
    /// Its amount is not a number, or the rules gave tokens the ledger cannot hold.
    Rules(String),
    /// The wallet's balance or lifetime earnings would pass `Tokens::MAX`.
    Ceiling(String),
    /// The evaluation failed (a defect, logged).
    Failed(String),
}

impl Refusal {
    /// The reason an earn request's status gives.
    pub(crate) fn reason(self) -> String {
        match self {
            Refusal::Rules(reason) => reason,
            Refusal::Ceiling(reason) => format!("balance_ceiling: {reason}"),
            Refusal::Failed(reason) => format!("internal_error: {reason}"),
        }
    }
}

/// The credit `earn` earns at `target` under the campaign's active rules, or (inner `Err`) why it
/// cannot be credited.
pub(crate) async fn credit_for(
    book: &RuleBook,
    target: &Target<'_>,
    earn: &EarnInput,
    request_id: Option<String>,
) -> Result<Result<Credit, Refusal>, StoreError> {
    let (version, rules) = book.active(target.org_id, target.campaign_id).await?;
    Ok(evaluate(version, &rules, target, earn, request_id))
}

/// The credit `earn` earns at `target` under `rules` (version `version` of the campaign's rules),
/// or why it cannot be credited. A panic in the rules fails this earn alone.
pub fn evaluate(
    version: Option<i64>,
    rules: &Arc<RuleSet>,
    target: &Target<'_>,
    earn: &EarnInput,
    request_id: Option<String>,
) -> Result<Credit, Refusal> {
    let run = || Ok(evaluate_unguarded(version, rules, target, earn, request_id));
    match crate::error::unpanicked("evaluating an earn", run) {
        Ok(outcome) => outcome,
        Err(err) => Err(Refusal::Failed(err.to_string())),
    }
}

fn evaluate_unguarded(
    version: Option<i64>,
    rules: &Arc<RuleSet>,
    target: &Target<'_>,
    earn: &EarnInput,
    request_id: Option<String>,
) -> Result<Credit, Refusal> {
    #[cfg(test)]
    crate::faults::fault(earn.description.as_deref(), "evaluate");
    let wallet = target.wallet;
    let input = RulesInput {
        earn_id: &earn.earn_id,
        amount: &earn.amount,
        date: earn.date,
        currency: &wallet.currency,
        description: earn.description.as_deref(),
        meta: earn.meta.as_ref(),
        wallet_tier: wallet.tier.as_deref(),
        wallet_balance: Tokens::from_micros(wallet.balance),
        member_status: &wallet.status,
        wallet_id: target.wallet_id,
        member_id: Some(&wallet.member_id),
        activity: earn.activity.as_deref(),
    };
    let (row, ctx) = input.parts().map_err(Refusal::Rules)?;
    let outcome = rules.evaluate(&row, &ctx);
    let tokens = Tokens::from_decimal(outcome.tokens).map_err(Refusal::Rules)?;
    within_ceiling(wallet.balance.max(wallet.earned), tokens)?;
    Ok(Credit {
        org_id: target.org_id.to_string(),
        campaign_id: target.campaign_id.to_string(),
        earn: earn.clone(),
        wallet_id: target.wallet_id.to_string(),
        currency: wallet.currency.clone(),
        tokens,
        trace: rules.compact(&outcome.steps),
        rule_version: version,
        meta_text: earn.meta.as_ref().map(crate::backend::direct::json),
        request_id,
        batch_id: None,
        pending_days: rules.pending_days(&outcome.steps),
        converts_referral: earn.activity.is_none() && rules.referral_converts_on().is_none(),
        limited: rules.has_limits().then(|| {
            Box::new(Limited {
                rules: Arc::clone(rules),
                wallet: wallet.clone(),
            })
        }),
    })
}

/// Refuses `tokens` that would take past `Tokens::MAX` a wallet whose balance and lifetime
/// earnings are at most `held` micro-tokens. (The write checks again, under the wallet's lock:
/// see `credit`.)
pub fn within_ceiling(held: i64, tokens: Tokens) -> Result<(), Refusal> {
    let max = Tokens::MAX.micros();
    let micros = tokens.micros();
    if micros > 0 && held > max - micros {
        return Err(Refusal::Ceiling(format!(
            "{tokens} more tokens would take the wallet past the ledger's {} tokens",
            Tokens::MAX
        )));
    }
    Ok(())
}
