//! A compiled rule set and its evaluation: rules in priority order, each maybe changing the
//! running total, then the programme's rounding.

use chrono::{NaiveDate, NaiveDateTime};
use chrono_tz::Tz;
use rust_decimal::{Decimal, RoundingStrategy};

use crate::compile::{Compiler, Typed};
use crate::error::{CompileError, CompileErrors, ErrorKind};
use crate::facts::{Context, Facts, Row};
use crate::format::{ExprSource, RoundingMode, RuleSetSource};
use crate::limits::{
    CounterKey, Counters, Cut, Limit, LimitInfo, Scope, Tally, Use, compile_budget, compile_limits,
};
use crate::nodes::{Bool, Num, Skip};
use crate::window::Window;

/// What a rule does to the running total when it fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Sets the total (the base award).
    Award,
    Multiply,
    Add,
    /// Lowers the total to at most the value (a per-transaction cap).
    Cap,
    /// Changes nothing; only `stop`.
    Stop,
    /// Changes nothing; only `pending_days`.
    Pending,
}

impl Effect {
    pub fn as_str(self) -> &'static str {
        match self {
            Effect::Award => "award",
            Effect::Multiply => "multiply",
            Effect::Add => "add",
            Effect::Cap => "cap",
            Effect::Stop => "stop",
            Effect::Pending => "pending",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Rule {
    pub id: String,
    pub description: String,
    pub priority: i64,
    /// It applies to activities (`on = "activity"`), not transactions.
    pub activity: bool,
    pub window: Option<Window>,
    pub when: Option<Bool>,
    pub effect: Effect,
    pub value: Option<Num>,
    pub stop: bool,
    pub pending_days: Option<u32>,
    pub limits: Vec<Limit>,
}

/// A rule as shown to people: id, description, priority and effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleInfo {
    pub id: String,
    pub description: String,
    pub priority: i64,
    pub effect: Effect,
    pub stop: bool,
    /// The days its earns stay pending when it fires.
    pub pending_days: Option<u32>,
    /// It applies to activities (`on = "activity"`), not transactions.
    pub activity: bool,
}

/// The longest a rule (or a campaign's policy) may keep an earn's tokens pending: ten years.
pub const MAX_PENDING_DAYS: u32 = 3_650;

/// A compiled rule set, ready to evaluate transactions. Cheap to share between threads.
#[derive(Debug, Clone)]
pub struct RuleSet {
    rules: Vec<Rule>,
    zone: Tz,
    rounding: RoundingMode,
    decimals: u32,
    meta_paths: Vec<Vec<String>>,
    uses_local: bool,
    /// The most tokens all rules together give per period.
    budget: Option<Limit>,
    /// The activity type that converts a referral (`[programme] referral_converts_on`).
    referral_converts_on: Option<String>,
}

/// The activity a referral's conversion records for both members.
pub const REFERRAL_CONVERTED: &str = "referral.converted";

/// The most limits one rule may carry.
const MAX_LIMITS: usize = 16;

/// One step of the trace: a rule that fired (with what it added to the total, negative for a
/// cap) or a rule skipped because a value it needed was missing or unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Fired {
        rule: u16,
        contribution: Decimal,
    },
    Skipped {
        rule: u16,
        reason: Skip,
    },
    /// The final rounding (and the floor at zero) changed the total by this much.
    Rounded {
        contribution: Decimal,
    },
    /// Limit `limit` (its index in the rule's `limits`) of a rule cut it: it did not fire, or
    /// gave only what was left.
    Limited {
        rule: u16,
        limit: u8,
        cut: Cut,
    },
    /// The campaign's budget had only `left` tokens for the period; the earn gave
    /// `contribution` (negative) less.
    Budget {
        left: Decimal,
        contribution: Decimal,
    },
}

/// The tokens a transaction earns and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub tokens: Decimal,
    pub steps: Vec<Step>,
}

impl RuleSet {
    /// Reads and compiles a rule set written in TOML (see `format`), reporting every problem.
    pub fn parse(text: &str) -> Result<RuleSet, CompileErrors> {
        let source: RuleSetSource = toml::from_str(text).map_err(|err| {
            CompileErrors(vec![CompileError {
                kind: ErrorKind::Format,
                rule: None,
                field: "file".into(),
                position: err.span().map(|span| line_column(text, span.start)),
                message: err.message().to_string(),
            }])
        })?;
        RuleSet::compile(&source)
    }

    /// The rule set a campaign has until it is given one: one token per unit of amount, floored.
    pub fn one_per_unit() -> RuleSet {
        RuleSet::parse("[[rule]]\nid = \"one-per-unit\"\ndescription = \"One token per unit of amount\"\npriority = 0\naward = \"amount\"\n")
            .expect("the default rule set compiles")
    }

    pub fn compile(source: &RuleSetSource) -> Result<RuleSet, CompileErrors> {
        let mut errors = Vec::new();
        let mut error = |kind, rule: Option<&str>, field: &str, position, message: String| {
            errors.push(CompileError {
                kind,
                rule: rule.map(str::to_string),
                field: field.to_string(),
                position,
                message,
            });
        };
        let zone = match source.programme.time_zone.as_deref() {
            None => Tz::UTC,
            Some(name) => name.parse().unwrap_or_else(|_| {
                error(
                    ErrorKind::InvalidWindow,
                    None,
                    "programme.time_zone",
                    None,
                    format!(
                        "unknown time zone `{name}`; use an IANA name such as Europe/Amsterdam"
                    ),
                );
                Tz::UTC
            }),
        };
        let budget = source
            .programme
            .budget
            .as_ref()
            .and_then(|b| match compile_budget(b) {
                Ok(limit) => Some(limit),
                Err(problems) => {
                    for (field, message) in problems {
                        error(ErrorKind::InvalidLimit, None, &field, None, message);
                    }
                    None
                }
            });
        let referral_converts_on = source.programme.referral_converts_on.clone();
        if let Some(kind) = &referral_converts_on {
            let problem = crate::facts::activity_type_problem(kind).or_else(|| {
                (kind == REFERRAL_CONVERTED)
                    .then(|| format!("`{kind}` is what a conversion records, not what makes one"))
            });
            if let Some(problem) = problem {
                let field = "programme.referral_converts_on";
                error(ErrorKind::InvalidRule, None, field, None, problem);
            }
        }
        let decimals = source.programme.decimals.unwrap_or(0);
        // The ledger keeps tokens to 6 decimals.
        if decimals > 6 {
            error(
                ErrorKind::InvalidRule,
                None,
                "programme.decimals",
                None,
                "at most 6 decimals".into(),
            );
        }
        let mut meta_paths = Vec::new();
        let mut uses_local = false;
        let mut rules = Vec::new();
        for (i, rule) in source.rules.iter().enumerate() {
            let id = rule.id.trim();
            let name = Some(id);
            if id.is_empty() {
                error(
                    ErrorKind::InvalidRule,
                    None,
                    &format!("rule[{i}].id"),
                    None,
                    "must not be empty".into(),
                );
            }
            if source.rules[..i].iter().any(|r| r.id.trim() == id) {
                error(
                    ErrorKind::InvalidRule,
                    name,
                    "id",
                    None,
                    format!("another rule is also called `{id}`"),
                );
            }
            if let Some(other) = source.rules[..i]
                .iter()
                .find(|r| r.priority == rule.priority)
            {
                error(
                    ErrorKind::InvalidRule,
                    name,
                    "priority",
                    None,
                    format!(
                        "rule `{}` has the same priority {}; priorities decide the order, so they must differ",
                        other.id, rule.priority
                    ),
                );
            }
            let effects: Vec<(Effect, &ExprSource)> = [
                (Effect::Award, &rule.award),
                (Effect::Multiply, &rule.multiply),
                (Effect::Add, &rule.add),
                (Effect::Cap, &rule.cap),
            ]
            .into_iter()
            .filter_map(|(effect, source)| source.as_ref().map(|s| (effect, s)))
            .collect();
            if effects.len() > 1 {
                let names: Vec<_> = effects.iter().map(|(e, _)| e.as_str()).collect();
                error(
                    ErrorKind::InvalidRule,
                    name,
                    "effect",
                    None,
                    format!("has {}; a rule has one effect", names.join(" and ")),
                );
            } else if effects.is_empty() && !rule.stop && rule.pending_days.is_none() {
                error(
                    ErrorKind::InvalidRule,
                    name,
                    "effect",
                    None,
                    "needs one of award, multiply, add, cap, stop or pending_days".into(),
                );
            }
            if rule
                .pending_days
                .is_some_and(|days| days > MAX_PENDING_DAYS)
            {
                error(
                    ErrorKind::InvalidRule,
                    name,
                    "pending_days",
                    None,
                    format!("at most {MAX_PENDING_DAYS} (ten years)"),
                );
            }
            let window = rule.active.as_ref().and_then(|w| match Window::parse(w) {
                Ok(window) => Some(window),
                Err(problems) => {
                    for (field, message) in problems {
                        error(ErrorKind::InvalidWindow, name, field, None, message);
                    }
                    None
                }
            });
            uses_local |= window.is_some();
            if rule.limits.len() > MAX_LIMITS {
                error(
                    ErrorKind::InvalidLimit,
                    name,
                    "limits",
                    None,
                    format!("at most {MAX_LIMITS} limits a rule"),
                );
            }
            let activity = match rule.on.as_deref().map(str::trim) {
                None | Some("transaction") => false,
                Some("activity") => true,
                Some(other) => {
                    error(
                        ErrorKind::InvalidRule,
                        name,
                        "on",
                        None,
                        format!(
                            "`{other}` is not what a rule applies to; use transaction or activity"
                        ),
                    );
                    false
                }
            };
            let limits = match compile_limits(id, &rule.limits, activity, &mut meta_paths) {
                Ok(limits) => limits,
                Err(problems) => {
                    for (field, message) in problems {
                        error(ErrorKind::InvalidLimit, name, &field, None, message);
                    }
                    Vec::new()
                }
            };
            uses_local |= !limits.is_empty();

            let mut compiler = Compiler::new(&mut meta_paths, zone);
            compiler.activity = activity;
            let when = rule.when.as_ref().and_then(|text| {
                let compiled = compiler.expression(text).ok()?;
                let root = cel_root();
                compiler.boolean(&root, compiled).ok()
            });
            let when_errors = std::mem::take(&mut compiler.errors);
            let (effect, value) = match effects.first() {
                Some((effect, source)) => {
                    let value = compiler
                        .expression(&source.text())
                        .ok()
                        .and_then(|t| match t {
                            Typed::Num(n) => Some(n),
                            Typed::Meta(slot) => Some(Num::Meta(slot)),
                            other => {
                                compiler.errors.push((
                                    ErrorKind::TypeMismatch,
                                    None,
                                    format!("must give a number, not {}", other_name(&other)),
                                ));
                                None
                            }
                        });
                    (*effect, value)
                }
                None if rule.stop => (Effect::Stop, None),
                None => (Effect::Pending, None),
            };
            uses_local |= compiler.uses_local;
            let value_errors = std::mem::take(&mut compiler.errors);
            for (kind, position, message) in when_errors {
                error(kind, name, "when", position, message);
            }
            for (kind, position, message) in value_errors {
                error(kind, name, effect.as_str(), position, message);
            }
            rules.push(Rule {
                id: id.to_string(),
                description: rule.description.clone(),
                priority: rule.priority,
                activity,
                window,
                when,
                effect,
                value,
                stop: rule.stop,
                pending_days: rule.pending_days,
                limits,
            });
        }
        if meta_paths.len() > usize::from(u16::MAX) {
            error(
                ErrorKind::InvalidRule,
                None,
                "meta",
                None,
                "too many distinct meta keys".into(),
            );
        }
        if !errors.is_empty() {
            return Err(CompileErrors(errors));
        }
        rules.sort_by_key(|r| r.priority);
        Ok(RuleSet {
            rules,
            zone,
            rounding: source.programme.rounding.unwrap_or_default(),
            decimals,
            meta_paths,
            uses_local: uses_local || budget.is_some(),
            budget,
            referral_converts_on,
        })
    }

    pub fn rules(&self) -> impl Iterator<Item = RuleInfo> + '_ {
        self.rules.iter().map(|r| RuleInfo {
            id: r.id.clone(),
            description: r.description.clone(),
            priority: r.priority,
            effect: r.effect,
            stop: r.stop,
            pending_days: r.pending_days,
            activity: r.activity,
        })
    }

    /// Whether any rule has limits or the campaign a budget: an earn's tokens then depend on
    /// what came before it (`evaluate_counted`).
    pub fn has_limits(&self) -> bool {
        self.budget.is_some() || self.rules.iter().any(|r| !r.limits.is_empty())
    }

    /// Whether a rule applies to activities (`on = "activity"`).
    pub fn has_activity_rules(&self) -> bool {
        self.rules.iter().any(|r| r.activity)
    }

    /// The activity type whose arrival converts a member's pending referral in the campaign
    /// (`None`: the member's first completed earn does).
    pub fn referral_converts_on(&self) -> Option<&str> {
        self.referral_converts_on.as_deref()
    }

    /// Every limit, the rules' in priority order, then the budget.
    pub fn limits(&self) -> Vec<LimitInfo> {
        let rules = self
            .rules
            .iter()
            .flat_map(|r| r.limits.iter().map(move |l| (Some(r.id.clone()), l)));
        rules
            .chain(self.budget.iter().map(|l| (None, l)))
            .map(|(rule, l)| LimitInfo {
                rule,
                scope: l.scope_name(&self.meta_paths),
                period: l.period,
                counter: l.counter.clone(),
                times: l.times,
                tokens: l.tokens,
            })
            .collect()
    }

    /// Every counter an evaluation of `row` may read, with the buckets (first and last) it
    /// would read: each limit of every rule whose scope the row names, and the budget. What a
    /// store loads (and locks) before `evaluate_counted`, whichever rules then fire.
    pub fn counter_keys(
        &self,
        row: &Row,
        ctx: &Context,
    ) -> Vec<(CounterKey, NaiveDate, NaiveDate)> {
        let local = row.date.with_timezone(&self.zone).naive_local();
        let facts = Facts::new(row, ctx, &self.meta_paths, local);
        let day = local.date();
        let activity = row.activity.is_some();
        let limits = self
            .rules
            .iter()
            .filter(|r| r.activity == activity)
            .flat_map(|r| r.limits.iter());
        let mut keys: Vec<(CounterKey, NaiveDate, NaiveDate)> = limits
            .chain(self.budget.iter())
            .filter_map(|limit| {
                let scope = scope_value(limit, &facts).ok()?;
                let (from, to) = limit.period.window(day);
                let key = CounterKey {
                    counter: limit.counter.clone(),
                    scope,
                };
                Some((key, from, to))
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// The meta keys the rules read, as paths (`["store", "code"]` for `meta.store.code`).
    pub fn meta_paths(&self) -> &[Vec<String>] {
        &self.meta_paths
    }

    pub fn time_zone(&self) -> Tz {
        self.zone
    }

    /// The tokens `row` earns, with the trace.
    pub fn evaluate(&self, row: &Row, ctx: &Context) -> Outcome {
        let mut steps = Vec::new();
        let tokens = self.evaluate_into(row, ctx, &mut steps);
        Outcome { tokens, steps }
    }

    /// Like `evaluate`, writing the trace into `steps` (cleared first), so a loop over many
    /// rows can reuse one buffer. Limits count this transaction as the first of every period;
    /// where what came before matters, use `evaluate_counted`.
    pub fn evaluate_into(&self, row: &Row, ctx: &Context, steps: &mut Vec<Step>) -> Decimal {
        self.evaluate_counted(row, ctx, &mut Tally::new(), steps, &mut Vec::new())
    }

    /// The tokens `row` earns given what its limits and the budget already used (`counters`),
    /// the trace written into `steps` and the uses this earn makes into `uses` (both cleared
    /// first): the caller records them with the credit, and adds them to `counters` before the
    /// next transaction.
    pub fn evaluate_counted(
        &self,
        row: &Row,
        ctx: &Context,
        counters: &mut dyn Counters,
        steps: &mut Vec<Step>,
        uses: &mut Vec<Use>,
    ) -> Decimal {
        steps.clear();
        uses.clear();
        let local = if self.uses_local {
            row.date.with_timezone(&self.zone).naive_local()
        } else {
            NaiveDateTime::default()
        };
        let facts = Facts::new(row, ctx, &self.meta_paths, local);
        let mut total = Decimal::ZERO;
        let activity = row.activity.is_some();
        for (i, rule) in self.rules.iter().enumerate() {
            let index = i as u16;
            if rule.activity != activity {
                continue;
            }
            if rule
                .window
                .as_ref()
                .is_some_and(|w| !w.contains(facts.local))
            {
                continue;
            }
            match rule.when.as_ref().map_or(Ok(true), |w| w.eval(&facts)) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(reason) => {
                    steps.push(Step::Skipped {
                        rule: index,
                        reason,
                    });
                    continue;
                }
            }
            let next = match &rule.value {
                None => Ok(total),
                Some(value) => value.eval(&facts).and_then(|v| match rule.effect {
                    Effect::Award => Ok(v),
                    Effect::Multiply => total.checked_mul(v).ok_or(Skip::Overflow),
                    Effect::Add => total.checked_add(v).ok_or(Skip::Overflow),
                    Effect::Cap => Ok(total.min(v)),
                    Effect::Stop | Effect::Pending => Ok(total),
                }),
            };
            let next = match next {
                Ok(next) if !rule.limits.is_empty() => {
                    match self.within_limits(
                        index,
                        rule,
                        &facts,
                        next - total,
                        counters,
                        steps,
                        uses,
                    ) {
                        Some(contribution) => Ok(total + contribution),
                        None => continue,
                    }
                }
                other => other,
            };
            match next {
                Ok(next) => {
                    // A multiplier of 1, a bonus of 0 or a cap above the total changed nothing
                    // and would only lengthen the stored trace.
                    let changed = next != total
                        || matches!(rule.effect, Effect::Award | Effect::Stop | Effect::Pending)
                        || rule.stop
                        || rule.pending_days.is_some();
                    if changed {
                        steps.push(Step::Fired {
                            rule: index,
                            contribution: next - total,
                        });
                    }
                    total = next;
                    if rule.stop {
                        break;
                    }
                }
                Err(reason) => steps.push(Step::Skipped {
                    rule: index,
                    reason,
                }),
            }
        }
        let mut tokens = self.round(total.max(Decimal::ZERO));
        if tokens != total {
            steps.push(Step::Rounded {
                contribution: tokens - total,
            });
        }
        if let Some(budget) = &self.budget
            && tokens > Decimal::ZERO
        {
            let day = facts.local.date();
            let key = CounterKey {
                counter: budget.counter.clone(),
                scope: String::new(),
            };
            let (from, to) = budget.period.window(day);
            let ceiling = budget.tokens.unwrap_or_default();
            let left = (ceiling - counters.used(&key, from, to).tokens).max(Decimal::ZERO);
            if tokens > left {
                let given = left.round_dp_with_strategy(self.decimals, RoundingStrategy::ToZero);
                steps.push(Step::Budget {
                    left,
                    contribution: given - tokens,
                });
                tokens = given;
            }
            if tokens.is_zero() {
                // Nothing was given: no rule used its limits either.
                uses.clear();
            } else {
                uses.push(Use {
                    key,
                    bucket: budget.period.bucket(day),
                    tokens,
                });
            }
        }
        tokens
    }

    /// Applies a rule's limits to what it would add (`contribution`): what it gives within
    /// them (its uses pushed to `uses`), or `None` when it does not fire.
    #[allow(clippy::too_many_arguments)]
    fn within_limits(
        &self,
        index: u16,
        rule: &Rule,
        facts: &Facts,
        contribution: Decimal,
        counters: &mut dyn Counters,
        steps: &mut Vec<Step>,
        uses: &mut Vec<Use>,
    ) -> Option<Decimal> {
        let day = facts.local.date();
        let mut counted = Vec::with_capacity(rule.limits.len());
        let mut given = contribution;
        for (i, limit) in rule.limits.iter().enumerate() {
            let scope = match scope_value(limit, facts) {
                Ok(scope) => scope,
                Err(reason) => {
                    steps.push(Step::Skipped {
                        rule: index,
                        reason,
                    });
                    return None;
                }
            };
            let key = CounterKey {
                counter: limit.counter.clone(),
                scope,
            };
            let (from, to) = limit.period.window(day);
            let used = counters.used(&key, from, to);
            let limit_index = i as u8;
            if limit.times.is_some_and(|times| used.times >= times) {
                steps.push(Step::Limited {
                    rule: index,
                    limit: limit_index,
                    cut: Cut::Times,
                });
                return None;
            }
            if let Some(ceiling) = limit.tokens
                && given > Decimal::ZERO
            {
                let left = (ceiling - used.tokens).max(Decimal::ZERO);
                if given > left {
                    steps.push(Step::Limited {
                        rule: index,
                        limit: limit_index,
                        cut: Cut::Tokens { left },
                    });
                    given = left;
                }
            }
            counted.push((key, limit.period.bucket(day)));
        }
        if given.is_zero() && contribution > Decimal::ZERO {
            return None;
        }
        let tokens = given.max(Decimal::ZERO);
        uses.extend(counted.into_iter().map(|(key, bucket)| Use {
            key,
            bucket,
            tokens,
        }));
        Some(given)
    }

    /// `tokens` rounded as the programme rounds what a transaction earns (its `rounding` to its
    /// `decimals`): a share of an earn's tokens (a partial return) is rounded the same way.
    pub fn round(&self, tokens: Decimal) -> Decimal {
        let strategy = match self.rounding {
            RoundingMode::Floor => RoundingStrategy::ToNegativeInfinity,
            RoundingMode::Round => RoundingStrategy::MidpointAwayFromZero,
            RoundingMode::Ceil => RoundingStrategy::ToPositiveInfinity,
        };
        tokens.round_dp_with_strategy(self.decimals, strategy)
    }

    /// The days the earn evaluated into `steps` stays pending by its rules: what the last rule
    /// that fired with `pending_days` says (None: no rule says, the campaign's policy decides).
    pub fn pending_days(&self, steps: &[Step]) -> Option<u32> {
        steps.iter().rev().find_map(|step| match *step {
            Step::Fired { rule, .. } => self.rules[usize::from(rule)].pending_days,
            _ => None,
        })
    }

    /// The id of the rule a step names.
    pub fn rule_id(&self, index: u16) -> &str {
        &self.rules[usize::from(index)].id
    }

    /// The contributions recorded in a compact trace (see `compact`), by rule id; rounding is
    /// `~`, skipped rules are left out.
    pub fn contributions(compact: &str) -> Vec<(String, Decimal)> {
        compact
            .split(';')
            .filter_map(|part| {
                let (id, value) = part.rsplit_once(':')?;
                Some((id.to_string(), value.parse().ok()?))
            })
            .collect()
    }

    /// The trace in words, one line per step: `weekend: multiply +100 (Double on weekends)`.
    pub fn explain(&self, steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|step| match *step {
                Step::Fired { rule, contribution } => {
                    let rule = &self.rules[usize::from(rule)];
                    let stop = if rule.stop { ", then stop" } else { "" };
                    let pending = match rule.pending_days {
                        Some(days) => format!(", pending {days} days"),
                        None => String::new(),
                    };
                    format!(
                        "{}: {} {}{pending}{stop}",
                        rule.id,
                        rule.effect.as_str(),
                        signed(contribution)
                    )
                }
                Step::Skipped { rule, reason } => {
                    format!(
                        "{}: skipped, {}",
                        self.rules[usize::from(rule)].id,
                        self.reason(reason)
                    )
                }
                Step::Rounded { contribution } => format!("rounding: {}", signed(contribution)),
                Step::Limited { rule, limit, cut } => {
                    let (rule, limit) = self.limit_of(rule, limit);
                    let label = limit.label(&self.meta_paths);
                    match cut {
                        Cut::Times => format!(
                            "{}: limit {label} reached ({} times), not fired",
                            rule.id,
                            limit.times.unwrap_or_default()
                        ),
                        Cut::Tokens { left } => format!(
                            "{}: limit {label} had {} of {} tokens left",
                            rule.id,
                            left.normalize(),
                            limit.tokens.unwrap_or_default().normalize()
                        ),
                    }
                }
                Step::Budget { left, contribution } => format!(
                    "budget per {}: {} tokens left, {}",
                    self.budget
                        .as_ref()
                        .map_or(String::new(), |b| b.period.name()),
                    left.normalize(),
                    signed(contribution)
                ),
            })
            .collect()
    }

    /// The trace in one short line, for storing with a transaction: `base:+100;cap:-20;~:-0.5`
    /// (`~` is rounding; a skipped rule shows `?` and the reason).
    pub fn compact(&self, steps: &[Step]) -> String {
        use std::fmt::Write;
        // Written into one string: this runs for every credited row.
        let mut out = String::with_capacity(16 * steps.len());
        for (i, step) in steps.iter().enumerate() {
            if i > 0 {
                out.push(';');
            }
            let _ = match *step {
                Step::Fired { rule, contribution } => {
                    let id = &self.rules[usize::from(rule)].id;
                    write!(out, "{id}:{}", Signed(contribution))
                }
                Step::Skipped { rule, reason } => {
                    let id = &self.rules[usize::from(rule)].id;
                    write!(out, "{id}:?{}", self.reason(reason))
                }
                Step::Rounded { contribution } => write!(out, "~:{}", Signed(contribution)),
                Step::Limited { rule, limit, cut } => {
                    let (rule, limit) = self.limit_of(rule, limit);
                    let label = limit.label(&self.meta_paths);
                    match cut {
                        Cut::Times => write!(out, "{}:!{label}", rule.id),
                        Cut::Tokens { left } => {
                            write!(out, "{}:!{label}={}", rule.id, left.normalize())
                        }
                    }
                }
                Step::Budget { contribution, .. } => write!(out, "$:{}", Signed(contribution)),
            };
        }
        out
    }

    /// The limit a `Limited` or `Budget` step names: its rule's id (`None`: the campaign's
    /// budget) and the limit as a trace shows it (`member/month`, `campaign/month`).
    pub fn cut_by(&self, step: &Step) -> Option<(Option<&str>, String)> {
        match *step {
            Step::Limited { rule, limit, .. } => {
                let (rule, limit) = self.limit_of(rule, limit);
                Some((Some(rule.id.as_str()), limit.label(&self.meta_paths)))
            }
            Step::Budget { .. } => {
                let budget = self.budget.as_ref()?;
                Some((None, budget.label(&self.meta_paths)))
            }
            _ => None,
        }
    }

    fn limit_of(&self, rule: u16, limit: u8) -> (&Rule, &Limit) {
        let rule = &self.rules[usize::from(rule)];
        (rule, &rule.limits[usize::from(limit)])
    }

    fn reason(&self, reason: Skip) -> String {
        let key = |slot: u16| self.meta_paths[usize::from(slot)].join(".");
        match reason {
            Skip::MissingMeta(slot) => format!("{} is missing", key(slot)),
            Skip::WrongType(slot, expected) => format!("{} is not {expected}", key(slot)),
            Skip::DivisionByZero => "division by zero".into(),
            Skip::Overflow => "number too large".into(),
            Skip::NotANumber => "text is not a number".into(),
        }
    }
}

/// Whose uses a limit counts for this transaction: the member's or wallet's id, the meta
/// value as text, or empty for the campaign; a meta scope the transaction lacks is a skip.
fn scope_value(limit: &Limit, facts: &Facts) -> Result<String, Skip> {
    use crate::facts::MetaVal;
    let ctx = facts.ctx;
    Ok(match limit.scope {
        Scope::Member => match ctx.member_id {
            Some(member) => member.to_string(),
            None => format!("wallet:{}", ctx.wallet_id),
        },
        Scope::Wallet => ctx.wallet_id.to_string(),
        Scope::Campaign => String::new(),
        Scope::Meta(slot) => match facts.meta[usize::from(slot)] {
            MetaVal::Str(text) => text.to_string(),
            MetaVal::Num(n) => n.normalize().to_string(),
            MetaVal::Bool(b) => b.to_string(),
            MetaVal::Missing | MetaVal::Null => return Err(Skip::MissingMeta(slot)),
            MetaVal::Composite => return Err(Skip::WrongType(slot, "a single value")),
        },
    })
}

fn signed(d: Decimal) -> String {
    Signed(d).to_string()
}

/// A contribution as a trace writes it: `+100`, `-20`, `+0.5`.
struct Signed(Decimal);

impl std::fmt::Display for Signed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let d = self.0.normalize();
        if d.is_sign_negative() {
            write!(f, "{d}")
        } else {
            write!(f, "+{d}")
        }
    }
}

fn other_name(t: &Typed) -> &'static str {
    match t {
        Typed::Str(_) => "text",
        Typed::Bool(_) => "true/false",
        Typed::Time(_) => "a date-time",
        Typed::Num(_) | Typed::Meta(_) => "a number",
    }
}

/// An expression node standing for a whole expression, for errors about its type.
fn cel_root() -> cel::common::ast::IdedExpr {
    cel::common::ast::IdedExpr {
        id: u64::MAX,
        expr: cel::common::ast::Expr::Unspecified,
    }
}

fn line_column(source: &str, offset: usize) -> (usize, usize) {
    let before = &source[..offset.min(source.len())];
    (
        before.matches('\n').count() + 1,
        before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1,
    )
}
