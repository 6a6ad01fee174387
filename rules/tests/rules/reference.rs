//! Property test: on random rule sets and transactions, the compiled evaluator gives the same
//! tokens as a straightforward interpreter that walks CEL's syntax tree with dynamic values.

use std::str::FromStr;

use cel::common::ast::{CallExpr, Expr, IdedExpr, LiteralValue, SelectExpr};
use chrono::{DateTime, Datelike, Duration, TimeZone, Timelike, Utc};
use chrono_tz::Tz;
use proptest::prelude::*;
use rules::{Context, Decimal, Row, RuleSet};
use serde_json::{Value, json};

// ---------- the reference interpreter ----------

#[derive(Debug, Clone, PartialEq)]
enum V {
    Num(Decimal),
    Str(String),
    Bool(bool),
    Time(DateTime<Utc>),
}

/// `None`: the expression has no value (a missing meta key, a wrong type, division by zero).
type R = Option<V>;

struct Env<'a> {
    amount: Decimal,
    date: DateTime<Utc>,
    meta: &'a Value,
    tier: Option<&'a str>,
    balance: Decimal,
    zone: Tz,
}

fn meta_value(v: &Value) -> R {
    match v {
        Value::Number(n) => Decimal::from_str(&n.to_string()).ok().map(V::Num),
        Value::String(s) => Some(V::Str(s.clone())),
        Value::Bool(b) => Some(V::Bool(*b)),
        _ => None,
    }
}

fn path(e: &IdedExpr) -> Option<Vec<String>> {
    match &e.expr {
        Expr::Ident(n) => Some(vec![n.clone()]),
        Expr::Select(SelectExpr { operand, field, .. }) => {
            let mut p = path(operand)?;
            p.push(field.clone());
            Some(p)
        }
        _ => None,
    }
}

fn lookup(env: &Env, p: &[String]) -> R {
    match p.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
        ["amount"] => Some(V::Num(env.amount)),
        ["date"] => Some(V::Time(env.date)),
        ["wallet", "balance"] => Some(V::Num(env.balance)),
        ["wallet", "tier"] => Some(V::Str(env.tier.unwrap_or("").to_string())),
        ["meta", rest @ ..] => {
            let mut v = env.meta;
            for k in rest {
                v = v.get(*k)?;
            }
            meta_value(v)
        }
        other => panic!("generator made an unknown parameter {other:?}"),
    }
}

fn eval(env: &Env, e: &IdedExpr) -> R {
    match &e.expr {
        Expr::Literal(LiteralValue::Int(i)) => Some(V::Num(Decimal::from(*i.inner()))),
        Expr::Literal(LiteralValue::Double(d)) => {
            Some(V::Num(Decimal::from_str(&d.inner().to_string()).unwrap()))
        }
        Expr::Literal(LiteralValue::String(s)) => Some(V::Str(s.inner().to_string())),
        Expr::Literal(LiteralValue::Boolean(b)) => Some(V::Bool(*b.inner())),
        Expr::Ident(_) | Expr::Select(SelectExpr { test: false, .. }) => {
            lookup(env, &path(e).unwrap())
        }
        Expr::Select(SelectExpr {
            operand,
            field,
            test: true,
        }) => {
            let mut p = path(operand).unwrap();
            p.push(field.clone());
            let mut v = env.meta;
            for k in &p[1..] {
                match v.get(k) {
                    Some(next) => v = next,
                    None => return Some(V::Bool(false)),
                }
            }
            Some(V::Bool(true))
        }
        Expr::Call(call) => eval_call(env, call),
        other => panic!("generator made {other:?}"),
    }
}

fn num(r: R) -> Option<Decimal> {
    match r? {
        V::Num(d) => Some(d),
        _ => None,
    }
}

fn boolean(r: R) -> Option<bool> {
    match r? {
        V::Bool(b) => Some(b),
        _ => None,
    }
}

fn eval_call(env: &Env, call: &CallExpr) -> R {
    let a = &call.args;
    match (call.func_name.as_str(), &call.target) {
        ("least", Some(_)) => Some(V::Num(num(eval(env, &a[0]))?.min(num(eval(env, &a[1]))?))),
        ("_&&_", _) => match (boolean(eval(env, &a[0])), boolean(eval(env, &a[1]))) {
            (Some(false), _) | (_, Some(false)) => Some(V::Bool(false)),
            (Some(true), Some(true)) => Some(V::Bool(true)),
            _ => None,
        },
        ("_||_", _) => match (boolean(eval(env, &a[0])), boolean(eval(env, &a[1]))) {
            (Some(true), _) | (_, Some(true)) => Some(V::Bool(true)),
            (Some(false), Some(false)) => Some(V::Bool(false)),
            _ => None,
        },
        ("!_", _) => Some(V::Bool(!boolean(eval(env, &a[0]))?)),
        ("_?_:_", _) => {
            if boolean(eval(env, &a[0]))? {
                eval(env, &a[1])
            } else {
                eval(env, &a[2])
            }
        }
        ("_+_" | "_-_" | "_*_", _) => {
            let (x, y) = (num(eval(env, &a[0]))?, num(eval(env, &a[1]))?);
            Some(V::Num(match call.func_name.as_str() {
                "_+_" => x.checked_add(y)?,
                "_-_" => x.checked_sub(y)?,
                _ => x.checked_mul(y)?,
            }))
        }
        ("_==_" | "_!=_" | "_<_" | "_>_", _) => {
            let (x, y) = (eval(env, &a[0])?, eval(env, &a[1])?);
            let ord = match (&x, &y) {
                (V::Num(x), V::Num(y)) => x.cmp(y),
                (V::Str(x), V::Str(y)) => x.cmp(y),
                _ => return None,
            };
            Some(V::Bool(match call.func_name.as_str() {
                "_==_" => ord.is_eq(),
                "_!=_" => ord.is_ne(),
                "_<_" => ord.is_lt(),
                _ => ord.is_gt(),
            }))
        }
        ("@in", _) => {
            let x = eval(env, &a[0])?;
            let Expr::List(list) = &a[1].expr else {
                panic!("list")
            };
            let items: Vec<R> = list.elements.iter().map(|i| eval(env, i)).collect();
            if !items
                .iter()
                .flatten()
                .any(|i| std::mem::discriminant(i) == std::mem::discriminant(&x))
            {
                return None;
            }
            Some(V::Bool(items.iter().any(|i| i.as_ref() == Some(&x))))
        }
        ("weekday" | "hour", None) => {
            let V::Time(t) = eval(env, &a[0])? else {
                return None;
            };
            let local = t.with_timezone(&env.zone);
            let v = if call.func_name == "weekday" {
                local.weekday().number_from_monday()
            } else {
                local.hour()
            };
            Some(V::Num(Decimal::from(v)))
        }
        (other, _) => panic!("generator made {other}"),
    }
}

fn parse(text: &str) -> IdedExpr {
    cel::parser::Parser::new().parse(text).unwrap()
}

/// The rule as the generator made it, evaluated the plain way.
#[derive(Debug, Clone)]
struct GenRule {
    priority: i64,
    when: Option<String>,
    effect: &'static str,
    value: String,
    stop: bool,
    weekdays: Option<Vec<u32>>,
    hours: Option<(u32, u32)>,
}

const DAYS: [&str; 7] = ["mon", "tue", "wed", "thu", "fri", "sat", "sun"];

fn reference(rules: &[GenRule], zone: Tz, decimals: u32, env: &Env) -> Decimal {
    let mut sorted = rules.to_vec();
    sorted.sort_by_key(|r| r.priority);
    let local = env.date.with_timezone(&zone);
    let mut total = Decimal::ZERO;
    for rule in &sorted {
        if let Some(days) = &rule.weekdays
            && !days.contains(&local.weekday().num_days_from_monday())
        {
            continue;
        }
        if let Some((start, end)) = rule.hours {
            let h = local.hour();
            let inside = if start < end {
                h >= start && h < end
            } else {
                h >= start || h < end
            };
            if !inside {
                continue;
            }
        }
        if let Some(when) = &rule.when
            && boolean(eval(env, &parse(when))) != Some(true)
        {
            continue;
        }
        let next = if rule.effect == "stop" {
            Some(total)
        } else {
            num(eval(env, &parse(&rule.value))).and_then(|v| match rule.effect {
                "award" => Some(v),
                "multiply" => total.checked_mul(v),
                "add" => total.checked_add(v),
                _ => Some(total.min(v)),
            })
        };
        if let Some(next) = next {
            total = next;
            if rule.stop || rule.effect == "stop" {
                break;
            }
        }
    }
    total
        .max(Decimal::ZERO)
        .round_dp_with_strategy(decimals, rust_decimal::RoundingStrategy::ToNegativeInfinity)
}

fn toml_of(rules: &[GenRule], zone: Tz, decimals: u32) -> String {
    let mut out = format!("[programme]\ntime_zone = '{zone}'\ndecimals = {decimals}\n");
    for (i, r) in rules.iter().enumerate() {
        out += &format!("[[rule]]\nid = 'r{i}'\npriority = {}\n", r.priority);
        if let Some(when) = &r.when {
            out += &format!("when = {when:?}\n");
        }
        if r.effect != "stop" {
            out += &format!("{} = {:?}\n", r.effect, r.value);
        }
        if r.stop || r.effect == "stop" {
            out += "stop = true\n";
        }
        let mut active = Vec::new();
        if let Some(days) = &r.weekdays {
            let names: Vec<_> = days
                .iter()
                .map(|d| format!("'{}'", DAYS[*d as usize]))
                .collect();
            active.push(format!("weekdays = [{}]", names.join(", ")));
        }
        if let Some((start, end)) = r.hours {
            active.push(format!("hours = '{start:02}:00-{end:02}:00'"));
        }
        if !active.is_empty() {
            out += &format!("active = {{ {} }}\n", active.join(", "));
        }
    }
    out
}

// ---------- generators ----------

fn number_expr() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("amount".to_string()),
        Just("wallet.balance".to_string()),
        Just("meta.n".to_string()),
        Just("meta.deep.n".to_string()),
        (0i64..50).prop_map(|n| n.to_string()),
        (0i64..40).prop_map(|n| format!("{n}.5")),
    ];
    leaf.prop_recursive(3, 12, 2, |inner| {
        prop_oneof![
            (
                inner.clone(),
                prop_oneof![Just("+"), Just("-"), Just("*")],
                inner.clone()
            )
                .prop_map(|(a, op, b)| format!("({a} {op} {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("math.least({a}, {b})")),
            (condition_leaf(), inner.clone(), inner)
                .prop_map(|(c, a, b)| format!("({c} ? {a} : {b})")),
        ]
    })
}

fn condition_leaf() -> impl Strategy<Value = String> {
    prop_oneof![
        (
            prop_oneof![Just("amount"), Just("meta.n"), Just("wallet.balance")],
            prop_oneof![Just(">"), Just("<"), Just("==")],
            0i64..200
        )
            .prop_map(|(a, op, n)| format!("{a} {op} {n}")),
        prop_oneof![Just("'x'"), Just("'y'")].prop_map(|s| format!("meta.s == {s}")),
        prop_oneof![Just("'gold'"), Just("'silver'")].prop_map(|s| format!("wallet.tier == {s}")),
        Just("has(meta.n)".to_string()),
        Just("meta.flag".to_string()),
        Just("weekday(date) in [6, 7]".to_string()),
        Just("meta.s in ['x', 'z']".to_string()),
        (0u32..24).prop_map(|h| format!("hour(date) < {h}")),
    ]
}

fn condition() -> impl Strategy<Value = String> {
    condition_leaf().prop_recursive(2, 6, 2, |inner| {
        prop_oneof![
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} && {b})")),
            (inner.clone(), inner.clone()).prop_map(|(a, b)| format!("({a} || {b})")),
            inner.prop_map(|a| format!("!({a})")),
        ]
    })
}

fn rule() -> impl Strategy<Value = GenRule> {
    (
        proptest::option::of(condition()),
        prop_oneof![
            Just("award"),
            Just("multiply"),
            Just("add"),
            Just("cap"),
            Just("stop")
        ],
        number_expr(),
        any::<bool>(),
        proptest::option::of(proptest::collection::vec(0u32..7, 1..4)),
        proptest::option::of((0u32..24, 0u32..24).prop_filter("a range", |(a, b)| a != b)),
    )
        .prop_map(|(when, effect, value, stop, weekdays, hours)| GenRule {
            priority: 0,
            when,
            effect,
            value,
            stop,
            weekdays,
            hours,
        })
}

fn rule_set() -> impl Strategy<Value = Vec<GenRule>> {
    proptest::collection::vec(rule(), 1..7)
        .prop_shuffle()
        .prop_map(|mut rules| {
            // Distinct priorities, in an order unrelated to the file's.
            for (i, r) in rules.iter_mut().enumerate() {
                r.priority = ((i as i64 * 37) % 101) + i as i64 * 101;
            }
            rules
        })
}

fn meta() -> impl Strategy<Value = Value> {
    (
        proptest::option::of(prop_oneof![
            (0i64..300).prop_map(|n| json!(n)),
            Just(json!("12")),
            Just(json!(2.25))
        ]),
        proptest::option::of(prop_oneof![Just("x"), Just("y"), Just("z")]),
        proptest::option::of(any::<bool>()),
        proptest::option::of(0i64..50),
    )
        .prop_map(|(n, s, flag, deep)| {
            let mut m = serde_json::Map::new();
            if let Some(n) = n {
                m.insert("n".into(), n);
            }
            if let Some(s) = s {
                m.insert("s".into(), json!(s));
            }
            if let Some(flag) = flag {
                m.insert("flag".into(), json!(flag));
            }
            if let Some(deep) = deep {
                m.insert("deep".into(), json!({"n": deep}));
            }
            Value::Object(m)
        })
}

proptest! {
    // Failures print their minimal input; no regression file is written into the source tree.
    #![proptest_config(ProptestConfig { cases: 400, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn compiled_rules_agree_with_the_reference(
        rules in rule_set(),
        zone in prop_oneof![Just(Tz::UTC), Just(Tz::Europe__Amsterdam), Just(Tz::America__New_York)],
        decimals in 0u32..3,
        cents in 0i64..100_000,
        minutes in 0i64..(60 * 24 * 14),
        meta in meta(),
        tier in proptest::option::of(prop_oneof![Just("gold"), Just("silver")]),
    ) {
        let source = toml_of(&rules, zone, decimals);
        let compiled = RuleSet::parse(&source).unwrap_or_else(|e| panic!("{e}\n{source}"));
        let date = Utc.with_ymd_and_hms(2026, 3, 20, 0, 0, 0).unwrap() + Duration::minutes(minutes);
        let amount = Decimal::new(cents, 2);
        let balance = Decimal::from(120);
        let row = Row { id: "t", amount, date, currency: "EUR", description: "", meta: Some(&meta), activity: None };
        let ctx = Context { wallet_tier: tier, wallet_balance: balance, member_status: "active", ..Context::default() };
        let got = compiled.evaluate(&row, &ctx).tokens;
        let env = Env { amount, date, meta: &meta, tier, balance, zone };
        let expected = reference(&rules, zone, decimals, &env);
        prop_assert_eq!(got, expected, "\n{}\nmeta {} tier {:?} date {} amount {}", source, meta, tier, date, amount);
    }
}
