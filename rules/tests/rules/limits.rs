//! Limits and budgets as a programme manager writes them: how often a rule fires per member
//! and period, how many tokens it adds per store and day, rolling periods, the campaign's
//! budget, what the trace says when one cuts, and the mistakes refused at compile time.

use chrono::{DateTime, Utc};
use rules::{Context, Counters, Decimal, ErrorKind, Row, RuleSet, Tally, Use};
use serde_json::{Value, json};

/// One earn: wallet, its member, amount, date (RFC 3339) and meta.
struct Earn {
    wallet: &'static str,
    member: Option<&'static str>,
    amount: i64,
    date: &'static str,
    meta: Value,
}

fn earn(member: &'static str, amount: i64, date: &'static str) -> Earn {
    Earn {
        wallet: member,
        member: Some(member),
        amount,
        date,
        meta: json!({}),
    }
}

/// What one earn gave: its tokens, its trace in words, and the uses it made.
struct Given {
    tokens: Decimal,
    explained: Vec<String>,
    compact: String,
    uses: Vec<Use>,
}

/// Evaluates `e` against `tally`, then records its uses there, as the store does.
fn credit(rules: &RuleSet, tally: &mut Tally, e: &Earn) -> Given {
    let date: DateTime<Utc> = e.date.parse().unwrap();
    let row = Row {
        id: "t",
        amount: Decimal::from(e.amount),
        date,
        currency: "EUR",
        description: "",
        meta: Some(&e.meta),
        activity: None,
    };
    let ctx = Context {
        member_status: "active",
        wallet_id: e.wallet,
        member_id: e.member,
        ..Context::default()
    };
    let mut steps = Vec::new();
    let mut uses = Vec::new();
    let tokens = rules.evaluate_counted(&row, &ctx, tally, &mut steps, &mut uses);
    tally.add(&uses);
    Given {
        tokens,
        explained: rules.explain(&steps),
        compact: rules.compact(&steps),
        uses,
    }
}

const THREE_A_MONTH: &str = r#"
[[rule]]
id = "base"
priority = 10
award = "amount"

[[rule]]
id = "visit-bonus"
priority = 20
add = 50
limits = [{ scope = "member", period = "month", times = 3 }]
"#;

#[test]
fn a_rule_fires_at_most_its_times_per_member_and_period() {
    let rules = RuleSet::parse(THREE_A_MONTH).unwrap();
    let mut tally = Tally::new();
    let mut given = Vec::new();
    for day in ["03", "05", "09", "17", "28"] {
        let date = format!("2026-11-{day}T10:00:00Z").leak();
        given.push(credit(&rules, &mut tally, &earn("ada", 10, date)).tokens);
    }
    let expected: Vec<Decimal> = [60, 60, 60, 10, 10].map(Decimal::from).to_vec();
    assert_eq!(given, expected);
    // Another member has her own three; December starts again.
    assert_eq!(
        credit(&rules, &mut tally, &earn("bob", 10, "2026-11-28T10:00:00Z")).tokens,
        Decimal::from(60)
    );
    let december = credit(&rules, &mut tally, &earn("ada", 10, "2026-12-01T10:00:00Z"));
    assert_eq!(december.tokens, Decimal::from(60));

    let fourth = credit(&rules, &mut tally, &earn("ada", 10, "2026-11-30T10:00:00Z"));
    assert_eq!(
        fourth.explained,
        [
            "base: award +10",
            "visit-bonus: limit member/month reached (3 times), not fired"
        ]
    );
    assert_eq!(fourth.compact, "base:+10;visit-bonus:!member/month");
    assert!(
        fourth.uses.is_empty(),
        "a rule that did not fire uses nothing"
    );
    assert_eq!(
        RuleSet::contributions(&fourth.compact),
        [("base".to_string(), Decimal::from(10))],
        "a cut is not a contribution"
    );
}

#[test]
fn a_token_ceiling_gives_what_fits_per_store_and_day() {
    let source = r#"
[[rule]]
id = "store-bonus"
priority = 10
award = "amount * 2"
limits = [{ scope = "meta.store.id", period = "day", tokens = 500 }]
"#;
    let rules = RuleSet::parse(source).unwrap();
    let mut tally = Tally::new();
    let at = |store: Value, amount, date| Earn {
        meta: json!({ "store": { "id": store } }),
        ..earn("ada", amount, date)
    };
    let first = credit(
        &rules,
        &mut tally,
        &at(json!("s-1"), 200, "2026-11-03T09:00:00Z"),
    );
    assert_eq!(first.tokens, Decimal::from(400));
    let second = credit(
        &rules,
        &mut tally,
        &at(json!("s-1"), 200, "2026-11-03T18:00:00Z"),
    );
    assert_eq!(second.tokens, Decimal::from(100), "what was left of 500");
    assert_eq!(
        second.explained,
        [
            "store-bonus: limit meta.store.id/day had 100 of 500 tokens left",
            "store-bonus: award +100"
        ]
    );
    assert_eq!(
        second.compact,
        "store-bonus:!meta.store.id/day=100;store-bonus:+100"
    );
    let third = credit(
        &rules,
        &mut tally,
        &at(json!("s-1"), 5, "2026-11-03T19:00:00Z"),
    );
    assert_eq!(
        third.tokens,
        Decimal::ZERO,
        "nothing left: it does not fire"
    );
    assert!(third.uses.is_empty());
    // Another store (a number is its own value), another day.
    let other = credit(
        &rules,
        &mut tally,
        &at(json!(7), 200, "2026-11-03T19:00:00Z"),
    );
    assert_eq!(other.tokens, Decimal::from(400));
    assert_eq!(other.uses[0].key.scope, "7");
    let next_day = credit(
        &rules,
        &mut tally,
        &at(json!("s-1"), 200, "2026-11-04T09:00:00Z"),
    );
    assert_eq!(next_day.tokens, Decimal::from(400));

    // Without the store, the limit cannot be counted: the rule does not fire, and says why.
    let unknown = credit(
        &rules,
        &mut tally,
        &earn("ada", 200, "2026-11-04T09:00:00Z"),
    );
    assert_eq!(unknown.tokens, Decimal::ZERO);
    assert_eq!(
        unknown.explained,
        ["store-bonus: skipped, meta.store.id is missing"]
    );
}

#[test]
fn periods_are_days_of_the_programme_zone_and_rolling_ones_look_back() {
    let source = r#"
[programme]
time_zone = "Europe/Amsterdam"

[[rule]]
id = "daily"
priority = 10
award = 1
limits = [{ scope = "wallet", period = "day", times = 1 }]

[[rule]]
id = "weekly"
priority = 20
add = 10
limits = [{ scope = "wallet", period = "7d", times = 2 }]
"#;
    let rules = RuleSet::parse(source).unwrap();
    let mut tally = Tally::new();
    let tokens =
        |tally: &mut Tally, date: &'static str| credit(&rules, tally, &earn("ada", 0, date)).tokens;
    // 22:30 UTC on the 2nd is 23:30 in Amsterdam; 23:30 UTC is already the 3rd there.
    assert_eq!(
        tokens(&mut tally, "2026-11-02T22:30:00Z"),
        Decimal::from(11)
    );
    assert_eq!(
        tokens(&mut tally, "2026-11-02T23:30:00Z"),
        Decimal::from(11)
    );
    assert_eq!(tokens(&mut tally, "2026-11-03T12:00:00Z"), Decimal::ZERO);
    // The 8th's seven days still hold the 2nd and the 3rd; the 9th's only the 3rd.
    assert_eq!(tokens(&mut tally, "2026-11-08T12:00:00Z"), Decimal::from(1));
    assert_eq!(
        tokens(&mut tally, "2026-11-09T12:00:00Z"),
        Decimal::from(11)
    );
}

#[test]
fn the_budget_caps_every_rule_together_and_then_stops_awards() {
    let source = r#"
[programme]
budget = { period = "month", tokens = 1000 }

[[rule]]
id = "base"
priority = 10
award = "amount"

[[rule]]
id = "once"
priority = 20
add = 5
limits = [{ scope = "member", period = "ever", times = 1 }]
"#;
    let rules = RuleSet::parse(source).unwrap();
    let mut tally = Tally::new();
    let a = credit(
        &rules,
        &mut tally,
        &earn("ada", 600, "2026-11-03T10:00:00Z"),
    );
    assert_eq!(a.tokens, Decimal::from(605));
    let b = credit(
        &rules,
        &mut tally,
        &earn("bob", 600, "2026-11-04T10:00:00Z"),
    );
    assert_eq!(
        b.tokens,
        Decimal::from(395),
        "what was left of the month's 1,000"
    );
    assert_eq!(
        b.explained.last().unwrap(),
        "budget per month: 395 tokens left, -210"
    );
    assert!(b.compact.ends_with(";$:-210"), "{}", b.compact);
    let c = credit(&rules, &mut tally, &earn("cy", 600, "2026-11-05T10:00:00Z"));
    assert_eq!(c.tokens, Decimal::ZERO);
    assert!(
        c.uses.is_empty(),
        "nothing given: cy's once-ever bonus is still to come"
    );
    let later = credit(&rules, &mut tally, &earn("cy", 10, "2026-12-01T10:00:00Z"));
    assert_eq!(later.tokens, Decimal::from(15));
}

#[test]
fn without_counters_each_limit_counts_the_earn_as_its_first() {
    let rules = RuleSet::parse(THREE_A_MONTH).unwrap();
    let e = earn("ada", 10, "2026-11-03T10:00:00Z");
    let row = Row {
        id: "t",
        amount: Decimal::from(10),
        date: e.date.parse().unwrap(),
        currency: "EUR",
        description: "",
        meta: None,
        activity: None,
    };
    for _ in 0..5 {
        assert_eq!(
            rules.evaluate(&row, &Context::default()).tokens,
            Decimal::from(60)
        );
    }
    assert!(rules.has_limits());
    assert!(!RuleSet::one_per_unit().has_limits());
}

#[test]
fn a_new_version_keeps_counting_where_the_last_left_off() {
    let mut tally = Tally::new();
    let rules = RuleSet::parse(THREE_A_MONTH).unwrap();
    for day in ["03", "04"] {
        let date = format!("2026-11-{day}T10:00:00Z").leak();
        credit(&rules, &mut tally, &earn("ada", 10, date));
    }
    // The ceiling raised to 4, the bonus doubled: two more this month, not four.
    let raised = THREE_A_MONTH
        .replace("times = 3", "times = 4")
        .replace("add = 50", "add = 100");
    let rules = RuleSet::parse(&raised).unwrap();
    let given: Vec<Decimal> = ["05", "06", "07"]
        .iter()
        .map(|day| {
            let date = format!("2026-11-{day}T10:00:00Z").leak();
            credit(&rules, &mut tally, &earn("ada", 10, date)).tokens
        })
        .collect();
    assert_eq!(given, [110, 110, 10].map(Decimal::from));
    // A wallet without a member counts as its own member.
    let lone = Earn {
        member: None,
        ..earn("w-9", 10, "2026-11-07T10:00:00Z")
    };
    let used = credit(&rules, &mut tally, &lone).uses;
    assert_eq!(used[0].key.scope, "wallet:w-9");
    let (from, to) = rules::Period::Month.window(used[0].bucket);
    assert_eq!(tally.used(&used[0].key, from, to).times, 1);
}

/// A limit as `RuleSet::limits` shows it: rule, scope, period, times, tokens.
type Described<'a> = (
    Option<&'a str>,
    &'a str,
    String,
    Option<u64>,
    Option<Decimal>,
);

#[test]
fn each_limit_is_described_for_people() {
    let source = r#"
[programme]
budget = { period = "month", tokens = 1000000 }

[[rule]]
id = "bonus"
priority = 1
add = 5
limits = [{ scope = "member", period = "month", times = 3 }, { scope = "meta.store.id", period = "30d", tokens = 500 }]
"#;
    let limits = RuleSet::parse(source).unwrap().limits();
    let described: Vec<Described> = limits
        .iter()
        .map(|l| {
            (
                l.rule.as_deref(),
                l.scope.as_str(),
                l.period.name(),
                l.times,
                l.tokens,
            )
        })
        .collect();
    assert_eq!(
        described,
        [
            (Some("bonus"), "member", "month".into(), Some(3), None),
            (
                Some("bonus"),
                "meta.store.id",
                "30d".into(),
                None,
                Some(Decimal::from(500))
            ),
            (
                None,
                "campaign",
                "month".into(),
                None,
                Some(Decimal::from(1_000_000))
            ),
        ]
    );
}

#[test]
fn a_bad_limit_or_budget_is_named_at_its_key() {
    let with =
        |limits: &str| format!("[[rule]]\nid = 'a'\npriority = 1\nadd = 5\nlimits = [{limits}]\n");
    let cases = [
        (
            with("{ scope = 'store', period = 'day', times = 1 }"),
            "limits[0].scope",
        ),
        (
            with("{ scope = 'meta.', period = 'day', times = 1 }"),
            "limits[0].scope",
        ),
        (
            with("{ scope = \"meta['a b']\", period = 'day', times = 1 }"),
            "limits[0].scope",
        ),
        (
            with("{ scope = 'member', period = 'fortnight', times = 1 }"),
            "limits[0].period",
        ),
        (
            with("{ scope = 'member', period = '0d', times = 1 }"),
            "limits[0].period",
        ),
        (
            with("{ scope = 'member', period = 'day', times = 0 }"),
            "limits[0].times",
        ),
        (
            with("{ scope = 'member', period = 'day', times = -2 }"),
            "limits[0].times",
        ),
        (
            with("{ scope = 'member', period = 'day', tokens = 0 }"),
            "limits[0].tokens",
        ),
        (
            with("{ scope = 'member', period = 'day', tokens = -1.5 }"),
            "limits[0].tokens",
        ),
        (
            with("{ scope = 'member', period = 'day', tokens = 'lots' }"),
            "limits[0].tokens",
        ),
        (with("{ scope = 'member', period = 'day' }"), "limits[0]"),
        (
            with(
                "{ scope = 'member', period = 'day', times = 1 }, { scope = 'member', period = 'day', tokens = 5 }",
            ),
            "limits[1].scope",
        ),
        (
            "[programme]\nbudget = { period = 'decade', tokens = 5 }\n".to_string(),
            "programme.budget.period",
        ),
        (
            "[programme]\nbudget = { period = 'month', tokens = 0 }\n".to_string(),
            "programme.budget.tokens",
        ),
    ];
    for (source, field) in cases {
        let errors = RuleSet::parse(&source).expect_err(&source).0;
        assert_eq!(errors.len(), 1, "{source}: {errors:?}");
        assert_eq!(errors[0].kind, ErrorKind::InvalidLimit, "{source}");
        assert_eq!(errors[0].field, field, "{source}");
    }
    // An unknown key inside a limit is the file's format.
    let errors = RuleSet::parse(&with(
        "{ scope = 'member', period = 'day', times = 1, per = 2 }",
    ))
    .unwrap_err()
    .0;
    assert_eq!(errors[0].kind, ErrorKind::Format);
}
