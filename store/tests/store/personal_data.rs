//! Personal data, table by table: every table of the schema is named here with what it holds of
//! a member, and whether a member's own data (`Store::member_data`, a right of access) and its
//! erasure (`delete_member`) cover it. A table added to the schema without being named here
//! fails the first test; a member's table that the export leaves out, or whose personal values
//! the erasure leaves behind, fails the second. On both backends.

use std::collections::BTreeSet;

use chrono::Utc;
use serde_json::json;
use store::{
    ActivitySource, EarnInput, Moderation, NewActivity, NewMember, NewReview, NewWallet, RuleBook,
    Spend, Store, Tokens, backend_tests,
};

/// What a table holds of a member.
enum Holds {
    /// Nothing about a member (why).
    Nothing(&'static str),
    /// Figures worked out from a member's records, by ids alone: the export shows the records
    /// (`export` names them), the erasure leaves the figures.
    Derived {
        export: &'static str,
        why: &'static str,
    },
    /// A member's own records: in the export under `export`; `erasure` says what deleting the
    /// member does to them.
    Member {
        export: &'static str,
        erasure: Erasure,
    },
}

enum Erasure {
    /// Kept as they are (why: the ledger's records, a record others rely on).
    Kept(&'static str),
    /// Their personal values cleared: the query (`$1` the member's id) reads what is left of
    /// them, one text per row, none of which may hold the member's data.
    Cleared(&'static str),
    /// Deleted: the query (`$1` the member's id) finds none of them.
    Deleted(&'static str),
}

use Erasure::{Cleared, Deleted, Kept};
use Holds::{Derived, Member, Nothing};

const LEDGER: &str = "the ledger's journal and records, kept for the balances they make and \
     the accounts they stand in (the member is named by id alone once erased)";

/// Every table, by name.
const TABLES: &[(&str, Holds)] = &[
    (
        "activities",
        Member {
            export: "activities",
            erasure: Cleared(
                "SELECT CAST(attributes AS TEXT) FROM activities WHERE member_id = $1",
            ),
        },
    ),
    (
        "adjustments",
        Member {
            export: "transactions",
            erasure: Kept("an operator's correction of the ledger, with the operator's comment"),
        },
    ),
    ("api_keys", Nothing("the organisation's API keys")),
    ("audit_head", Nothing("the operators' audit trail's head")),
    (
        "audit_log",
        Nothing("the operators' actions; a member appears by id alone"),
    ),
    (
        "balance_days",
        Derived {
            export: "transactions",
            why: "each wallet's day sums of its transactions",
        },
    ),
    ("batches", Nothing("the organisation's files, as received")),
    ("birthday_sweeps", Nothing("each campaign's last look")),
    (
        "bookings",
        Member {
            export: "orders",
            erasure: Kept(
                "a booking keeps the names and contacts given for it, as the venue's record",
            ),
        },
    ),
    ("branches", Nothing("the catalogue")),
    ("campaign_policies", Nothing("the campaigns' policies")),
    ("campaigns", Nothing("the organisation's campaigns")),
    ("catalogue_sellouts", Nothing("the catalogue")),
    ("catalogue_versions", Nothing("the catalogue")),
    ("categories", Nothing("the catalogue")),
    (
        "deliveries",
        Nothing("events' deliveries, by event id: an event is rendered when it is sent"),
    ),
    (
        "delivery_attempts",
        Nothing("each delivery's attempts: the endpoint's answers"),
    ),
    (
        "earn_requests",
        Member {
            export: "earnRequests",
            erasure: Kept(LEDGER),
        },
    ),
    ("event_dispatch", Nothing("where event dispatch stands")),
    (
        "events",
        Member {
            export: "events",
            erasure: Cleared(
                "SELECT CAST(data AS TEXT) FROM events WHERE subject_id = $1 \
                 OR subject_id IN (SELECT id FROM activities WHERE member_id = $1) \
                 OR subject_id IN (SELECT id FROM reviews WHERE member_id = $1) \
                 OR subject_id IN (SELECT id FROM orders WHERE owner_id = $1)",
            ),
        },
    ),
    (
        "expiry_notices",
        Derived {
            export: "wallets",
            why: "the days a wallet's expiry was announced",
        },
    ),
    ("export_schedules", Nothing("the organisation's exports")),
    (
        "holds",
        Member {
            export: "holds",
            erasure: Kept(LEDGER),
        },
    ),
    (
        "leaderboard_entries",
        Derived {
            export: "wallets",
            why: "ranks by member id; names are read from the member when shown",
        },
    ),
    (
        "leaderboard_members",
        Derived {
            export: "wallets",
            why: "ranks by member id",
        },
    ),
    ("leaderboards", Nothing("the leaderboards' snapshots")),
    (
        "limit_counters",
        Member {
            export: "limits",
            erasure: Deleted(
                "SELECT scope FROM limit_counters WHERE scope = $1 \
                 OR scope IN (SELECT id FROM wallets WHERE owner_id = $1)",
            ),
        },
    ),
    (
        "limit_uses",
        Derived {
            export: "transactions",
            why: "each earn's uses of the counters, by transaction id",
        },
    ),
    (
        "lots_aside",
        Derived {
            export: "transactions",
            why: "earns set aside or pending",
        },
    ),
    ("mappings", Nothing("the organisation's file mappings")),
    (
        "members",
        Member {
            export: "member",
            erasure: Cleared(
                "SELECT first_name FROM members WHERE id = $1 \
                 UNION ALL SELECT last_name FROM members WHERE id = $1 \
                 UNION ALL SELECT email FROM members WHERE id = $1 \
                 UNION ALL SELECT phone FROM members WHERE id = $1 \
                 UNION ALL SELECT external_id FROM members WHERE id = $1 \
                 UNION ALL SELECT user_id FROM members WHERE id = $1 \
                 UNION ALL SELECT CAST(meta AS TEXT) FROM members WHERE id = $1 \
                 UNION ALL SELECT birth_date FROM members WHERE id = $1",
            ),
        },
    ),
    ("operator_orgs", Nothing("operators")),
    ("operator_recovery_codes", Nothing("operators")),
    ("operator_sessions", Nothing("operators")),
    ("operator_tokens", Nothing("operators")),
    ("operators", Nothing("operators")),
    (
        "order_lines",
        Member {
            export: "orders",
            erasure: Kept(LEDGER),
        },
    ),
    (
        "orders",
        Member {
            export: "orders",
            erasure: Kept(LEDGER),
        },
    ),
    ("organisations", Nothing("the organisations")),
    (
        "pending_earns",
        Derived {
            export: "transactions",
            why: "earns pending until they vest",
        },
    ),
    ("product_tags", Nothing("the catalogue")),
    ("products", Nothing("the catalogue")),
    (
        "redemption_codes",
        Derived {
            export: "orders",
            why: "the sealed codes of order lines, shown masked with them",
        },
    ),
    (
        "referral_codes",
        Member {
            export: "referralCode",
            erasure: Deleted("SELECT code FROM referral_codes WHERE member_id = $1"),
        },
    ),
    (
        "referrals",
        Member {
            export: "referrals",
            erasure: Kept(
                "a referral names its members by id alone: a referee is referred once, and a \
                 referrer's count of converted referees stands",
            ),
        },
    ),
    (
        "refusals",
        Nothing("refusals kept under a request's key: a key and an error"),
    ),
    (
        "review_reports",
        Member {
            export: "reports",
            erasure: Kept(
                "a report counts toward hiding a review; it names the member by id alone",
            ),
        },
    ),
    (
        "reviews",
        Member {
            export: "reviews",
            erasure: Cleared("SELECT review_text FROM reviews WHERE member_id = $1"),
        },
    ),
    ("rule_sets", Nothing("the campaigns' rules")),
    ("service_settings", Nothing("the service's settings")),
    ("sftp_bans", Nothing("the SFTP door's bans")),
    ("sftp_keys", Nothing("SFTP users' keys")),
    ("sftp_users", Nothing("SFTP users")),
    ("sign_in_failures", Nothing("operators' sign-ins")),
    (
        "spends",
        Derived {
            export: "transactions",
            why: "what each spend took from each earn",
        },
    ),
    ("tags", Nothing("the catalogue")),
    ("tiers", Nothing("the campaigns' tiers")),
    (
        "transactions",
        Member {
            export: "transactions",
            erasure: Kept(LEDGER),
        },
    ),
    ("variants", Nothing("the catalogue")),
    (
        "wallets",
        Member {
            export: "wallets",
            erasure: Kept(LEDGER),
        },
    ),
    ("webhook_endpoints", Nothing("the organisation's endpoints")),
];

/// What the test's member is known by; none of it may be left once it is erased.
const MARKERS: [&str; 7] = [
    "Ada",
    "Lovelace",
    "ada@example.com",
    "card-ada",
    "u-ada",
    "1990-06-02",
    "Analytical",
];

/// The schema's tables are exactly those named above.
async fn every_table_says_what_it_holds_of_a_member(store: Store) {
    let schema = store.schema().await.unwrap();
    let actual: BTreeSet<&str> = schema.keys().map(String::as_str).collect();
    let named: BTreeSet<&str> = TABLES.iter().map(|(t, _)| *t).collect();
    let unnamed: Vec<&&str> = actual.difference(&named).collect();
    let gone: Vec<&&str> = named.difference(&actual).collect();
    assert!(
        unnamed.is_empty(),
        "name these tables in TABLES with what they hold of a member (and cover them in \
         `Store::member_data` and the erasure if it is theirs): {unnamed:?}"
    );
    assert!(gone.is_empty(), "no such tables: {gone:?}");
    for (table, holds) in TABLES {
        let reason = match holds {
            Nothing(why)
            | Derived { why, .. }
            | Member {
                erasure: Kept(why), ..
            } => why,
            Member { .. } => "cleared",
        };
        assert!(!reason.is_empty(), "{table}: say why");
    }
}

/// Ada (card-ada): a member brought by card-1's referral code with a code of her own, a wallet,
/// an earn counted by a limit, an activity, a hold, an order, a review and a report. Returns
/// her id.
async fn ada(store: &Store, c: &store::Campaign) -> String {
    let rules = "[[rule]]\nid = 'base'\npriority = 1\naward = 'amount'\n\
         limits = [{ scope = 'member', period = 'month', times = 5 }]\n\
         [[rule]]\nid = 'app'\npriority = 2\non = 'activity'\naward = 5\n";
    store.programme().set_rule_set(c, rules).await.unwrap();
    let member = NewMember {
        first_name: "Ada".into(),
        last_name: Some("Lovelace".into()),
        email: Some("ada@example.com".into()),
        idp: "reference".into(),
        user_id: "u-ada".into(),
        external_id: "card-ada".into(),
        meta: Some(json!({ "engine": "Analytical" })),
        birth_date: "1990-06-02".parse().ok(),
        referral_code: Some(referral_code(store, c, "card-1").await),
        ..Default::default()
    };
    let id = store
        .members()
        .create_member(&c.org(), member)
        .await
        .unwrap()
        .id;
    referral_code(store, c, "card-ada").await;
    let wallet = NewWallet {
        owner: Some("card-ada".into()),
        external_id: Some("w-ada".into()),
        name: None,
    };
    store.ledger().create_wallet(c, wallet).await.unwrap();
    let book = RuleBook::new(store.programme().clone());
    let earn = EarnInput {
        earn_id: "ada-1".into(),
        wallet: "w-ada".into(),
        amount: "40".into(),
        date: Utc::now(),
        description: Some("Ada's tea".into()),
        comment: None,
        meta: None,
        activity: None,
    };
    store.ledger().submit_earn(c, earn).await.unwrap();
    while store.ledger().process_earns(&book, 50).await.unwrap() > 0 {}
    let opened = NewActivity {
        campaign_id: c.id.clone(),
        member_id: id.clone(),
        external_id: "ada-open".into(),
        kind: "app.opened".into(),
        occurred_at: None,
        attributes: Some(json!({ "device": "Ada's phone" })),
        source: ActivitySource::Api,
        batch_id: None,
    };
    store
        .ledger()
        .record_activity(&book, c, opened)
        .await
        .unwrap();
    let hold = store::NewHold {
        spend: Spend {
            wallet: "w-ada".into(),
            external_id: "ada-hold".into(),
            amount: Tokens::whole(2),
            description: "Checkout".into(),
            comment: None,
            meta: None,
        },
        expires_at: None,
    };
    store.ledger().hold(c, hold).await.unwrap();
    let order = store::NewOrder {
        owner: "card-ada".into(),
        ..crate::orders::order(Some("o-ada"), vec![crate::orders::line("mug", None, 1)])
    };
    store
        .orders()
        .place_order(c, order, crate::orders::key())
        .await
        .unwrap();
    let rules = Moderation::default();
    let review = |member: &str, text: &str| NewReview {
        member: member.into(),
        voucher_id: "mug".into(),
        partner_id: "p-1".into(),
        rating: 5,
        review_text: text.into(),
    };
    let community = store.community();
    let other = community
        .create_review(c, review("card-1", "A fine mug"), &rules)
        .await
        .unwrap();
    community
        .create_review(c, review("card-ada", "Ada likes this mug"), &rules)
        .await
        .unwrap();
    community
        .report_review(c, &other.id, "card-ada", &rules)
        .await
        .unwrap();
    while store
        .ledger()
        .award_waiting_activities(&book, 50)
        .await
        .unwrap()
        > 0
    {}
    while store.events().dispatch_events(500).await.unwrap().full {}
    id
}

/// The referral code of member `reference` (an external id).
async fn referral_code(store: &Store, c: &store::Campaign, reference: &str) -> String {
    let members = store.members();
    let id = members.member_id_of(&c.org_id, reference).await.unwrap();
    let code = members.referral_code(&c.org(), &id.unwrap()).await;
    code.unwrap().code
}

/// The export holds a record of each of the member's tables; the erasure leaves none of its
/// personal values in those it clears, and none of the rows in those it deletes.
async fn the_export_and_the_erasure_cover_every_members_table(store: Store) {
    let c = crate::orders::setup(&store).await;
    let id = ada(&store, &c).await;
    let data = store.member_data(&c.org(), "card-ada").await.unwrap();
    let listed = |export: &str| -> usize {
        match export {
            "member" => 1,
            "wallets" => data.wallets.len(),
            "transactions" => data.transactions.len(),
            "earnRequests" => data.earn_requests.len(),
            "holds" => data.holds.len(),
            "orders" => data.orders.len(),
            "reviews" => data.reviews.len(),
            "reports" => data.reports.len(),
            "activities" => data.activities.len(),
            "referralCode" => usize::from(data.referral_code.is_some()),
            "referrals" => data.referrals.len(),
            "limits" => data.limits.len(),
            "events" => data.events.len(),
            other => panic!("the export has no `{other}`"),
        }
    };
    for (table, holds) in TABLES {
        if let Member { export, .. } | Derived { export, .. } = holds {
            assert!(
                listed(export) > 0,
                "{table}: the export's `{export}` is empty"
            );
        }
    }
    assert_eq!(data.member.first_name, "Ada");
    let mut kinds: Vec<&str> = data.activities.iter().map(|a| a.kind.as_str()).collect();
    kinds.sort_unstable();
    let expected = [
        "app.opened",
        "member.signed_up",
        "order.first",
        "referral.converted",
        "review.published",
    ];
    assert_eq!(
        kinds, expected,
        "her first earn converted card-1's referral of her"
    );
    assert!(
        data.events
            .iter()
            .any(|e| e.kind == store::EventType::MemberCreated)
    );
    store.members().delete_member(&c.org(), &id).await.unwrap();
    for (table, holds) in TABLES {
        let Member { erasure, .. } = holds else {
            continue;
        };
        match erasure {
            Kept(_) => {}
            Cleared(sql) => {
                let left: Vec<(Option<String>,)> =
                    store.read_rows(sql, seam::params![id]).await.unwrap();
                for (text,) in left {
                    let text = text.unwrap_or_default();
                    for marker in MARKERS {
                        assert!(!text.contains(marker), "{table} keeps `{marker}`: {text}");
                    }
                }
            }
            Deleted(sql) => {
                let left: Vec<(String,)> = store.read_rows(sql, seam::params![id]).await.unwrap();
                assert!(left.is_empty(), "{table} keeps {left:?}");
            }
        }
    }
    let gone = store.member_data(&c.org(), &id).await;
    assert!(matches!(gone, Err(store::StoreError::NotFound { .. })));
}

backend_tests!(
    every_table_says_what_it_holds_of_a_member,
    the_export_and_the_erasure_cover_every_members_table,
);
