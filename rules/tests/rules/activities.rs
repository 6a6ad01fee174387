//! Rules on a member's activities (`on = "activity"`): they read the activity's type and
//! attributes, take limits like any rule, and never apply to transactions (nor transaction
//! rules to activities); the mistakes of mixing the two are refused at compile time.

use chrono::{DateTime, Utc};
use rules::{Context, Decimal, ErrorKind, Row, RuleSet, Tally};
use serde_json::{Value, json};

const PROGRAMME: &str = r#"
[[rule]]
id = "base"
priority = 10
award = "amount"

[[rule]]
id = "signed-up"
priority = 20
on = "activity"
when = "activity.type == 'member.signed_up'"
award = 50

[[rule]]
id = "review"
priority = 30
on = "activity"
when = "activity.type == 'review.published' && has(activity.attributes.stars)"
award = "activity.attributes.stars >= 4 ? 20 : 10"
limits = [{ scope = "member", period = "day", times = 1 }]

[[rule]]
id = "app-visit"
priority = 40
on = "activity"
when = "activity.type == 'app.opened'"
award = 1
limits = [{ scope = "activity.attributes.device", period = "day", tokens = 2 }]
"#;

/// Evaluates an activity (`kind` and `attributes`) or, with `kind` None, a transaction of
/// `amount` with `meta`, for member `m1` on 2026-12-04, counting its uses in `tally`.
fn evaluate(
    rules: &RuleSet,
    tally: &mut Tally,
    kind: Option<&str>,
    amount: i64,
    data: &Value,
) -> (Decimal, String) {
    let date: DateTime<Utc> = "2026-12-04T10:00:00Z".parse().unwrap();
    let row = Row {
        id: "a-1",
        amount: Decimal::from(amount),
        date,
        currency: "EUR",
        description: "",
        meta: Some(data),
        activity: kind,
    };
    let ctx = Context {
        member_status: "active",
        wallet_id: "w-1",
        member_id: Some("m1"),
        ..Context::default()
    };
    let (mut steps, mut uses) = (Vec::new(), Vec::new());
    let tokens = rules.evaluate_counted(&row, &ctx, tally, &mut steps, &mut uses);
    tally.add(&uses);
    (tokens, rules.compact(&steps))
}

#[test]
fn activity_rules_award_activities_and_transaction_rules_transactions() {
    let rules = RuleSet::parse(PROGRAMME).unwrap();
    assert!(rules.has_activity_rules());
    let mut tally = Tally::new();
    let none = json!({});
    // A purchase: only `base`, though the activity rules come later in priority.
    let (tokens, trace) = evaluate(&rules, &mut tally, None, 30, &none);
    assert_eq!((tokens, trace.as_str()), (Decimal::from(30), "base:+30"));
    // A sign-up: only its rule; `base` (which reads amount) does not apply.
    let (tokens, trace) = evaluate(&rules, &mut tally, Some("member.signed_up"), 0, &none);
    assert_eq!(
        (tokens, trace.as_str()),
        (Decimal::from(50), "signed-up:+50")
    );
    // An activity no rule names earns nothing.
    let (tokens, _) = evaluate(&rules, &mut tally, Some("newsletter.read"), 0, &none);
    assert_eq!(tokens, Decimal::ZERO);
    // A transaction whose meta looks like an activity's attributes is still a transaction.
    let lookalike = json!({"stars": 5});
    let (tokens, trace) = evaluate(&rules, &mut tally, None, 0, &lookalike);
    assert_eq!((tokens, trace.as_str()), (Decimal::ZERO, "base:+0"));
}

#[test]
fn activity_attributes_are_read_and_limits_count_them() {
    let rules = RuleSet::parse(PROGRAMME).unwrap();
    let mut tally = Tally::new();
    let five = json!({"stars": 5});
    let (tokens, _) = evaluate(&rules, &mut tally, Some("review.published"), 0, &five);
    assert_eq!(tokens, Decimal::from(20));
    // One review bonus a day per member: the second does not fire, and the trace says why.
    let three = json!({"stars": 3});
    let (tokens, trace) = evaluate(&rules, &mut tally, Some("review.published"), 0, &three);
    assert_eq!(tokens, Decimal::ZERO);
    assert_eq!(trace, "review:!member/day");
    // Without the attribute the rule's condition is false: nothing, and no use counted.
    let mut fresh = Tally::new();
    let (tokens, _) = evaluate(&rules, &mut fresh, Some("review.published"), 0, &json!({}));
    assert_eq!(tokens, Decimal::ZERO);
    let (tokens, _) = evaluate(&rules, &mut fresh, Some("review.published"), 0, &three);
    assert_eq!(tokens, Decimal::from(10));

    // Two tokens a device a day, whichever member opens the app on it.
    let phone = json!({"device": "phone-1"});
    let given: Vec<Decimal> = (0..3)
        .map(|_| evaluate(&rules, &mut tally, Some("app.opened"), 0, &phone).0)
        .collect();
    assert_eq!(given, [1, 1, 0].map(Decimal::from));
    let tablet = json!({"device": "tablet-9"});
    let (tokens, _) = evaluate(&rules, &mut tally, Some("app.opened"), 0, &tablet);
    assert_eq!(tokens, Decimal::ONE);
    let limits: Vec<String> = rules.limits().into_iter().map(|l| l.scope).collect();
    assert_eq!(limits, ["member", "activity.attributes.device"]);
}

#[test]
fn counters_of_activity_rules_are_read_only_for_activities() {
    let rules = RuleSet::parse(PROGRAMME).unwrap();
    let date: DateTime<Utc> = "2026-12-04T10:00:00Z".parse().unwrap();
    let meta = json!({"device": "phone-1"});
    let row = |activity| Row {
        id: "a-1",
        amount: Decimal::ZERO,
        date,
        currency: "EUR",
        description: "",
        meta: Some(&meta),
        activity,
    };
    let ctx = Context {
        member_status: "active",
        wallet_id: "w-1",
        member_id: Some("m1"),
        ..Context::default()
    };
    assert!(rules.counter_keys(&row(None), &ctx).is_empty());
    let scopes: Vec<String> = rules
        .counter_keys(&row(Some("app.opened")), &ctx)
        .into_iter()
        .map(|(key, ..)| key.scope)
        .collect();
    assert_eq!(scopes.len(), 2, "{scopes:?}");
    assert!(scopes.contains(&"phone-1".to_string()), "{scopes:?}");
}

/// The first error of compiling `text`: its kind, rule, field and message.
fn refused(text: &str) -> (ErrorKind, Option<String>, String, String) {
    let errors = RuleSet::parse(text).unwrap_err();
    let e = &errors.0[0];
    (e.kind, e.rule.clone(), e.field.clone(), e.message.clone())
}

#[test]
fn mixing_an_activity_and_a_transaction_is_refused_when_compiled() {
    let rule = |on: &str, when: &str, extra: &str| {
        format!(
            "[[rule]]\nid = 'r'\npriority = 1\non = '{on}'\nwhen = \"{when}\"\naward = 1\n{extra}"
        )
    };
    let (kind, rule_id, field, message) = refused(&rule("purchase", "true", ""));
    assert_eq!(
        (kind, rule_id.as_deref(), field.as_str()),
        (ErrorKind::InvalidRule, Some("r"), "on")
    );
    assert!(message.contains("transaction or activity"), "{message}");

    let (kind, _, field, message) = refused(&rule("transaction", "activity.type == 'x'", ""));
    assert_eq!(
        (kind, field.as_str()),
        (ErrorKind::UnknownParameter, "when")
    );
    assert!(
        message.contains("only by rules with on = \"activity\""),
        "{message}"
    );

    for when in ["amount > 10", "meta.store == 'x'"] {
        let (kind, _, _, message) = refused(&rule("activity", when, ""));
        assert_eq!(kind, ErrorKind::UnknownParameter, "{when}");
        assert!(message.contains("activity.attributes.<key>"), "{message}");
    }
    let (_, _, _, message) = refused(&rule("activity", "has(meta.store)", ""));
    assert!(
        message.contains("has(activity.attributes.key)"),
        "{message}"
    );

    let meta_scope = "limits = [{ scope = 'meta.store', period = 'day', times = 1 }]";
    let (kind, _, field, message) = refused(&rule("activity", "true", meta_scope));
    assert_eq!(
        (kind, field.as_str()),
        (ErrorKind::InvalidLimit, "limits[0].scope")
    );
    assert!(message.contains("activity.attributes.<key>"), "{message}");
    let attribute_scope =
        "limits = [{ scope = 'activity.attributes.store', period = 'day', times = 1 }]";
    let (kind, _, _, message) = refused(&rule("transaction", "true", attribute_scope));
    assert_eq!(kind, ErrorKind::InvalidLimit);
    assert!(message.contains("meta.<key>"), "{message}");
}
