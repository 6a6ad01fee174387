//! What a programme manager relies on: effects, order, stop, windows, rounding, caps, tiers,
//! missing meta keys, and compile errors that say where.

use chrono::{DateTime, Utc};
use rules::{Context, Decimal, ErrorKind, Row, RuleSet};
use serde_json::{Value, json};

/// A transaction of `amount` on `date` (RFC 3339) with `meta`.
struct Tx {
    amount: &'static str,
    date: &'static str,
    meta: Value,
    tier: Option<&'static str>,
}

fn tx(amount: &'static str) -> Tx {
    Tx {
        amount,
        date: "2026-11-18T12:00:00Z",
        meta: json!({}),
        tier: None,
    }
}

impl Tx {
    fn on(mut self, date: &'static str) -> Self {
        self.date = date;
        self
    }
    fn meta(mut self, meta: Value) -> Self {
        self.meta = meta;
        self
    }
    fn tier(mut self, tier: &'static str) -> Self {
        self.tier = Some(tier);
        self
    }
}

/// `t` evaluated by `rules`.
fn outcome(rules: &RuleSet, t: &Tx) -> rules::Outcome {
    let date: DateTime<Utc> = t.date.parse().unwrap();
    let row = Row {
        id: "tx-1",
        amount: t.amount.parse().unwrap(),
        date,
        currency: "EUR",
        description: "Coffee",
        meta: Some(&t.meta),
        activity: None,
    };
    let ctx = Context {
        wallet_tier: t.tier,
        wallet_balance: Decimal::from(250),
        member_status: "active",
        ..Context::default()
    };
    rules.evaluate(&row, &ctx)
}

fn run(rules: &RuleSet, t: &Tx) -> (Decimal, Vec<String>) {
    let outcome = outcome(rules, t);
    (outcome.tokens, rules.explain(&outcome.steps))
}

fn tokens(source: &str, t: Tx) -> String {
    let rules = RuleSet::parse(source).unwrap_or_else(|e| panic!("{e}"));
    run(&rules, &t).0.normalize().to_string()
}

const BASE: &str = "[[rule]]\nid = 'base'\npriority = 10\naward = 'amount'\n";

#[test]
fn each_effect_changes_the_total_as_documented() {
    let cases = [
        ("award = 'amount * 2'", "10", "20"),
        ("multiply = 3", "10", "30"),
        ("multiply = 1.5", "10", "15"),
        ("add = 5", "10", "15"),
        ("add = 'amount / 10'", "10", "11"),
        ("cap = 7", "10", "7"),
        ("cap = 70", "10", "10"),
    ];
    for (effect, amount, expected) in cases {
        let source = format!("{BASE}[[rule]]\nid = 'second'\npriority = 20\n{effect}\n");
        assert_eq!(tokens(&source, tx(amount)), expected, "{effect}");
    }
}

#[test]
fn rules_run_in_priority_order_not_file_order() {
    // Written cap first, but the cap's priority puts it last.
    let source = "[[rule]]\nid = 'cap'\npriority = 90\ncap = 100\n\
                  [[rule]]\nid = 'double'\npriority = 20\nmultiply = 2\n\
                  [[rule]]\nid = 'base'\npriority = 10\naward = 'amount'\n";
    assert_eq!(tokens(source, tx("80")), "100");
    assert_eq!(tokens(source, tx("30")), "60");
    let rules = RuleSet::parse(source).unwrap();
    let order: Vec<_> = rules.rules().map(|r| r.id).collect();
    assert_eq!(order, ["base", "double", "cap"]);
}

#[test]
fn stop_ends_the_run_only_when_its_rule_fires() {
    let source = format!(
        "{BASE}[[rule]]\nid = 'vip'\npriority = 20\nwhen = \"meta.vip == true\"\nmultiply = 10\nstop = true\n\
         [[rule]]\nid = 'bonus'\npriority = 30\nadd = 1\n"
    );
    assert_eq!(
        tokens(&source, tx("10").meta(json!({"vip": true}))),
        "100",
        "bonus skipped after stop"
    );
    assert_eq!(
        tokens(&source, tx("10").meta(json!({"vip": false}))),
        "11",
        "a stop rule that does not fire stops nothing"
    );
    let stop_only = format!(
        "[[rule]]\nid = 'blocked'\npriority = 1\nwhen = \"meta.blocked == true\"\nstop = true\n{BASE}"
    );
    assert_eq!(
        tokens(&stop_only, tx("10").meta(json!({"blocked": true}))),
        "0"
    );
    assert_eq!(
        tokens(&stop_only, tx("10")),
        "10",
        "a missing key makes the condition false: no stop"
    );
}

/// The earn's pending days, as its rules decide them (None: the campaign's policy decides).
fn pending_days(source: &str, t: Tx) -> (String, Option<u32>) {
    let rules = RuleSet::parse(source).unwrap_or_else(|e| panic!("{e}"));
    let outcome = outcome(&rules, &t);
    let tokens = outcome.tokens.normalize().to_string();
    (tokens, rules.pending_days(&outcome.steps))
}

#[test]
fn pending_days_come_from_the_last_rule_that_fired_with_them() {
    let source = format!(
        "{BASE}[[rule]]\nid = 'fashion'\npriority = 20\nwhen = \"meta.category == 'fashion'\"\n\
         pending_days = 30\n\
         [[rule]]\nid = 'sale'\npriority = 30\nwhen = \"meta.sale == true\"\nmultiply = 2\n\
         pending_days = 14\n\
         [[rule]]\nid = 'trusted'\npriority = 40\nwhen = \"meta.trusted == true\"\n\
         pending_days = 0\n"
    );
    assert_eq!(pending_days(&source, tx("10")), ("10".into(), None));
    let fashion = json!({"category": "fashion"});
    assert_eq!(
        pending_days(&source, tx("10").meta(fashion)),
        ("10".into(), Some(30)),
        "a rule with pending_days alone changes no tokens"
    );
    let on_sale = json!({"category": "fashion", "sale": true});
    assert_eq!(
        pending_days(&source, tx("10").meta(on_sale)),
        ("20".into(), Some(14)),
        "the later rule decides"
    );
    let trusted = json!({"category": "fashion", "trusted": true});
    assert_eq!(
        pending_days(&source, tx("10").meta(trusted)),
        ("10".into(), Some(0)),
        "0: at once, over an earlier rule's days"
    );
    // The trace says so.
    let rules = RuleSet::parse(&source).unwrap();
    let (_, lines) = run(&rules, &tx("10").meta(json!({"category": "fashion"})));
    assert_eq!(lines[1], "fashion: pending +0, pending 30 days");
}

#[test]
fn windows_follow_the_programme_time_zone() {
    let source = "[programme]\ntime_zone = 'Europe/Amsterdam'\n\
                  [[rule]]\nid = 'base'\npriority = 10\naward = 'amount'\n\
                  [[rule]]\nid = 'weekend'\npriority = 20\nmultiply = 2\nactive = { weekdays = ['sat', 'sun'] }\n\
                  [[rule]]\nid = 'evening'\npriority = 30\nadd = 1\nactive = { hours = '18:00-22:00' }\n\
                  [[rule]]\nid = 'december'\npriority = 40\nadd = 100\nactive = { from = '2026-12-01', to = '2026-12-31' }\n\
                  [[rule]]\nid = 'night'\npriority = 50\nadd = 1000\nactive = { hours = '23:00-01:00' }\n";
    let cases = [
        // Friday 23:30 UTC is Saturday 00:30 in Amsterdam (UTC+1 in winter): weekend and night.
        ("2026-11-20T23:30:00Z", "1020"),
        // Friday 22:59 UTC is Friday 23:59 in Amsterdam: night only.
        ("2026-11-20T22:59:00Z", "1010"),
        // 17:00 UTC is 18:00 in Amsterdam: the evening starts (inclusive).
        ("2026-11-18T17:00:00Z", "11"),
        // 21:00 UTC is 22:00 in Amsterdam: the evening has ended (exclusive).
        ("2026-11-18T21:00:00Z", "10"),
        // 30 Nov 23:30 UTC is already 1 December in Amsterdam.
        ("2026-11-30T23:30:00Z", "1110"),
        // 31 Dec 23:30 UTC is 1 January in Amsterdam: December is over (a Friday, at night).
        ("2026-12-31T23:30:00Z", "1010"),
        // Summer time (UTC+2): 16:00 UTC is 18:00 in Amsterdam.
        ("2026-07-01T16:00:00Z", "11"),
    ];
    for (date, expected) in cases {
        assert_eq!(tokens(source, tx("10").on(date)), expected, "{date}");
    }
}

#[test]
fn date_helpers_use_the_programme_zone_and_cel_methods_use_utc() {
    let source = "[programme]\ntime_zone = 'America/New_York'\n\
                  [[rule]]\nid = 'a'\npriority = 1\naward = 'weekday(date) * 100 + hour(date)'\n\
                  [[rule]]\nid = 'b'\npriority = 2\nadd = \"date.getHours() * 10000\"\n\
                  [[rule]]\nid = 'c'\npriority = 3\nadd = \"date.getHours('Asia/Tokyo') * 1000000\"\n";
    // Monday 2026-11-16 03:00 UTC = Sunday 22:00 in New York (ISO weekday 7), 12:00 in Tokyo.
    assert_eq!(
        tokens(source, tx("1").on("2026-11-16T03:00:00Z")),
        (12 * 1_000_000 + 3 * 10_000 + 722).to_string()
    );
}

#[test]
fn rounding_applies_once_at_the_end() {
    let with = |mode: &str, decimals: u32| {
        format!(
            "[programme]\nrounding = '{mode}'\ndecimals = {decimals}\n{BASE}[[rule]]\nid = 'x'\npriority = 20\nmultiply = 1.25\n"
        )
    };
    let cases = [
        ("floor", 0, "10.9", "13"),
        ("ceil", 0, "10.9", "14"),
        ("round", 0, "10.9", "14"),
        ("round", 0, "10.8", "14"),
        ("round", 0, "10.7", "13"),
        ("round", 1, "10.9", "13.6"),
        ("floor", 2, "10.9", "13.62"),
    ];
    for (mode, decimals, amount, expected) in cases {
        assert_eq!(
            tokens(&with(mode, decimals), tx(amount)),
            expected,
            "{mode} {decimals} {amount}"
        );
    }
    // Exact decimals: 0.1 + 0.2 is 0.3, not 0.30000000000000004.
    let exact =
        "[programme]\ndecimals = 2\n[[rule]]\nid = 'a'\npriority = 1\naward = '0.1 + 0.2'\n";
    assert_eq!(tokens(exact, tx("1")), "0.3");
    // Never below zero.
    let negative = format!("{BASE}[[rule]]\nid = 'minus'\npriority = 20\nadd = -50\n");
    assert_eq!(tokens(&negative, tx("10")), "0");
}

#[test]
fn caps_and_tiers() {
    let source = format!(
        "{BASE}[[rule]]\nid = 'gold'\npriority = 20\nwhen = \"wallet.tier == 'gold'\"\nmultiply = 2\n\
         [[rule]]\nid = 'silver'\npriority = 30\nwhen = \"wallet.tier in ['silver', 'bronze']\"\nadd = 'amount * 0.1'\n\
         [[rule]]\nid = 'cap'\npriority = 90\ncap = 'math.least(500, wallet.balance * 2)'\n"
    );
    assert_eq!(tokens(&source, tx("100").tier("gold")), "200");
    assert_eq!(tokens(&source, tx("100").tier("silver")), "110");
    assert_eq!(
        tokens(&source, tx("100")),
        "100",
        "no tier: neither tier rule"
    );
    assert_eq!(
        tokens(&source, tx("400").tier("gold")),
        "500",
        "balance 250 * 2 caps at 500"
    );
}

#[test]
fn a_missing_meta_key_makes_a_condition_false_and_the_trace_says_so() {
    let source = format!(
        "{BASE}[[rule]]\nid = 'store'\npriority = 20\nwhen = \"meta.store.code == 'A1'\"\nadd = 5\n\
         [[rule]]\nid = 'either'\npriority = 30\nwhen = \"meta.promo == 'X' || amount > 5\"\nadd = 1\n\
         [[rule]]\nid = 'guarded'\npriority = 40\nwhen = \"has(meta.store.code) && meta.store.code != 'A1'\"\nadd = 100\n"
    );
    let rules = RuleSet::parse(&source).unwrap();
    let (total, trace) = run(&rules, &tx("10"));
    assert_eq!(total, Decimal::from(11), "{trace:?}");
    assert!(
        trace
            .iter()
            .any(|l| l == "store: skipped, meta.store.code is missing"),
        "{trace:?}"
    );
    assert!(
        trace.iter().any(|l| l.starts_with("either: add +1")),
        "`||` with a true side holds: {trace:?}"
    );

    let (total, _) = run(&rules, &tx("10").meta(json!({"store": {"code": "A1"}})));
    assert_eq!(total, Decimal::from(16));
    let (total, _) = run(&rules, &tx("10").meta(json!({"store": {"code": "B2"}})));
    assert_eq!(total, Decimal::from(111));
    // A meta value of the wrong type is reported like a missing one.
    let (total, trace) = run(&rules, &tx("10").meta(json!({"store": {"code": 7}})));
    assert_eq!(total, Decimal::from(11));
    assert!(
        trace
            .iter()
            .any(|l| l == "store: skipped, meta.store.code is not text"),
        "{trace:?}"
    );
}

#[test]
fn meta_values_keep_their_json_types() {
    let source = "[[rule]]\nid = 'points'\npriority = 1\naward = 'meta.points'\n\
                  [[rule]]\nid = 'loose'\npriority = 2\nadd = 'double(meta.extra)'\n\
                  [[rule]]\nid = 'flag'\npriority = 3\nwhen = 'meta.flags.double'\nmultiply = 2\n";
    assert_eq!(
        tokens(
            source,
            tx("1").meta(json!({"points": 12.5, "extra": "0.5", "flags": {"double": true}}))
        ),
        "26"
    );
    assert_eq!(
        tokens(source, tx("1").meta(json!({"points": 3, "extra": 2}))),
        "5"
    );
}

#[test]
fn the_trace_names_each_rule_and_its_contribution() {
    // `same` (x1) and `roomy` (a cap above the total) change nothing and are left out.
    let source = format!(
        "{BASE}[[rule]]\nid = 'double'\npriority = 20\nmultiply = 2\n[[rule]]\nid = 'same'\npriority = 25\nmultiply = 1\n\
         [[rule]]\nid = 'roomy'\npriority = 26\ncap = 1000\n[[rule]]\nid = 'cap'\npriority = 30\ncap = 15.5\nstop = true\n"
    );
    let rules = RuleSet::parse(&source).unwrap();
    let (total, trace) = run(&rules, &tx("10"));
    assert_eq!(total, Decimal::from(15));
    assert_eq!(
        trace,
        [
            "base: award +10",
            "double: multiply +10",
            "cap: cap -4.5, then stop",
            "rounding: -0.5"
        ]
    );
    let row_meta = json!({});
    let row = Row {
        id: "t",
        amount: Decimal::from(10),
        date: Utc::now(),
        currency: "EUR",
        description: "",
        meta: Some(&row_meta),
        activity: None,
    };
    let outcome = rules.evaluate(&row, &Context::default());
    assert_eq!(
        rules.compact(&outcome.steps),
        "base:+10;double:+10;cap:-4.5;~:-0.5"
    );
}

#[test]
fn the_default_rule_set_gives_one_token_per_unit() {
    let rules = RuleSet::one_per_unit();
    assert_eq!(run(&rules, &tx("12.99")).0, Decimal::from(12));
}

/// An error as (kind, rule, field, position).
type Found = (ErrorKind, Option<String>, String, Option<(usize, usize)>);
/// An expected error as (kind, rule, field, position).
type Expected = (
    ErrorKind,
    &'static str,
    &'static str,
    Option<(usize, usize)>,
);

/// Compiles `source` and returns each error found.
fn errors(source: &str) -> Vec<Found> {
    match RuleSet::parse(source) {
        Ok(_) => panic!("compiled: {source}"),
        Err(errors) => errors
            .0
            .into_iter()
            .map(|e| (e.kind, e.rule, e.field, e.position))
            .collect(),
    }
}

#[test]
fn every_compile_error_is_reported_with_its_rule_and_place() {
    let rule = |id: &str, priority: i64, body: &str| {
        format!("[[rule]]\nid = '{id}'\npriority = {priority}\n{body}\n")
    };
    let cases: Vec<(String, Vec<Expected>)> = vec![
        (
            rule("a", 1, "award = 'amount *'"),
            vec![(ErrorKind::Syntax, "a", "award", Some((1, 9)))],
        ),
        (
            rule("a", 1, "award = 'bonus(amount)'"),
            vec![(ErrorKind::UnknownFunction, "a", "award", Some((1, 6)))],
        ),
        (
            rule("a", 1, "award = 'amount'\nwhen = 'points > 3'"),
            vec![(ErrorKind::UnknownParameter, "a", "when", Some((1, 1)))],
        ),
        (
            rule("a", 1, "award = 'amount'\nwhen = \"description > 5\""),
            vec![(ErrorKind::TypeMismatch, "a", "when", Some((1, 13)))],
        ),
        (
            rule("a", 1, "award = \"'ten'\""),
            vec![(ErrorKind::TypeMismatch, "a", "award", None)],
        ),
        (
            rule("a", 1, "award = 'amount'\nwhen = 'amount'"),
            vec![(ErrorKind::TypeMismatch, "a", "when", None)],
        ),
        (
            rule("a", 1, "award = 'amount'\nmultiply = 2"),
            vec![(ErrorKind::InvalidRule, "a", "effect", None)],
        ),
        (
            rule("a", 1, "description = 'nothing'"),
            vec![(ErrorKind::InvalidRule, "a", "effect", None)],
        ),
        (
            rule("a", 1, "award = 'amount'\npending_days = 3651"),
            vec![(ErrorKind::InvalidRule, "a", "pending_days", None)],
        ),
        (
            rule(
                "a",
                1,
                "award = 'amount'\nactive = { weekdays = ['funday'], hours = '25:00-26:00' }",
            ),
            vec![
                (ErrorKind::InvalidWindow, "a", "active.weekdays", None),
                (ErrorKind::InvalidWindow, "a", "active.hours", None),
            ],
        ),
    ];
    for (source, expected) in cases {
        let got = errors(&source);
        let expected: Vec<_> = expected
            .into_iter()
            .map(|(kind, rule, field, position)| {
                (kind, Some(rule.to_string()), field.to_string(), position)
            })
            .collect();
        assert_eq!(got, expected, "{source}");
    }
}

#[test]
fn all_errors_of_a_file_come_at_once() {
    let source = "[programme]\ntime_zone = 'Mars/Olympus'\n\
                  [[rule]]\nid = 'a'\npriority = 1\naward = 'amount *'\n\
                  [[rule]]\nid = 'a'\npriority = 1\nwhen = \"currency == 1\"\nadd = 1\n";
    let kinds: Vec<_> = errors(source)
        .into_iter()
        .map(|(kind, rule, field, _)| (kind, rule, field))
        .collect();
    assert_eq!(
        kinds,
        [
            (
                ErrorKind::InvalidWindow,
                None,
                "programme.time_zone".to_string()
            ),
            (ErrorKind::Syntax, Some("a".into()), "award".into()),
            (ErrorKind::InvalidRule, Some("a".into()), "id".into()),
            (ErrorKind::InvalidRule, Some("a".into()), "priority".into()),
            (ErrorKind::TypeMismatch, Some("a".into()), "when".into()),
        ]
    );
    let typo = errors("[[rule]]\nid = 'a'\npriority = 1\nawrd = 'amount'\n");
    assert_eq!(typo[0].0, ErrorKind::Format);
    assert_eq!(
        typo[0].3,
        Some((4, 1)),
        "the TOML position of the unknown key"
    );
}
