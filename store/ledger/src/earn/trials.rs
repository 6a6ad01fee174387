//! Trying a candidate rule set without changing anything: on sample rows an operator gives
//! (`try_rows`, a CSV file of earns), and on a campaign's recorded earns over a period
//! (`Ledger::backtest`). The CLI's `rules test` and `rules backtest` and the admin API's give
//! the same answers because they are these.

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use rules::{Decimal, RuleSet, Step, Tally};
use serde_json::{Map, Value};

use super::evaluate::RulesInput;
use crate::{Campaign, Ledger, StoreError, Tokens};

/// The most sample rows one test takes.
pub const MAX_SAMPLE_ROWS: usize = 10_000;

/// One sample row under the candidate: its tokens and trace, or why it could not be read.
#[derive(Debug, Clone, PartialEq)]
pub struct RowTrial {
    /// Its line in the file (the header is line 1).
    pub line: usize,
    pub outcome: Result<Tried, String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Tried {
    pub id: String,
    pub amount: String,
    pub tokens: Decimal,
    /// Each rule's step, in words.
    pub trace: Vec<String>,
}

/// Evaluates `rules` on each row of `csv`: columns `amount` and `date` (RFC 3339) required;
/// `id`, `currency`, `description`, `wallet.id`, `wallet.tier`, `wallet.balance`, `member.id`,
/// `member.status` and `meta.<path>` optional; a row with an `activity.type` is an activity
/// (its amount may be empty), its `activity.attributes.<path>` its attributes. Limits count the rows as a load would: in date
/// order, then row order, from nothing used. `Invalid` naming `rows` for a file that is not CSV
/// with those columns, or that holds more than `MAX_SAMPLE_ROWS`; a row's own problem is its
/// outcome.
pub fn try_rows(rules: &RuleSet, csv: &[u8]) -> Result<Vec<RowTrial>, StoreError> {
    let mut reader = csv::ReaderBuilder::new().flexible(true).from_reader(csv);
    let headers = reader
        .headers()
        .map_err(|e| StoreError::invalid("rows", format!("not a CSV file: {e}")))?
        .clone();
    let names: Vec<&str> = headers.iter().map(str::trim).collect();
    if !names.contains(&"amount") || !names.contains(&"date") {
        return Err(StoreError::invalid(
            "rows",
            "the rows need `amount` and `date` columns",
        ));
    }
    let mut samples = Vec::new();
    for (i, record) in reader.records().enumerate() {
        if i == MAX_SAMPLE_ROWS {
            let message = format!("at most {MAX_SAMPLE_ROWS} rows");
            return Err(StoreError::invalid("rows", message));
        }
        let sample = record
            .map_err(|e| e.to_string())
            .and_then(|record| sample(&names, &record));
        samples.push(sample);
    }
    let mut order: Vec<usize> = (0..samples.len()).collect();
    order.sort_by_key(|&i| (samples[i].as_ref().ok().map(|s| s.date), i));
    let mut outcomes: Vec<Option<Result<Tried, String>>> = vec![None; samples.len()];
    let (mut counters, mut steps, mut uses) = (Tally::new(), Vec::new(), Vec::new());
    for i in order {
        let outcome = samples[i]
            .as_ref()
            .map_err(Clone::clone)
            .and_then(|sample| {
                let input = sample.rules_input();
                let (row, context) = input.parts()?;
                let tokens =
                    rules.evaluate_counted(&row, &context, &mut counters, &mut steps, &mut uses);
                counters.add(&uses);
                Ok(Tried {
                    trace: rules.explain(&steps),
                    tokens,
                    id: sample.id.clone(),
                    amount: sample.amount.clone(),
                })
            });
        outcomes[i] = Some(outcome);
    }
    Ok(outcomes
        .into_iter()
        .enumerate()
        .filter_map(|(i, outcome)| {
            Some(RowTrial {
                line: i + 2,
                outcome: outcome?,
            })
        })
        .collect())
}

/// One sample row, owned, before it is lent to the engine as a `RulesInput`.
struct Sample {
    id: String,
    amount: String,
    date: DateTime<Utc>,
    currency: String,
    description: String,
    meta: Value,
    tier: Option<String>,
    balance: Tokens,
    status: String,
    wallet: String,
    member: Option<String>,
    /// A row of an activity (its `activity.type`), its attributes in `meta`.
    activity: Option<String>,
}

impl Sample {
    fn rules_input(&self) -> RulesInput<'_> {
        RulesInput {
            earn_id: &self.id,
            amount: &self.amount,
            date: self.date,
            currency: &self.currency,
            description: Some(&self.description),
            meta: Some(&self.meta),
            wallet_tier: self.tier.as_deref(),
            wallet_balance: self.balance,
            member_status: &self.status,
            wallet_id: &self.wallet,
            member_id: self.member.as_deref(),
            activity: self.activity.as_deref(),
        }
    }
}

fn sample(names: &[&str], record: &csv::StringRecord) -> Result<Sample, String> {
    let mut s = Sample {
        id: String::new(),
        amount: String::new(),
        // The `date` column is required: every row sets it.
        date: DateTime::<Utc>::UNIX_EPOCH,
        currency: String::new(),
        description: String::new(),
        meta: Value::Object(Map::new()),
        tier: None,
        balance: Tokens::ZERO,
        status: "active".into(),
        wallet: String::new(),
        member: None,
        activity: None,
    };
    for (name, value) in names.iter().zip(record.iter()) {
        let value = value.trim();
        match *name {
            "id" => s.id = value.to_string(),
            "amount" => s.amount = value.to_string(),
            "date" => {
                s.date = DateTime::parse_from_rfc3339(value)
                    .map_err(|_| format!("date `{value}` is not RFC 3339 (2026-11-18T10:15:00Z)"))?
                    .with_timezone(&Utc);
            }
            "currency" => s.currency = value.to_string(),
            "description" => s.description = value.to_string(),
            "wallet.tier" if !value.is_empty() => s.tier = Some(value.to_string()),
            "wallet.balance" if !value.is_empty() => {
                s.balance =
                    Tokens::from_text(value).map_err(|why| format!("wallet.balance: {why}"))?;
            }
            "member.status" if !value.is_empty() => s.status = value.to_string(),
            "wallet.id" => s.wallet = value.to_string(),
            "member.id" if !value.is_empty() => s.member = Some(value.to_string()),
            "activity.type" if !value.is_empty() => s.activity = Some(value.to_string()),
            key => {
                // An activity's attributes ride in `meta`, as when an activity is awarded.
                let path = key.strip_prefix("meta.");
                if let Some(path) = path.or_else(|| key.strip_prefix("activity.attributes."))
                    && !value.is_empty()
                    && let Value::Object(meta) = &mut s.meta
                {
                    let path: Vec<&str> = path.split('.').collect();
                    seam::meta::insert(meta, &path, seam::meta::cell_value(value));
                }
            }
        }
    }
    if s.activity.is_some() && s.amount.is_empty() {
        // An activity has no amount: its award reads none.
        s.amount = "0".into();
    }
    Ok(s)
}

/// A candidate rule set over a campaign's recorded earns: what each earned then and would
/// earn under it, nothing changed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Backtest {
    pub transactions: u64,
    /// Earns without a readable amount, left out.
    pub unreadable: u64,
    pub current: Decimal,
    pub candidate: Decimal,
    /// Per rule id (`~` is rounding), in id order.
    pub per_rule: Vec<RuleTotals>,
    /// The ten wallets whose tokens would change most.
    pub top_wallets: Vec<WalletChange>,
    /// Each limit (and the budget) that cut an earn under the candidate, in rule order.
    pub limits: Vec<LimitCuts>,
}

/// How often a limit of the candidate cut an earn: the rule did not fire, or gave less (for
/// the budget, the earn gave less).
#[derive(Debug, Clone, PartialEq)]
pub struct LimitCuts {
    /// The rule's id; `None` for the campaign's budget.
    pub rule: Option<String>,
    /// As a trace shows it: `member/month`, `meta.store.id/day`, `campaign/month`.
    pub limit: String,
    pub cuts: u64,
}

#[derive(Debug, Clone, PartialEq, Default)]
pub struct RuleTotals {
    pub rule: String,
    /// What the rule gave under the current rules (from the recorded traces).
    pub current: Decimal,
    pub candidate: Decimal,
    /// How often it fired under the candidate.
    pub fired: u64,
}

#[derive(Debug, Clone, PartialEq)]
pub struct WalletChange {
    pub wallet_id: String,
    pub current: Decimal,
    pub candidate: Decimal,
}

/// How many wallets a backtest names.
const TOP_WALLETS: usize = 10;

/// Backtests (scope: `&Campaign`).
impl Ledger {
    /// Re-evaluates the campaign's earns dated in `from..=to` under `rules`, changing nothing.
    /// Limits count the period's earns in date order from nothing used, as a load of them
    /// would.
    #[tracing::instrument(skip_all)]
    pub async fn backtest(
        &self,
        campaign: &Campaign,
        rules: &RuleSet,
        from: DateTime<Utc>,
        to: DateTime<Utc>,
    ) -> Result<Backtest, StoreError> {
        let mut per_rule: BTreeMap<String, RuleTotals> = BTreeMap::new();
        let mut wallets: HashMap<String, (Decimal, Decimal)> = HashMap::new();
        let mut test = Backtest::default();
        let (mut steps, mut uses, mut counters) = (Vec::new(), Vec::new(), Tally::new());
        let mut cuts: Vec<LimitCuts> = Vec::new();
        let mut after: Option<(DateTime<Utc>, String)> = None;
        loop {
            let last = after.as_ref().map(|(date, id)| (*date, id.as_str()));
            let page = self.earns_between(campaign, from, to, last, 5_000).await?;
            let Some(last) = page.last() else { break };
            after = Some((last.date, last.transaction_id.clone()));
            for earn in &page {
                let Ok((row, ctx)) = earn.rules_input().parts() else {
                    test.unreadable += 1;
                    continue;
                };
                let tokens =
                    rules.evaluate_counted(&row, &ctx, &mut counters, &mut steps, &mut uses);
                counters.add(&uses);
                for (rule, limit) in steps.iter().filter_map(|step| rules.cut_by(step)) {
                    match cuts
                        .iter_mut()
                        .find(|c| c.rule.as_deref() == rule && c.limit == limit)
                    {
                        Some(cut) => cut.cuts += 1,
                        None => cuts.push(LimitCuts {
                            rule: rule.map(str::to_string),
                            limit,
                            cuts: 1,
                        }),
                    }
                }
                for step in &steps {
                    let (rule, contribution, fired) = match *step {
                        Step::Fired { rule, contribution } => {
                            (rules.rule_id(rule).to_string(), contribution, 1)
                        }
                        Step::Rounded { contribution } => ("~".to_string(), contribution, 0),
                        Step::Budget { contribution, .. } => ("$".to_string(), contribution, 0),
                        Step::Skipped { .. } | Step::Limited { .. } => continue,
                    };
                    let totals = per_rule.entry(rule.clone()).or_default();
                    totals.rule = rule;
                    totals.candidate += contribution;
                    totals.fired += fired;
                }
                let trace = earn.trace.as_deref().unwrap_or("");
                for (rule, contribution) in RuleSet::contributions(trace) {
                    let totals = per_rule.entry(rule.clone()).or_default();
                    totals.rule = rule;
                    totals.current += contribution;
                }
                let was = earn.tokens.to_decimal();
                let entry = wallets.entry(earn.wallet_id.clone()).or_default();
                entry.0 += was;
                entry.1 += tokens;
                test.current += was;
                test.candidate += tokens;
                test.transactions += 1;
            }
        }
        let mut movers: Vec<_> = wallets.into_iter().filter(|(_, (a, b))| a != b).collect();
        movers.sort_by(|a, b| {
            (b.1.1 - b.1.0)
                .abs()
                .cmp(&(a.1.1 - a.1.0).abs())
                .then(a.0.cmp(&b.0))
        });
        movers.truncate(TOP_WALLETS);
        test.per_rule = per_rule.into_values().collect();
        test.limits = cuts;
        test.top_wallets = movers
            .into_iter()
            .map(|(wallet_id, (current, candidate))| WalletChange {
                wallet_id,
                current,
                candidate,
            })
            .collect();
        Ok(test)
    }
}
